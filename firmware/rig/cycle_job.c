#include <string.h>
#include "cycle_job.h"
#include "page_io.h"
#include "pattern.h"

/* where a job is in its block: about to erase it, erasing, about to program the next page of the set,
 * programming it, or waiting out the array after a cache program failed (it finishes the page it holds) */
enum { AT_BLOCK, ERASING, AT_PAGE, PROGRAMMING, DRAINING };

#define TIMEOUT_NS 1000000000ull  /* as the controller's R/B# timeout: far beyond any tBERS */

static struct cycle_job *jobs;
static uint16_t n_jobs;

void cycle_jobs_init(struct cycle_job *storage, uint16_t n)
{
	jobs = storage;
	n_jobs = n;
}

struct cycle_job *cycle_job(uint16_t target) { return target < n_jobs ? &jobs[target] : 0; }

static int in_set(const struct cycle_job *j, uint32_t page)
{
	return !j->has_set || (j->set[page / 8] >> (page % 8) & 1);
}

static uint8_t *record(struct cycle_job *j, uint32_t i)
{
	return j->body + FRAME_HEAD_BYTES + CYCLE_HEAD_BYTES + CYCLE_BLOCK_BYTES * i;
}

int cycle_job_start(const struct request *q, uint32_t session)
{
	const struct chip *c = rig.chip;
	struct cycle_job *j = &jobs[q->target];
	if (q->len < CYCLE_REQ_BYTES)
		return E_BAD_FRAME;
	uint32_t first = CYCLE_REQ_FIRST_BLOCK(q->payload), n = CYCLE_REQ_N_BLOCKS(q->payload);
	uint32_t cycles = CYCLE_REQ_CYCLES(q->payload);
	uint8_t flags = CYCLE_REQ_FLAGS(q->payload);
	if (n > CYCLE_MAX_BLOCKS || check_blocks(first, n))
		return E_OUT_OF_RANGE;
	if (cycles > CYCLE_MAX_ROUNDS || flags & ~CYCLE_FLAGS_ALL)
		return E_BAD_PARAMETER;
	/* the page set (flags PAGE_SET): a bit per page of the block, at least one, none beyond it */
	uint32_t set_bytes = (c->pages_per_block + 7) / 8;
	if (q->len != CYCLE_REQ_BYTES + (flags & CYCLE_FLAG_PAGE_SET ? set_bytes : 0))
		return E_BAD_FRAME;
	if (flags & CYCLE_FLAG_PAGE_SET) {
		const uint8_t *set = q->payload + CYCLE_REQ_BYTES;
		uint32_t any = 0;
		for (uint32_t p = 0; p < 8 * set_bytes; p++)
			if (set[p / 8] >> (p % 8) & 1) {
				if (p >= c->pages_per_block)
					return E_BAD_PARAMETER;
				any = 1;
			}
		if (!any || set_bytes > CYCLE_SET_MAX_BYTES)
			return E_BAD_PARAMETER;
	}
	for (uint32_t i = 0; i < n; i++)
		if (is_bad(first + i) && !(flags & CYCLE_FLAG_FORCE))
			return E_BAD_BLOCK;
	memset(j, 0, sizeof *j);
	j->q = *q;
	j->q.payload = 0;
	j->session = session;
	j->first = first;
	j->n = n;
	j->cycles = cycles;
	j->seed = CYCLE_REQ_PATTERN_SEED(q->payload);
	j->has_set = (flags & CYCLE_FLAG_PAGE_SET) != 0;
	if (j->has_set)
		memcpy(j->set, q->payload + CYCLE_REQ_BYTES, set_bytes);
	for (uint32_t p = 0; p < c->pages_per_block; p++)
		if (in_set(j, p))
			j->last = p;
	j->cache = (c->optional_commands & ONFI_OPT_PAGE_CACHE_PROGRAM) != 0;
	j->state = CYCLE_RUNNING;
	return E_OK;
}

/* round by round (every block finishes round k before any starts round k + 1), so an abort leaves the blocks
 * within one round of each other; a block that failed sits out the rounds after */
static void next_block(struct cycle_job *j)
{
	if (++j->i == j->n) {
		j->i = 0;
		j->round++;
	}
	j->phase = AT_BLOCK;
}

/* a block's round is over: a failed round still wore the block */
static void block_done(struct cycle_job *j, int failed)
{
	uint8_t *b = record(j, j->i);
	SET_CYCLE_BLOCK_FAILED(b, failed);
	SET_CYCLE_BLOCK_CYCLES_DONE(b, CYCLE_BLOCK_CYCLES_DONE(b) + 1);
	j->done++;
	next_block(j);
}

