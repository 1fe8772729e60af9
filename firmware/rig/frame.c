#include "frame.h"

/* reflected 0x04C11DB7, a byte at a time: a whole request crosses it twice (the frame check, the retry key), so
 * on the soft-core the bitwise loop cost more than the UART delivering the bytes */
static uint32_t crc_table[256];

uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	if (!crc_table[1])  /* filled on first use (entry 0 is 0 either way) */
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++)
				c = (c >> 1) ^ (0xEDB88320u & -(c & 1u));
			crc_table[i] = c;
		}
	crc = ~crc;
	while (n--)
		crc = crc_table[(crc ^ *p++) & 0xFFu] ^ (crc >> 8);
	return ~crc;
}

size_t cobs_encode(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t code_at = 0, o = 1;
	uint8_t code = 1;
	for (size_t i = 0; i < n; i++) {
		if (in[i] == 0) {
			out[code_at] = code;
			code_at = o++;
			code = 1;
		} else {
			out[o++] = in[i];
			if (++code == 0xFF) {
				out[code_at] = code;
				code_at = o++;
				code = 1;
			}
		}
	}
	out[code_at] = code;
	return o;
}

long cobs_decode(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t i = 0, o = 0;
	while (i < n) {
		uint8_t code = in[i];
		if (code == 0 || i + code > n)
			return -1;
		for (size_t k = i + 1; k < i + code; k++) {
			if (in[k] == 0)
				return -1;
			out[o++] = in[k];
		}
		i += code;
		if (code < 0xFF && i < n)
			out[o++] = 0;
	}
	return (long)o;
}
