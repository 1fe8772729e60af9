#include "protocol.h"

/* reflected 0x04C11DB7, a nibble at a time: a 64-byte table makes it four times the bitwise loop's speed, which
 * counts where the soft-core checks every byte of a frame twice (its CRC, the reply cache's key) and a table set
 * once more */
static const uint32_t crc_nibble[16] = {
	0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu,
	0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
	0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
	0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu};

uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		crc = (crc >> 4) ^ crc_nibble[crc & 15u];
		crc = (crc >> 4) ^ crc_nibble[crc & 15u];
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
			if (++code == 0xFF && i + 1 < n) {  /* a full run that ends the input takes no further code */
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

uint32_t frame_encode(uint8_t type, uint8_t op, uint16_t seq, uint16_t status_or_target, uint8_t *buf, uint32_t n,
                      uint8_t *out)
{
	SET_FRAME_HEAD_TYPE(buf, type);
	SET_FRAME_HEAD_OPCODE(buf, op);
	SET_FRAME_HEAD_SEQ(buf, seq);
	SET_FRAME_HEAD_STATUS_OR_TARGET(buf, status_or_target);
	put_le(buf + FRAME_HEAD_BYTES + n, crc32_of(buf, FRAME_HEAD_BYTES + n), FRAME_CRC_BYTES);
	uint32_t len = (uint32_t)cobs_encode(buf, FRAME_HEAD_BYTES + n + FRAME_CRC_BYTES, out);
	out[len++] = 0;
	return len;
}