static void end(struct cycle_job *j)
{
	uint8_t *head = j->body + FRAME_HEAD_BYTES;
	uint32_t min = 0xFFFFFFFFu;
	for (uint32_t i = 0; i < j->n; i++)
		if (CYCLE_BLOCK_CYCLES_DONE(record(j, i)) < min)
			min = CYCLE_BLOCK_CYCLES_DONE(record(j, i));
	SET_CYCLE_HEAD_CYCLES_DONE_MIN(head, min);
	j->len = CYCLE_HEAD_BYTES + CYCLE_BLOCK_BYTES * j->n;
	j->status = j->abort ? E_ABORTED : E_OK;
	j->state = CYCLE_ENDED;
}

/* the target still busy: nonzero while it may be; a chip that stays busy past the timeout fails the block */
static int waiting(struct cycle_job *j, const struct chip *c)
{
	if (onfi_ready(c))
		return 0;
	if (rig_clock_ns() - j->busy_since_ns < TIMEOUT_NS)
		return 1;
	block_done(j, 1);
	return 1;
}

static void launched(struct cycle_job *j, uint8_t phase)
{
	j->phase = phase;
	j->busy_since_ns = rig_clock_ns();
}

/* One bus operation of a job: a launch, or the status of what its target finished (nothing while it works).
 * Nonzero when it read a status and launched nothing: the caller launches the next operation at once, not a sweep
 * of the other targets later (their transfers would leave this array idle). The next page's seed is computed
 * while this page goes in. A chip with cache program takes each next page while its array programs the one before
 * (80h-15h, the last page of the set 10h); a failure then shows one page late (FAILC), and the page after it has
 * been programmed too. */
static int step(struct cycle_job *j, const struct chip *c)
{
	uint32_t block = j->first + j->i;
	switch (j->phase) {
	case AT_BLOCK:
		while (!j->abort && j->round < j->cycles && CYCLE_BLOCK_FAILED(record(j, j->i)))
			next_block(j);
		if (j->abort || j->round >= j->cycles) {
			end(j);
			return 0;
		}
		block = j->first + j->i;
		onfi_launch_erase(c, block);
		launched(j, ERASING);
		j->next_seed = page_seed(j->seed, block, 0);
		onfi_launch_wait();
		j->page = 0;
		j->fail_mask = ONFI_STATUS_FAIL;  /* FAILC is defined in cache operations only */
		return 0;
	case ERASING:
		if (waiting(j, c))
			return 0;
		if (onfi_read_status().status & ONFI_STATUS_FAIL)
			block_done(j, 1);
		else
			j->phase = AT_PAGE;
		return 1;
	case AT_PAGE:
		for (; j->page < c->pages_per_block && !in_set(j, j->page); j->page++)
			j->next_seed = page_seed(j->seed, block, j->page + 1);
		if (j->page >= c->pages_per_block) {
			block_done(j, 0);
			return 1;
		}
		if (j->cache && j->page != j->last)
			j->fail_mask = ONFI_STATUS_FAIL | ONFI_STATUS_FAILC;
		onfi_launch_program(c, block, j->page, j->next_seed, j->cache && j->page != j->last);
		launched(j, PROGRAMMING);
		j->next_seed = page_seed(j->seed, block, j->page + 1);  /* while the page goes in */
		onfi_launch_wait();
		return 0;
	case PROGRAMMING: {
		if (waiting(j, c))
			return 0;
		int failed = (onfi_read_status().status & j->fail_mask) != 0;
		if (failed && j->cache && j->page != j->last)
			launched(j, DRAINING);  /* left early: the array finishes the page it holds before anything else */
		else if (failed)
			block_done(j, 1);
		else {
			j->page++;
			j->phase = AT_PAGE;
		}
		return j->phase != DRAINING;
	}
	case DRAINING:
		if (onfi_read_status().status & ONFI_STATUS_ARDY || rig_clock_ns() - j->busy_since_ns >= TIMEOUT_NS) {
			block_done(j, 1);
			return 1;
		}
		return 0;
	}
	return 0;
}

void cycle_jobs_step(void)
{
	int stepped = 0;
	for (uint16_t t = 0; t < n_jobs; t++)
		if (jobs[t].state == CYCLE_RUNNING) {
			const struct chip *c = &rig.chips[t];
			onfi_select(c);
			while (step(&jobs[t], c) && jobs[t].state == CYCLE_RUNNING)
				;
			stepped = 1;
		}
	if (stepped)
		onfi_select(rig.chip);
}

int cycle_jobs_running(void)
{
	for (uint16_t t = 0; t < n_jobs; t++)
		if (jobs[t].state == CYCLE_RUNNING)
			return 1;
	return 0;
}
