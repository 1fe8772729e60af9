/* The link: frames in, the reply cache, dispatch, and what a long command answers meanwhile (STATUS, ABORT). */
#include <string.h>
#include "bch.h"
#include "commands.h"
#include "cycle_job.h"
#include "flares_ops.h"
#include "job.h"
#include "link.h"
#include "reply_stream.h"
#include "rig.h"
#include "server.h"

struct cached {
	uint32_t used;  /* 0: empty; else when it was last stored (cache_age) */
	uint32_t session, crc, len;  /* len: the payload's */
	uint16_t seq;
	uint16_t status;
	uint8_t body[MAX_BODY];  /* the payload at FRAME_HEAD_BYTES: encoded again for a retry, which is rare */
};

/* one reply per session, the latest: a host waits for each reply before its next request, so a retry
 * is always of the last one; keying by session keeps an interrupted campaign's last reply while
 * other hosts' sessions use the rig, until REPLY_CACHE_SESSIONS newer sessions have */
static struct cached cache[REPLY_CACHE_SESSIONS];
static uint32_t cache_age;
/* reply has room before it for the end frame of a reply sent in parts (reply_stream.h) */
static uint8_t rx[ENCODED_MAX(MAX_BODY)], body[MAX_BODY], reply_room[STREAM_END_BYTES + MAX_BODY],
	tx[ENCODED_MAX(MAX_BODY)];
static uint8_t *const reply = reply_room + STREAM_END_BYTES;
static uint32_t rx_len;
static int rx_overflow;

/* buf holds the payload after the header; the header and CRC go around it */
static uint32_t encode_reply(const struct request *q, int status, uint8_t *buf, uint32_t n, uint8_t *out)
{
	return frame_encode(T_REPLY, q->op, q->seq, (uint16_t)status, buf, n, out);
}

/* every frame goes out here: after the part of a reply in parts already on its way */
static void send(const uint8_t *p, uint32_t n)
{
	stream_settle();
	link_write(p, n);
}

/* a short reply sent while a long command holds the main buffers */
static void send_short(const struct request *q, int status, const uint8_t *payload, uint32_t n)
{
	static uint8_t buf[FRAME_HEAD_BYTES + STATUS_REPLY_BYTES + FRAME_CRC_BYTES], out[ENCODED_MAX(sizeof buf)];
	memcpy(buf + FRAME_HEAD_BYTES, payload, n);
	send(out, encode_reply(q, status, buf, n, out));
}

/* The next valid request from the link, if a complete one is waiting; bad frames are dropped. */
static int take_frame(struct request *q)
{
	int c;
	while ((c = link_getc()) >= 0) {
		if (c != 0) {
			if (rx_len < sizeof rx)
				rx[rx_len++] = (uint8_t)c;
			else
				rx_overflow = 1;
			continue;
		}
		uint32_t n = rx_len;
		int over = rx_overflow;
		rx_len = 0;
		rx_overflow = 0;
		if (n == 0 || over)
			continue;
		/* decoding and checking a long frame takes more cycles than a simulation waits with the link quiet
		 * before it takes an idle rig at its word (docs/rtl-rig.md) */
		rig_idle(0);
		long len = cobs_decode(rx, n, body);
		if (len < (long)MIN_BODY || len > (long)MAX_BODY || FRAME_HEAD_TYPE(body) != T_REQUEST)
			continue;
		if (crc32_of(body, (size_t)len - FRAME_CRC_BYTES) != get_le(body + len - FRAME_CRC_BYTES, FRAME_CRC_BYTES))
			continue;
		q->op = FRAME_HEAD_OPCODE(body);
		q->seq = FRAME_HEAD_SEQ(body);
		q->target = OP_RIG_WIDE(q->op) ? 0 : FRAME_HEAD_STATUS_OR_TARGET(body);
		q->payload = body + FRAME_HEAD_BYTES;
		q->len = (uint32_t)len - MIN_BODY;
		q->crc = crc32_of(&q->op, 1);  /* the opcode byte, a target other than 0 (its two bytes), the payload */
		if (q->target) {
			uint8_t t[2] = {(uint8_t)q->target, (uint8_t)(q->target >> 8)};
			q->crc = crc32_update(q->crc, t, 2);
		}
		q->crc = crc32_update(q->crc, q->payload, q->len);
		return 1;
	}
	return 0;
}

