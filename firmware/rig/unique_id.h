/* Checking READ UNIQUE ID's copies (pure: built natively for tests). */
#ifndef NANDRIG_UNIQUE_ID_H
#define NANDRIG_UNIQUE_ID_H
#include <stdint.h>

/* copies the first copy whose complement checks out (ID XOR complement all ones) of the ncopies in raw to
 * uid and returns its index, or -1 when none does. nandrig.chip.onfi.decode_unique_id is the same rule. */
int unique_id_check(const uint8_t *raw, int ncopies, uint8_t *uid);
#endif
