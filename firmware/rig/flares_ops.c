#include "page_io.h"
#include "ecc_layout.h"
#include "flares_ops.h"
#include "pattern.h"
#include "profiles.h"

#if FLARES_CODEWORD_BYTES != RIG_CODEWORD_BYTES
#error "rig_flares_tables.h must be generated for the rig's codewords (nandrig tables --codeword-bytes 2048)"
#endif
#if FLARES_T_MAX != RIG_TABLES_T_MAX || FLARES_PE_STEP != RIG_TABLES_PE_STEP || FLARES_PE_COLS != RIG_TABLES_PE_COLS
#error "rig_flares_tables.h must have the t range and P/E grid the protocol promises hosts (RIG_TABLES_*)"
#endif
#if FLARES_MODELS_MAX != FLARES_TABLES_MODELS
#error "the FLARES module and the protocol disagree on how many models a table set holds"
#endif
#if FLARES_PPROF_BYTES != ECC_PROFILE_BYTES
#error "the page profile record must fill the ECC layout's profile slot"
#endif

static flares_config_t fcfg;
/* the tables FLARES decides with: the compiled-in set until FLARES_TABLES loads one (RAM: a power cycle
 * or reset loses it, which FLARES_CONFIG's tables_source tells the host) */
static flares_tables_t tables;
static flares_types_t types; /* guarded FLARES' counts per page type */
static uint8_t tables_source;
static uint32_t tables_crc;
/* 25 degC-equivalent seconds the data aged beyond the rig's clock (bakes), as the host last set it (FLARES_CLOCK) */
static uint64_t clock_credit_s;

/* every page's window and every page type's counts: kept under other constants or tables, they would mix */
static void forget(void)
{
	flares_types_t z = {{0}, {0}, {0}};
	profiles_clear();
	types = z;
}

static void tables_builtin(void)
{
	flares_tables_builtin(&tables);
	tables_source = TABLES_BUILTIN;
	tables_crc = 0;
}

/* the page type the host names (the chip's page map): with two models, upper pages have their own
 * (FLARES_PROGRAM and FLARES_READ name it with one bit, UPPER_PAGE_FLAG in the spec) */
static uint8_t page_type(uint8_t flags)
{
	return flags & FLARES_PROGRAM_FLAG_UPPER_PAGE ? FLARES_PAGE_UPPER : FLARES_PAGE_LOWER;
}

/* FLARES keeps time in whole seconds of the rig's clock and the bakes' credit, modulo 2**32 (ages are taken modulo
 * it too, so the wrap costs nothing) */
static uint32_t now_s(void) { return (uint32_t)(rig_clock_ns() / 1000000000u + clock_credit_s); }

void flares_defaults(void)
{
	flares_config_t c = {100, 500, 50, 3, 5, 15, 365u * 24u * 3600u, 0, 0, 0, 20, 750, &tables, &types};
	tables_builtin();
	fcfg = c;
	fcfg.t_cap = rig.t_max < FLARES_T_MAX ? rig.t_max : (uint8_t)FLARES_T_MAX;
	clock_credit_s = 0;
	forget();
}

static void decision(uint8_t *out, uint8_t t, const flares_decision_t *d, uint8_t extra)
{
	SET_FLARES_DECISION_T(out, t);
	SET_FLARES_DECISION_ZONE(out, d->zone);
	SET_FLARES_DECISION_P(out, d->p);
	SET_FLARES_DECISION_FLAGS(out, (d->alarm ? DECIDE_ALARM : 0) | (d->invalidate ? DECIDE_INVALIDATE : 0) |
	                               (d->beyond ? DECIDE_BEYOND_REACH : 0) | extra);
}

uint32_t cmd_flares_config(const struct request *q, uint8_t *out, int *st)
{
	const uint8_t *p = q->payload;
	uint8_t guarded = q->len >= FLARES_CONFIG_REQ_BYTES && FLARES_CONFIG_REQ_FLAGS(p) & FLARES_CONFIG_FLAG_GUARDED;
	const uint8_t *g = p + FLARES_CONFIG_REQ_BYTES; /* the guarded constants follow, with GUARDED */
	if (q->len != FLARES_CONFIG_REQ_BYTES + (guarded ? FLARES_GUARD_REQ_BYTES : 0u))
		FAIL(E_BAD_FRAME);
	flares_config_t c = {FLARES_CONFIG_REQ_WSIZE(p), FLARES_CONFIG_REQ_MIX_PM(p), FLARES_CONFIG_REQ_SAFERANGE_PM(p),
	                     FLARES_CONFIG_REQ_MAXFAIL(p), FLARES_CONFIG_REQ_MAXCRITICAL(p), FLARES_CONFIG_REQ_MAXOVER(p),
	                     FLARES_CONFIG_REQ_REQ_RET_S(p), fcfg.t_cap,
	                     (uint8_t)(FLARES_CONFIG_REQ_FLAGS(p) & FLARES_CONFIG_FLAG_EVALUATE_ON_ALARM), guarded,
	                     guarded ? FLARES_GUARD_REQ_GUARD_Z10(g) : 0u, guarded ? FLARES_GUARD_REQ_ALARM_USE_PM(g) : 0u,
	                     &tables, &types};
	if (!rig.t_max)
		FAIL(E_UNSUPPORTED);
	if (c.wsize < 1 || c.wsize > FLARES_WSIZE_MAX || c.mix_pm > PERMILLE_MAX || c.saferange_pm > PERMILLE_MAX
	    || c.guard_z10 > FLARES_GUARD_Z10_MAX || c.alarm_use_pm > PERMILLE_MAX
	    || FLARES_CONFIG_REQ_FLAGS(p) & ~FLARES_CONFIG_FLAGS_ALL)
		FAIL(E_BAD_PARAMETER);
	fcfg = c;
	forget();  /* new constants, new windows: counters from before would mix the two */
	SET_FLARES_CONFIG_REPLY_T_MIN(out, FLARES_T_MIN);
	SET_FLARES_CONFIG_REPLY_T_CAP(out, fcfg.t_cap);
	SET_FLARES_CONFIG_REPLY_PROFILE_SLOTS(out, PROFILE_SLOTS);
	SET_FLARES_CONFIG_REPLY_TABLES_SOURCE(out, tables_source);
	SET_FLARES_CONFIG_REPLY_TABLES_CRC(out, tables_crc);
	return FLARES_CONFIG_REPLY_BYTES;
}

