/* The protocol server (docs/protocol.md): frames in, one reply per request out. */
#ifndef NANDRIG_SERVER_H
#define NANDRIG_SERVER_H
#include <stdint.h>
#include "cycle_job.h"
#include "onfi.h"

/* chips[k] on CE# k and jobs[k] its CYCLE's, k < n (the build's targets); present: bit k when a chip answered
 * there (target 0 is listed either way) */
void server_init(struct chip *chips, struct cycle_job *jobs, uint8_t n, uint8_t present, uint8_t rig_kind,
                 uint32_t caps);
void server_step(void);  /* take waiting bytes from the link, answer complete frames */
#endif
