#include "bring_up.h"

/* the fastest mode the chip lists in which some capture trim reads it (each target its own trim: trace lengths
 * differ); mode 0 reads already */
static int to_fastest_mode(struct chip *c)
{
	if (onfi_identify(c, c->target) != 0)
		return c->capture == CAPTURE_CALIBRATED;  /* READ ID "ONFI" answered, its parameter page did not suit */
	int m = 5;
	while (m > 0 && !(c->timing_modes >> m & 1 && onfi_set_timing_mode(c, (uint8_t)m) == 0 && onfi_calibrate(c) == 0))
		m--;
	if (m == 0 && c->mode != 0) {
		onfi_set_timing_mode(c, 0);
		onfi_calibrate(c);
	}
	return 1;
}

uint8_t bring_up(struct chip *chips, uint8_t n)
{
	uint8_t present = 0;
	for (uint8_t k = 0; k < n; k++) {
		chips[k].target = k;
		present |= (uint8_t)(to_fastest_mode(&chips[k]) << k);
	}
	return present;
}
