#include <string.h>
#include "bch.h"
#include "frame.h"
#include "link.h"
#include "pattern.h"
#include "profiles.h"
#include "server.h"
#include "flares_tables.h"

#define VERSION_MAJOR 1
#define VERSION_MINOR 1
#define CACHE_SIZE 8
#define CODEWORD_BYTES 1024
#define MAX_BLOCKS 8192
#define MAX_CYCLE_BLOCKS 256
#define MAX_ROUNDS 1000000u  /* per CYCLE: longer campaigns send several */
#define ENCODED_MAX (MAX_BODY + MAX_BODY / 254 + 2)
#define PE_MAX 0x1FFFFu  /* the page profile's P/E field */
#define CAP_FLARES 8u    /* HELLO's capability bit, set when the rig can decode */

#if FLARES_CODEWORD_BYTES != CODEWORD_BYTES
#error "flares_tables.h must be generated for the rig's codewords (nandrig tables --codeword-bytes 1024)"
#endif

struct cached {
	int used;
	uint32_t session, crc, len;
	uint16_t seq;
	uint8_t frame[ENCODED_MAX];  /* the encoded reply, delimiter included */
};

struct job {
	uint8_t running, abort, op;
	uint16_t seq;
	uint32_t done, total;
};

static struct chip *chip;
static uint8_t kind;
static uint32_t caps, session;
static uint8_t t_max;  /* the BCH engine's, limited by what the spare area holds */
static flares_config_t fcfg;
static struct cached cache[CACHE_SIZE];
static int cache_next;
static struct job job;
static uint8_t rx[ENCODED_MAX], body[MAX_BODY], reply[MAX_BODY], tx[ENCODED_MAX];
static uint32_t rx_len;
static int rx_overflow;
static uint8_t bad_known[MAX_BLOCKS / 8], bad_mark[MAX_BLOCKS / 8];

/* ---- replies ------------------------------------------------------------------------------ */

/* buf holds the payload at buf + 6; the header and CRC go around it */
static uint32_t encode_reply(const struct request *q, int status, uint8_t *buf, uint32_t n, uint8_t *out)
{
	buf[0] = T_REPLY;
	buf[1] = q->op;
	put_le(buf + 2, q->seq, 2);
	put_le(buf + 4, (uint32_t)status, 2);
	put_le(buf + 6 + n, crc32_of(buf, 6 + n), 4);
	uint32_t len = cobs_encode(buf, 10 + n, out);
	out[len++] = 0;
	return len;
}

/* a short reply sent while a long command holds the main buffers */
static void send_short(const struct request *q, int status, const uint8_t *payload, uint32_t n)
{
	static uint8_t buf[6 + 16 + 4], out[sizeof buf + 2];
	memcpy(buf + 6, payload, n);
	link_write(out, encode_reply(q, status, buf, n, out));
}

static int uncached(uint8_t op)
{
	return op == OP_STATUS || op == OP_ABORT || op == OP_HELLO || op == OP_INFO || op == OP_TIME || op == OP_READ_ID ||
	       op == OP_READ_PARAM_PAGE;
}

/* ---- while a long command runs --------------------------------------------------------------- */

static int take_frame(struct request *q);

static void status_payload(uint8_t *p)
{
	p[0] = job.running;
	p[1] = job.op;
	put_le(p + 2, job.seq, 2);
	put_le(p + 4, job.done, 4);
	put_le(p + 8, job.total, 4);
}

/* Between two block operations: answer STATUS and ABORT, stay silent on a retry of the running
 * request, refuse everything else with BUSY. Returns nonzero once an ABORT arrived. */
static int poll_host(void)
{
	struct request q;
	uint8_t p[12];
	while (take_frame(&q)) {
		if (q.op == OP_STATUS) {
			status_payload(p);
			send_short(&q, E_OK, p, 12);
		} else if (q.op == OP_ABORT) {
			job.abort = 1;
			p[0] = 1;
			send_short(&q, E_OK, p, 1);
		} else if (!(q.seq == job.seq && q.op == job.op)) {
			send_short(&q, E_BUSY, p, 0);
		}
	}
	return job.abort;
}

static void start_job(const struct request *q, uint32_t total)
{
	job.running = 1;
	job.abort = 0;
	job.op = q->op;
	job.seq = q->seq;
	job.done = 0;
	job.total = total;
}

