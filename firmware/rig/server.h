/* The protocol server (docs/protocol.md): frames in, one reply per request out. */
#ifndef NANDRIG_SERVER_H
#define NANDRIG_SERVER_H
#include <stdint.h>
#include "onfi.h"

void server_init(struct chip *c, uint8_t rig_kind, uint32_t caps);
void server_step(void);  /* take waiting bytes from the link, answer complete frames */
#endif
