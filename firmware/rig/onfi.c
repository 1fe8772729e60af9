#include <string.h>
#include <generated/csr.h>
#include <generated/mem.h>
#include <generated/soc.h>
#include "onfi.h"
#include "unique_id.h"
#include "protocol.h"

/* the controller's op codes and sources come from gateware/onfi/registers.py through soc.h */
_Static_assert(ONFI_SRC_BUFFER == ONFI_SOURCE_BUFFER && ONFI_SRC_PRBS == ONFI_SOURCE_PRBS, "sources");

/* the PHY counts busy times and timeouts in its own clock's cycles (the system clock's, or a faster NAND clock);
 * the uptime timer counts the system clock's. A cycle is whole ns and a 32-bit fraction: neither clock need divide
 * a second evenly (the ULX3S's NAND clock, 90.625 MHz, is 11.034 ns), and a multiply is all the CPU does per op */
#define WHOLE_NS(hz) (1000000000u / (hz))
#define FRAC_NS(hz) ((uint32_t)(((uint64_t)(1000000000u % (hz)) << 32) / (hz)))

static uint64_t cycles_to_ns(uint64_t n, uint32_t whole, uint32_t frac)
{
	return n * whole + (((n & 0xFFFFFFFFu) * frac) >> 32) + (n >> 32) * frac;
}

static uint64_t advanced_ns;

volatile uint8_t *onfi_buffer(void) { return (volatile uint8_t *)NANDBUF_BASE; }

static void start(int op)
{
	onfi_op_write(op);
	onfi_start_write(1);
}

struct op_result onfi_finish(void)
{
	struct op_result r;
	while (onfi_busy_read())
		;
	r.timed_out = onfi_timed_out_read();
	r.status = onfi_chip_status_read();
	r.busy_ns = (uint32_t)cycles_to_ns(onfi_busy_cycles_read(), WHOLE_NS(ONFI_CLOCK_FREQUENCY), FRAC_NS(ONFI_CLOCK_FREQUENCY));
	return r;
}

static struct op_result run(int op)
{
	start(op);
	return onfi_finish();
}

/* ONFI's row address: page, then the block within its LUN, then the LUN, each field a power of two wide */
static void row(const struct chip *c, uint32_t block, uint32_t page)
{
	uint32_t per_lun = c->blocks / c->luns;
	onfi_row_write(((block / per_lun) << c->block_bits | block % per_lun) << c->page_bits | page);
}

struct op_result onfi_reset(void)
{
	struct op_result r = run(ONFI_OP_RESET);
	onfi_mode_write(0);  /* RESET puts the chip back in timing mode 0 */
	return r;
}

int onfi_read_id(uint8_t addr, uint8_t *out, int n)
{
	onfi_faddr_write(addr);
	onfi_length_write(n);
	onfi_buf_addr_write(0);
	onfi_src_write(ONFI_SRC_BUFFER);
	if (run(ONFI_OP_READ_ID).timed_out)
		return -1;
	for (int i = 0; i < n; i++)
		out[i] = onfi_buffer()[i];
	return n;
}

/* the parameter page's copies and extended page, left in the page buffer: where identification reads them, so
 * they take no SRAM (0 while nothing else runs an operation) */
static const uint8_t *param_in_buffer(void)
{
	onfi_length_write(PARAM_PAGE_REPLY_BYTES);
	onfi_buf_addr_write(0);
	onfi_src_write(ONFI_SRC_BUFFER);
	if (run(ONFI_OP_READ_PARAM).timed_out)
		return 0;
	return (const uint8_t *)onfi_buffer();
}

int onfi_read_param(uint8_t *out)
{
	const uint8_t *p = param_in_buffer();
	if (!p)
		return -1;
	memcpy(out, p, PARAM_PAGE_REPLY_BYTES);
	return 0;
}

/* READ UNIQUE ID, when the parameter page lists it: the physical chip's identity (checked in the page buffer) */
static void read_unique_id(struct chip *c, const struct param_info *p)
{
	if (!(p->optional_commands & ONFI_OPT_READ_UNIQUE_ID))
		return;
	onfi_length_write(2 * ONFI_UNIQUE_ID_BYTES * ONFI_UNIQUE_ID_COPIES);
	onfi_buf_addr_write(0);
	onfi_src_write(ONFI_SRC_BUFFER);
	if (run(ONFI_OP_READ_UNIQUE_ID).timed_out)
		return;
	c->has_uid = unique_id_check((const uint8_t *)onfi_buffer(), ONFI_UNIQUE_ID_COPIES, c->uid) >= 0;
}

static void set_trim(int trim)
{
	onfi_rd_trim_write((uint32_t)trim & (CAPTURE_TRIM_MAX - CAPTURE_TRIM_MIN));  /* the field's two's complement */
}

