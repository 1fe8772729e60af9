/* The chip commands: each checks its request against the spec's limits, runs, fills its reply. */
#include <string.h>
#include "commands.h"
#include "ecc_layout.h"
#include "job.h"
#include "page_io.h"
#include "pattern.h"
#include "supply.h"

/* READ's reply with the raw page: its head, a count per codeword (data, then the spare), the page */
static uint32_t raw_reply_bytes(void)
{
	const struct chip *c = rig.chip;
	uint32_t n_cw = (c->page_bytes + RIG_CODEWORD_BYTES - 1) / RIG_CODEWORD_BYTES + (c->spare_bytes ? 1 : 0);
	return READ_HEAD_BYTES + n_cw * CODEWORD_COUNTS_BYTES + raw_bytes();
}

/* ---- identity ------------------------------------------------------------------------------------ */

/* who holds the rig after a HELLO of this session with these flags (docs/protocol.md) */
static int hold(uint32_t session, uint8_t flags)
{
	if (flags & ~HELLO_FLAGS_ALL)
		return E_BAD_PARAMETER;
	if (flags & HELLO_FLAG_OBSERVE)
		return E_OK;  /* a look: session and holder stay */
	if (flags & HELLO_FLAG_RELEASE) {
		if (session == rig.holder)
			rig.holder = 0;
		return E_OK;
	}
	if (rig.holder != 0 && rig.holder != session && !(flags & HELLO_FLAG_TAKE_OVER))
		return E_HELD;
	rig.session = rig.holder = session;
	return E_OK;
}

uint32_t cmd_hello(const struct request *q, uint8_t *out, int *st)
{
	static const char ident[] = "nandrig-rtl/1.1 firmware";
	/* another major version may lay HELLO out otherwise: its first field is enough to answer it */
	if (q->len != HELLO_REQ_BYTES && (q->len < sizeof(uint16_t) || HELLO_REQ_MAJOR(q->payload) == PROTOCOL_VERSION_MAJOR))
		FAIL(E_BAD_FRAME);
	SET_HELLO_REPLY_MAJOR(out, PROTOCOL_VERSION_MAJOR);
	SET_HELLO_REPLY_MINOR(out, PROTOCOL_VERSION_MINOR);
	SET_HELLO_REPLY_RIG_KIND(out, rig.kind);
	SET_HELLO_REPLY_CAPABILITIES(out, rig.caps);
	SET_HELLO_REPLY_N(out, sizeof ident - 1);
	memcpy(out + HELLO_REPLY_BYTES, ident, sizeof ident - 1);
	if (HELLO_REQ_MAJOR(q->payload) != PROTOCOL_VERSION_MAJOR)
		*st = E_VERSION_MISMATCH;
	else if ((*st = hold(HELLO_REQ_SESSION(q->payload), HELLO_REQ_FLAGS(q->payload))) == E_OK
	         && rig.session == HELLO_REQ_SESSION(q->payload))
		rig.streaming = HELLO_REQ_MINOR(q->payload) >= STREAMED_SINCE_MINOR;
	SET_HELLO_REPLY_HOLDER(out, rig.holder);
	SET_HELLO_REPLY_BOOT(out, rig_boot());
	return HELLO_REPLY_BYTES + sizeof ident - 1;
}

