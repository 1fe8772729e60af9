/* FLARES decisions in fixed point; see flares.h and nandrig.characterization.flares. */
#include "flares.h"

#define ERRC_MAX 32767u

/* the model serving a page type: its own with two models, the one model otherwise */
static const flares_model_t *model_of(const flares_tables_t *tab, uint8_t page_type)
{
    return &tab->model[tab->models > 1u && page_type == FLARES_PAGE_UPPER ? 1u : 0u];
}

static uint64_t interp(const uint64_t *tab, uint32_t pe)
{
    uint32_t c = pe / FLARES_PE_STEP;
    uint32_t frac;
    if (c >= FLARES_PE_COLS - 1u)
        return tab[FLARES_PE_COLS - 1u];
    frac = pe - c * FLARES_PE_STEP;
    if (frac == 0)
        return tab[c];
    return (tab[c] * (FLARES_PE_STEP - frac) + tab[c + 1] * frac) / FLARES_PE_STEP;
}

uint64_t flares_rber_wr(const flares_tables_t *tab, uint8_t page_type, uint32_t pe)
{
    return interp(model_of(tab, page_type)->rber_wr, pe);
}

static uint64_t rd_time(const uint32_t *grid, const uint32_t *rd_t, uint32_t s)
{
    uint32_t lo = 0, hi = FLARES_T_GRID - 1u;
    if (s == 0)
        return 0;
    if (s < grid[0])
        return (uint64_t)rd_t[0] * s / grid[0];
    if (s >= grid[FLARES_T_GRID - 1u])
        return rd_t[FLARES_T_GRID - 1u];
    while (hi - lo > 1u) { /* grid[lo] <= s < grid[hi] */
        uint32_t mid = (lo + hi) / 2u;
        if (grid[mid] <= s)
            lo = mid;
        else
            hi = mid;
    }
    return rd_t[lo] + (uint64_t)(rd_t[hi] - rd_t[lo]) * (s - grid[lo]) / (grid[hi] - grid[lo]);
}

uint64_t flares_rber_rd(const flares_tables_t *tab, uint8_t page_type, uint32_t pe, uint32_t seconds)
{
    const flares_model_t *m = model_of(tab, page_type);
    return (interp(m->rd_pe, pe) * rd_time(tab->t_grid, m->rd_t, seconds)) >> FLARES_T_FRAC_BITS;
}

uint8_t flares_t_for(const flares_tables_t *tab, uint64_t proj)
{
    uint32_t i;
    for (i = 0; i < FLARES_T_COUNT; i++)
        if (proj <= tab->corr_rber_max[i])
            return (uint8_t)(FLARES_T_MIN + i);
    return FLARES_T_MAX;
}

static uint8_t cap(const flares_config_t *cfg)
{
    return cfg->t_cap && cfg->t_cap < FLARES_T_MAX ? cfg->t_cap : (uint8_t)FLARES_T_MAX;
}

/* the largest RBER the rig's t_cap corrects: a projection above it is beyond the rig's reach */
static uint64_t reach(const flares_config_t *cfg)
{
    return cfg->tables->corr_rber_max[cap(cfg) - FLARES_T_MIN];
}

static uint64_t isqrt64(uint64_t n)
{
    uint64_t root = 0, bit = (uint64_t)1 << 62;
    while (bit > n)
        bit >>= 2;
    while (bit) {
        if (n >= root + bit) {
            n -= root + bit;
            root = (root >> 1) + bit;
        } else {
            root >>= 1;
        }
        bit >>= 2;
    }
    return root;
}

/* a * b / c rounded down, saturating at 2^64 - 1: the soft-core has no 128-bit type, so the product is kept as
 * two 64-bit halves and divided bit by bit (once per evaluation) */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl;
    uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    uint64_t lo = (ll & 0xFFFFFFFFu) | (mid << 32);
    uint64_t hi = ah * bh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    uint64_t q = 0, r = hi;
    int i;
    if (hi >= c)
        return UINT64_MAX;
    for (i = 63; i >= 0; i--) {
        uint64_t carry = r >> 63; /* r < c before the shift: with the carry, r - c still fits */
        r = (r << 1) | ((lo >> i) & 1u);
        q <<= 1;
        if (carry || r >= c) {
            r -= c;
            q |= 1u;
        }
    }
    return q;
}