/* ---- jobs: the long command in progress, and a CYCLE per target ------------------------------------ */

/* the request's chip: the controller's settings and the spare's t_max are that target's */
static void select_target(uint16_t target)
{
	rig.chip = &rig.chips[target];
	rig.t_max = bch_t_max(rig.chip->page_bytes, rig.chip->spare_bytes, RIG_CODEWORD_BYTES);
	onfi_select(rig.chip);
}

/* STATUS of a target: its CYCLE while one runs, else the rig's long command (running, or the last one) */
static void target_status(uint16_t target, uint8_t *p)
{
	const struct cycle_job *j = cycle_job(target);
	job_status(p);
	if (j->state == CYCLE_RUNNING) {
		SET_STATUS_REPLY_STATE(p, JOB_BUSY);
		SET_STATUS_REPLY_OPCODE(p, OP_CYCLE);
		SET_STATUS_REPLY_SEQ(p, j->q.seq);
		SET_STATUS_REPLY_DONE(p, j->done);
		SET_STATUS_REPLY_TOTAL(p, j->n * j->cycles);
	} else if (job.running && job.target != target) {
		SET_STATUS_REPLY_STATE(p, JOB_IDLE);
	}
}

/* ABORT on a target: its CYCLE, or the long command running on it; whether one was running */
static int target_abort(uint16_t target)
{
	struct cycle_job *j = cycle_job(target);
	if (j->state == CYCLE_RUNNING)
		return j->abort = 1;
	if (job.running && job.target == target)
		return job.abort = 1;
	return 0;
}

/* a CYCLE job's retry: silent while it runs, its reply again once it ended (nonzero: answered) */
static void send_cycle_reply(struct cycle_job *j);

static int cycle_retry(const struct request *q)
{
	struct cycle_job *j = q->op == OP_CYCLE ? cycle_job(q->target) : 0;
	if (!j || j->state == CYCLE_IDLE || j->session != rig.session || j->q.seq != q->seq || j->q.crc != q->crc)
		return 0;
	if (j->state == CYCLE_ENDED)
		send_cycle_reply(j);
	return 1;
}

/* what waits for a target's CYCLE to end: every other request on its chip (STATUS, ABORT and INFO answer at
 * once), and ADVANCE while any CYCLE runs (a jump of the clock would time its waits out) */
static int waits_for_cycle(const struct request *q)
{
	if (q->op == OP_ADVANCE)
		return cycle_jobs_running();
	const struct cycle_job *j = cycle_job(q->target);
	return j && !OP_RIG_WIDE(q->op) && q->op != OP_STATUS && q->op != OP_ABORT && q->op != OP_INFO
	       && j->state == CYCLE_RUNNING;
}

/* (through tx: free whenever a job's reply goes, as every reply is sent as soon as it is encoded there) */
static void send_cycle_reply(struct cycle_job *j)
{
	send(tx, encode_reply(&j->q, j->status, j->body, STATUS_KEEPS_PAYLOAD(j->status) ? j->len : 0, tx));
	j->sent = 1;
}

/* every running CYCLE one step further; the replies of those that ended. The rig's long command, if one runs,
 * keeps its target selected. */
static void cycle_jobs_turn(void)
{
	cycle_jobs_step();
	struct cycle_job *j;
	for (uint16_t t = 0; (j = cycle_job(t)) != 0; t++) {
		if (j->state == CYCLE_ENDED && !j->sent) {
			job_record(&j->q, j->done, j->n * j->cycles);  /* STATUS's last command, as the rig's own were */
			send_cycle_reply(j);
		}
	}
}