uint32_t cmd_info(const struct request *q, uint8_t *out, int *st)
{
	const struct chip *c = rig.chip;
	NEED(EMPTY_REQ);
	memcpy(out + INFO_REPLY_READ_ID_OFFSET, c->id, INFO_REPLY_READ_ID_SIZE);
	memcpy(out + INFO_REPLY_MANUFACTURER_OFFSET, c->manufacturer, INFO_REPLY_MANUFACTURER_SIZE);
	memcpy(out + INFO_REPLY_MODEL_OFFSET, c->model, INFO_REPLY_MODEL_SIZE);
	SET_INFO_REPLY_PAGE_BYTES(out, c->page_bytes);
	SET_INFO_REPLY_SPARE_BYTES(out, c->spare_bytes);
	SET_INFO_REPLY_PAGES_PER_BLOCK(out, c->pages_per_block);
	SET_INFO_REPLY_BLOCKS(out, c->blocks);
	SET_INFO_REPLY_BITS_PER_CELL(out, c->bits_per_cell);
	SET_INFO_REPLY_TIMING_MODES(out, c->timing_modes);
	SET_INFO_REPLY_TIMING_MODE(out, c->mode);
	SET_INFO_REPLY_ECC_BITS(out, c->ecc_bits);
	SET_INFO_REPLY_CODEWORD_BYTES(out, RIG_CODEWORD_BYTES);
	SET_INFO_REPLY_T_MAX(out, rig.t_max);
	SET_INFO_REPLY_CAPABILITIES(out, rig.caps);
	SET_INFO_REPLY_CAPTURE(out, c->capture);
	SET_INFO_REPLY_RD_TRIM(out, c->rd_trim);
	SET_INFO_REPLY_TRIM_PASS(out, c->trim_pass);
	SET_INFO_REPLY_HAS_UNIQUE_ID(out, c->has_uid);
	memcpy(out + INFO_REPLY_UNIQUE_ID_OFFSET, c->uid, INFO_REPLY_UNIQUE_ID_SIZE);
	SET_INFO_REPLY_ECC_STEP_BYTES(out, c->ecc_step_bytes);
	SET_INFO_REPLY_LUNS(out, c->luns);
	SET_INFO_REPLY_PARAM_STATUS(out, c->param_status);
	SET_INFO_REPLY_CAPTURE_STEP_PS(out, c->capture_step_ps);
	SET_INFO_REPLY_TARGET(out, q->target);
	SET_INFO_REPLY_TARGETS(out, rig.targets);
	return INFO_REPLY_BYTES;
}

uint32_t cmd_reset(const struct request *q, uint8_t *out, int *st)
{
	NEED(EMPTY_REQ);
	struct op_result r = onfi_reset();
	rig.chip->mode = 0;
	if (r.timed_out)
		FAIL(E_TIMEOUT);
	if (rig.chip->capture == CAPTURE_CALIBRATED)  /* back in mode 0: its own capture point */
		onfi_calibrate(rig.chip);
	SET_BYTE_REPLY_VALUE(out, r.status);
	return BYTE_REPLY_BYTES;
}

uint32_t cmd_read_id(const struct request *q, uint8_t *out, int *st)
{
	NEED(READ_ID_REQ);
	uint8_t address = READ_ID_REQ_ADDRESS(q->payload);
	int n = address == 0x00 ? READ_ID_BYTES : READ_ID_ONFI_BYTES;
	if (onfi_read_id(address, out + READ_ID_HEAD_BYTES, n) < 0)
		FAIL(E_TIMEOUT);
	SET_READ_ID_HEAD_N(out, n);
	return READ_ID_HEAD_BYTES + (uint32_t)n;
}

uint32_t cmd_read_param_page(const struct request *q, uint8_t *out, int *st)
{
	NEED(EMPTY_REQ);
	if (onfi_read_param(out))
		FAIL(E_TIMEOUT);
	return PARAM_PAGE_REPLY_BYTES;
}

uint32_t cmd_scan_bad(const struct request *q, uint8_t *out, int *st)
{
	NEED(SCAN_BAD_REQ);
	uint32_t first = SCAN_BAD_REQ_FIRST_BLOCK(q->payload), count = SCAN_BAD_REQ_COUNT(q->payload);
	if (count > SCAN_BAD_MAX_BLOCKS || check_blocks(first, count))
		FAIL(E_OUT_OF_RANGE);
	uint32_t n = (count + 7) / 8;
	memset(out, 0, n);
	job_start(q, count);
	for (uint32_t i = 0; i < count && !job_poll(); i++, job.done++)
		if (is_bad(first + i))
			out[i / 8] |= (uint8_t)(1 << (i % 8));
	return job_end(st, 0, n);
}

/* ---- single operations --------------------------------------------------------------------------- */