/* A long command ends: a timeout sends no payload, an abort the partial result. */
static uint32_t end_job(int *st, int timed_out, uint32_t n)
{
	job.running = 0;
	if (timed_out) {
		*st = E_TIMEOUT;
		return 0;
	}
	if (job.abort)
		*st = E_ABORTED;
	return n;
}

/* ---- helpers --------------------------------------------------------------------------------- */

static uint32_t raw_bytes(void) { return chip->page_bytes + chip->spare_bytes; }

static int check_blocks(uint32_t first, uint32_t count)
{
	return count >= 1 && first < chip->blocks && count <= chip->blocks - first ? E_OK : E_OUT_OF_RANGE;
}

static int check_pages(uint32_t first, uint32_t count)
{
	return count >= 1 && first < chip->pages_per_block && count <= chip->pages_per_block - first ? E_OK : E_OUT_OF_RANGE;
}

static int is_bad(uint32_t block)
{
	/* the factory mark: page 0's first spare byte, read once before the block is touched */
	if (block >= MAX_BLOCKS)
		return 0;
	if (!(bad_known[block / 8] >> (block % 8) & 1)) {
		onfi_read(chip, block, 0, ONFI_SRC_BUFFER, 0, raw_bytes(), CODEWORD_BYTES);
		if (onfi_buffer()[chip->page_bytes] != 0xFF)
			bad_mark[block / 8] |= (uint8_t)(1 << (block % 8));
		bad_known[block / 8] |= (uint8_t)(1 << (block % 8));
	}
	return bad_mark[block / 8] >> (block % 8) & 1;
}

static uint32_t chip_result(uint8_t *out, struct op_result r, int *status)
{
	out[0] = r.status;
	put_le(out + 1, r.busy_ns, 4);
	*status = r.timed_out ? E_TIMEOUT : (r.status & 1) ? E_CHIP_FAIL : E_OK;
	return r.timed_out ? 0 : 5;
}

/* ---- commands: each fills out[] and returns its length, the status through *st ----------------- */

#define NEED(n) do { if (q->len != (n)) { *st = E_BAD_FRAME; return 0; } } while (0)
#define FAIL(code) do { *st = (code); return 0; } while (0)

static uint32_t op_hello(const struct request *q, uint8_t *out, int *st)
{
	static const char ident[] = "nandrig-rtl/1.1 firmware";
	NEED(8);
	put_le(out, VERSION_MAJOR, 2);
	put_le(out + 2, VERSION_MINOR, 2);
	out[4] = kind;
	put_le(out + 5, caps, 4);
	out[9] = sizeof ident - 1;
	memcpy(out + 10, ident, sizeof ident - 1);
	if (get_le(q->payload, 2) != VERSION_MAJOR)
		*st = E_VERSION_MISMATCH;
	else
		session = (uint32_t)get_le(q->payload + 4, 4);
	return 10 + sizeof ident - 1;
}

static uint32_t op_info(const struct request *q, uint8_t *out, int *st)
{
	NEED(0);
	uint8_t *p = out;
	memcpy(p, chip->id, 5); p += 5;
	memcpy(p, chip->manufacturer, 12); p += 12;
	memcpy(p, chip->model, 20); p += 20;
	put_le(p, chip->page_bytes, 4); p += 4;
	put_le(p, chip->spare_bytes, 2); p += 2;
	put_le(p, chip->pages_per_block, 4); p += 4;
	put_le(p, chip->blocks, 4); p += 4;
	*p++ = chip->bits_per_cell;
	put_le(p, chip->timing_modes, 2); p += 2;
	*p++ = chip->mode;
	*p++ = chip->ecc_bits;
	put_le(p, CODEWORD_BYTES, 2); p += 2;
	*p++ = t_max;
	put_le(p, caps, 4); p += 4;
	return (uint32_t)(p - out);
}

static uint32_t op_reset(const struct request *q, uint8_t *out, int *st)
{
	NEED(0);
	struct op_result r = onfi_reset();
	chip->mode = 0;
	if (r.timed_out)
		FAIL(E_TIMEOUT);
	out[0] = r.status;
	return 1;
}

