/* What the server's parts share: the request, the rig's identity (rig.c), a command's signature. */
#ifndef NANDRIG_RIG_H
#define NANDRIG_RIG_H
#include <stdint.h>
#include "onfi.h"
#include "protocol.h"

struct request {
	uint8_t op;
	uint16_t seq;
	uint16_t target;  /* the chip (CE#) a targeted request addresses; 0 for the rig-wide ones */
	const uint8_t *payload;
	uint32_t len;
	uint32_t crc;  /* CRC-32 of op, a target other than 0, payload: the reply cache's key */
};

struct rig {
	struct chip *chips;  /* chips[k] on CE# k, as many as the build has targets */
	struct chip *chip;  /* the one the request being served addresses (its target) */
	uint8_t targets;  /* INFO's: bit k for a chip on CE# k (target 0 always: it answers for the rig) */
	uint8_t kind;
	uint32_t caps, session;
	uint32_t holder;  /* the host session holding the rig (HELLO), 0 when free */
	uint8_t streaming;  /* that session's host takes replies in parts (protocol STREAMED_SINCE) */
	uint8_t t_max;  /* the BCH engine's, limited by what the addressed chip's spare area holds */
};
extern struct rig rig;

/* A command fills out[] with its reply payload and returns its length, the status through *st. */
typedef uint32_t (*command_fn)(const struct request *q, uint8_t *out, int *st);

/* HELLO's and STATUS's boot: a different one tells the host the rig restarted */
uint32_t rig_boot(void);

#define NEED(layout) do { if (q->len != layout##_BYTES) { *st = E_BAD_FRAME; return 0; } } while (0)
#define FAIL(code) do { *st = (code); return 0; } while (0)
#endif
