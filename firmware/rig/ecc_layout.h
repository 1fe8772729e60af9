/* The ECC layout (docs/protocol.md, "ECC layout"): per data codeword, parity packed in the spare after the
 * FLARES page profile; the page in the controller's buffer. */
#ifndef NANDRIG_ECC_LAYOUT_H
#define NANDRIG_ECC_LAYOUT_H
#include <stdint.h>
#include "onfi.h"

struct decoded {
	uint32_t corrected;  /* bits, over the data codewords that decoded */
	uint8_t failed;      /* data codewords that did not */
};

/* the page's pattern in the buffer, for the encoder (the gateware generator feeds the bus only) */
void ecc_fill_pattern(uint32_t seed, uint32_t n);
/* profile: the FLARES record for the spare, or 0 for none (erased bytes); then every codeword's parity at t */
void ecc_encode_page(const struct chip *c, uint8_t t, const uint8_t *profile);
/* the profile record as read, from the buffer */
void ecc_read_profile(const struct chip *c, uint8_t *rec);
/* READ's reply for the page in the buffer: status, busy, each codeword's counts (decoded at t), the page
 * if the flags ask for it; the decoder's totals in *d */
uint32_t ecc_read_reply(const struct chip *c, struct op_result r, uint8_t t, uint8_t flags, uint32_t seed, uint8_t *out,
                        struct decoded *d);
#endif