static uint32_t op_read_id(const struct request *q, uint8_t *out, int *st)
{
	NEED(1);
	int n = q->payload[0] == 0x00 ? 5 : 4;  /* manufacturer + device bytes; "ONFI" at 20h */
	if (onfi_read_id(q->payload[0], out + 1, n) < 0)
		FAIL(E_TIMEOUT);
	out[0] = (uint8_t)n;
	return (uint32_t)n + 1;
}

static uint32_t op_read_param_page(const struct request *q, uint8_t *out, int *st)
{
	NEED(0);
	if (onfi_read_param(out))
		FAIL(E_TIMEOUT);
	return 768;
}

static uint32_t op_scan_bad(const struct request *q, uint8_t *out, int *st)
{
	NEED(6);
	uint32_t first = (uint32_t)get_le(q->payload, 4), count = (uint32_t)get_le(q->payload + 4, 2);
	if (count > 4096 || check_blocks(first, count))
		FAIL(E_OUT_OF_RANGE);
	uint32_t n = (count + 7) / 8;
	memset(out, 0, n);
	start_job(q, count);
	for (uint32_t i = 0; i < count && !poll_host(); i++, job.done++)
		if (is_bad(first + i))
			out[i / 8] |= (uint8_t)(1 << (i % 8));
	return end_job(st, 0, n);
}

static uint32_t op_erase(const struct request *q, uint8_t *out, int *st)
{
	NEED(5);
	uint32_t block = (uint32_t)get_le(q->payload, 4);
	uint8_t flags = q->payload[4];
	if (check_blocks(block, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~1u)
		FAIL(E_BAD_PARAMETER);
	if (is_bad(block) && !(flags & 1))
		FAIL(E_BAD_BLOCK);
	return chip_result(out, onfi_erase(chip, block), st);
}

/* ---- the ECC layout: parity of each data codeword in the spare, after the page profile ---------- */

static uint32_t parity_addr(uint32_t cw, uint8_t t) { return chip->page_bytes + ECC_PARITY_OFFSET + cw * bch_ecc_bytes(t); }

/* spare bytes the layout takes at t: the profile and the parity */
static uint32_t ecc_area_end(uint8_t t) { return parity_addr(chip->page_bytes / CODEWORD_BYTES, t); }

/* the page's pattern in the buffer, for the encoder (the gateware generator feeds the bus only) */
static void fill_pattern(uint32_t seed, uint32_t n)
{
	volatile uint8_t *buf = onfi_buffer();
	uint32_t state = prbs31_init(seed);
	for (uint32_t i = 0; i < n; i++)
		buf[i] = prbs31_next(&state);
}

/* profile: the FLARES record for the spare, or 0 for none (erased bytes) */
static void encode_page(uint8_t t, const uint8_t *profile)
{
	volatile uint8_t *buf = onfi_buffer();
	for (uint32_t i = 0; i < FLARES_PPROF_BYTES; i++)
		buf[chip->page_bytes + ECC_PROFILE_OFFSET + i] = profile ? profile[i] : 0xFF;
	for (uint32_t cw = 0; cw < chip->page_bytes / CODEWORD_BYTES; cw++)
		bch_encode(cw * CODEWORD_BYTES, parity_addr(cw, t), t);
}

static uint16_t ones8(uint8_t v)
{
	uint16_t n = 0;
	for (; v; v &= (uint8_t)(v - 1))
		n++;
	return n;
}

/* errors the pattern comparison counted in the spare's ECC area, which holds no pattern */
static void ecc_area_flips(uint32_t seed, uint8_t t, uint16_t *e10, uint16_t *e01)
{
	volatile uint8_t *buf = onfi_buffer();
	uint32_t state = prbs31_init(seed), lo = chip->page_bytes + ECC_PROFILE_OFFSET;
	for (uint32_t i = 0; i < lo; i++)
		prbs31_next(&state);
	for (uint32_t i = lo; i < ecc_area_end(t); i++) {
		uint8_t want = prbs31_next(&state), got = buf[i];
		*e10 = (uint16_t)(*e10 - ones8(want & (uint8_t)~got));
		*e01 = (uint16_t)(*e01 - ones8((uint8_t)~want & got));
	}
}

static uint32_t op_program(const struct request *q, uint8_t *out, int *st)
{
	if (q->len < 8)
		FAIL(E_BAD_FRAME);
	uint32_t block = (uint32_t)get_le(q->payload, 4), page = (uint32_t)get_le(q->payload + 4, 2);
	uint8_t t = q->payload[6], flags = q->payload[7];
	const uint8_t *rest = q->payload + 8;
	uint32_t n = q->len - 8;
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~3u || t > t_max)
		FAIL(E_BAD_PARAMETER);
	if (flags & 2) {
		if (n == 0 || n > raw_bytes())
			FAIL(E_BAD_FRAME);
	} else if (n != 4) {
		FAIL(E_BAD_FRAME);
	}
	if (is_bad(block) && !(flags & 1))
		FAIL(E_BAD_BLOCK);
	uint32_t seed = (flags & 2) ? 0 : page_seed((uint32_t)get_le(rest, 4), block, page);
	if (t == 0 && !(flags & 2))
		return chip_result(out, onfi_program(chip, block, page, ONFI_SRC_PRBS, seed, raw_bytes()), st);
	if (flags & 2) {
		volatile uint8_t *buf = onfi_buffer();
		for (uint32_t i = 0; i < raw_bytes(); i++)
			buf[i] = i < n ? rest[i] : 0xFF;
	} else {
		fill_pattern(seed, raw_bytes());
	}
	if (t)
		encode_page(t, 0);
	return chip_result(out, onfi_program(chip, block, page, ONFI_SRC_BUFFER, 0, raw_bytes()), st);
}

