/* A long command's reply sent in parts while the command runs (protocol 1.18, docs/protocol.md "Replies in
 * parts"): on the serial link a block's MEASURE reply takes about as long as reading the block. */
#ifndef NANDRIG_REPLY_STREAM_H
#define NANDRIG_REPLY_STREAM_H
#include <stdint.h>
#include "rig.h"

/* the reply to q will be built in payload[]; its parts go out as stream_ready says which bytes are final */
void stream_begin(const struct request *q, const uint8_t *payload);
/* payload[0 .. n) is final: parts of it go out as the link takes them (never waits) */
void stream_ready(uint32_t n);
/* the request came again while it runs (its reply was damaged): the parts again, from the start */
void stream_rewind(void);
/* the part on its way finished (waits for the link), so that another frame can follow it */
void stream_settle(void);
/* The command ended with status st and n payload bytes at buf + FRAME_HEAD_BYTES, where buf has
 * STREAM_END_BYTES of room before it: nonzero when parts went, and then the end frame has been sent through out
 * (ENCODED_MAX(MAX_BODY) bytes), written over bytes of buf the parts carried; 0 when none went, and the reply
 * is to go whole. */
int stream_end(int st, uint8_t *buf, uint32_t n, uint8_t *out);
/* a reply kept whole (the reply cache's), sent again in parts: a host keeps the parts that arrive intact, so on a
 * noisy link each retry needs only those that did not */
void stream_whole(const struct request *q, int st, const uint8_t *payload, uint32_t n);
#endif
