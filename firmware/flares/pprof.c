/* The page profile's spare-area record, protected by a BCH code bit-compatible with Linux lib/bch.c:
 * m = 7 (primitive polynomial 0x83), t = 5, 56 data bits, 35 parity bits left-justified in 5 bytes.
 * Data and parity are read MSB first; the first data bit is the highest-degree coefficient. */
#include "flares.h"

#define BCH_M 7
#define BCH_N 127
#define BCH_T 5
#define BCH_POLY 0x83u
#define DATA_BITS 56
#define ECC_BITS (BCH_M * BCH_T)
#define CODE_BITS (DATA_BITS + ECC_BITS)

static uint8_t gf_exp[2 * BCH_N];
static uint8_t gf_log[BCH_N + 1];
static uint8_t genpoly[ECC_BITS + 1]; /* coefficients, genpoly[i] of x^i */
static int ready;

static uint8_t gf_mul(uint8_t a, uint8_t b)
{
    return (a && b) ? gf_exp[gf_log[a] + gf_log[b]] : 0;
}

static void bch_init(void)
{
    uint32_t i, x = 1, deg = 0;
    uint8_t done[BCH_N] = {0};
    if (ready)
        return;
    for (i = 0; i < BCH_N; i++) {
        gf_exp[i] = gf_exp[i + BCH_N] = (uint8_t)x;
        gf_log[x] = (uint8_t)i;
        x <<= 1;
        if (x & (1u << BCH_M))
            x ^= BCH_POLY;
    }
    /* generator: product of (x - a^r) over the cyclotomic cosets of a^1, a^3, ..., a^(2t-1) */
    genpoly[0] = 1;
    {
        uint8_t g[ECC_BITS + 1] = {1};
        uint32_t j, r;
        for (i = 1; i < 2 * BCH_T; i += 2) {
            r = i;
            while (!done[r]) {
                done[r] = 1;
                /* g(x) *= (x + a^r) */
                for (j = deg + 1; j > 0; j--)
                    g[j] = g[j - 1] ^ gf_mul(g[j], gf_exp[r]);
                g[0] = gf_mul(g[0], gf_exp[r]);
                deg++;
                r = (r * 2) % BCH_N;
            }
        }
        for (j = 0; j <= ECC_BITS; j++)
            genpoly[j] = g[j]; /* binary: every coefficient is 0 or 1 */
    }
    ready = 1;
}

static int get_bit(const uint8_t *b, uint32_t i)
{
    return (b[i >> 3] >> (7u - (i & 7u))) & 1;
}

static void flip_bit(uint8_t *b, uint32_t i)
{
    b[i >> 3] ^= (uint8_t)(0x80u >> (i & 7u));
}

/* parity = data(x) * x^ECC_BITS mod genpoly(x), bit-serial */
static void bch_encode(const uint8_t data[7], uint8_t ecc[5])
{
    uint8_t r[ECC_BITS] = {0}; /* r[k]: coefficient of x^k */
    uint32_t i, k;
    bch_init();
    for (i = 0; i < DATA_BITS; i++) {
        uint8_t fb = (uint8_t)(get_bit(data, i) ^ r[ECC_BITS - 1]);
        for (k = ECC_BITS - 1; k > 0; k--)
            r[k] = r[k - 1] ^ (fb & genpoly[k]);
        r[0] = fb & genpoly[0];
    }
    for (i = 0; i < 5; i++)
        ecc[i] = 0;
    for (i = 0; i < ECC_BITS; i++)
        if (r[ECC_BITS - 1 - i])
            flip_bit(ecc, i);
}

