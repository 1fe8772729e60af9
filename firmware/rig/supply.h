/* The chip's supply energy, from the front end's meter (gateware/supply): per phase since the last take. */
#ifndef NANDRIG_SUPPLY_H
#define NANDRIG_SUPPLY_H
#include <stdint.h>

struct supply_reading {
	uint64_t busy_pj, busy_ns, transfer_pj, transfer_ns;
	uint32_t idle_uw;  /* the idle samples' mean power; 0 when there were none */
};

int supply_present(void);  /* the SoC has the meter (an adapter with the front end) */
void supply_take(struct supply_reading *r);  /* the totals since the last take, which start afresh */

#endif
