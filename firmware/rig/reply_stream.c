/* Parts of a reply, each encoded once the link has taken the one before: a part then holds what the command
 * produced meanwhile, so parts grow until the link keeps pace (about nine MEASURE pages a part at 1 Mbaud). */
#include <string.h>
#include "link.h"
#include "reply_stream.h"

/* a part smaller than this waits for more: a fast link would otherwise carry a frame per page */
#define PART_MIN 64u

static struct {
	uint8_t on, op, sent;  /* sent: a part went */
	uint16_t seq;
	const uint8_t *payload;
	uint32_t ready, next;  /* bytes final; where the next part starts */
	uint32_t at, len;  /* the part on its way, and how much of it the link took */
} s;
static uint8_t body[FRAME_HEAD_BYTES + STREAM_PART_MAX + FRAME_CRC_BYTES];
static uint8_t part[ENCODED_MAX(sizeof body)];

void stream_begin(const struct request *q, const uint8_t *payload)
{
	memset(&s, 0, sizeof s);
	s.on = 1;
	s.op = q->op;
	s.seq = q->seq;
	s.payload = payload;
}

/* the next part, of at most n bytes from s.next, encoded to go */
static void next_part(uint32_t n)
{
	if (n > STREAM_PART_MAX)
		n = STREAM_PART_MAX;
	memcpy(body + FRAME_HEAD_BYTES, s.payload + s.next, n);
	s.len = frame_encode(T_PART, s.op, s.seq, (uint16_t)s.next, body, n, part);
	s.at = 0;
	s.next += n;
	s.sent = 1;
}

/* the part on its way into the link, as far as it takes bytes; then the next part, if there is one */
static void pump(void)
{
	for (;;) {
		while (s.at < s.len && link_put(part[s.at]))
			s.at++;
		if (s.at < s.len || s.ready - s.next < PART_MIN)
			return;
		next_part(s.ready - s.next);
	}
}

void stream_ready(uint32_t n)
{
	if (!s.on)
		return;
	s.ready = n;
	pump();
}

void stream_rewind(void)
{
	s.next = 0;
}

void stream_settle(void)
{
	if (s.at < s.len)
		link_write(part + s.at, s.len - s.at);
	s.at = s.len;
}

int stream_end(int st, uint8_t *buf, uint32_t n, uint8_t *out)
{
	int on = s.on;
	s.on = 0;
	if (!on || !s.sent)
		return 0;
	stream_settle();
	uint32_t offset = s.next < n ? s.next : n;  /* a status that drops the payload ends it at 0 */
	uint8_t *end = buf + offset - STREAM_END_BYTES;  /* the end frame's head and offset, just before its tail */
	SET_STREAM_END_OFFSET(end + FRAME_HEAD_BYTES, offset);
	link_write(out, frame_encode(T_END, s.op, s.seq, (uint16_t)st, end, STREAM_END_BYTES + n - offset, out));
	return 1;
}

void stream_whole(const struct request *q, int st, const uint8_t *payload, uint32_t n)
{
	stream_begin(q, payload);
	while (s.next < n) {
		next_part(n - s.next);
		stream_settle();
	}
	s.on = 0;
	SET_STREAM_END_OFFSET(body + FRAME_HEAD_BYTES, n);  /* an end with no tail, through the part's buffers */
	link_write(part, frame_encode(T_END, q->op, q->seq, (uint16_t)st, body, STREAM_END_BYTES, part));
}
