/* FLARES tables: the compiled-in set, and sets received at run time (nandrig.characterization.flares_wire). */
#include "flares.h"

#define HEAD_BYTES 11u /* FLARES_TABLES_HEAD: format, models, gf_m, t_min, t_max, pe_cols, t_grid, u16 cw, u16 step */
#define FORMAT 1u

void flares_tables_builtin(flares_tables_t *out)
{
    uint32_t m, i, j;
    out->models = FLARES_MODELS;
    for (i = 0; i < FLARES_T_COUNT; i++)
        out->corr_rber_max[i] = flares_corr_rber_max[i];
    for (i = 0; i < FLARES_T_GRID; i++)
        out->t_grid[i] = flares_t_grid[i];
    for (m = 0; m < FLARES_MODELS; m++) {
        flares_model_t *d = &out->model[m];
        for (i = 0; i < FLARES_PE_COLS; i++) {
            d->rber_wr[i] = flares_rber_wr_tab[m][i];
            d->rd_pe[i] = flares_rd_pe[m][i];
        }
        for (i = 0; i < FLARES_T_GRID; i++)
            d->rd_t[i] = flares_rd_t[m][i];
        for (i = 0; i < FLARES_T_COUNT; i++)
            for (j = 0; j < FLARES_PE_COLS; j++)
                d->max_ret_time_min[i][j] = flares_max_ret_time_min[m][i][j];
    }
}

uint32_t flares_tables_bytes(void) { return sizeof(flares_tables_t); }

static uint64_t le(const volatile uint8_t *p, uint32_t n)
{
    uint64_t v = 0;
    while (n--)
        v = v << 8 | p[n];
    return v;
}

static uint32_t expected_bytes(uint32_t models)
{
    return HEAD_BYTES + 8u * FLARES_T_COUNT + 4u * FLARES_T_GRID
           + models * (16u * FLARES_PE_COLS + 4u * FLARES_T_GRID + 4u * FLARES_T_COUNT * FLARES_PE_COLS);
}

int flares_tables_decode(const volatile uint8_t *b, uint32_t len, flares_tables_t *out)
{
    uint32_t models, m, i, j;
    const volatile uint8_t *p;
    if (len < HEAD_BYTES)
        return -1;
    models = b[1];
    /* this build's engine and grids, or nothing: tables made for another codeword or t range would
     * pick t the decoder cannot give */
    if (b[0] != FORMAT || models < 1u || models > FLARES_MODELS_MAX || b[2] != FLARES_GF_M || b[3] != FLARES_T_MIN
        || b[4] != FLARES_T_MAX || b[5] != FLARES_PE_COLS || b[6] != FLARES_T_GRID
        || le(b + 7, 2) != FLARES_CODEWORD_BYTES || le(b + 9, 2) != FLARES_PE_STEP || len != expected_bytes(models))
        return -1;
    p = b + HEAD_BYTES + 8u * FLARES_T_COUNT;
    for (i = 0; i < FLARES_T_GRID; i++) /* rising from above 0: the time lookup divides by its steps */
        if (le(p + 4u * i, 4) <= (i ? le(p + 4u * (i - 1u), 4) : 0u))
            return -1;
    p = b + HEAD_BYTES;
    out->models = models;
    for (i = 0; i < FLARES_T_COUNT; i++, p += 8)
        out->corr_rber_max[i] = le(p, 8);
    for (i = 0; i < FLARES_T_GRID; i++, p += 4)
        out->t_grid[i] = (uint32_t)le(p, 4);
    for (m = 0; m < models; m++) {
        flares_model_t *d = &out->model[m];
        for (i = 0; i < FLARES_PE_COLS; i++, p += 8)
            d->rber_wr[i] = le(p, 8);
        for (i = 0; i < FLARES_PE_COLS; i++, p += 8)
            d->rd_pe[i] = le(p, 8);
        for (i = 0; i < FLARES_T_GRID; i++, p += 4)
            d->rd_t[i] = (uint32_t)le(p, 4);
        for (i = 0; i < FLARES_T_COUNT; i++)
            for (j = 0; j < FLARES_PE_COLS; j++, p += 4)
                d->max_ret_time_min[i][j] = (uint32_t)le(p, 4);
    }
    return 0;
}