/* READ ID "ONFI" checks the last byte of a burst (no EDO hold after it), the parameter page's CRC the rest */
static int reads_correctly(void)
{
	const uint8_t *param;
	uint8_t sig[4];
	return onfi_read_id(ONFI_READ_ID_ONFI_ADDRESS, sig, sizeof sig) == sizeof sig && !memcmp(sig, "ONFI", 4)
	       && (param = param_in_buffer()) != 0 && param_page_valid_copy(param, PARAM_PAGE_REPLY_BYTES) >= 0;
}

/* per mode, the trims that move the capture edge (the PHY clamps it): from the build's timing (soc.h) */
static const int8_t trim_first[6] = {ONFI_TRIM_FIRST_M0, ONFI_TRIM_FIRST_M1, ONFI_TRIM_FIRST_M2,
                                     ONFI_TRIM_FIRST_M3, ONFI_TRIM_FIRST_M4, ONFI_TRIM_FIRST_M5};
static const int8_t trim_last[6] = {ONFI_TRIM_LAST_M0, ONFI_TRIM_LAST_M1, ONFI_TRIM_LAST_M2,
                                    ONFI_TRIM_LAST_M3, ONFI_TRIM_LAST_M4, ONFI_TRIM_LAST_M5};

int onfi_calibrate(struct chip *c)
{
	uint16_t passing = 0;
	for (int trim = trim_first[c->mode]; trim <= trim_last[c->mode]; trim++) {
		set_trim(trim);
		if (reads_correctly())
			passing |= (uint16_t)(1u << (trim - CAPTURE_TRIM_MIN));
	}
	int centre = capture_trim_centre(passing);
	if (centre > CAPTURE_TRIM_MAX) {
		set_trim(c->rd_trim);
		return -1;
	}
	set_trim(centre);
	c->rd_trim = (int8_t)centre;
	c->trim_pass = passing;
	return 0;
}

/* the read-retry table whose manufacturer the space-padded field names exactly and whose model prefix it starts
 * with, as nandrig/chip/read_retry.py's table_for */
static int8_t find_retry(const struct chip *c)
{
	for (int i = 0; i < RETRY_TABLES; i++) {
		const struct retry_table *t = retry_table(i);
		size_t man = strlen(t->manufacturer), pre = strlen(t->model_prefix);
		int ok = man <= sizeof c->manufacturer && !memcmp(c->manufacturer, t->manufacturer, man)
		         && pre <= sizeof c->model && !memcmp(c->model, t->model_prefix, pre);
		for (size_t k = man; ok && k < sizeof c->manufacturer; k++)
			ok = c->manufacturer[k] == ' ';
		if (ok)
			return (int8_t)i;
	}
	return -1;
}

void onfi_select(const struct chip *c)
{
	onfi_target_write(c->target);
	onfi_mode_write(c->mode);
	set_trim(c->rd_trim);
	onfi_ccs_write(c->ccs);
}

int onfi_identify(struct chip *c, uint8_t target)
{
	static struct param_info p;
	memset(c, 0, sizeof *c);
	c->target = target;
	onfi_select(c);
	c->retry = -1;
	c->capture_step_ps = ONFI_CAPTURE_STEP_PS;
	onfi_wp_n_write(1);
	onfi_timeout_write(ONFI_CLOCK_FREQUENCY);  /* 1 s: far beyond any tBERS */
	onfi_reset();
	c->capture = CAPTURE_NO_WINDOW;
	c->param_status = PARAM_ERR_NO_VALID_COPY;
	if (onfi_calibrate(c))
		return -1;
	c->capture = CAPTURE_CALIBRATED;
	onfi_read_id(0x00, c->id, sizeof c->id);
	const uint8_t *param = param_in_buffer();
	if (!param)
		return -1;
	c->param_status = (uint8_t)param_page_decode(param, PARAM_PAGE_REPLY_BYTES, &p);
	if (c->param_status == PARAM_OK)
		c->param_status = (uint8_t)param_page_check_rig(&p);
	if (c->param_status != PARAM_OK)
		return -1;  /* the geometry stays zero: no block is in range */
	/* the part's tCCS (CHANGE READ COLUMN's E0h to RE#) in PHY cycles, rounded up; parts give 100-500 ns, the
	 * field holds ONFI_CCS_MAX (11 us at 90 MHz); 0 (a page that gives none) keeps ONFI's 500 ns */
	uint32_t ccs = (uint32_t)(((uint64_t)p.t_ccs_ns * ONFI_CLOCK_FREQUENCY + 999999999u) / 1000000000u);
	c->ccs = (uint16_t)(ccs > ONFI_CCS_MAX ? ONFI_CCS_MAX : ccs);
	onfi_ccs_write(c->ccs);
	memcpy(c->manufacturer, p.manufacturer, sizeof c->manufacturer);
	memcpy(c->model, p.model, sizeof c->model);
	c->retry = find_retry(c);
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
	read_unique_id(c, &p);
	return 0;
}

struct op_result onfi_set_feature(uint8_t addr, uint32_t params)
{
	onfi_faddr_write(addr);
	onfi_params_write(params);
	return run(ONFI_OP_SET_FEATURES);
}

