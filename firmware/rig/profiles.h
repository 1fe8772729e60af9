/* FLARES page profiles in RAM, keyed by (block, page): the counters the spare area does not keep.
 * Open addressing in a fixed table; no allocation. */
#ifndef NANDRIG_PROFILES_H
#define NANDRIG_PROFILES_H
#include <stdint.h>
#include "flares.h"

#include "protocol.h"  /* PROFILE_SLOTS */

void profiles_clear(void);
flares_pprof_t *profiles_find(uint32_t block, uint32_t page);
/* a fresh slot for (block, page), which must not be in the table; NULL when the table is full */
flares_pprof_t *profiles_add(uint32_t block, uint32_t page);
uint32_t profiles_used(void);
#endif
