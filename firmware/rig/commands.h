/* The chip commands of the protocol. */
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
uint32_t cmd_set_verify_levels(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_measure(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_read_disturb(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_time(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_advance(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_energy(const struct request *q, uint8_t *out, int *st);

#endif