/* a one-sided upper bound on a Poisson count of which k was seen: k + z*sqrt(k + 1) + z^2, rounded up */
static uint64_t count_bound(uint64_t k, uint8_t z10)
{
    return k + (z10 * isqrt64(100u * (k + 1u)) + 99u) / 100u + ((uint32_t)z10 * z10 + 99u) / 100u;
}

/* whether a page type's counts speak for wear pe: gathered within a factor of 2 of it */
static uint8_t near(const flares_types_t *n, uint8_t page_type, uint32_t pe)
{
    uint64_t ref = n->pe_ref[page_type];
    return (uint64_t)pe <= 2u * ref && ref <= 2u * (uint64_t)pe;
}

/* guarded FLARES' t at wear pe (nandrig.characterization.flares.Flares.guarded_t): the model's projection to the
 * end of the retention target times the page type's measured-to-expected ratio at its upper count bound, never
 * below the model's own; FLARES' margin of 2 (or a lower wear's measured ratio, when more) until the type's reads
 * have tested the model. *proj the projection,
 * *raised whether the measurement raised t above the model's */
static uint8_t guarded_t(const flares_config_t *cfg, uint8_t page_type, uint32_t pe, uint64_t *proj, uint8_t *raised)
{
    const flares_tables_t *tab = cfg->tables;
    uint64_t end = flares_rber_wr(tab, page_type, pe) + flares_rber_rd(tab, page_type, pe, cfg->req_ret_s);
    uint64_t expected = cfg->types->expected_q16[page_type], measured;
    uint8_t t;
    *raised = 0;
    if (expected < (uint64_t)FLARES_GUARD_MIN_EXPECTED << 16 || !near(cfg->types, page_type, pe)) {
        /* untested here: FLARES' margin of 2, or the ratio measured at a lower wear when that is more */
        uint64_t prior = expected ? mul_div(end, (uint64_t)cfg->types->errors[page_type] << 16, expected) : 0;
        *proj = prior > 2u * end ? prior : 2u * end;
        t = flares_t_for(tab, *proj);
        *raised = prior > 2u * end && t > flares_t_for(tab, 2u * end);
        return t;
    }
    measured = mul_div(end, count_bound(cfg->types->errors[page_type], cfg->guard_z10) << 16, expected);
    if (measured <= end) {
        *proj = end;
        return flares_t_for(tab, end);
    }
    *proj = measured;
    t = flares_t_for(tab, measured);
    *raised = t > flares_t_for(tab, end);
    return t;
}

/* the data's age: unsigned subtraction is right across a wrap of the u32 clock (136 years, which a run's baked
 * retention can pass); a stamp from before a rig restart reads as old data, alarmed: the safe side */
static uint32_t age(const flares_pprof_t *pp, uint32_t now)
{
    return now - pp->writestamp;
}

/* a read of the page type into its counts: its errors and what the model expects of its codewords at the page's
 * wear and age */
static void count_read(const flares_config_t *cfg, const flares_pprof_t *pp, uint8_t page_type, uint32_t errors,
                       uint8_t codewords, uint32_t now)
{
    const flares_tables_t *tab = cfg->tables;
    flares_types_t *n = cfg->types;
    uint64_t rate = flares_rber_wr(tab, page_type, pp->pecycles)
                    + flares_rber_rd(tab, page_type, pp->pecycles, age(pp, now));
    uint64_t e;
    if (!n->expected_q16[page_type] || !near(n, page_type, pp->pecycles)) { /* a new wear band */
        while (n->expected_q16[page_type] >= (uint64_t)FLARES_GUARD_MIN_EXPECTED << 16) {
            n->errors[page_type] >>= 1;  /* what was measured below it stays a prior, weighed below a test */
            n->expected_q16[page_type] >>= 1;
        }
        n->pe_ref[page_type] = pp->pecycles;
    }
    e = (uint64_t)n->errors[page_type] + errors;
    n->errors[page_type] = e > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)e;
    n->expected_q16[page_type] += mul_div(rate, (uint64_t)FLARES_CODEWORD_BITS * codewords, (uint64_t)1 << 32);
    if (n->expected_q16[page_type] > (uint64_t)FLARES_GUARD_MEMORY << 16) {
        n->errors[page_type] >>= 1;
        n->expected_q16[page_type] >>= 1;
    }
}

