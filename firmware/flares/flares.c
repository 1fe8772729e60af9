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

static uint64_t cold_proj(const flares_config_t *cfg, uint8_t page_type, uint32_t pe)
{
    const flares_tables_t *tab = cfg->tables;
    return 2u * (flares_rber_wr(tab, page_type, pe) + flares_rber_rd(tab, page_type, pe, cfg->req_ret_s));
}

uint8_t flares_cold_start(const flares_config_t *cfg, uint8_t page_type, uint32_t pe)
{
    uint8_t t = flares_t_for(cfg->tables, cold_proj(cfg, page_type, pe));
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
}

void flares_evaluate(const flares_config_t *cfg, flares_pprof_t *pp, uint8_t page_type, uint32_t now,
                     flares_decision_t *out)
{
    const flares_tables_t *tab = cfg->tables;
    uint32_t ret = now >= pp->writestamp ? now - pp->writestamp : 0;
    /* p_next serves programs until the next evaluation: the model at the wear the window now starting ends at */
    uint32_t ahead = pp->pecycles + (pp->pecycles > pp->pe_win ? pp->pecycles - pp->pe_win : 0u);
    uint32_t col = (pp->pecycles + FLARES_PE_STEP - 1u) / FLARES_PE_STEP; /* next grid point up: the safe side */
    uint32_t limit_min;
    uint64_t rd_now, meas, model, avg, proj, top;
    int32_t next;
    uint8_t p;

    out->zone = FLARES_ZONE_NONE;
    out->p = 0;
    out->proj = 0;
    out->alarm = 0;
    out->invalidate = 0;
    out->beyond = 0;
    pp->pe_win = pp->pecycles;
    if (col > FLARES_PE_COLS - 1u)
        col = FLARES_PE_COLS - 1u;
    limit_min = model_of(tab, page_type)->max_ret_time_min[pp->p_cur - FLARES_T_MIN][col];
    if (limit_min != FLARES_MRT_ALWAYS && (uint64_t)ret > (uint64_t)limit_min * 60u) {
        out->alarm = 1;
        if (!cfg->evaluate_on_alarm) {
            out->zone = FLARES_ZONE_ALARM;
            return;
        }
    }
    rd_now = flares_rber_rd(tab, page_type, pp->pecycles, ret);
    meas = ((uint64_t)pp->errc << 48) / ((uint64_t)FLARES_CODEWORD_BITS * (pp->reads ? pp->reads : 1u));
    meas = meas > rd_now ? meas - rd_now : 0; /* a negative write-time RBER carries no information */
    model = flares_rber_wr(tab, page_type, ahead);
    avg = ((uint64_t)cfg->mix_pm * meas + (uint64_t)(1000u - cfg->mix_pm) * model) / 1000u;
    proj = avg + flares_rber_rd(tab, page_type, ahead, cfg->req_ret_s);
    p = flares_t_for(tab, proj);
    top = tab->corr_rber_max[pp->p_cur - FLARES_T_MIN];
    next = pp->p_next; /* overcorrection and critical below their thresholds keep it */
    if (pp->failc > cfg->maxfail) {
        out->zone = FLARES_ZONE_FAILURE;
        out->invalidate = 1;
        next = p > pp->p_cur + 1 ? p : pp->p_cur + 1;
        pp->failc = 0;
    } else if (p > pp->p_cur) {
        out->zone = FLARES_ZONE_FAST;
        next = p;
    } else if (p < pp->p_cur) {
        out->zone = FLARES_ZONE_OVERCORRECTION;
        if (++pp->overc > cfg->maxover) {
            next = pp->p_cur - 1;
            pp->overc = pp->criticalc = 0;
        }
    } else if (proj * 1000u >= top * (1000u - cfg->saferange_pm)) {
        out->zone = FLARES_ZONE_CRITICAL;
        if (++pp->criticalc > cfg->maxcritical) {
            next = pp->p_cur + 1;
            pp->overc = pp->criticalc = 0;
        }
    } else {
        out->zone = FLARES_ZONE_SAFE;
        next = pp->p_cur;
    }
    if (next < (int32_t)FLARES_T_MIN)
        next = FLARES_T_MIN;
    if (next > (int32_t)cap(cfg))
        next = cap(cfg);
    pp->p_next = (uint8_t)next;
    pp->errc = 0;
    pp->reads = 0;
    out->p = p;
    out->proj = proj;
    out->beyond = proj > reach(cfg);
}

void flares_up_page(const flares_config_t *cfg, flares_pprof_t *pp, uint8_t page_type, uint8_t access,
                    uint16_t deterr, uint8_t fail, uint32_t now, flares_decision_t *out)
{
    if (access == FLARES_ACCESS_READ) {
        uint32_t e = (uint32_t)pp->errc + (fail ? (uint32_t)pp->p_cur + 1u : deterr);
        pp->errc = (uint16_t)(e > ERRC_MAX ? ERRC_MAX : e);
        if (pp->reads < 0xFFFFu)
            pp->reads++;
        if (fail)
            pp->failc++;
    } else {
        pp->pecycles++;
        pp->writestamp = now;
        pp->p_cur = pp->p_next;
    }
    if (++pp->ops < cfg->wsize) {
        out->zone = FLARES_ZONE_NONE;
        out->p = 0;
        out->proj = 0;
        out->alarm = 0;
        out->invalidate = 0;
        out->beyond = 0;
        return;
    }
    pp->ops = 0;
    flares_evaluate(cfg, pp, page_type, now, out);
}