uint32_t cmd_erase(const struct request *q, uint8_t *out, int *st)
{
	NEED(ERASE_REQ);
	uint32_t block = ERASE_REQ_BLOCK(q->payload);
	uint8_t flags = ERASE_REQ_FLAGS(q->payload);
	if (check_blocks(block, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~ERASE_FLAGS_ALL)
		FAIL(E_BAD_PARAMETER);
	if (is_bad(block) && !(flags & ERASE_FLAG_FORCE))
		FAIL(E_BAD_BLOCK);
	return chip_result(out, onfi_erase(rig.chip, block), st);
}

uint32_t cmd_program(const struct request *q, uint8_t *out, int *st)
{
	if (q->len < PROGRAM_HEAD_BYTES)
		FAIL(E_BAD_FRAME);
	uint32_t block = PROGRAM_HEAD_BLOCK(q->payload), page = PROGRAM_HEAD_PAGE(q->payload);
	uint8_t t = PROGRAM_HEAD_T(q->payload), flags = PROGRAM_HEAD_FLAGS(q->payload);
	const uint8_t *rest = q->payload + PROGRAM_HEAD_BYTES;
	uint32_t n = q->len - PROGRAM_HEAD_BYTES;
	int explicit_data = flags & PROGRAM_FLAG_EXPLICIT;
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~PROGRAM_FLAGS_ALL || t > rig.t_max)
		FAIL(E_BAD_PARAMETER);
	if (explicit_data ? (n == 0 || n > raw_bytes()) : n != PATTERN_SEED_BYTES)
		FAIL(E_BAD_FRAME);
	if (is_bad(block) && !(flags & PROGRAM_FLAG_FORCE))
		FAIL(E_BAD_BLOCK);
	uint32_t seed = explicit_data ? 0 : page_seed(PATTERN_SEED_PATTERN_SEED(rest), block, page);
	if (t == 0 && !explicit_data)
		return chip_result(out, onfi_program(rig.chip, block, page, ONFI_SRC_PRBS, seed, raw_bytes()), st);
	if (explicit_data) {
		volatile uint8_t *buf = onfi_buffer();
		for (uint32_t i = 0; i < raw_bytes(); i++)
			buf[i] = i < n ? rest[i] : 0xFF;
	} else {
		ecc_fill_pattern(seed, raw_bytes());
	}
	if (t)
		ecc_encode_page(rig.chip, t, 0);
	return chip_result(out, onfi_program(rig.chip, block, page, ONFI_SRC_BUFFER, 0, raw_bytes()), st);
}

uint32_t cmd_read(const struct request *q, uint8_t *out, int *st)
{
	NEED(READ_REQ);
	uint32_t block = READ_REQ_BLOCK(q->payload), page = READ_REQ_PAGE(q->payload);
	uint8_t t = READ_REQ_T(q->payload), flags = READ_REQ_FLAGS(q->payload);
	uint32_t seed = page_seed(READ_REQ_PATTERN_SEED(q->payload), block, page);
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~READ_FLAGS_ALL || t > rig.t_max || (flags & READ_FLAG_RAW && raw_reply_bytes() > MAX_PAYLOAD))
		FAIL(E_BAD_PARAMETER);
	struct op_result r = read_page(block, page, flags, seed);
	if (r.timed_out)
		FAIL(E_TIMEOUT);
	struct decoded d = {0, 0};
	return ecc_read_reply(rig.chip, r, t, flags, seed, out, &d);
}

/* the page as the last READ left it in the buffer: what a page too large for READ's raw reply is read by */
uint32_t cmd_read_buffer(const struct request *q, uint8_t *out, int *st)
{
	NEED(READ_BUFFER_REQ);
	uint32_t offset = READ_BUFFER_REQ_OFFSET(q->payload), count = READ_BUFFER_REQ_COUNT(q->payload);
	if (!rig.chip->blocks || count < 1 || count > MAX_PAYLOAD || offset + count > raw_bytes())
		FAIL(E_OUT_OF_RANGE);
	volatile uint8_t *buf = onfi_buffer();
	for (uint32_t i = 0; i < count; i++)
		out[i] = buf[offset + i];
	return count;
}

/* three offsets through one of the chip design's features (its read references, its verify levels):
 * UNSUPPORTED without it, BAD_PARAMETER outside its range, either before the chip is touched */
static uint32_t set_offsets(const struct offset_feature *f, const int8_t off[RETRY_REFERENCES], uint8_t *out, int *st)
{
	if (!f || !f->n_writes)
		FAIL(E_UNSUPPORTED);
	for (int i = 0; i < RETRY_REFERENCES; i++)
		if (off[i] < f->min_offset || off[i] > f->max_offset)
			FAIL(E_BAD_PARAMETER);
	struct op_result r = {0};
	for (int w = 0; w < f->n_writes; w++) {
		const struct offset_write *x = &f->writes[w];
		uint32_t params = 0;
		for (int k = 0; k < 4; k++)
			params |= (uint32_t)(x->source[k] ? (uint8_t)off[x->source[k] - 1] : x->value[k]) << (8 * k);
		r = onfi_set_feature(x->address, params);
		if (r.timed_out)
			FAIL(E_TIMEOUT);
	}
	SET_BYTE_REPLY_VALUE(out, r.status);
	return BYTE_REPLY_BYTES;
}

