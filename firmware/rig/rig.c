/* The rig's identity and its boot number. */
#include "rig.h"

struct rig rig;

uint32_t rig_boot(void)
{
	/* no entropy source and no memory across power-up: the rig clock at the first request that asks, which
	 * follows the host's timing to the nanosecond, mixed (murmur3's finalizer); never 0 */
	static uint32_t boot;
	if (boot == 0) {
		uint64_t t = rig_clock_ns();
		uint32_t h = (uint32_t)t ^ (uint32_t)(t >> 32);
		h ^= h >> 16; h *= 0x85EBCA6Bu; h ^= h >> 13; h *= 0xC2B2AE35u; h ^= h >> 16;
		boot = h ? h : 1;
	}
	return boot;
}