struct decoded {
	uint32_t corrected;  /* bits, over the data codewords that decoded */
	uint8_t failed;      /* data codewords that did not */
};

/* READ's reply once the page is in the buffer: status, busy, each codeword's counts (decoded at t),
 * the page if flags ask for it */
static uint32_t read_reply(struct op_result r, uint8_t t, uint8_t flags, uint32_t seed, uint8_t *out, struct decoded *d)
{
	out[0] = r.status;
	put_le(out + 1, r.busy_ns, 4);
	uint32_t n_data = (chip->page_bytes + CODEWORD_BYTES - 1) / CODEWORD_BYTES;
	uint32_t n_cw = n_data + (chip->spare_bytes ? 1 : 0);
	out[5] = (uint8_t)n_cw;
	uint8_t *p = out + 6;
	for (uint32_t i = 0; i < n_cw; i++, p += 6) {
		uint16_t e10 = 0, e01 = 0;
		if (flags & 2)
			onfi_codeword((int)i, &e10, &e01);
		if ((flags & 2) && t && i == n_data)
			ecc_area_flips(seed, t, &e10, &e01);
		int16_t corrected = (t && i < n_data) ? (int16_t)bch_decode(i * CODEWORD_BYTES, parity_addr(i, t), t) : 0;
		if (corrected < 0)
			d->failed++;
		else
			d->corrected += (uint32_t)corrected;
		put_le(p, e10, 2);
		put_le(p + 2, e01, 2);
		put_le(p + 4, (uint16_t)corrected, 2);
	}
	if (flags & 4) {
		volatile uint8_t *buf = onfi_buffer();
		for (uint32_t i = 0; i < raw_bytes(); i++)
			*p++ = buf[i];
	}
	return (uint32_t)(p - out);
}

static struct op_result read_page(uint32_t block, uint32_t page, uint8_t flags, uint32_t seed)
{
	return onfi_read(chip, block, page, (flags & 2) ? ONFI_SRC_PRBS : ONFI_SRC_BUFFER, seed, raw_bytes(), CODEWORD_BYTES);
}

static uint32_t op_read(const struct request *q, uint8_t *out, int *st)
{
	NEED(12);
	uint32_t block = (uint32_t)get_le(q->payload, 4), page = (uint32_t)get_le(q->payload + 4, 2);
	uint8_t t = q->payload[6], flags = q->payload[7];
	uint32_t seed = page_seed((uint32_t)get_le(q->payload + 8, 4), block, page);
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~6u || t > t_max)
		FAIL(E_BAD_PARAMETER);
	struct op_result r = read_page(block, page, flags, seed);
	if (r.timed_out)
		FAIL(E_TIMEOUT);
	struct decoded d = {0, 0};
	return read_reply(r, t, flags, seed, out, &d);
}

static uint32_t op_set_read_offset(const struct request *q, uint8_t *out, int *st)
{
	NEED(1);
	struct op_result r = onfi_set_feature(FEATURE_READ_RETRY, q->payload[0]);
	if (r.timed_out)
		FAIL(E_TIMEOUT);
	out[0] = r.status;
	return 1;
}

