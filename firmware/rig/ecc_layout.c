#include "bch.h"
#include "ecc_layout.h"
#include "pattern.h"
#include "protocol.h"

static uint32_t raw_bytes(const struct chip *c) { return c->page_bytes + c->spare_bytes; }

static uint32_t parity_addr(const struct chip *c, uint32_t cw, uint8_t t)
{
	return c->page_bytes + ECC_PARITY_OFFSET + cw * bch_ecc_bytes(t);
}

/* spare bytes the layout takes at t: the profile and the parity */
static uint32_t area_end(const struct chip *c, uint8_t t) { return parity_addr(c, c->page_bytes / RIG_CODEWORD_BYTES, t); }

void ecc_fill_pattern(uint32_t seed, uint32_t n)
{
	volatile uint8_t *buf = onfi_buffer();
	uint32_t state = prbs31_init(seed);
	for (uint32_t i = 0; i < n; i++)
		buf[i] = prbs31_next(&state);
}

void ecc_encode_page(const struct chip *c, uint8_t t, const uint8_t *profile)
{
	volatile uint8_t *buf = onfi_buffer();
	for (uint32_t i = 0; i < ECC_PROFILE_BYTES; i++)
		buf[c->page_bytes + ECC_PROFILE_OFFSET + i] = profile ? profile[i] : 0xFF;
	for (uint32_t cw = 0; cw < c->page_bytes / RIG_CODEWORD_BYTES; cw++)
		bch_encode(cw * RIG_CODEWORD_BYTES, parity_addr(c, cw, t), t);
}

void ecc_read_profile(const struct chip *c, uint8_t *rec)
{
	volatile uint8_t *buf = onfi_buffer();
	for (uint32_t i = 0; i < ECC_PROFILE_BYTES; i++)
		rec[i] = buf[c->page_bytes + ECC_PROFILE_OFFSET + i];
}

static uint16_t ones8(uint8_t v)
{
	uint16_t n = 0;
	for (; v; v &= (uint8_t)(v - 1))
		n++;
	return n;
}

/* take out the errors the pattern comparison counted in the spare's ECC area, which holds no pattern */
static void area_flips(const struct chip *c, uint32_t seed, uint8_t t, uint16_t *e10, uint16_t *e01)
{
	volatile uint8_t *buf = onfi_buffer();
	uint32_t state = prbs31_init(seed), lo = c->page_bytes + ECC_PROFILE_OFFSET;
	for (uint32_t i = 0; i < lo; i++)
		prbs31_next(&state);
	for (uint32_t i = lo; i < area_end(c, t); i++) {
		uint8_t want = prbs31_next(&state), got = buf[i];
		*e10 = (uint16_t)(*e10 - ones8(want & (uint8_t)~got));
		*e01 = (uint16_t)(*e01 - ones8((uint8_t)~want & got));
	}
}

uint32_t ecc_read_reply(const struct chip *c, struct op_result r, uint8_t t, uint8_t flags, uint32_t seed, uint8_t *out,
                        struct decoded *d)
{
	uint32_t n_data = (c->page_bytes + RIG_CODEWORD_BYTES - 1) / RIG_CODEWORD_BYTES;
	uint32_t n_cw = n_data + (c->spare_bytes ? 1 : 0);
	SET_READ_HEAD_CHIP_STATUS(out, r.status);
	SET_READ_HEAD_BUSY_NS(out, r.busy_ns);
	SET_READ_HEAD_N_CW(out, n_cw);
	uint8_t *p = out + READ_HEAD_BYTES;
	for (uint32_t i = 0; i < n_cw; i++, p += CODEWORD_COUNTS_BYTES) {
		uint16_t e10 = 0, e01 = 0;
		if (flags & READ_FLAG_COMPARE)
			onfi_codeword((int)i, &e10, &e01);
		if ((flags & READ_FLAG_COMPARE) && t && i == n_data)
			area_flips(c, seed, t, &e10, &e01);
		int16_t corrected = (t && i < n_data) ? (int16_t)bch_decode(i * RIG_CODEWORD_BYTES, parity_addr(c, i, t), t) : 0;
		if (corrected < 0)
			d->failed++;
		else
			d->corrected += (uint32_t)corrected;
		SET_CODEWORD_COUNTS_ERR_1TO0(p, e10);
		SET_CODEWORD_COUNTS_ERR_0TO1(p, e01);
		SET_CODEWORD_COUNTS_CORRECTED(p, (uint16_t)corrected);
	}
	if (flags & READ_FLAG_RAW) {
		volatile uint8_t *buf = onfi_buffer();
		for (uint32_t i = 0; i < raw_bytes(c); i++)
			*p++ = buf[i];
	}
	return (uint32_t)(p - out);
}
