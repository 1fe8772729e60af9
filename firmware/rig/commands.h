/* The chip commands of the protocol, and the checks FLARES' commands share with them. */
#ifndef NANDRIG_COMMANDS_H
#define NANDRIG_COMMANDS_H
#include "rig.h"

uint32_t cmd_hello(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_info(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_reset(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_read_id(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_read_param_page(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_scan_bad(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_read_buffer(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_erase(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_program(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_read(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_set_read_offset(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_set_read_refs(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_cycle(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_measure(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_read_disturb(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_time(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_advance(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_energy(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_status(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_abort(const struct request *q, uint8_t *out, int *st);

uint32_t raw_bytes(void);
/* E_OK, or E_OUT_OF_RANGE when the range leaves the chip */
int check_blocks(uint32_t first, uint32_t count);
int check_pages(uint32_t first, uint32_t count);
/* the factory mark: page 0's first spare byte, read once before the block is touched */
int is_bad(uint32_t block);
/* CHIP_RESULT of an operation, its status through *status; 0 bytes on a timeout */
uint32_t chip_result(uint8_t *out, struct op_result r, int *status);
/* a page into the buffer; with READ_FLAG_COMPARE counted against the seeded pattern */
struct op_result read_page(uint32_t block, uint32_t page, uint8_t flags, uint32_t seed);
#endif