/* one P/E round of a block: erase, then every page with its pattern; nonzero on the first FAIL.
 * Each page's seed is computed while the chip is busy with the operation before it. */
static int cycle_block(uint32_t block, uint32_t seed)
{
	onfi_begin_erase(chip, block);
	uint32_t next = page_seed(seed, block, 0);
	struct op_result r = onfi_finish();
	for (uint32_t p = 0; p < chip->pages_per_block && !r.timed_out && !(r.status & 1); p++) {
		onfi_begin_program(chip, block, p, ONFI_SRC_PRBS, next, raw_bytes());
		next = page_seed(seed, block, p + 1);
		r = onfi_finish();
	}
	return r.timed_out || (r.status & 1);
}

static uint32_t op_cycle(const struct request *q, uint8_t *out, int *st)
{
	NEED(15);
	uint32_t first = (uint32_t)get_le(q->payload, 4), n = (uint32_t)get_le(q->payload + 4, 2);
	uint32_t cycles = (uint32_t)get_le(q->payload + 6, 4), seed = (uint32_t)get_le(q->payload + 10, 4);
	uint8_t flags = q->payload[14];
	if (n > MAX_CYCLE_BLOCKS || check_blocks(first, n))
		FAIL(E_OUT_OF_RANGE);
	if (cycles > MAX_ROUNDS || flags & ~1u)
		FAIL(E_BAD_PARAMETER);
	for (uint32_t i = 0; i < n; i++)
		if (is_bad(first + i) && !(flags & 1))
			FAIL(E_BAD_BLOCK);
	/* per block: u32 rounds done, u8 failed, kept in the reply as it grows */
	uint8_t *rec = out + 4;
	memset(rec, 0, 5 * n);
	start_job(q, n * cycles);
	/* round by round, so an abort leaves the blocks within one round of each other */
	for (uint32_t round = 0; round < cycles && !job.abort; round++) {
		for (uint32_t i = 0; i < n && !poll_host(); i++) {
			uint8_t *b = rec + 5 * i;
			if (b[4])
				continue;
			b[4] = (uint8_t)cycle_block(first + i, seed);
			put_le(b, get_le(b, 4) + 1, 4);  /* a failed round still wore the block */
			job.done++;
		}
	}
	uint32_t min = 0xFFFFFFFFu;
	for (uint32_t i = 0; i < n; i++)
		if (get_le(rec + 5 * i, 4) < min)
			min = (uint32_t)get_le(rec + 5 * i, 4);
	put_le(out, min, 4);
	return end_job(st, 0, 4 + 5 * n);
}

static uint32_t op_measure(const struct request *q, uint8_t *out, int *st)
{
	NEED(14);
	uint32_t first = (uint32_t)get_le(q->payload, 4), n = (uint32_t)get_le(q->payload + 4, 2);
	uint32_t page0 = (uint32_t)get_le(q->payload + 6, 2), pages = (uint32_t)get_le(q->payload + 8, 2);
	uint32_t seed = (uint32_t)get_le(q->payload + 10, 4);
	if (check_blocks(first, n) || check_pages(page0, pages))
		FAIL(E_OUT_OF_RANGE);
	if (n * pages * 8 > MAX_PAYLOAD)
		FAIL(E_BAD_PARAMETER);
	uint8_t *p = out;
	int timed_out = 0;
	start_job(q, n * pages);
	for (uint32_t b = first; b < first + n && !timed_out && !poll_host(); b++) {
		uint32_t next = page_seed(seed, b, page0);
		for (uint32_t pg = page0; pg < page0 + pages && !timed_out; pg++, p += 8, job.done++) {
			onfi_begin_read(chip, b, pg, ONFI_SRC_PRBS, next, raw_bytes(), CODEWORD_BYTES);
			next = page_seed(seed, b, pg + 1);  /* while the chip reads */
			struct op_result r = onfi_finish();
			if ((timed_out = r.timed_out))
				break;
			uint32_t e10, e01;
			onfi_totals(&e10, &e01);
			put_le(p, e10 > 0xFFFF ? 0xFFFF : e10, 2);
			put_le(p + 2, e01 > 0xFFFF ? 0xFFFF : e01, 2);
			put_le(p + 4, r.busy_ns, 4);
		}
	}
	return end_job(st, timed_out, (uint32_t)(p - out));
}

