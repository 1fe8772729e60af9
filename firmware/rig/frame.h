/* Framing of the rig protocol (docs/protocol.md): COBS with a 0x00 delimiter, CRC-32 (zlib's). */
#ifndef NANDRIG_FRAME_H
#define NANDRIG_FRAME_H
#include <stddef.h>
#include <stdint.h>

uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n);
static inline uint32_t crc32_of(const uint8_t *p, size_t n) { return crc32_update(0, p, n); }

/* a body's COBS encoding with its delimiter is at most this long */
#define ENCODED_MAX(body_bytes) ((body_bytes) + (body_bytes) / 254 + 2)

/* A frame of n payload bytes at buf + 6 (the head's room before them, the CRC's after) into out: its COBS and
 * the delimiter; returns the bytes in out. */
uint32_t frame_encode(uint8_t type, uint8_t op, uint16_t seq, uint16_t status_or_target, uint8_t *buf, uint32_t n,
                      uint8_t *out);

/* COBS-encode n bytes into out (room for n + n / 254 + 1); returns the encoded length (no delimiter). */
size_t cobs_encode(const uint8_t *in, size_t n, uint8_t *out);
/* Decode in place-safe into out; returns the decoded length or -1 for input that is not COBS. */
long cobs_decode(const uint8_t *in, size_t n, uint8_t *out);

static inline void put_le(uint8_t *p, uint64_t v, int n) { for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static inline uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
#endif