static uint32_t set_read_refs(const int8_t off[RETRY_REFERENCES], uint8_t *out, int *st)
{
	const struct retry_table *t = retry_table(rig.chip->retry);
	return set_offsets(t ? &t->refs : 0, off, out, st);
}

uint32_t cmd_set_read_offset(const struct request *q, uint8_t *out, int *st)
{
	NEED(SET_READ_OFFSET_REQ);
	int8_t o = SET_READ_OFFSET_REQ_OFFSET(q->payload);
	const int8_t off[RETRY_REFERENCES] = {o, o, o};
	return set_read_refs(off, out, st);
}

uint32_t cmd_set_read_refs(const struct request *q, uint8_t *out, int *st)
{
	NEED(SET_READ_REFS_REQ);
	const int8_t off[RETRY_REFERENCES] = {SET_READ_REFS_REQ_VR1(q->payload), SET_READ_REFS_REQ_VR2(q->payload),
	                                      SET_READ_REFS_REQ_VR3(q->payload)};
	return set_read_refs(off, out, st);
}

uint32_t cmd_set_verify_levels(const struct request *q, uint8_t *out, int *st)
{
	NEED(SET_VERIFY_LEVELS_REQ);
	const int8_t off[RETRY_REFERENCES] = {SET_VERIFY_LEVELS_REQ_PV1(q->payload), SET_VERIFY_LEVELS_REQ_PV2(q->payload),
	                                      SET_VERIFY_LEVELS_REQ_PV3(q->payload)};
	const struct retry_table *t = retry_table(rig.chip->retry);
	return set_offsets(t ? &t->verify : 0, off, out, st);
}

/* ---- loops at chip speed ------------------------------------------------------------------------- */

static uint16_t saturate16(uint32_t v) { return v > 0xFFFF ? 0xFFFF : (uint16_t)v; }

/* a measured page's counts, kept until the chip is moving the next page: writing them into the reply took 7.8 us
 * of each cache-read page's turn on the ULX3S's 50 MHz CPU (2026-12-03), now hidden behind the next transfer */
struct page_count {
	uint8_t *at;  /* its record in the reply; 0: nothing kept */
	uint32_t e10, e01, busy_ns;
};

static void put_page_count(struct page_count *c)
{
	if (!c->at)
		return;
	SET_MEASURE_PAGE_ERR_1TO0(c->at, saturate16(c->e10));
	SET_MEASURE_PAGE_ERR_0TO1(c->at, saturate16(c->e01));
	SET_MEASURE_PAGE_BUSY_NS(c->at, c->busy_ns);
	c->at = 0;
}

uint32_t cmd_measure(const struct request *q, uint8_t *out, int *st)
{
	NEED(MEASURE_REQ);
	uint32_t first = MEASURE_REQ_FIRST_BLOCK(q->payload), n = MEASURE_REQ_N_BLOCKS(q->payload);
	uint32_t page0 = MEASURE_REQ_FIRST_PAGE(q->payload), pages = MEASURE_REQ_N_PAGES(q->payload);
	uint32_t seed = MEASURE_REQ_PATTERN_SEED(q->payload);
	uint8_t flags = MEASURE_REQ_FLAGS(q->payload);
	if (flags & ~MEASURE_FLAGS_ALL)
		FAIL(E_BAD_PARAMETER);
	if (check_blocks(first, n) || check_pages(page0, pages))
		FAIL(E_OUT_OF_RANGE);
	if (n * pages * MEASURE_PAGE_BYTES > MAX_PAYLOAD)
		FAIL(E_BAD_PARAMETER);
	/* a cache read hides each next page's array time behind this page's transfer, and with it that page's tR */
	int cache = !(flags & MEASURE_FLAG_TIMED) && pages > 1 && (rig.chip->optional_commands & ONFI_OPT_READ_CACHE);
	uint8_t *p = out;
	int timed_out = 0;
	struct page_count done = {0};
	job_start(q, n * pages);
	for (uint32_t b = first; b < first + n && !timed_out && !job_poll(); b++) {
		uint32_t next = page_seed(seed, b, page0);
		for (uint32_t pg = page0; pg < page0 + pages && !timed_out; pg++, p += MEASURE_PAGE_BYTES, job.done++) {
			int cached = cache && pg != page0;  /* the first page by a plain read: its tR */
			if (cached)
				onfi_begin_read_cache(pg + 1 == page0 + pages, ONFI_SRC_PRBS, next, raw_bytes(), RIG_CODEWORD_BYTES);
			else
				onfi_begin_read(rig.chip, b, pg, ONFI_SRC_PRBS, next, raw_bytes(), RIG_CODEWORD_BYTES);
			put_page_count(&done);  /* while the chip reads */
			job_output((uint32_t)(p - out));
			next = page_seed(seed, b, pg + 1);
			struct op_result r = onfi_finish();
			if ((timed_out = r.timed_out))
				break;
			done = (struct page_count){p, 0, 0, cached ? BUSY_NOT_SEEN : r.busy_ns};
			onfi_totals(&done.e10, &done.e01);  /* before the next operation clears them */
			if (cache && !cached)  /* the cache read begins once the first page is counted */
				timed_out = onfi_read_cache_start().timed_out;
		}
	}
	put_page_count(&done);
	return job_end(st, timed_out, (uint32_t)(p - out));
}