static uint32_t op_read_disturb(const struct request *q, uint8_t *out, int *st)
{
	NEED(10);
	uint32_t block = (uint32_t)get_le(q->payload, 4), page = (uint32_t)get_le(q->payload + 4, 2);
	uint32_t reads = (uint32_t)get_le(q->payload + 6, 4);
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	uint64_t busy = 0;
	int timed_out = 0;
	start_job(q, reads);
	/* the array read is the stress; one byte crosses the bus so the read completes as usual */
	for (; job.done < reads && !poll_host(); job.done++) {
		struct op_result r = onfi_read(chip, block, page, ONFI_SRC_BUFFER, 0, 1, CODEWORD_BYTES);
		if ((timed_out = r.timed_out))
			break;
		busy += r.busy_ns;
	}
	put_le(out, job.done, 4);
	put_le(out + 4, busy / 1000 > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)(busy / 1000), 4);
	return end_job(st, timed_out, 8);
}

/* ---- FLARES on the rig: t per page from its profile, the profile in the spare ------------------- */

enum { PROFILE_RAM = 0, PROFILE_SPARE = 1, PROFILE_NONE = 2, PROFILE_UNREADABLE = 3 };
enum { DECIDE_ALARM = 1, DECIDE_INVALIDATE = 2, DECIDE_NEW_PROFILE = 4 };

/* FLARES keeps time in whole seconds of the rig's clock */
static uint32_t now_s(void) { return (uint32_t)(rig_clock_ns() / 1000000000u); }

static void flares_defaults(void)
{
	flares_config_t c = {100, 500, 50, 3, 5, 15, 365u * 24u * 3600u, 0};
	fcfg = c;
	fcfg.t_cap = t_max < FLARES_T_MAX ? t_max : (uint8_t)FLARES_T_MAX;
	profiles_clear();
}

/* t used, zone, computed t, decision flags */
static uint32_t decision(uint8_t *out, uint8_t t, const flares_decision_t *d, uint8_t extra)
{
	out[0] = t;
	out[1] = d->zone;
	out[2] = d->p;
	out[3] = (uint8_t)((d->alarm ? DECIDE_ALARM : 0) | (d->invalidate ? DECIDE_INVALIDATE : 0) | extra);
	return 4;
}

static uint32_t op_flares_config(const struct request *q, uint8_t *out, int *st)
{
	NEED(13);
	const uint8_t *p = q->payload;
	flares_config_t c = {(uint16_t)get_le(p, 2), (uint16_t)get_le(p + 2, 2), (uint16_t)get_le(p + 4, 2), p[6], p[7], p[8],
	                     (uint32_t)get_le(p + 9, 4), fcfg.t_cap};
	if (!t_max)
		FAIL(E_UNSUPPORTED);
	if (c.wsize < 1 || c.wsize > 1024 || c.mix_pm > 1000 || c.saferange_pm > 1000)
		FAIL(E_BAD_PARAMETER);
	fcfg = c;
	profiles_clear();  /* new constants, new windows: counters from before would mix the two */
	out[0] = FLARES_T_MIN;
	out[1] = fcfg.t_cap;
	put_le(out + 2, PROFILE_SLOTS, 2);
	return 4;
}

static uint32_t op_flares_program(const struct request *q, uint8_t *out, int *st)
{
	NEED(15);
	uint32_t block = (uint32_t)get_le(q->payload, 4), page = (uint32_t)get_le(q->payload + 4, 2);
	uint8_t flags = q->payload[6];
	uint32_t seed = page_seed((uint32_t)get_le(q->payload + 7, 4), block, page), pe = (uint32_t)get_le(q->payload + 11, 4);
	if (!t_max)
		FAIL(E_UNSUPPORTED);
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~1u || pe == 0 || pe > PE_MAX)
		FAIL(E_BAD_PARAMETER);
	if (is_bad(block) && !(flags & 1))
		FAIL(E_BAD_BLOCK);
	uint8_t extra = 0;
	flares_pprof_t *pp = profiles_find(block, page);
	if (!pp) {
		if (!(pp = profiles_add(block, page)))
			FAIL(E_NO_SPACE);
		flares_new_page(pp, flares_cold_start(&fcfg, pe));
		extra = DECIDE_NEW_PROFILE;
	}
	pp->pecycles = pe - 1;  /* the host counts the block's wear; upPage adds this program */
	flares_decision_t d;
	flares_up_page(&fcfg, pp, FLARES_PROGRAM, 0, 0, now_s(), &d);
	uint8_t rec[FLARES_PPROF_BYTES];
	flares_pprof_pack(pp, rec);
	fill_pattern(seed, raw_bytes());
	encode_page(pp->p_cur, rec);
	uint32_t n = chip_result(out, onfi_program(chip, block, page, ONFI_SRC_BUFFER, 0, raw_bytes()), st);
	return n ? n + decision(out + n, pp->p_cur, &d, extra) : 0;
}