/* a total, not an increment: a repeated request (a retry, a resumed campaign) leaves the clock as it was */
uint32_t cmd_flares_clock(const struct request *q, uint8_t *out, int *st)
{
	if (q->len != FLARES_CLOCK_REQ_BYTES)
		FAIL(E_BAD_FRAME);
	if (!rig.t_max)
		FAIL(E_UNSUPPORTED);
	clock_credit_s = FLARES_CLOCK_REQ_CREDIT_S(q->payload);
	SET_FLARES_CLOCK_REPLY_NOW_S(out, now_s());
	return FLARES_CLOCK_REPLY_BYTES;
}

/* chunks are staged in the page buffer (RAM holds one table set: the one in use); COMMIT checks the whole
 * staged set (CRC-32, then this build's dimensions) before it replaces the tables, so a failed or
 * interrupted load (a page operation between chunks overwrites the stage) leaves the old ones in use */
uint32_t cmd_flares_tables(const struct request *q, uint8_t *out, int *st)
{
	if (q->len < FLARES_TABLES_REQ_BYTES)
		FAIL(E_BAD_FRAME);
	const uint8_t *p = q->payload;
	uint32_t offset = FLARES_TABLES_REQ_OFFSET(p), total = FLARES_TABLES_REQ_TOTAL(p);
	uint32_t n = q->len - FLARES_TABLES_REQ_BYTES;
	uint8_t flags = FLARES_TABLES_REQ_FLAGS(p);
	if (!rig.t_max)
		FAIL(E_UNSUPPORTED);
	if (flags & ~FLARES_TABLES_FLAGS_ALL || ((flags & FLARES_TABLES_FLAG_BUILTIN) && (n || flags != FLARES_TABLES_FLAG_BUILTIN)))
		FAIL(E_BAD_PARAMETER);
	if (offset > PAGE_BUFFER_BYTES || n > PAGE_BUFFER_BYTES - offset || total > PAGE_BUFFER_BYTES)
		FAIL(E_OUT_OF_RANGE);
	volatile uint8_t *buf = onfi_buffer();
	for (uint32_t i = 0; i < n; i++)
		buf[offset + i] = p[FLARES_TABLES_REQ_BYTES + i];
	if (flags & FLARES_TABLES_FLAG_BUILTIN) {
		tables_builtin();
		forget();
	} else if (flags & FLARES_TABLES_FLAG_COMMIT) {
		uint32_t crc = 0;
		for (uint32_t i = 0; i < total; i++) {
			uint8_t b = buf[i];
			crc = crc32_update(crc, &b, 1);
		}
		if (crc != FLARES_TABLES_REQ_CRC(p) || flares_tables_decode(buf, total, &tables))
			FAIL(E_BAD_PARAMETER);
		tables_source = TABLES_LOADED;
		tables_crc = crc;
		forget();  /* windows measured under the old model would mix with the new */
	}
	SET_FLARES_TABLES_REPLY_SOURCE(out, tables_source);
	SET_FLARES_TABLES_REPLY_MODELS(out, tables.models);
	SET_FLARES_TABLES_REPLY_CRC(out, tables_crc);
	return FLARES_TABLES_REPLY_BYTES;
}

