/* The per-page PRBS seed, bit-exact with nandrig.boards.sim.pattern.page_seed. */
#ifndef NANDRIG_PATTERN_H
#define NANDRIG_PATTERN_H
#include <stdint.h>
uint32_t page_seed(uint32_t campaign_seed, uint32_t block, uint32_t page);
#endif