/* corrects rec (7 data bytes then 5 ecc bytes) in place; returns errors corrected or -1 */
static int bch_decode(uint8_t rec[12])
{
    uint8_t s[2 * BCH_T + 1], lambda[BCH_T + 2] = {1}, prev[BCH_T + 2] = {1}, tmp[BCH_T + 2];
    uint32_t i, j, pos[BCH_T];
    int L = 0, m = 1, nerr = 0, any = 0;
    uint8_t b = 1;
    bch_init();
    /* syndromes S_j = c(a^j): code bit i (data then parity) has degree CODE_BITS - 1 - i */
    for (j = 1; j <= 2 * BCH_T; j++) {
        uint8_t acc = 0;
        for (i = 0; i < CODE_BITS; i++) {
            int bit = i < DATA_BITS ? get_bit(rec, i) : get_bit(rec + 7, i - DATA_BITS);
            if (bit)
                acc ^= gf_exp[(j * (CODE_BITS - 1 - i)) % BCH_N];
        }
        s[j] = acc;
        any |= acc;
    }
    if (!any)
        return 0;
    /* Berlekamp-Massey */
    for (i = 0; i < 2 * BCH_T; i++) {
        uint8_t d = s[i + 1];
        for (j = 1; j <= (uint32_t)L; j++)
            d ^= gf_mul(lambda[j], s[i + 1 - j]);
        if (d == 0) {
            m++;
            continue;
        }
        for (j = 0; j < BCH_T + 2; j++)
            tmp[j] = lambda[j];
        {
            uint8_t coef = gf_exp[gf_log[d] + BCH_N - gf_log[b]];
            for (j = 0; j + (uint32_t)m < BCH_T + 2; j++)
                lambda[j + m] ^= gf_mul(coef, prev[j]);
        }
        if (2 * L <= (int)i) {
            L = (int)i + 1 - L;
            for (j = 0; j < BCH_T + 2; j++)
                prev[j] = tmp[j];
            b = d;
            m = 1;
        } else {
            m++;
        }
    }
    if (L > BCH_T)
        return -1;
    /* Chien search over the shortened code's degrees */
    for (i = 0; i < CODE_BITS; i++) {
        uint32_t deg = CODE_BITS - 1 - i;
        uint8_t v = 0;
        for (j = 0; j <= (uint32_t)L; j++)
            v ^= gf_mul(lambda[j], gf_exp[((BCH_N - deg % BCH_N) * j) % BCH_N]);
        if (v == 0) {
            if (nerr == BCH_T)
                return -1;
            pos[nerr++] = i;
        }
    }
    if (nerr != L)
        return -1;
    for (j = 0; j < (uint32_t)nerr; j++) {
        if (pos[j] < DATA_BITS)
            flip_bit(rec, pos[j]);
        else
            flip_bit(rec + 7, pos[j] - DATA_BITS);
    }
    return nerr;
}

void flares_pprof_pack(const flares_pprof_t *pp, uint8_t out[FLARES_PPROF_BYTES])
{
    uint64_t v = ((uint64_t)(pp->p_cur & 0x7Fu) << 49) | ((uint64_t)(pp->pecycles & 0x1FFFFu) << 32) |
                 pp->writestamp;
    int i;
    for (i = 0; i < 7; i++)
        out[i] = (uint8_t)(v >> (8 * (6 - i)));
    bch_encode(out, out + 7);
}

int flares_pprof_unpack(const uint8_t in[FLARES_PPROF_BYTES], flares_pprof_t *pp)
{
    uint8_t rec[FLARES_PPROF_BYTES];
    uint64_t v = 0;
    int i, n, erased = 1;
    for (i = 0; i < FLARES_PPROF_BYTES; i++) {
        rec[i] = in[i];
        erased &= in[i] == 0xFF;
    }
    if (erased)
        return -2;
    n = bch_decode(rec);
    if (n < 0)
        return -1;
    for (i = 0; i < 7; i++)
        v = (v << 8) | rec[i];
    pp->p_cur = (uint8_t)((v >> 49) & 0x7Fu);
    pp->pecycles = (uint32_t)((v >> 32) & 0x1FFFFu);
    pp->writestamp = (uint32_t)v;
    return n;
}