uint32_t cmd_flares_program(const struct request *q, uint8_t *out, int *st)
{
	NEED(FLARES_PROGRAM_REQ);
	uint32_t block = FLARES_PROGRAM_REQ_BLOCK(q->payload), page = FLARES_PROGRAM_REQ_PAGE(q->payload);
	uint8_t flags = FLARES_PROGRAM_REQ_FLAGS(q->payload);
	uint32_t seed = page_seed(FLARES_PROGRAM_REQ_PATTERN_SEED(q->payload), block, page);
	uint32_t pe = FLARES_PROGRAM_REQ_PE(q->payload);
	if (!rig.t_max)
		FAIL(E_UNSUPPORTED);
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~FLARES_PROGRAM_FLAGS_ALL || pe == 0 || pe > FLARES_PE_MAX)
		FAIL(E_BAD_PARAMETER);
	uint8_t type = page_type(flags);
	if (is_bad(block) && !(flags & FLARES_PROGRAM_FLAG_FORCE))
		FAIL(E_BAD_BLOCK);
	uint8_t extra = 0;
	flares_pprof_t *pp = profiles_find(block, page);
	if (!pp) {
		if (!(pp = profiles_add(block, page)))
			FAIL(E_NO_SPACE);
		flares_new_page(pp, flares_cold_start(&fcfg, type, pe), pe - 1);
		extra = DECIDE_NEW_PROFILE | (flares_cold_start_beyond(&fcfg, type, pe) ? DECIDE_BEYOND_REACH : 0);
	}
	pp->pecycles = pe - 1;  /* the host counts the block's wear; upPage adds this program */
	flares_decision_t d;
	flares_up_page(&fcfg, pp, type, FLARES_ACCESS_PROGRAM, 0, 0, now_s(), 0, 0, &d);
	uint8_t rec[FLARES_PPROF_BYTES];
	flares_pprof_pack(pp, rec);
	ecc_fill_pattern(seed, raw_bytes());
	ecc_encode_page(rig.chip, pp->p_cur, rec);
	uint32_t n = chip_result(out, onfi_program(rig.chip, block, page, ONFI_SRC_BUFFER, 0, raw_bytes()), st);
	if (!n)
		return 0;
	decision(out + n, pp->p_cur, &d, extra);
	return n + FLARES_DECISION_BYTES;
}

/* the page's profile from the spare as read, into a RAM slot; its source */
static uint8_t profile_from_spare(uint32_t block, uint32_t page, flares_pprof_t **pp)
{
	uint8_t rec[FLARES_PPROF_BYTES];
	flares_pprof_t disk;
	ecc_read_profile(rig.chip, rec);
	int n = flares_pprof_unpack(rec, &disk);
	if (n == -2)
		return PROFILE_SOURCE_NONE;
	if (n < 0 || disk.p_cur < FLARES_T_MIN || disk.p_cur > fcfg.t_cap)
		return PROFILE_SOURCE_UNREADABLE;
	*pp = profiles_add(block, page);  /* the caller checked there is room */
	flares_new_page(*pp, disk.p_cur, disk.pecycles);
	(*pp)->writestamp = disk.writestamp;
	return PROFILE_SOURCE_SPARE;
}

uint32_t cmd_flares_read(const struct request *q, uint8_t *out, int *st)
{
	NEED(FLARES_READ_REQ);
	uint32_t block = FLARES_READ_REQ_BLOCK(q->payload), page = FLARES_READ_REQ_PAGE(q->payload);
	uint8_t flags = FLARES_READ_REQ_FLAGS(q->payload);
	uint32_t seed = page_seed(FLARES_READ_REQ_PATTERN_SEED(q->payload), block, page);
	if (!rig.t_max)
		FAIL(E_UNSUPPORTED);
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~FLARES_READ_FLAGS_ALL)
		FAIL(E_BAD_PARAMETER);
	uint8_t type = page_type(flags);
	flags &= READ_FLAGS_ALL;
	flares_pprof_t *pp = profiles_find(block, page);
	if (!pp && profiles_used() == PROFILE_SLOTS)
		FAIL(E_NO_SPACE);
	struct op_result r = read_page(block, page, flags, seed);
	if (r.timed_out)
		FAIL(E_TIMEOUT);
	uint8_t source = pp ? PROFILE_SOURCE_RAM : profile_from_spare(block, page, &pp);
	uint8_t t = pp ? pp->p_cur : 0;
	struct decoded dec = {0, 0};
	uint32_t head = FLARES_DECISION_BYTES + FLARES_READ_TAIL_BYTES;
	uint32_t n = ecc_read_reply(rig.chip, r, t, flags, seed, out + head, &dec);
	flares_decision_t d = {0, 0, 0, 0, 0};
	uint32_t n_data = rig.chip->page_bytes / RIG_CODEWORD_BYTES, deterr = 0;
	if (pp) {  /* FLARES' error count: the mean over the page's codewords, rounded up */
		deterr = (dec.corrected + n_data - 1) / n_data;
		flares_up_page(&fcfg, pp, type, FLARES_ACCESS_READ, (uint16_t)(deterr > 0xFFFF ? 0xFFFF : deterr),
		               dec.failed != 0, now_s(), dec.corrected, (uint8_t)n_data, &d);
	}
	decision(out, t, &d, 0);
	uint8_t *tail = out + FLARES_DECISION_BYTES;
	SET_FLARES_READ_TAIL_SOURCE(tail, source);
	SET_FLARES_READ_TAIL_DETERR(tail, deterr);
	SET_FLARES_READ_TAIL_FAILED(tail, dec.failed);
	return head + n;
}
