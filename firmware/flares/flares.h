/* FLARES: per-page adaptive ECC strength (Indaco et al., TACO 2014), fixed point, no allocation.
 *
 * The same decisions as nandrig.characterization.flares (tests compare them).
 * RBERs are Q48 (value / 2^48), MIX and SAFERANGE per mille, times in seconds.
 * Decisions use the tables the configuration points to: a copy of those compiled in from flares_tables.h
 * (`nandrig tables --c-header`; the build's dimensions come from it too), or tables received at run time
 * (flares_tables_decode). One model for every page, or one per page type, chosen by the page_type each
 * call names.
 */
#ifndef NANDRIG_FLARES_H
#define NANDRIG_FLARES_H

#include <stdint.h>

/* the tables: flares_tables.h on the include path, or the header a build names (the rig's) */
#ifndef FLARES_TABLES_HEADER
#define FLARES_TABLES_HEADER "flares_tables.h"
#endif
#include FLARES_TABLES_HEADER

#define FLARES_MODELS_MAX 2u

/* one model's tables, in the build's dimensions */
typedef struct {
    uint64_t rber_wr[FLARES_PE_COLS];
    uint64_t rd_pe[FLARES_PE_COLS];
    uint32_t rd_t[FLARES_T_GRID];
    uint32_t max_ret_time_min[FLARES_T_COUNT][FLARES_PE_COLS];
} flares_model_t;

typedef struct {
    uint32_t models; /* 1: model 0 serves every page; 2: model 0 lower pages, model 1 upper pages */
    uint64_t corr_rber_max[FLARES_T_COUNT];
    uint32_t t_grid[FLARES_T_GRID];
    flares_model_t model[FLARES_MODELS_MAX];
} flares_tables_t;

/* the tables compiled in */
void flares_tables_builtin(flares_tables_t *out);
uint32_t flares_tables_bytes(void); /* sizeof, for hosts that allocate one (tests) */
/* tables as FLARES_TABLES carries them (nandrig.characterization.flares_wire): 0 and *out filled, or -1 (out
 * untouched) when the blob is malformed or made for other dimensions than this build's */
int flares_tables_decode(const volatile uint8_t *blob, uint32_t len, flares_tables_t *out);

enum flares_access { FLARES_ACCESS_READ = 0, FLARES_ACCESS_PROGRAM = 1 };

/* nandrig.chip.geometry.PageType */
enum flares_page_type { FLARES_PAGE_LOWER = 0, FLARES_PAGE_UPPER = 1 };

enum flares_zone {
    FLARES_ZONE_NONE = 0,  /* no evaluation this operation */
    FLARES_ZONE_ALARM = 1, /* rewrite alarm: retention beyond max_ret_time */
    FLARES_ZONE_FAILURE = 2,
    FLARES_ZONE_FAST = 3,
    FLARES_ZONE_OVERCORRECTION = 4,
    FLARES_ZONE_CRITICAL = 5,
    FLARES_ZONE_SAFE = 6,
    FLARES_ZONE_MEASURED = 7, /* guarded FLARES: the window's measured errors raised t above FLARES' decision */
};

/* guarded FLARES' online estimate per page type (index: flares_page_type): the errors its reads measured and
 * the errors the model expected of the same reads (Q16), halved together past FLARES_GUARD_MEMORY errors */
typedef struct {
    uint32_t errors[2];
    uint64_t expected_q16[2];
    uint32_t pe_ref[2]; /* the wear the counts were gathered at: they speak for wear within a factor of 2 */
} flares_types_t;

typedef struct {
    uint16_t wsize;
    uint16_t mix_pm;
    uint16_t saferange_pm;
    uint8_t maxfail;
    uint8_t maxcritical;
    uint8_t maxover;
    uint32_t req_ret_s;
    uint8_t t_cap; /* the largest t the rig can use (its spare area, its engine); 0: the tables' t max */
    uint8_t evaluate_on_alarm; /* 1: an alarm does not stop the evaluation (not the paper's Alg. 2) */
    /* guarded FLARES (docs/flares.md): the t a program writes is never below the model's projection, raised by
     * measured errors beyond the model's expectation; a read using more than alarm_use_pm of its t raises a
     * rewrite alarm */
    uint8_t guarded;
    uint8_t guard_z10;     /* the count bounds' z in tenths: k + z*sqrt(k + 1) + z^2 */
    uint16_t alarm_use_pm;
    const flares_tables_t *tables;
    flares_types_t *types; /* guarded FLARES' counts per page type (changed by reads) */
} flares_config_t;

