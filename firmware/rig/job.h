/* The long command running (or the last one): what STATUS reports, whether an ABORT arrived. */
#ifndef NANDRIG_JOB_H
#define NANDRIG_JOB_H

#include <stdint.h>
#include "rig.h"

struct job {
	uint8_t running, abort, op;
	uint16_t seq, target;
	uint32_t done, total;
};
extern struct job job;

void job_start(const struct request *q, uint32_t total);
/* between two block operations: answer STATUS/ABORT; nonzero once an ABORT arrived */
int job_poll(void);
/* a long command ends: a timeout sends no payload, an abort the partial result */
uint32_t job_end(int *st, int timed_out, uint32_t n);
void job_status(uint8_t *out);
/* a long command that ran as a job of its own (CYCLE) ended: STATUS reports it as the last one */
void job_record(const struct request *q, uint32_t done, uint32_t total);
/* the reply's first n bytes are final: the server may send them while the command goes on */
void job_output(uint32_t n);
/* the server's: called by job_poll to answer the link while a command runs, by job_output to send what is final */
void job_on_poll(void (*answer)(void));
void job_on_output(void (*ready)(uint32_t n));

#endif
