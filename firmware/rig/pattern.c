#include "pattern.h"

static uint64_t splitmix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

uint32_t page_seed(uint32_t campaign_seed, uint32_t block, uint32_t page)
{
	/* the low half of rng.key(campaign, block, page): the seed only needs its low 31 bits */
	uint64_t a = 0x6A09E667F3BCC908ull, b = 0xBB67AE8584CAA73Bull;
	const uint64_t parts[3] = {campaign_seed, block, page};
	for (int i = 0; i < 3; i++) {
		a = splitmix(a ^ parts[i]);
		b = splitmix(b ^ a ^ (parts[i] * 0x9E3779B97F4A7C15ull));
	}
	uint32_t s = (uint32_t)b & 0x7FFFFFFFu;
	return s ? s : 0x7FFFFFFFu;
}

/* The state holds the 31 most recent sequence bits, the oldest in bit 30: they leave as output first,
 * and s[n] = s[n-31] ^ s[n-28] gives 8 new bits at once from bits 30..23 and 27..20. */
uint32_t prbs31_init(uint32_t seed)
{
	seed &= 0x7FFFFFFFu;
	return seed ? seed : 0x7FFFFFFFu;
}

uint8_t prbs31_next(uint32_t *state)
{
	uint32_t w = *state;
	uint8_t out = (uint8_t)(w >> 23);
	uint8_t fresh = (uint8_t)((w >> 23) ^ (w >> 20));
	*state = ((w << 8) | fresh) & 0x7FFFFFFFu;
	return out;
}
