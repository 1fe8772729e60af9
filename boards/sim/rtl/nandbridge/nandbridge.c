/* LiteX sim module: the NAND pins of the simulated rig, bridged to the virtual chip in Python.
 *
 * The module watches the bus at every system-clock edge and turns it into bus cycles: a WE# rise
 * latches a command, an address or a data byte; an RE# fall puts the next output byte on DQ.
 * Commands and addresses go to the chip server at once (they may start an operation), data bytes
 * are sent in one batch before the next command or address, and whatever the chip has to output
 * (page register, ID, parameter page, features) comes back in one reply and is served locally, so a
 * page costs a handful of socket round trips instead of one per byte. R/B# is held low for the
 * busy time the chip reports, in simulated time, and every message carries the simulated time so
 * the chip's clock follows it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <json-c/json.h>
#include "error.h"
#include "modules.h"

enum { MSG_CMD = 1, MSG_ADDR = 2, MSG_DIN = 3, MSG_ADVANCE = 4 };
#define OUT_MAX 65536
#define DIN_MAX 65536

struct session_s {
	char *sys_clk;
	char *ce_n, *cle, *ale, *we_n, *re_n, *wp_n, *dq_o, *dq_oe, *dq_i, *rb_n;
	char *adv_go;
	uint64_t *adv_ns;
	uint16_t *adv_temp;
	int fd;
	clk_edge_state_t edge;
	int prev_we, prev_re;
	uint8_t out[OUT_MAX];
	uint32_t out_len, out_ptr;
	uint8_t din[DIN_MAX];
	uint32_t din_len;
	int status_mode;
	uint8_t status;
	uint8_t cur;
	uint64_t busy_end_ns;
};

static struct event_base *base;

static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get_u32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

/* request: u8 kind, u8 wp_n, u64 now_ns, u32 len, payload; reply: u32 busy_ns, u8 status, u8 has_out, u32 n, n bytes */
static void transact(struct session_s *s, int kind, uint64_t now_ns, const uint8_t *payload, uint32_t len)
{
	uint8_t hdr[14], rep[10];
	hdr[0] = (uint8_t)kind;
	hdr[1] = (uint8_t)*s->wp_n;
	put_u64(hdr + 2, now_ns);
	put_u32(hdr + 10, len);
	if (write_all(s->fd, hdr, sizeof hdr) || write_all(s->fd, payload, len) || read_all(s->fd, rep, sizeof rep)) {
		eprintf("[nandbridge] lost the chip server\n");
		exit(1);
	}
	uint32_t busy = get_u32(rep), n = get_u32(rep + 6);
	s->status = rep[4];
	if (rep[5]) {
		if (n > OUT_MAX) {
			eprintf("[nandbridge] output of %u bytes is too long\n", n);
			exit(1);
		}
		if (read_all(s->fd, s->out, n)) {
			eprintf("[nandbridge] lost the chip server\n");
			exit(1);
		}
		s->out_len = n;
		s->out_ptr = 0;
	}
	if (busy)
		s->busy_end_ns = now_ns + busy;
}

static void flush_din(struct session_s *s, uint64_t now_ns)
{
	if (s->din_len) {
		transact(s, MSG_DIN, now_ns, s->din, s->din_len);
		s->din_len = 0;
	}
}

static int nandbridge_start(void *b)
{
	base = (struct event_base *)b;
	return RC_OK;
}

static int nandbridge_new(void **sess, char *args)
{
	struct session_s *s = calloc(1, sizeof *s);
	json_object *js = json_tokener_parse(args), *jp = NULL;
	struct sockaddr_in sin;
	int port, one = 1;
	if (!s || !js || !json_object_object_get_ex(js, "port", &jp)) {
		eprintf("[nandbridge] needs {\"port\": N}\n");
		return RC_ERROR;
	}
	port = json_object_get_int(jp);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&sin, sizeof sin)) {
		eprintf("[nandbridge] cannot reach the chip server on port %d\n", port);
		return RC_ERROR;
	}
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	s->prev_we = s->prev_re = 1;
	s->cur = 0xFF;
	*sess = s;
	return RC_OK;
}

#define PAD(pad, field) do { if (!strcmp(pads[i].name, pad)) s->field = (void *)pads[i].signal; } while (0)

static int nandbridge_add_pads(void *sess, struct pad_list_s *plist)
{
	struct session_s *s = sess;
	struct pad_s *pads = plist->pads;
	if (!strcmp(plist->name, "sys_clk")) {
		s->sys_clk = (char *)pads[0].signal;
		return RC_OK;
	}
	if (strcmp(plist->name, "nand"))
		return RC_OK;
	for (int i = 0; pads[i].name; i++) {
		PAD("ce_n", ce_n); PAD("cle", cle); PAD("ale", ale); PAD("we_n", we_n); PAD("re_n", re_n);
		PAD("wp_n", wp_n); PAD("dq_o", dq_o); PAD("dq_oe", dq_oe); PAD("dq_i", dq_i); PAD("rb_n", rb_n);
		PAD("adv_go", adv_go); PAD("adv_ns", adv_ns); PAD("adv_temp", adv_temp);
	}
	return RC_OK;
}

static int nandbridge_tick(void *sess, uint64_t time_ps)
{
	struct session_s *s = sess;
	uint64_t now = time_ps / 1000;
	if (!clk_pos_edge(&s->edge, *s->sys_clk))
		return RC_OK;
	int we = *s->we_n & 1, re = *s->re_n & 1;
	if (!(*s->ce_n & 1)) {
		if (we && !s->prev_we) {
			uint8_t byte = (uint8_t)*s->dq_o;
			if (*s->cle & 1) {
				flush_din(s, now);
				s->status_mode = byte == 0x70;
				transact(s, MSG_CMD, now, &byte, 1);
			} else if (*s->ale & 1) {
				flush_din(s, now);
				transact(s, MSG_ADDR, now, &byte, 1);
			} else if (s->din_len < DIN_MAX) {
				s->din[s->din_len++] = byte;
			}
		}
		if (!re && s->prev_re) {
			if (s->status_mode)
				s->cur = now < s->busy_end_ns ? s->status & ~0x60 : s->status;
			else
				s->cur = s->out_ptr < s->out_len ? s->out[s->out_ptr++] : 0x00;
		}
	}
	if (s->adv_go && (*s->adv_go & 1)) {
		uint8_t p[10];
		flush_din(s, now);
		put_u64(p, *s->adv_ns);
		p[8] = (uint8_t)*s->adv_temp;
		p[9] = (uint8_t)(*s->adv_temp >> 8);
		transact(s, MSG_ADVANCE, now, p, sizeof p);
	}
	s->prev_we = we;
	s->prev_re = re;
	*s->dq_i = (char)s->cur;
	*s->rb_n = now < s->busy_end_ns ? 0 : 1;
	return RC_OK;
}

static struct ext_module_s ext_mod = {
	"nandbridge", nandbridge_start, nandbridge_new, nandbridge_add_pads, NULL, nandbridge_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
	return register_module(&ext_mod);
}
