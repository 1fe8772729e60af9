/* A physical chip's identity: the first READ UNIQUE ID copy that agrees with its complement. */
#include "unique_id.h"
#include "onfi_facts.h"

int unique_id_check(const uint8_t *raw, int ncopies, uint8_t *uid)
{
	for (int k = 0; k < ncopies; k++) {
		const uint8_t *id = raw + 2 * ONFI_UNIQUE_ID_BYTES * k, *inv = id + ONFI_UNIQUE_ID_BYTES;
		int ok = 1;
		for (int i = 0; i < ONFI_UNIQUE_ID_BYTES; i++)
			ok &= (id[i] ^ inv[i]) == 0xFF;
		if (ok) {
			for (int i = 0; i < ONFI_UNIQUE_ID_BYTES; i++)
				uid[i] = id[i];
			return k;
		}
	}
	return -1;
}
