/* ONFI driver over the controller's CSRs: identification, timing mode, erase/program/read. */
#ifndef NANDRIG_ONFI_H
#define NANDRIG_ONFI_H
#include <stdint.h>
#include "onfi_facts.h"
#include "capture.h"
#include "param_page.h"
#include "protocol.h"

/* what the rig knows of the chip on one target (CE#): identity, geometry, its bus settings, its factory marks */
struct chip {
	uint8_t target;  /* its CE# */
	uint8_t id[5];
	char manufacturer[12], model[20];
	uint32_t page_bytes, pages_per_block, blocks;  /* blocks: all LUNs'; LUN = block >> block_bits */
	uint16_t spare_bytes, timing_modes, ecc_step_bytes;
	uint16_t optional_commands;  /* the parameter page's (ONFI_OPT_*): cache program, unique ID, ... */
	uint8_t bits_per_cell, ecc_bits, page_bits, block_bits, luns, mode;
	uint8_t param_status;  /* PARAM_OK, or why the parameter page describes no chip this rig drives */
	uint8_t capture;  /* CAPTURE_CALIBRATED, or CAPTURE_NO_WINDOW */
	int8_t rd_trim;  /* the read-capture trim in use */
	uint16_t trim_pass;  /* trims that read the chip in the current mode (bit i: CAPTURE_TRIM_MIN + i) */
	uint16_t capture_step_ps;  /* what one trim step moves the capture point: the build's (soc.h) */
	int valid_copy;  /* which parameter-page copy passed its CRC, -1 for none */
	uint8_t has_uid;  /* the chip gave a unique ID whose complement checked out */
	int8_t retry;  /* its read-retry table (retry_table()), -1 for none: its references stay where they are */
	uint8_t uid[ONFI_UNIQUE_ID_BYTES];
	uint16_t ccs;  /* its tCCS in PHY cycles (0: ONFI's 500 ns) */
	/* factory marks as read before the first erase (page_io.c): MAX_BLOCKS (protocol.h) bounds the chips the rig
	 * drives (param_page_check_rig), so every block has its bit */
	uint8_t bad_known[MAX_BLOCKS / 8], bad_mark[MAX_BLOCKS / 8];
};

struct op_result {
	uint8_t status;
	uint32_t busy_ns;
	int timed_out;
};

enum { ONFI_SRC_BUFFER = 0, ONFI_SRC_PRBS = 1 };

/* identifies the chip on CE# target: 0, or -1 when no capture trim reads it in mode 0 (an empty socket too), or
 * its parameter page describes no chip this rig drives (param_status says why; the geometry stays zero, so every
 * chip command is out of range) */
int onfi_identify(struct chip *c, uint8_t target);
/* the controller's per-target settings (CE#, timing mode, capture trim, tCCS) from c: every operation after
 * this one addresses c's target, until the next */
void onfi_select(const struct chip *c);
/* sweeps the read-capture trim in the current mode and settles on the centre of the passing window:
 * 0, or -1 (trim unchanged) when no trim reads READ ID "ONFI" and a valid parameter-page copy */
int onfi_calibrate(struct chip *c);

struct op_result onfi_reset(void);
int onfi_read_id(uint8_t addr, uint8_t *out, int n);
int onfi_read_param(uint8_t *out);  /* PARAM_PAGE_REPLY_BYTES: the copies, then the extended page */
struct op_result onfi_set_feature(uint8_t addr, uint32_t params);
int onfi_set_timing_mode(struct chip *c, uint8_t mode);
struct op_result onfi_erase(const struct chip *c, uint32_t block);
/* src ONFI_SRC_PRBS programs the seeded PRBS; ONFI_SRC_BUFFER the page buffer's first len bytes */
struct op_result onfi_program(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len);
/* reads len bytes into the page buffer; with ONFI_SRC_PRBS counts errors against the seeded PRBS */
struct op_result onfi_read(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len,
                           uint16_t cw_bytes);
/* (begin_*, not start_*: LiteX names the start CSR accessors onfi_start_*) */
/* the same operations in two halves, so the CPU can prepare the next one while the chip is busy;
 * the controller's registers must not be written between start and finish */
void onfi_begin_erase(const struct chip *c, uint32_t block);
void onfi_begin_program(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len);
void onfi_begin_read(const struct chip *c, uint32_t block, uint32_t page, int src, uint32_t seed, uint32_t len,
                     uint16_t cw_bytes);
struct op_result onfi_finish(void);
/* a sequential cache read: after onfi_read of page n (its busy time that page's tR), onfi_read_cache_start sends 31h
 * and takes one byte (page n again, dropped) so the array reads n + 1; then each onfi_begin_read_cache + onfi_finish
 * brings the next page out as onfi_read does (31h: the array reads the one after meanwhile; last: 3Fh, nothing more) */
struct op_result onfi_read_cache_start(void);
void onfi_begin_read_cache(int last, int src, uint32_t seed, uint32_t len, uint16_t cw_bytes);
/* launches (several targets at once): the command, address and data cycles, back as soon as they start so the
 * caller's own work overlaps them; onfi_launch_wait before anything else touches the bus, which leaves the target
 * busy (its R/B# low). onfi_ready says when it is done, onfi_read_status then gives its result. A cache program's
 * R/B# rises once the chip takes the next page (its array still busy: ARDY in the status). */
void onfi_launch_erase(const struct chip *c, uint32_t block);
void onfi_launch_program(const struct chip *c, uint32_t block, uint32_t page, uint32_t seed, int cache);
void onfi_launch_wait(void);
int onfi_ready(const struct chip *c);
struct op_result onfi_read_status(void);
void onfi_codeword(int i, uint16_t *e10, uint16_t *e01);
void onfi_totals(uint32_t *e10, uint32_t *e01);
volatile uint8_t *onfi_buffer(void);
uint64_t rig_clock_ns(void);
void rig_advance(uint64_t ns, int16_t temp);
/* whether the firmware waits for the host with nothing else to do: the RTL rig's simulation then waits for
 * the link instead of running the idle loop (nothing on hardware) */
void rig_idle(int idle);
#endif
