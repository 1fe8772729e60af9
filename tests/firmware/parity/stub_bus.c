/* A stub bus for the rig firmware built natively: the ONFI driver, the link, the BCH engine and the supply
 * meter the command files call, answered by Python through hooks (a virtual chip behind them). Read errors
 * are counted here against the seeded PRBS, per codeword, as the controller's counter does. */
#include <string.h>
#include "bch.h"
#include "generated/csr.h"
#include "link.h"
#include "onfi.h"
#include "pattern.h"
#include "protocol.h"
#include "bring_up.h"
#include "cycle_job.h"
#include "server.h"
#include "unique_id.h"
#include "supply.h"

#define BUF_BYTES (64 * 1024)
#define MAX_CW 64

enum { OP_KIND_ERASE = 0, OP_KIND_PROGRAM = 1, OP_KIND_READ = 2 };

struct bus_hooks {
	uint8_t (*reset)(uint32_t *busy_ns);
	void (*read_id)(uint8_t addr, uint8_t *out, int n);
	void (*read_param)(uint8_t *out);
	uint8_t (*set_feature)(uint8_t addr, uint32_t params);
	/* erase, program (buf holds the bytes) or read (into buf); the chip's status and busy time */
	uint8_t (*op)(int kind, uint32_t block, uint32_t page, uint32_t len, uint8_t *buf, uint32_t *busy_ns);
	uint64_t (*clock_ns)(void);
	void (*advance)(uint64_t ns, int16_t temp);
	/* the capture sweep in a mode: the passing trims (bit i: CAPTURE_TRIM_MIN + i), 0 for none */
	uint16_t (*capture)(uint8_t mode);
	/* READ UNIQUE ID's bytes: the copies of the ID and its complement */
	void (*unique_id)(uint8_t *out);
	/* the BCH engine on the page buffer: 0 encode, 1 decode (corrected bits, -1 failed; *erased set) */
	int (*bch)(int op, uint8_t t, uint8_t *data, uint8_t *parity, int *erased);
	uint16_t capture_step_ps;
};

static struct bus_hooks hooks;
static uint8_t buffer[BUF_BYTES], staged[BUF_BYTES];
static uint16_t cw10[MAX_CW], cw01[MAX_CW];
static uint32_t tot10, tot01;
static struct { int kind; uint32_t block, page, len, seed; int src; uint16_t cw_bytes; } pending;
static struct { uint32_t block, page; } cache_read;  /* the next page a cache read brings out */
static uint8_t rx[1 << 20], tx[1 << 20];
static uint32_t rx_len, rx_pos, tx_len;
static struct chip the_chip;

void stub_set_hooks(const struct bus_hooks *h) { hooks = *h; }

/* as main.c, with one target */
void stub_start(uint8_t kind, uint32_t caps)
{
	static struct cycle_job job;
	server_init(&the_chip, &job, 1, bring_up(&the_chip, 1), kind, caps);
}

/* one request's bytes in, the replies out */
uint32_t stub_exchange(const uint8_t *in, uint32_t n, uint8_t *out)
{
	memcpy(rx, in, n);
	rx_len = n;
	rx_pos = 0;
	tx_len = 0;
	server_step();
	while (cycle_jobs_running())  /* a CYCLE is a job: the stub's chip is never busy, so it runs to its end */
		server_step();
	memcpy(out, tx, tx_len);
	return tx_len;
}

int link_getc(void) { return rx_pos < rx_len ? rx[rx_pos++] : -1; }
void link_write(const uint8_t *p, size_t n) { memcpy(tx + tx_len, p, n); tx_len += (uint32_t)n; }
int link_put(uint8_t c)
{
	tx[tx_len++] = c;
	return 1;
}

static void prbs_fill(uint8_t *out, uint32_t seed, uint32_t n)
{
	uint32_t s = prbs31_init(seed);
	for (uint32_t i = 0; i < n; i++)
		out[i] = prbs31_next(&s);
}

