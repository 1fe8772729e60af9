/* nandrig rig firmware: identify the chip, switch it to its fastest timing mode, serve the host. */
#include <generated/csr.h>
#include "bch.h"
#include "onfi.h"
#include "protocol.h"
#include "server.h"
#include "supply.h"

static struct chip chip;

int main(void)
{
	if (onfi_identify(&chip) == 0) {
		/* the fastest mode the chip lists in which some capture trim reads it; mode 0 has one already */
		int m = 5;
		while (m > 0 && !(chip.timing_modes >> m & 1 && onfi_set_timing_mode(&chip, (uint8_t)m) == 0
		                  && onfi_calibrate(&chip) == 0))
			m--;
		if (m == 0 && chip.mode != 0) {
			onfi_set_timing_mode(&chip, 0);
			onfi_calibrate(&chip);
		}
	}
	uint32_t caps = CAP_RAW_READ | (bch_present() ? CAP_BCH : 0) | (supply_present() ? CAP_ENERGY : 0);
#ifdef CSR_VTIME_BASE
	server_init(&chip, RIG_KIND_RTL, caps | CAP_VIRTUAL_TIME);
#else
	server_init(&chip, RIG_KIND_HARDWARE, caps);
#endif
	for (;;)
		server_step();
	return 0;
}
