/* Choosing the read-capture trim from a sweep (pure: built natively for tests). */
#ifndef NANDRIG_CAPTURE_H
#define NANDRIG_CAPTURE_H
#include <stdint.h>

/* the centre (of two the later: more setup margin) of the longest run of set bits in passing (bit i: trim
 * CAPTURE_TRIM_MIN + i; the first run wins a tie), as a trim; CAPTURE_TRIM_MAX + 1 when no bit is set.
 * nandrig.gateware.onfi.timing.trim_centre is the same rule. */
int capture_trim_centre(uint16_t passing);
#endif