/* the page's profile from the spare as read, into a RAM slot; its source */
static uint8_t profile_from_spare(uint32_t block, uint32_t page, flares_pprof_t **pp)
{
	volatile uint8_t *buf = onfi_buffer();
	uint8_t rec[FLARES_PPROF_BYTES];
	flares_pprof_t disk;
	for (uint32_t i = 0; i < FLARES_PPROF_BYTES; i++)
		rec[i] = buf[chip->page_bytes + ECC_PROFILE_OFFSET + i];
	int n = flares_pprof_unpack(rec, &disk);
	if (n == -2)
		return PROFILE_NONE;
	if (n < 0 || disk.p_cur < FLARES_T_MIN || disk.p_cur > fcfg.t_cap)
		return PROFILE_UNREADABLE;
	*pp = profiles_add(block, page);  /* the caller checked there is room */
	flares_new_page(*pp, disk.p_cur);
	(*pp)->pecycles = disk.pecycles;
	(*pp)->writestamp = disk.writestamp;
	return PROFILE_SPARE;
}

static uint32_t op_flares_read(const struct request *q, uint8_t *out, int *st)
{
	NEED(11);
	uint32_t block = (uint32_t)get_le(q->payload, 4), page = (uint32_t)get_le(q->payload + 4, 2);
	uint8_t flags = q->payload[6];
	uint32_t seed = page_seed((uint32_t)get_le(q->payload + 7, 4), block, page);
	if (!t_max)
		FAIL(E_UNSUPPORTED);
	if (check_blocks(block, 1) || check_pages(page, 1))
		FAIL(E_OUT_OF_RANGE);
	if (flags & ~6u)
		FAIL(E_BAD_PARAMETER);
	flares_pprof_t *pp = profiles_find(block, page);
	if (!pp && profiles_used() == PROFILE_SLOTS)
		FAIL(E_NO_SPACE);
	struct op_result r = read_page(block, page, flags, seed);
	if (r.timed_out)
		FAIL(E_TIMEOUT);
	uint8_t source = pp ? PROFILE_RAM : profile_from_spare(block, page, &pp);
	uint8_t t = pp ? pp->p_cur : 0;
	struct decoded dec = {0, 0};
	uint32_t n = read_reply(r, t, flags, seed, out + 8, &dec);
	flares_decision_t d = {0, 0, 0, 0, 0};
	uint32_t n_data = chip->page_bytes / CODEWORD_BYTES, deterr = 0;
	if (pp) {  /* FLARES' error count: the mean over the page's codewords, rounded up */
		deterr = (dec.corrected + n_data - 1) / n_data;
		flares_up_page(&fcfg, pp, FLARES_READ, (uint16_t)(deterr > 0xFFFF ? 0xFFFF : deterr), dec.failed != 0, now_s(), &d);
	}
	decision(out, t, &d, 0);
	out[4] = source;
	put_le(out + 5, deterr, 2);
	out[7] = dec.failed;
	return 8 + n;
}

static uint32_t op_time(const struct request *q, uint8_t *out, int *st)
{
	NEED(0);
	put_le(out, rig_clock_ns(), 8);
	return 8;
}

static uint32_t op_advance(const struct request *q, uint8_t *out, int *st)
{
	NEED(10);
	int16_t temp = (int16_t)get_le(q->payload + 8, 2);
	if (!(caps & 1))
		FAIL(E_UNSUPPORTED);
	if (temp < -4000 || temp > 30000)
		FAIL(E_BAD_PARAMETER);
	rig_advance(get_le(q->payload, 8), temp);
	put_le(out, rig_clock_ns(), 8);
	return 8;
}