static struct op_result run(void)
{
	struct op_result r = {0, 0, 0};
	uint8_t *data = buffer;
	if (pending.kind == OP_KIND_PROGRAM && pending.src == ONFI_SRC_PRBS) {
		prbs_fill(staged, pending.seed, pending.len);
		data = staged;
	}
	r.status = hooks.op(pending.kind, pending.block, pending.page, pending.len, data, &r.busy_ns);
	if (pending.kind == OP_KIND_READ) {
		memset(cw10, 0, sizeof cw10);
		memset(cw01, 0, sizeof cw01);
		tot10 = tot01 = 0;
		if (pending.src == ONFI_SRC_PRBS) {
			prbs_fill(staged, pending.seed, pending.len);
			for (uint32_t i = 0; i < pending.len; i++) {
				uint32_t k = i / pending.cw_bytes;
				uint32_t down = staged[i] & ~buffer[i], up = ~staged[i] & buffer[i] & 0xFF;
				uint32_t a = (uint32_t)__builtin_popcount(down), b = (uint32_t)__builtin_popcount(up);
				if (k < MAX_CW) {
					cw10[k] = (uint16_t)(cw10[k] + a > 0xFFFF ? 0xFFFF : cw10[k] + a);
					cw01[k] = (uint16_t)(cw01[k] + b > 0xFFFF ? 0xFFFF : cw01[k] + b);
				}
				tot10 += a;
				tot01 += b;
			}
		}
	}
	return r;
}

static void begin(int kind, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len, uint16_t cw)
{
	pending.kind = kind;
	pending.block = block;
	pending.page = page;
	pending.src = src;
	pending.seed = seed;
	pending.len = len;
	pending.cw_bytes = cw ? cw : 1;
}

/* onfi.c's identification with the bus's answers: the parameter page decoded by the firmware's own rules */
void onfi_select(const struct chip *c) { (void)c; }

int onfi_identify(struct chip *c, uint8_t target)
{
	static struct param_info p;
	static uint8_t param[PARAM_PAGE_REPLY_BYTES];
	memset(c, 0, sizeof *c);
	c->target = target;
	c->retry = -1;
	c->capture_step_ps = hooks.capture_step_ps;
	onfi_reset();
	c->capture = CAPTURE_NO_WINDOW;
	c->param_status = PARAM_ERR_NO_VALID_COPY;
	if (onfi_calibrate(c))
		return -1;
	c->capture = CAPTURE_CALIBRATED;
	onfi_read_id(0x00, c->id, sizeof c->id);
	onfi_read_param(param);
	c->param_status = (uint8_t)param_page_decode(param, sizeof param, &p);
	if (c->param_status == PARAM_OK)
		c->param_status = (uint8_t)param_page_check_rig(&p);
	if (c->param_status != PARAM_OK)
		return -1;
	memcpy(c->manufacturer, p.manufacturer, sizeof c->manufacturer);
	memcpy(c->model, p.model, sizeof c->model);
	for (int i = 0; i < RETRY_TABLES; i++) {  /* onfi.c's find_retry */
		const struct retry_table *t = retry_table(i);
		size_t man = strlen(t->manufacturer), pre = strlen(t->model_prefix);
		int ok = man <= sizeof c->manufacturer && !memcmp(c->manufacturer, t->manufacturer, man)
		         && pre <= sizeof c->model && !memcmp(c->model, t->model_prefix, pre);
		for (size_t k = man; ok && k < sizeof c->manufacturer; k++)
			ok = c->manufacturer[k] == ' ';
		if (ok) {
			c->retry = (int8_t)i;
			break;
		}
	}
	c->page_bytes = p.page_bytes;
	c->spare_bytes = (uint16_t)p.spare_bytes;
	c->pages_per_block = p.pages_per_block;
	c->luns = (uint8_t)p.luns;
	c->blocks = p.blocks_per_lun * p.luns;
	c->bits_per_cell = (uint8_t)p.bits_per_cell;
	c->ecc_bits = (uint8_t)p.ecc_bits;
	c->ecc_step_bytes = (uint16_t)p.ecc_step_bytes;
	c->timing_modes = (uint16_t)p.timing_modes;
	c->optional_commands = (uint16_t)p.optional_commands;
	c->page_bits = (uint8_t)p.page_bits;
	c->block_bits = (uint8_t)p.block_bits;
	if (p.optional_commands & ONFI_OPT_READ_UNIQUE_ID) {  /* onfi.c's read_unique_id */
		static uint8_t raw[2 * ONFI_UNIQUE_ID_BYTES * ONFI_UNIQUE_ID_COPIES];
		hooks.unique_id(raw);
		c->has_uid = unique_id_check(raw, ONFI_UNIQUE_ID_COPIES, c->uid) >= 0;
	}
	return 0;
}

