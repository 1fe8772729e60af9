#include "profiles.h"

struct slot {
	uint32_t block;
	uint16_t page;
	uint8_t used;
	flares_pprof_t pp;
};

static struct slot slots[PROFILE_SLOTS];
static uint32_t used;

void profiles_clear(void)
{
	for (uint32_t i = 0; i < PROFILE_SLOTS; i++)
		slots[i].used = 0;
	used = 0;
}

static uint32_t home(uint32_t block, uint32_t page)
{
	return (block * 2654435761u ^ page * 40503u) % PROFILE_SLOTS;  /* spread neighbouring pages */
}

flares_pprof_t *profiles_find(uint32_t block, uint32_t page)
{
	/* no deletions, so a probe ends at the first empty slot */
	for (uint32_t i = home(block, page), n = 0; n < PROFILE_SLOTS && slots[i].used; i = (i + 1) % PROFILE_SLOTS, n++)
		if (slots[i].block == block && slots[i].page == page)
			return &slots[i].pp;
	return 0;
}

flares_pprof_t *profiles_add(uint32_t block, uint32_t page)
{
	uint32_t i = home(block, page);
	if (used == PROFILE_SLOTS)
		return 0;
	while (slots[i].used)
		i = (i + 1) % PROFILE_SLOTS;
	slots[i].used = 1;
	slots[i].block = block;
	slots[i].page = (uint16_t)page;
	used++;
	return &slots[i].pp;
}

uint32_t profiles_used(void) { return used; }