static uint32_t op_status(const struct request *q, uint8_t *out, int *st)
{
	NEED(0);
	status_payload(out);
	return 12;
}

static uint32_t op_abort(const struct request *q, uint8_t *out, int *st)
{
	NEED(0);
	out[0] = 0;  /* nothing runs when ABORT reaches the dispatcher */
	return 1;
}

typedef uint32_t (*handler)(const struct request *, uint8_t *, int *);

static handler find(uint8_t op)
{
	switch (op) {
	case OP_HELLO: return op_hello;
	case OP_INFO: return op_info;
	case OP_RESET: return op_reset;
	case OP_READ_ID: return op_read_id;
	case OP_READ_PARAM_PAGE: return op_read_param_page;
	case OP_SCAN_BAD: return op_scan_bad;
	case OP_ERASE: return op_erase;
	case OP_PROGRAM: return op_program;
	case OP_READ: return op_read;
	case OP_TIME: return op_time;
	case OP_ADVANCE: return op_advance;
	case OP_STATUS: return op_status;
	case OP_ABORT: return op_abort;
	case OP_SET_READ_OFFSET: return op_set_read_offset;
	case OP_CYCLE: return op_cycle;
	case OP_MEASURE: return op_measure;
	case OP_READ_DISTURB: return op_read_disturb;
	case OP_FLARES_CONFIG: return op_flares_config;
	case OP_FLARES_PROGRAM: return op_flares_program;
	case OP_FLARES_READ: return op_flares_read;
	default: return 0;
	}
}

/* ---- framing ----------------------------------------------------------------------------------- */

/* The next valid request from the link, if a complete one is waiting; bad frames are dropped. */
static int take_frame(struct request *q)
{
	int c;
	while ((c = link_getc()) >= 0) {
		if (c != 0) {
			if (rx_len < sizeof rx)
				rx[rx_len++] = (uint8_t)c;
			else
				rx_overflow = 1;
			continue;
		}
		uint32_t n = rx_len;
		int over = rx_overflow;
		rx_len = 0;
		rx_overflow = 0;
		if (n == 0 || over)
			continue;
		long len = cobs_decode(rx, n, body);
		if (len < 10 || len > MAX_BODY || body[0] != T_REQUEST)
			continue;
		if (crc32_of(body, (size_t)len - 4) != get_le(body + len - 4, 4))
			continue;
		q->op = body[1];
		q->seq = (uint16_t)get_le(body + 2, 2);
		q->payload = body + 6;
		q->len = (uint32_t)len - 10;
		q->crc = crc32_of(body + 1, 1);
		q->crc = crc32_update(q->crc, q->payload, q->len);
		return 1;
	}
	return 0;
}

static void handle(const struct request *q)
{
	for (int i = 0; i < CACHE_SIZE; i++) {
		struct cached *e = &cache[i];
		if (e->used && e->session == session && e->seq == q->seq && e->crc == q->crc) {
			link_write(e->frame, e->len);
			return;
		}
	}
	handler h = find(q->op);
	int st = E_OK;
	uint32_t n = 0;
	if (!h)
		st = E_UNKNOWN_COMMAND;
	else
		n = h(q, reply + 6, &st);
	if (st != E_OK && st != E_CHIP_FAIL && st != E_ABORTED && st != E_VERSION_MISMATCH)
		n = 0;
	if (!h || uncached(q->op)) {
		link_write(tx, encode_reply(q, st, reply, n, tx));
		return;
	}
	struct cached *e = &cache[cache_next];
	cache_next = (cache_next + 1) % CACHE_SIZE;
	e->used = 1;
	e->session = session;
	e->seq = q->seq;
	e->crc = q->crc;
	e->len = encode_reply(q, st, reply, n, e->frame);
	link_write(e->frame, e->len);
}

void server_init(struct chip *c, uint8_t rig_kind, uint32_t capabilities)
{
	chip = c;
	kind = rig_kind;
	caps = capabilities;
	t_max = bch_t_max(c->page_bytes, c->spare_bytes, CODEWORD_BYTES);
	if (t_max)
		caps |= CAP_FLARES;  /* FLARES needs the decoder and room in the spare */
	flares_defaults();
}

void server_step(void)
{
	struct request q;
	while (take_frame(&q))
		handle(&q);
}