int onfi_calibrate(struct chip *c)
{
	uint16_t pass = hooks.capture(c->mode);
	if (!pass)
		return -1;
	c->trim_pass = pass;
	c->rd_trim = (int8_t)capture_trim_centre(pass);
	return 0;
}
struct op_result onfi_reset(void)
{
	struct op_result r = {0, 0, 0};
	r.status = hooks.reset(&r.busy_ns);
	return r;
}
int onfi_read_id(uint8_t addr, uint8_t *out, int n) { hooks.read_id(addr, out, n); return 0; }
int onfi_read_param(uint8_t *out) { hooks.read_param(out); return 0; }
struct op_result onfi_set_feature(uint8_t addr, uint32_t params)
{
	struct op_result r = {hooks.set_feature(addr, params), 0, 0};
	return r;
}
int onfi_set_timing_mode(struct chip *c, uint8_t mode)
{
	hooks.set_feature(FEATURE_TIMING_MODE, mode);
	c->mode = mode;
	return 0;
}
struct op_result onfi_erase(const struct chip *c, uint32_t block) { onfi_begin_erase(c, block); return onfi_finish(); }
struct op_result onfi_program(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len)
{
	onfi_begin_program(c, block, page, src, seed, len);
	return onfi_finish();
}
struct op_result onfi_read(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len,
                           uint16_t cw_bytes)
{
	onfi_begin_read(c, block, page, src, seed, len, cw_bytes);
	return onfi_finish();
}
void onfi_begin_erase(const struct chip *c, uint32_t block) { (void)c; begin(OP_KIND_ERASE, block, 0, 0, 0, 0, 0); }
void onfi_begin_program(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len)
{
	(void)c;
	begin(OP_KIND_PROGRAM, block, page, src, seed, len, 0);
}
/* a launch runs at once: its target is ready the moment it returns, its status the operation's */
static struct op_result launched;
void onfi_launch_erase(const struct chip *c, uint32_t block) { onfi_begin_erase(c, block); launched = run(); }
void onfi_launch_program(const struct chip *c, uint32_t block, uint32_t page, uint32_t seed, int cache)
{
	(void)cache;
	onfi_begin_program(c, block, page, ONFI_SRC_PRBS, seed, c->page_bytes + c->spare_bytes);
	launched = run();
}
void onfi_launch_wait(void) {}
int onfi_ready(const struct chip *c) { (void)c; return 1; }
struct op_result onfi_read_status(void) { return launched; }
void onfi_begin_read(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len,
                     uint16_t cw_bytes)
{
	(void)c;
	begin(OP_KIND_READ, block, page, src, seed, len, cw_bytes);
}
struct op_result onfi_finish(void) { return run(); }
/* 31h after a read of page n: page n's byte again (no array read), and n + 1 comes next; each cache read's page
 * is read from the array when it comes out, one array read per page as the chip does it */
struct op_result onfi_read_cache_start(void)
{
	struct op_result r = {0, 0, 0};
	cache_read.block = pending.block;
	cache_read.page = pending.page + 1;
	return r;
}
void onfi_begin_read_cache(int last, int src, uint32_t seed, uint32_t len, uint16_t cw_bytes)
{
	(void)last;
	begin(OP_KIND_READ, cache_read.block, cache_read.page++, src, seed, len, cw_bytes);
}
void onfi_codeword(int i, uint16_t *e10, uint16_t *e01) { *e10 = cw10[i]; *e01 = cw01[i]; }
void onfi_totals(uint32_t *e10, uint32_t *e01) { *e10 = tot10; *e01 = tot01; }
volatile uint8_t *onfi_buffer(void) { return buffer; }
uint64_t rig_clock_ns(void) { return hooks.clock_ns(); }
void rig_advance(uint64_t ns, int16_t temp) { hooks.advance(ns, temp); }
void rig_idle(int idle) { (void)idle; }

/* the BCH engine's registers (bch.c drives them) */
static uint32_t bch_op, bch_t, bch_data, bch_parity, bch_fail, bch_erased, bch_corrected;
void onfi_bch_op_write(uint32_t v) { bch_op = v; }
void onfi_bch_t_write(uint32_t v) { bch_t = v; }
void onfi_bch_data_addr_write(uint32_t v) { bch_data = v; }
void onfi_bch_parity_addr_write(uint32_t v) { bch_parity = v; }
void onfi_bch_start_write(uint32_t v)
{
	(void)v;
	int erased = 0;
	int n = hooks.bch((int)bch_op, (uint8_t)bch_t, buffer + bch_data, buffer + bch_parity, &erased);
	bch_fail = n < 0;
	bch_erased = (uint32_t)erased;
	bch_corrected = n < 0 ? 0 : (uint32_t)n;
}
uint32_t onfi_bch_busy_read(void) { return 0; }
uint32_t onfi_bch_fail_read(void) { return bch_fail; }
uint32_t onfi_bch_erased_read(void) { return bch_erased; }
uint32_t onfi_bch_corrected_read(void) { return bch_corrected; }

/* no supply meter: ENERGY answers zeros (the virtual rig meters its chip, so ENERGY is not compared) */
int supply_present(void) { return 0; }
void supply_take(struct supply_reading *r) { memset(r, 0, sizeof *r); }
