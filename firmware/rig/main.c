/* nandrig rig firmware: identify the chip, switch it to its fastest timing mode, serve the host. */
#include <generated/csr.h>
#include "bch.h"
#include "onfi.h"
#include "protocol.h"
#include "server.h"

static struct chip chip;

int main(void)
{
	if (onfi_identify(&chip) == 0) {
		int best = 0;
		for (int m = 0; m < 6; m++)
			if (chip.timing_modes >> m & 1)
				best = m;
		onfi_set_timing_mode(&chip, (uint8_t)best);
	}
	uint32_t caps = CAP_RAW_READ | (bch_present() ? CAP_BCH : 0);
#ifdef CSR_VTIME_BASE
	server_init(&chip, RIG_KIND_RTL, caps | CAP_VIRTUAL_TIME);
#else
	server_init(&chip, RIG_KIND_HARDWARE, caps);
#endif
	for (;;)
		server_step();
	return 0;
}