/* ---- while a long command runs ----------------------------------------------------------------- */

/* Answer STATUS and ABORT, start a CYCLE on another target, stay silent on a retry of the running request,
 * refuse the rest with BUSY; the CYCLEs running on other targets go on meanwhile. */
static void answer_while_busy(void)
{
	struct request q;
	uint8_t p[STATUS_REPLY_BYTES];
	while (take_frame(&q)) {
		int st;
		if (q.target >= TARGETS_MAX || !(rig.targets >> q.target & 1)) {
			send_short(&q, E_OUT_OF_RANGE, p, 0);
		} else if (q.op == OP_STATUS) {
			target_status(q.target, p);
			send_short(&q, E_OK, p, STATUS_REPLY_BYTES);
		} else if (q.op == OP_ABORT) {
			SET_BYTE_REPLY_VALUE(p, (uint8_t)target_abort(q.target));
			send_short(&q, E_OK, p, BYTE_REPLY_BYTES);
		} else if (cycle_retry(&q)) {
			continue;
		} else if (q.seq == job.seq && q.op == job.op) {
			stream_rewind();  /* its reply comes when it ends; parts of it, damaged, come again now */
		} else if (q.op == OP_CYCLE && q.target != job.target && !waits_for_cycle(&q)) {
			select_target(q.target);
			st = cycle_job_start(&q, rig.session);
			select_target(job.target);
			if (st != E_OK)
				send_short(&q, st, p, 0);
		} else {
			send_short(&q, E_BUSY, p, 0);
		}
	}
	cycle_jobs_turn();
}


/* ---- dispatch ----------------------------------------------------------------------------------- */

/* CYCLE starts its target's job (its reply comes when it ends); STATUS and ABORT answer for the request's target */
static uint32_t cmd_cycle(const struct request *q, uint8_t *out, int *st)
{
	(void)out;
	*st = cycle_job_start(q, rig.session);
	return 0;
}

static uint32_t cmd_status(const struct request *q, uint8_t *out, int *st)
{
	NEED(EMPTY_REQ);
	target_status(q->target, out);
	return STATUS_REPLY_BYTES;
}

static uint32_t cmd_abort(const struct request *q, uint8_t *out, int *st)
{
	NEED(EMPTY_REQ);
	SET_BYTE_REPLY_VALUE(out, (uint8_t)target_abort(q->target));
	return BYTE_REPLY_BYTES;
}

static command_fn find(uint8_t op)
{
	switch (op) {
	case OP_HELLO: return cmd_hello;
	case OP_INFO: return cmd_info;
	case OP_RESET: return cmd_reset;
	case OP_READ_ID: return cmd_read_id;
	case OP_READ_PARAM_PAGE: return cmd_read_param_page;
	case OP_SCAN_BAD: return cmd_scan_bad;
	case OP_READ_BUFFER: return cmd_read_buffer;
	case OP_ERASE: return cmd_erase;
	case OP_PROGRAM: return cmd_program;
	case OP_READ: return cmd_read;
	case OP_SET_READ_OFFSET: return cmd_set_read_offset;
	case OP_SET_READ_REFS: return cmd_set_read_refs;
	case OP_SET_VERIFY_LEVELS: return cmd_set_verify_levels;
	case OP_CYCLE: return cmd_cycle;
	case OP_MEASURE: return cmd_measure;
	case OP_READ_DISTURB: return cmd_read_disturb;
	case OP_TIME: return cmd_time;
	case OP_ADVANCE: return cmd_advance;
	case OP_ENERGY: return cmd_energy;
	case OP_STATUS: return cmd_status;
	case OP_ABORT: return cmd_abort;
	case OP_FLARES_CONFIG: return cmd_flares_config;
	case OP_FLARES_PROGRAM: return cmd_flares_program;
	case OP_FLARES_READ: return cmd_flares_read;
	case OP_FLARES_TABLES: return cmd_flares_tables;
	case OP_FLARES_CLOCK: return cmd_flares_clock;
	default: return 0;
	}
}

