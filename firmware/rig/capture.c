#include "capture.h"
#include "protocol.h"

int capture_trim_centre(uint16_t passing)
{
	int best_lo = 0, best_len = 0;
	for (int i = 0; i < 16;) {
		if (!(passing >> i & 1)) {
			i++;
			continue;
		}
		int j = i;
		while (j < 16 && (passing >> j & 1))
			j++;
		if (j - i > best_len) {
			best_lo = i;
			best_len = j - i;
		}
		i = j;
	}
	/* of two central trims the later: more setup margin after data valid */
	return best_len ? CAPTURE_TRIM_MIN + best_lo + best_len / 2 : CAPTURE_TRIM_MAX + 1;
}
