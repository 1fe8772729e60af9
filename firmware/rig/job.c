/* The long command running (CYCLE, MEASURE, ...): its progress for STATUS, its abort flag, its end. Commands
 * poll between block operations; the server answers the link meanwhile through the poller it registers, so
 * calls run one way: server -> commands -> job. */
#include "job.h"

struct job job;
static void (*poller)(void);
static void (*output)(uint32_t);

void job_on_poll(void (*answer)(void)) { poller = answer; }
void job_on_output(void (*ready)(uint32_t)) { output = ready; }

void job_output(uint32_t n)
{
	if (output)
		output(n);
}

int job_poll(void)
{
	if (poller)
		poller();
	return job.abort;
}

void job_status(uint8_t *p)
{
	SET_STATUS_REPLY_STATE(p, job.running ? JOB_BUSY : JOB_IDLE);
	SET_STATUS_REPLY_OPCODE(p, job.op);
	SET_STATUS_REPLY_SEQ(p, job.seq);
	SET_STATUS_REPLY_DONE(p, job.done);
	SET_STATUS_REPLY_TOTAL(p, job.total);
	SET_STATUS_REPLY_BOOT(p, rig_boot());
}

void job_start(const struct request *q, uint32_t total)
{
	job.running = 1;
	job.abort = 0;
	job.op = q->op;
	job.seq = q->seq;
	job.target = q->target;
	job.done = 0;
	job.total = total;
}

void job_record(const struct request *q, uint32_t done, uint32_t total)
{
	job.op = q->op;
	job.seq = q->seq;
	job.target = q->target;
	job.done = done;
	job.total = total;
}

uint32_t job_end(int *st, int timed_out, uint32_t n)
{
	job.running = 0;
	if (timed_out) {
		*st = E_TIMEOUT;
		return 0;
	}
	if (job.abort)
		*st = E_ABORTED;
	return n;
}