/* FLARES' tables and page profiles fill the SRAM for one chip, and the supply front end is on socket 0's VCC:
 * this firmware runs those on target 0 only */
static int target_zero_only(uint8_t op)
{
	return op == OP_ENERGY || op == OP_FLARES_CONFIG || op == OP_FLARES_PROGRAM || op == OP_FLARES_READ
	       || op == OP_FLARES_TABLES || op == OP_FLARES_CLOCK;
}

static void handle(const struct request *q)
{
	if (cycle_retry(q))
		return;
	struct cached *e = &cache[0];
	for (int i = 0; i < REPLY_CACHE_SESSIONS; i++) {
		struct cached *c = &cache[i];
		if (c->used && c->session == rig.session) {
			if (c->seq == q->seq && c->crc == q->crc) {
				if (rig.streaming && OP_STREAMED(q->op) && c->len)
					stream_whole(q, c->status, c->body + FRAME_HEAD_BYTES, c->len);
				else
					send(tx, encode_reply(q, c->status, c->body, c->len, tx));
				return;
			}
			e = c;
			break;
		}
		if (c->used < e->used)  /* the empty or least recently stored slot */
			e = c;
	}
	command_fn h = find(q->op);
	int st = E_OK;
	uint32_t n = 0;
	if (!h)
		st = E_UNKNOWN_COMMAND;
	else if (q->target >= TARGETS_MAX || !(rig.targets >> q->target & 1))
		st = E_OUT_OF_RANGE;  /* no chip on that CE# */
	else if (q->target && target_zero_only(q->op))
		st = E_UNSUPPORTED;
	else if (waits_for_cycle(q))
		st = E_BUSY;
	else {
		select_target(q->target);
		if (rig.streaming && OP_STREAMED(q->op))
			stream_begin(q, reply + FRAME_HEAD_BYTES);
		n = h(q, reply + FRAME_HEAD_BYTES, &st);
		if (q->op == OP_CYCLE && st == E_OK)
			return;  /* a job now: its reply comes when it ends */
	}
	if (!STATUS_KEEPS_PAYLOAD(st))
		n = 0;
	/* a CYCLE refused did nothing, so a retry is answered afresh; keeping its refusal would take the session's
	 * slot from a request of another target whose reply the host may not have yet */
	if (h && !OP_UNCACHED(q->op) && q->op != OP_CYCLE) {
		e->used = ++cache_age;
		e->session = rig.session;
		e->seq = q->seq;
		e->crc = q->crc;
		e->status = (uint16_t)st;
		e->len = n;
		memcpy(e->body + FRAME_HEAD_BYTES, reply + FRAME_HEAD_BYTES, n);  /* before an end frame writes over it */
	}
	if (!stream_end(st, reply, n, tx))
		send(tx, encode_reply(q, st, reply, n, tx));
}

void server_init(struct chip *chips, struct cycle_job *jobs, uint8_t n, uint8_t present, uint8_t rig_kind,
                 uint32_t capabilities)
{
	rig.chips = chips;
	cycle_jobs_init(jobs, n);
	rig.targets = present | 1;
	rig.kind = rig_kind;
	rig.caps = capabilities;
	select_target(0);
	if (rig.t_max)
		rig.caps |= CAP_FLARES;  /* FLARES needs the decoder and room in target 0's spare */
	flares_defaults();
	job_on_poll(answer_while_busy);
	job_on_output(stream_ready);
}

void server_step(void)
{
	struct request q;
	int took = 0;
	while (take_frame(&q)) {
		took = 1;
		handle(&q);
	}
	cycle_jobs_turn();
	/* a frame half received is not idle: its rest may already wait in the UART, and a simulation told the rig is
	 * idle crawls (it waits on the host between clock edges) until the host sends again */
	rig_idle(!took && !rx_len && !cycle_jobs_running());
}
