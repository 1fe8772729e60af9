#include "frame.h"

uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	/* bitwise, reflected 0x04C11DB7: small, and fast enough next to the serial link */
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1u));
	}
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