uint32_t cmd_read_disturb(const struct request *q, uint8_t *out, int *st)
{
	NEED(READ_DISTURB_REQ);
	uint32_t block = READ_DISTURB_REQ_BLOCK(q->payload), page = READ_DISTURB_REQ_PAGE(q->payload);
	uint32_t reads = READ_DISTURB_REQ_READS(q->payload);
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	uint64_t busy = 0;
	int timed_out = 0;
	job_start(q, reads);
	/* the array read is the stress; one byte crosses the bus so the read completes as usual */
	for (; job.done < reads && !job_poll(); job.done++) {
		struct op_result r = onfi_read(rig.chip, block, page, ONFI_SRC_BUFFER, 0, 1, RIG_CODEWORD_BYTES);
		if ((timed_out = r.timed_out))
			break;
		busy += r.busy_ns;
	}
	SET_READ_DISTURB_REPLY_READS_DONE(out, job.done);
	SET_READ_DISTURB_REPLY_BUSY_US(out, busy / 1000 > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)(busy / 1000));
	return job_end(st, timed_out, READ_DISTURB_REPLY_BYTES);
}

/* ---- the rig's clock and jobs -------------------------------------------------------------------- */

uint32_t cmd_time(const struct request *q, uint8_t *out, int *st)
{
	NEED(EMPTY_REQ);
	SET_CLOCK_REPLY_RIG_CLOCK_NS(out, rig_clock_ns());
	return CLOCK_REPLY_BYTES;
}

uint32_t cmd_advance(const struct request *q, uint8_t *out, int *st)
{
	NEED(ADVANCE_REQ);
	int16_t temp = ADVANCE_REQ_TEMP_CENTI_C(q->payload);
	if (!(rig.caps & CAP_VIRTUAL_TIME))
		FAIL(E_UNSUPPORTED);
	if (temp < ADVANCE_TEMP_MIN_CENTI_C || temp > ADVANCE_TEMP_MAX_CENTI_C)
		FAIL(E_BAD_PARAMETER);
	rig_advance(ADVANCE_REQ_NS(q->payload), temp);
	SET_CLOCK_REPLY_RIG_CLOCK_NS(out, rig_clock_ns());
	return CLOCK_REPLY_BYTES;
}

uint32_t cmd_energy(const struct request *q, uint8_t *out, int *st)
{
	NEED(EMPTY_REQ);
	if (!supply_present())
		FAIL(E_UNSUPPORTED);
	struct supply_reading r;
	supply_take(&r);
	SET_ENERGY_REPLY_BUSY_PJ(out, r.busy_pj);
	SET_ENERGY_REPLY_BUSY_NS(out, r.busy_ns);
	SET_ENERGY_REPLY_TRANSFER_PJ(out, r.transfer_pj);
	SET_ENERGY_REPLY_TRANSFER_NS(out, r.transfer_ns);
	SET_ENERGY_REPLY_IDLE_UW(out, r.idle_uw);
	return ENERGY_REPLY_BYTES;
}
