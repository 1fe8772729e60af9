/* The supply meter's totals as energy: codes times the front end's pJ per code and sample (onfi_facts.h, from
 * nandrig/chip/supply.py). */
#include <generated/csr.h>
#include "onfi_facts.h"
#include "supply.h"

#ifdef CSR_SUPPLY_BASE
/* codes * NUM / DEN without overflowing 64 bits: a year of full-scale samples stays far inside */
static uint64_t pj(uint64_t codes)
{
	return codes / ENERGY_PJ_DEN * ENERGY_PJ_NUM + codes % ENERGY_PJ_DEN * ENERGY_PJ_NUM / ENERGY_PJ_DEN;
}

int supply_present(void) { return 1; }

void supply_take(struct supply_reading *r)
{
	supply_take_write(1);  /* the totals move to the status registers in one cycle */
	r->busy_pj = pj(supply_busy_sum_read());
	r->busy_ns = supply_busy_count_read() * FRONT_END_SAMPLE_NS;
	r->transfer_pj = pj(supply_transfer_sum_read());
	r->transfer_ns = supply_transfer_count_read() * FRONT_END_SAMPLE_NS;
	uint64_t idle_ns = supply_idle_count_read() * FRONT_END_SAMPLE_NS;
	r->idle_uw = idle_ns ? (uint32_t)(pj(supply_idle_sum_read()) * 1000 / idle_ns) : 0;
}
#else
int supply_present(void) { return 0; }

void supply_take(struct supply_reading *r)
{
	r->busy_pj = r->busy_ns = r->transfer_pj = r->transfer_ns = 0;
	r->idle_uw = 0;
}
#endif