/* FLARES doubles the model's projection (its stated accuracy); guarded FLARES takes its own */
static uint64_t cold_proj(const flares_config_t *cfg, uint8_t page_type, uint32_t pe)
{
    const flares_tables_t *tab = cfg->tables;
    uint64_t proj;
    uint8_t raised;
    if (cfg->guarded) {
        guarded_t(cfg, page_type, pe, &proj, &raised);
        return proj;
    }
    return 2u * (flares_rber_wr(tab, page_type, pe) + flares_rber_rd(tab, page_type, pe, cfg->req_ret_s));
}

uint8_t flares_cold_start(const flares_config_t *cfg, uint8_t page_type, uint32_t pe)
{
    uint64_t proj;
    uint8_t raised;
    uint8_t t = cfg->guarded ? guarded_t(cfg, page_type, pe, &proj, &raised)
                             : flares_t_for(cfg->tables, cold_proj(cfg, page_type, pe));
    return t < cap(cfg) ? t : cap(cfg);
}

uint8_t flares_cold_start_beyond(const flares_config_t *cfg, uint8_t page_type, uint32_t pe)
{
    return cold_proj(cfg, page_type, pe) > reach(cfg);
}

void flares_new_page(flares_pprof_t *pp, uint8_t t, uint32_t pe)
{
    flares_pprof_t z = {0};
    *pp = z;
    pp->p_cur = pp->p_next = t;
    pp->pecycles = pp->pe_win = pe;
    pp->p_flares = FLARES_T_MIN;
}

/* whether the page's data, ret seconds old, is older than its t protects at its wear (max_ret_time) */
static uint8_t past_retention(const flares_tables_t *tab, const flares_pprof_t *pp, uint8_t page_type, uint32_t ret)
{
    uint32_t col = (pp->pecycles + FLARES_PE_STEP - 1u) / FLARES_PE_STEP; /* next grid point up: the safe side */
    uint32_t limit_min;
    if (col > FLARES_PE_COLS - 1u)
        col = FLARES_PE_COLS - 1u;
    limit_min = model_of(tab, page_type)->max_ret_time_min[pp->p_cur - FLARES_T_MIN][col];
    return limit_min != FLARES_MRT_ALWAYS && (uint64_t)ret > (uint64_t)limit_min * 60u;
}

void flares_evaluate(const flares_config_t *cfg, flares_pprof_t *pp, uint8_t page_type, uint32_t now,
                     flares_decision_t *out)
{
    const flares_tables_t *tab = cfg->tables;
    uint32_t ret = age(pp, now);
    /* p_next serves programs until the next evaluation: the model at the wear the window now starting ends at */
    uint32_t ahead = pp->pecycles + (pp->pecycles > pp->pe_win ? pp->pecycles - pp->pe_win : 0u);
    uint64_t rd_now, meas, model, avg, proj, seen, gproj = 0, top;
    int32_t next;
    uint8_t p, cur, gt = 0, raised = 0;

    out->zone = FLARES_ZONE_NONE;
    out->p = 0;
    out->proj = 0;
    out->alarm = 0;
    out->invalidate = 0;
    out->beyond = 0;
    pp->pe_win = pp->pecycles;
    rd_now = flares_rber_rd(tab, page_type, pp->pecycles, ret);
    meas = ((uint64_t)pp->errc << 48) / ((uint64_t)FLARES_CODEWORD_BITS * (pp->reads ? pp->reads : 1u));
    meas = meas > rd_now ? meas - rd_now : 0; /* a negative write-time RBER carries no information */
    model = flares_rber_wr(tab, page_type, ahead);
    avg = ((uint64_t)cfg->mix_pm * meas + (uint64_t)(1000u - cfg->mix_pm) * model) / 1000u;
    proj = avg + flares_rber_rd(tab, page_type, ahead, cfg->req_ret_s);
    seen = proj; /* the projection the decision reports: FLARES', or the guard's when that is more */
    if (cfg->guarded) { /* what the next programs will get as the counts stand, a window ahead */
        gt = guarded_t(cfg, page_type, ahead, &gproj, &raised);
        if (gproj > seen)
            seen = gproj;
    }
    if (past_retention(tab, pp, page_type, ret)) {
        out->alarm = 1;
        if (!cfg->evaluate_on_alarm) { /* Alg. 2 stops here; whether any t can hold the data still counts */
            out->zone = FLARES_ZONE_ALARM;
            out->beyond = seen > reach(cfg);
            return;
        }
    }
    p = flares_t_for(tab, proj);
    cur = cfg->guarded ? pp->p_flares : pp->p_cur; /* guarded: FLARES runs on its own t, the guard beside it */
    next = cfg->guarded ? pp->p_flares : pp->p_next; /* overcorrection and critical below their thresholds keep it */
    top = tab->corr_rber_max[cur - FLARES_T_MIN];
    if (pp->failc > cfg->maxfail) {
        out->zone = FLARES_ZONE_FAILURE;
        out->invalidate = 1;
        next = p > pp->p_cur + 1 ? p : pp->p_cur + 1; /* above the t that failed, whichever track chose it */
        pp->failc = 0;
    } else if (p > cur) {
        out->zone = FLARES_ZONE_FAST;
        next = p;
    } else if (p < cur) {
        out->zone = FLARES_ZONE_OVERCORRECTION;
        if (++pp->overc > cfg->maxover) {
            next = cur - 1;
            pp->overc = pp->criticalc = 0;
        }
    } else if (proj * 1000u >= top * (1000u - cfg->saferange_pm)) {
        out->zone = FLARES_ZONE_CRITICAL;
        if (++pp->criticalc > cfg->maxcritical) {
            next = cur + 1;
            pp->overc = pp->criticalc = 0;
        }
    } else {
        out->zone = FLARES_ZONE_SAFE;
        next = cur;
    }
    if (next < (int32_t)FLARES_T_MIN)
        next = FLARES_T_MIN;
    if (next > (int32_t)cap(cfg))
        next = cap(cfg);
    if (cfg->guarded) { /* p_next: the guard's t when that is more */
        pp->p_flares = (uint8_t)next;
        if (gt > next) {
            next = gt < cap(cfg) ? gt : cap(cfg);
            if (raised)
                out->zone = FLARES_ZONE_MEASURED;
        }
    }
    pp->p_next = (uint8_t)next;
    pp->errc = 0;
    pp->reads = 0;
    out->p = p;
    out->proj = seen;
    out->beyond = seen > reach(cfg);
}

