/* nandrig rig firmware: identify the chip on each target, switch each to its fastest timing mode, serve the host. */
#include <generated/csr.h>
#include <generated/soc.h>
#include "bch.h"
#include "bring_up.h"
#include "onfi.h"
#include "protocol.h"
#include "server.h"
#include "supply.h"

static struct chip chips[ONFI_TARGETS];
static struct cycle_job jobs[ONFI_TARGETS];
_Static_assert(ONFI_TARGETS <= TARGETS_MAX, "the protocol's targets");

int main(void)
{
	uint8_t present = bring_up(chips, ONFI_TARGETS);
	uint32_t caps = CAP_RAW_READ | CAP_CYCLE_JOBS | (bch_present() ? CAP_BCH : 0) | (supply_present() ? CAP_ENERGY : 0);
#ifdef CSR_VTIME_BASE
	server_init(chips, jobs, ONFI_TARGETS, present, RIG_KIND_RTL, caps | CAP_VIRTUAL_TIME);
#else
	server_init(chips, jobs, ONFI_TARGETS, present, RIG_KIND_HARDWARE, caps);
#endif
	for (;;)
		server_step();
	return 0;
}
