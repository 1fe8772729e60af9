/* The protocol server (docs/protocol.md): frames in, one reply per request out. */
#ifndef NANDRIG_SERVER_H
#define NANDRIG_SERVER_H
#include <stdint.h>
#include "onfi.h"

#define MAX_PAYLOAD 16384
#define MAX_BODY (6 + MAX_PAYLOAD + 4)

enum { T_REQUEST = 0x52, T_REPLY = 0x41 };
enum {
	OP_HELLO = 0x01, OP_INFO = 0x02, OP_RESET = 0x03, OP_READ_ID = 0x04, OP_READ_PARAM_PAGE = 0x05, OP_SCAN_BAD = 0x06,
	OP_ERASE = 0x10, OP_PROGRAM = 0x11, OP_READ = 0x12, OP_SET_READ_OFFSET = 0x13, OP_CYCLE = 0x14, OP_MEASURE = 0x15,
	OP_READ_DISTURB = 0x16, OP_TIME = 0x20, OP_ADVANCE = 0x21, OP_STATUS = 0x30, OP_ABORT = 0x31,
	OP_FLARES_CONFIG = 0x40, OP_FLARES_PROGRAM = 0x41, OP_FLARES_READ = 0x42,
};
enum {
	E_OK, E_BAD_FRAME, E_UNKNOWN_COMMAND, E_VERSION_MISMATCH, E_OUT_OF_RANGE, E_BAD_BLOCK, E_CHIP_FAIL, E_BUSY,
	E_ABORTED, E_UNSUPPORTED, E_BAD_PARAMETER, E_TIMEOUT, E_INTERNAL, E_NO_SPACE,
};

struct request {
	uint8_t op;
	uint16_t seq;
	const uint8_t *payload;
	uint32_t len;
	uint32_t crc;  /* CRC-32 of op + payload: the reply cache's key */
};

void server_init(struct chip *c, uint8_t rig_kind, uint32_t caps);
void server_step(void);  /* take waiting bytes from the link, answer complete frames */
#endif