/* GET FEATURES' first parameter byte */
static int get_feature(uint8_t addr)
{
	onfi_faddr_write(addr);
	onfi_length_write(4);
	onfi_buf_addr_write(0);
	onfi_src_write(ONFI_SRC_BUFFER);
	if (run(ONFI_OP_GET_FEATURES).timed_out)
		return -1;
	return onfi_buffer()[0];
}

/* the chip confirms the mode by GET FEATURES (as Linux does) before the bus runs at it; -1 leaves both as they were */
int onfi_set_timing_mode(struct chip *c, uint8_t mode)
{
	if (onfi_set_feature(FEATURE_TIMING_MODE, mode).timed_out || (get_feature(FEATURE_TIMING_MODE) & 0x0F) != mode) {
		onfi_set_feature(FEATURE_TIMING_MODE, c->mode);
		return -1;
	}
	onfi_mode_write(mode);
	c->mode = mode;
	return 0;
}

static void page_transfer(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len);

void onfi_launch_erase(const struct chip *c, uint32_t block)
{
	row(c, block, 0);
	start(ONFI_OP_ERASE_LAUNCH);
}

void onfi_launch_program(const struct chip *c, uint32_t block, uint32_t page, uint32_t seed, int cache)
{
	page_transfer(c, block, page, ONFI_SRC_PRBS, seed, c->page_bytes + c->spare_bytes);
	start(cache ? ONFI_OP_CACHE_PROGRAM_LAUNCH : ONFI_OP_PROGRAM_LAUNCH);
}

void onfi_launch_wait(void)
{
	while (onfi_busy_read())
		;
}

int onfi_ready(const struct chip *c) { return onfi_ready_read() >> c->target & 1; }

struct op_result onfi_read_status(void) { return run(ONFI_OP_READ_STATUS); }

void onfi_begin_erase(const struct chip *c, uint32_t block)
{
	row(c, block, 0);
	start(ONFI_OP_ERASE);
}

struct op_result onfi_erase(const struct chip *c, uint32_t block)
{
	onfi_begin_erase(c, block);
	return onfi_finish();
}

/* a transfer of len bytes to/from the buffer's start */
static void transfer(int src, uint32_t seed, uint32_t len)
{
	onfi_length_write(len);
	onfi_buf_addr_write(0);
	onfi_src_write(src);
	onfi_seed_write(seed);
}

/* a page transfer from column 0 */
static void page_transfer(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len)
{
	row(c, block, page);
	onfi_col_write(0);
	transfer(src, seed, len);
}

void onfi_begin_program(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len)
{
	page_transfer(c, block, page, src, seed, len);
	start(ONFI_OP_PROGRAM);
}

struct op_result onfi_program(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len)
{
	onfi_begin_program(c, block, page, src, seed, len);
	return onfi_finish();
}

void onfi_begin_read(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len,
                     uint16_t cw_bytes)
{
	page_transfer(c, block, page, src, seed, len);
	onfi_cw_bytes_write(cw_bytes);
	start(ONFI_OP_READ);
}

struct op_result onfi_read(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len,
                           uint16_t cw_bytes)
{
	onfi_begin_read(c, block, page, src, seed, len, cw_bytes);
	return onfi_finish();
}

struct op_result onfi_read_cache_start(void)
{
	onfi_begin_read_cache(0, ONFI_SRC_BUFFER, 0, 1, 1);
	return onfi_finish();
}

void onfi_begin_read_cache(int last, int src, uint32_t seed, uint32_t len, uint16_t cw_bytes)
{
	transfer(src, seed, len);
	onfi_cw_bytes_write(cw_bytes);
	start(last ? ONFI_OP_READ_CACHE_END : ONFI_OP_READ_CACHE);
}

void onfi_codeword(int i, uint16_t *e10, uint16_t *e01)
{
	onfi_cw_index_write(i);
	uint32_t v = onfi_cw_counts_read();
	*e10 = v & 0xFFFF;
	*e01 = v >> 16;
}

void onfi_totals(uint32_t *e10, uint32_t *e01)
{
	*e10 = onfi_err_1to0_read();
	*e01 = onfi_err_0to1_read();
}

uint64_t rig_clock_ns(void)
{
	timer0_uptime_latch_write(1);
	return cycles_to_ns(timer0_uptime_cycles_read(), WHOLE_NS(CONFIG_CLOCK_FREQUENCY), FRAC_NS(CONFIG_CLOCK_FREQUENCY))
	       + advanced_ns;
}

void rig_advance(uint64_t ns, int16_t temp)
{
#ifdef CSR_VTIME_BASE
	vtime_ns_write(ns);
	vtime_temp_write((uint16_t)temp);
	vtime_go_write(1);
#endif
	advanced_ns += ns;
}

void rig_idle(int idle)
{
#ifdef CSR_VTIME_IDLE_ADDR
	vtime_idle_write(idle != 0);
#else
	(void)idle;
#endif
}