void flares_up_page(const flares_config_t *cfg, flares_pprof_t *pp, uint8_t page_type, uint8_t access,
                    uint16_t deterr, uint8_t fail, uint32_t now, uint32_t errors, uint8_t codewords,
                    flares_decision_t *out)
{
    uint8_t used = 0; /* guarded: this read used more of its t than the alarm allows, or its data is too old */
    if (access == FLARES_ACCESS_READ) {
        uint32_t e = (uint32_t)pp->errc + (fail ? (uint32_t)pp->p_cur + 1u : deterr);
        pp->errc = (uint16_t)(e > ERRC_MAX ? ERRC_MAX : e);
        if (pp->reads < 0xFFFFu)
            pp->reads++;
        if (fail && pp->failc < 0xFFu)
            pp->failc++;
        if (cfg->guarded) {
            /* a read of data older than its t protects: due a refresh now, not at the window's end */
            used = fail || (uint32_t)deterr * 1000u > (uint32_t)cfg->alarm_use_pm * pp->p_cur
                   || past_retention(cfg->tables, pp, page_type, age(pp, now));
            if (!pp->counted) { /* a program's first read only: rereads find the same weak cells again, and
                                 * counting them as new evidence would narrow the bound falsely */
                uint64_t seen = (uint64_t)errors + (fail ? (uint32_t)pp->p_cur + 1u : 0u);
                pp->counted = 1;
                count_read(cfg, pp, page_type, seen > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)seen,
                           codewords ? codewords : 1u, now);
            }
        }
    } else {
        pp->pecycles++;
        pp->writestamp = now;
        pp->p_cur = pp->p_next;
        pp->counted = 0;
        if (cfg->guarded) { /* the data written now gets FLARES' t or the guard's at this wear, whichever is more */
            uint64_t proj;
            uint8_t raised, t = guarded_t(cfg, page_type, pp->pecycles, &proj, &raised);
            if (t < pp->p_flares)
                t = pp->p_flares;
            pp->p_cur = t < cap(cfg) ? t : cap(cfg);
        }
    }
    if (++pp->ops < cfg->wsize) {
        out->zone = FLARES_ZONE_NONE;
        out->p = 0;
        out->proj = 0;
        out->alarm = used;
        out->invalidate = 0;
        out->beyond = 0;
        return;
    }
    pp->ops = 0;
    flares_evaluate(cfg, pp, page_type, now, out);
    if (used)
        out->alarm = 1;
}
