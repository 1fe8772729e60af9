/* The per-page PRBS seed and the PRBS-31 bytes, bit-exact with nandrig.boards.sim.pattern. */
#ifndef NANDRIG_PATTERN_H
#define NANDRIG_PATTERN_H
#include <stdint.h>
uint32_t page_seed(uint32_t campaign_seed, uint32_t block, uint32_t page);
/* the pattern in software, for the few places the gateware generator does not reach (a page to
 * encode before programming it, the spare bytes the ECC layout takes from the pattern) */
uint32_t prbs31_init(uint32_t seed);      /* the state before the first byte */
uint8_t prbs31_next(uint32_t *state);     /* the next byte, MSB first */
#endif