/* p_cur, pecycles and writestamp live in the page's spare area (flares_pprof_pack);
 * the rest in RAM. */
typedef struct {
    uint8_t p_cur : 7; /* t up to 127: the spare record's 7 bits */
    uint8_t counted : 1; /* guarded: the data now on the page is in the type's counts (its first read was) */
    uint8_t p_next;
    uint16_t reads; /* reads whose errors errc holds: meas is per read, not per operation */
    uint32_t pecycles;
    uint32_t writestamp;
    uint16_t errc;
    uint8_t failc; /* saturates at 255 (maxfail is at most 255) */
    uint8_t p_flares; /* guarded: FLARES' own t (its Alg. 2 runs on it, not on p_cur); a program takes the more of
                       * it and the guard's */
    uint8_t overc;
    uint8_t criticalc;
    uint16_t ops;
    uint32_t pe_win; /* pecycles at the last evaluation: the projection looks as far ahead as that window wore */
} flares_pprof_t;
_Static_assert(FLARES_T_MIN + FLARES_T_COUNT - 1u <= 127u, "a profile holds t in 7 bits");
_Static_assert(sizeof(flares_pprof_t) == 24, "1,024 profiles fit the soft-core's SRAM beside the tables");

typedef struct {
    uint8_t zone;
    uint8_t p;
    uint8_t alarm;
    uint8_t invalidate;
    uint8_t beyond; /* the projection needs more than t_cap corrects: density control (pSLC) or retire */
    uint64_t proj;
} flares_decision_t;

/* a profile with no history: encoded at t, its block at wear pe */
void flares_new_page(flares_pprof_t *pp, uint8_t t, uint32_t pe);
/* deterr: FLARES' count (the mean over the read's data codewords, rounded up); errors and codewords: what guarded
 * FLARES counts (the bits corrected over that many codewords; a failed read adds t + 1 for its failure) */
void flares_up_page(const flares_config_t *cfg, flares_pprof_t *pp, uint8_t page_type, uint8_t access,
                    uint16_t deterr, uint8_t fail, uint32_t now, uint32_t errors, uint8_t codewords,
                    flares_decision_t *out);
/* the t for a page with no history at wear pe: the model's projection with a margin of 2, the
 * model's stated accuracy (a measurement corrects it after the first window) */
uint8_t flares_cold_start(const flares_config_t *cfg, uint8_t page_type, uint32_t pe);
/* whether that projection needs more than the rig's t_cap corrects */
uint8_t flares_cold_start_beyond(const flares_config_t *cfg, uint8_t page_type, uint32_t pe);
void flares_evaluate(const flares_config_t *cfg, flares_pprof_t *pp, uint8_t page_type, uint32_t now,
                     flares_decision_t *out);

/* model lookups (exposed for tests) */
uint64_t flares_rber_wr(const flares_tables_t *tab, uint8_t page_type, uint32_t pe);
uint64_t flares_rber_rd(const flares_tables_t *tab, uint8_t page_type, uint32_t pe, uint32_t seconds);
uint8_t flares_t_for(const flares_tables_t *tab, uint64_t proj);

/* the spare-area record: 7 bytes (p_cur 7 bits, pecycles 17 bits, writestamp 32 bits, big-endian)
 * and 5 bytes of BCH parity (t = 5 over GF(2^7), lib/bch.c conventions) */
#define FLARES_PPROF_BYTES 12
void flares_pprof_pack(const flares_pprof_t *pp, uint8_t out[FLARES_PPROF_BYTES]);
/* corrected bit count, -1 uncorrectable, -2 erased (all 0xFF: no profile yet) */
int flares_pprof_unpack(const uint8_t in[FLARES_PPROF_BYTES], flares_pprof_t *pp);

#endif
