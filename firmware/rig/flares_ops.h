/* FLARES on the rig (docs/protocol.md, "FLARES on the rig"): t per page from its profile, the profile in the spare. */
#ifndef NANDRIG_FLARES_OPS_H
#define NANDRIG_FLARES_OPS_H
#include "rig.h"

void flares_defaults(void);  /* the constants until the first FLARES_CONFIG, the compiled-in tables; forgets every RAM profile */
uint32_t cmd_flares_config(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_flares_program(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_flares_read(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_flares_tables(const struct request *q, uint8_t *out, int *st);
uint32_t cmd_flares_clock(const struct request *q, uint8_t *out, int *st);  /* FLARES' clock credit for bakes */
#endif
