/* CYCLE as a job of its target: several targets' CYCLEs run at once, the bus serving one target while the
 * others' arrays erase and program (the controller's launches). The server starts a job, steps every running
 * job whenever it is free, and sends each job's reply when it ends. */
#ifndef NANDRIG_CYCLE_JOB_H
#define NANDRIG_CYCLE_JOB_H
#include <stdint.h>
#include "rig.h"

#define CYCLE_SET_MAX_BYTES 128  /* a page set of up to 1,024 pages per block */

enum { CYCLE_IDLE = 0, CYCLE_RUNNING, CYCLE_ENDED };

struct cycle_job {
	uint8_t state, phase, abort, cache, fail_mask, has_set, sent;
	int status;
	struct request q;  /* op, seq, target and crc of the request (its payload is not kept) */
	uint32_t session;  /* the host session that sent it */
	uint32_t first, n, cycles, seed;
	uint32_t round, i, page, last, next_seed, done;
	uint64_t busy_since_ns;  /* when the target went busy (a chip that never answers times the job out) */
	uint8_t set[CYCLE_SET_MAX_BYTES];
	/* the reply as a frame's body: head, payload (CYCLE_HEAD, the per-block records), room for the CRC */
	uint8_t body[FRAME_HEAD_BYTES + CYCLE_HEAD_BYTES + CYCLE_BLOCK_BYTES * CYCLE_MAX_BLOCKS + FRAME_CRC_BYTES];
	uint32_t len;  /* the reply's payload bytes */
};

/* the jobs' storage: one per target of the build (main.c sizes it, as the chips) */
void cycle_jobs_init(struct cycle_job *storage, uint16_t n);
/* the job of a target; 0 for a target the build has not */
struct cycle_job *cycle_job(uint16_t target);
/* checks a CYCLE request on rig.chip as cmd_cycle did and starts its job: E_OK, or the status to answer */
int cycle_job_start(const struct request *q, uint32_t session);
/* one step of every running job (a launch or a status read each); the controller is left on rig.chip's target */
void cycle_jobs_step(void);
/* whether any job runs */
int cycle_jobs_running(void);

#endif
