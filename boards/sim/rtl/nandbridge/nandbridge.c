/* LiteX sim module: the NAND pins of the simulated rig, bridged to the virtual chip in Python.
 *
 * The module watches the bus at every edge of the PHY's clock (the system clock, or the NAND clock of a
 * build with one: whichever clock the configuration gives it) and turns it into bus cycles: a WE# rise
 * latches a command, an address or a data byte; an RE# fall puts the next output byte on DQ.
 * Commands and addresses go to the chip server at once (they may start an operation), data bytes
 * are sent in one batch before the next command or address, and whatever the chip has to output
 * (page register, ID, parameter page, features) comes back in one reply and is served locally, so a
 * page costs a handful of socket round trips instead of one per byte. R/B# is held low for the
 * busy time the chip reports, in simulated time, and every message carries the simulated time so
 * the chip's clock follows it.
 *
 * DQ carries a byte only inside its data-valid window (ONFI SDR, as the chip guarantees it): from
 * tREA after its RE# fall until tRHOH after RE# rises, or tRLOH after the next RE# fall in EDO
 * operation if later, each moved by the board's round-trip delay; outside it DQ shows the complement
 * of the byte being read, so a capture outside the window reads wrong. The timings per mode come in
 * the module's arguments (from nandrig.gateware.onfi.timing), the current mode in the chip's replies.
 * Faulty DQ lines (stuck at 0 or 1, pairs shorted together) change every byte crossing DQ in either
 * direction, commands and addresses too (nandrig.boards.sim.wiring).
 *
 * Up to eight targets share the bus, each with its own CE# and R/B# (bit k of ce_n and rb_n) and its own chip
 * behind the server (every message names its target); a socket the arguments do not list is empty: its R/B#
 * stays pulled up and nothing answers on DQ. Each socket has its own round-trip delay (its traces).
 *
 * The front end's ADC (an AD7476A on the supply-current amplifier, nandrig/chip/supply.py) is modelled here too:
 * at CS# falling it samples the chip's current then, the operation's own while its array works (the chip server
 * gives it with each operation), the bus's while a data byte crossed within the meter's window, else the idle
 * current; it sends a leading zero at once and the next bit after each SCLK fall: three more zeros, the 12-bit
 * code MSB first, then three-state (read as 1).
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
#define MODES 6
#define SHORTS_MAX 8
#define IN_FLIGHT 8  /* bytes whose windows are tracked: a long board delay keeps several on the way back */
#define TARGETS 8
#define SAMPLES 32  /* DQ samples kept on their way to dq_i: the gearing's latency plus a cycle's lanes */

struct byte_window {  /* one output byte and when DQ carries it, in ps */
	uint8_t value;
	uint64_t fall_ps, from_ps, until_ps;
};

struct adc {
	char *cs_n, *sclk, *sdata;
	double na_per_code;
	uint32_t io_ua, idle_ua, busy_ua;
	uint64_t recent_ns, array_end_ns, last_data_ns;
	uint16_t shift;  /* the bits still to send, MSB first */
	int left, prev_cs, prev_sclk;
};

struct target_s {  /* one socket: what its chip has to output, its status and busy time, its traces' delay */
	int present;
	uint8_t out[OUT_MAX];
	uint32_t out_len, out_ptr;
	int status_mode;
	uint8_t status, mode;
	uint64_t busy_end_ns, delay_ps;
};

struct session_s {
	char *clk;  /* the PHY's clock */
	char *ce_n, *cle, *ale, *we_n, *re_n, *wp_n, *dq_o, *dq_oe, *rb_n;  /* ce_n, rb_n: bit k for target k */
	void *dq_i;  /* DQ as the PHY takes it: dq_lanes samples per cycle, 8 bits each, the last at the edge */
	int dq_lanes;
	struct adc adc;
	char *adv_go;
	uint64_t *adv_ns;
	uint16_t *adv_temp;
	int fd;
	clk_edge_state_t edge;
	int prev_we, prev_re, prev_go;
	struct target_s t[TARGETS];
	int talk;  /* the target selected last: DQ carries its bytes */
	uint8_t din[DIN_MAX];  /* data bytes for target din_to, sent before its next command or address */
	uint32_t din_len;
	int din_to;
	struct byte_window win[IN_FLIGHT];  /* the bytes of the last RE# falls, win[last] the newest */
	int last;
	uint64_t t_rea_ps[MODES], t_rhoh_ps[MODES], t_rloh_ps[MODES], edo_below_ps;
	uint64_t last_edge_ps, period_ps;
	uint8_t stuck0, stuck1;
	uint8_t samples[SAMPLES];  /* DQ as sampled, a ring; dq_i shows them latency samples later */
	int head, latency;
	int n_shorts;
	uint8_t shorts[SHORTS_MAX][2];
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

/* request: u8 kind, u8 target, u8 wp_n, u64 now_ns, u32 len, payload;
 * reply: u32 busy_ns, u8 status, u8 has_out, u8 timing mode, u32 array_ns, u32 busy_ua, u32 n, n bytes */
static void transact(struct session_s *s, int target, int kind, uint64_t now_ns, const uint8_t *payload,
                     uint32_t len)
{
	struct target_s *c = &s->t[target];
	uint8_t hdr[15], rep[19];
	hdr[0] = (uint8_t)kind;
	hdr[1] = (uint8_t)target;
	hdr[2] = (uint8_t)*s->wp_n;
	put_u64(hdr + 3, now_ns);
	put_u32(hdr + 11, len);
	if (write_all(s->fd, hdr, sizeof hdr) || write_all(s->fd, payload, len) || read_all(s->fd, rep, sizeof rep)) {
		eprintf("[nandbridge] lost the chip server\n");
		exit(1);
	}
	uint32_t busy = get_u32(rep), array = get_u32(rep + 7), n = get_u32(rep + 15);
	c->status = rep[4];
	c->mode = rep[6] < MODES ? rep[6] : 0;
	if (rep[5]) {
		if (n > OUT_MAX) {
			eprintf("[nandbridge] output of %u bytes is too long\n", n);
			exit(1);
		}
		if (read_all(s->fd, c->out, n)) {
			eprintf("[nandbridge] lost the chip server\n");
			exit(1);
		}
		c->out_len = n;
		c->out_ptr = 0;
	}
	if (busy) {
		c->busy_end_ns = now_ns + busy;
		if (target == 0) {  /* the supply front end is on socket 0's VCC */
			s->adc.array_end_ns = now_ns + array;
			s->adc.busy_ua = get_u32(rep + 11);
		}
	}
}

static void flush_din(struct session_s *s, uint64_t now_ns)
{
	if (s->din_len) {
		transact(s, s->din_to, MSG_DIN, now_ns, s->din, s->din_len);
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
	json_object *js = json_tokener_parse(args), *jp = NULL, *jt = NULL, *jd = NULL, *je = NULL, *jk = NULL;
	struct sockaddr_in sin;
	int port, one = 1;
	if (!s || !js || !json_object_object_get_ex(js, "port", &jp) || !json_object_object_get_ex(js, "timing_ps", &jt)
	    || json_object_array_length(jt) != MODES || !json_object_object_get_ex(js, "delay_ps", &jd)
	    || !json_object_object_get_ex(js, "edo_below_ps", &je) || !json_object_object_get_ex(js, "targets", &jk)
	    || json_object_array_length(jd) != TARGETS) {
		eprintf("[nandbridge] needs {\"port\": N, \"timing_ps\": [[tREA, tRHOH, tRLOH] x 6], \"delay_ps\": "
		        "[D x 8], \"edo_below_ps\": E, \"targets\": [k, ...]}\n");
		return RC_ERROR;
	}
	port = json_object_get_int(jp);
	for (int m = 0; m < MODES; m++) {
		json_object *row = json_object_array_get_idx(jt, m);
		s->t_rea_ps[m] = (uint64_t)json_object_get_int64(json_object_array_get_idx(row, 0));
		s->t_rhoh_ps[m] = (uint64_t)json_object_get_int64(json_object_array_get_idx(row, 1));
		s->t_rloh_ps[m] = (uint64_t)json_object_get_int64(json_object_array_get_idx(row, 2));
	}
	for (int k = 0; k < TARGETS; k++)
		s->t[k].delay_ps = (uint64_t)json_object_get_int64(json_object_array_get_idx(jd, k));
	for (size_t k = 0; k < json_object_array_length(jk); k++) {
		int target = json_object_get_int(json_object_array_get_idx(jk, k));
		if (target >= 0 && target < TARGETS)
			s->t[target].present = 1;
	}
	json_object *jf = NULL;
	if (json_object_object_get_ex(js, "latency_steps", &jf))
		s->latency = json_object_get_int(jf);
	if (s->latency < 0 || s->latency > SAMPLES - 4) {
		eprintf("[nandbridge] latency_steps %d: 0 to %d\n", s->latency, SAMPLES - 4);
		return RC_ERROR;
	}
	if (json_object_object_get_ex(js, "stuck0", &jf))
		s->stuck0 = (uint8_t)json_object_get_int(jf);
	if (json_object_object_get_ex(js, "stuck1", &jf))
		s->stuck1 = (uint8_t)json_object_get_int(jf);
	if (json_object_object_get_ex(js, "shorts", &jf))
		for (size_t k = 0; k < json_object_array_length(jf) && s->n_shorts < SHORTS_MAX; k++, s->n_shorts++)
			for (int e = 0; e < 2; e++)
				s->shorts[s->n_shorts][e] =
				    (uint8_t)json_object_get_int(json_object_array_get_idx(json_object_array_get_idx(jf, k), e));
	s->edo_below_ps = (uint64_t)json_object_get_int64(je);
	if (json_object_object_get_ex(js, "adc", &jf)) {
		json_object *v;
		struct adc *a = &s->adc;
		if (json_object_object_get_ex(jf, "na_per_code", &v)) a->na_per_code = json_object_get_double(v);
		if (json_object_object_get_ex(jf, "io_ua", &v)) a->io_ua = (uint32_t)json_object_get_int64(v);
		if (json_object_object_get_ex(jf, "idle_ua", &v)) a->idle_ua = (uint32_t)json_object_get_int64(v);
		if (json_object_object_get_ex(jf, "recent_ns", &v)) a->recent_ns = (uint64_t)json_object_get_int64(v);
	}
	s->adc.prev_cs = s->adc.prev_sclk = 1;
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
	*sess = s;
	return RC_OK;
}

#define PAD(pad, field) do { if (!strcmp(pads[i].name, pad)) s->field = (void *)pads[i].signal; } while (0)

static int nandbridge_add_pads(void *sess, struct pad_list_s *plist)
{
	struct session_s *s = sess;
	struct pad_s *pads = plist->pads;
	if (!strcmp(plist->name, "sys_clk") || !strcmp(plist->name, "nand_clk")) {
		s->clk = (char *)pads[0].signal;
		return RC_OK;
	}
	if (strcmp(plist->name, "nand"))
		return RC_OK;
	for (int i = 0; pads[i].name; i++) {
		PAD("ce_n", ce_n); PAD("cle", cle); PAD("ale", ale); PAD("we_n", we_n); PAD("re_n", re_n);
		PAD("wp_n", wp_n); PAD("dq_o", dq_o); PAD("dq_oe", dq_oe); PAD("dq_i", dq_i); PAD("rb_n", rb_n);
		if (!strcmp(pads[i].name, "dq_i"))
			s->dq_lanes = (int)(pads[i].len / 8);
		PAD("adv_go", adv_go); PAD("adv_ns", adv_ns); PAD("adv_temp", adv_temp);
		PAD("adc_cs_n", adc.cs_n); PAD("adc_sclk", adc.sclk); PAD("adc_sdata", adc.sdata);
	}
	return RC_OK;
}

/* a byte as it arrives across the faulty lines: shorted pairs read their wired-AND, then stuck lines */
static uint8_t wire(const struct session_s *s, uint8_t v)
{
	for (int k = 0; k < s->n_shorts; k++) {
		int a = s->shorts[k][0], b = s->shorts[k][1], both = v >> a & v >> b & 1;
		v = (uint8_t)((v & ~(1 << a | 1 << b)) | both << a | both << b);
	}
	return (uint8_t)((v & ~s->stuck0) | s->stuck1);
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* a capture exactly at tREA is not in it: tREA is the latest the chip may drive the byte (timing.trim_passes) */
static int in_window(const struct byte_window *b, uint64_t t) { return b->from_ps < t && t <= b->until_ps; }

/* This module ticks after the simulator evaluated the edge: RE# as seen here changed at this edge, and DQ
 * set here is what the input register samples at the next edge. */
static void re_fell(struct session_s *s, uint64_t now_ps, uint8_t value)
{
	const struct target_s *c = &s->t[s->talk];
	struct byte_window *prev = &s->win[s->last];
	if (now_ps - prev->fall_ps < s->edo_below_ps)  /* EDO: the previous byte stays until tRLOH after this fall */
		prev->until_ps = max_u64(prev->until_ps, now_ps + s->t_rloh_ps[c->mode] + c->delay_ps);
	s->last = (s->last + 1) % IN_FLIGHT;
	struct byte_window *b = &s->win[s->last];
	b->value = value;
	b->fall_ps = now_ps;
	b->from_ps = now_ps + s->t_rea_ps[c->mode] + c->delay_ps;
	b->until_ps = UINT64_MAX;
}

static uint8_t dq_at(const struct session_s *s, uint64_t t)
{
	for (int k = 0; k < IN_FLIGHT; k++) {
		const struct byte_window *b = &s->win[(s->last + IN_FLIGHT - k) % IN_FLIGHT];
		if (in_window(b, t))
			return b->value;
	}
	return (uint8_t)~s->win[s->last].value;
}

/* the chip's current at this instant, as the ADC converts it */
static uint16_t adc_code(const struct adc *a, uint64_t now)
{
	int moving = a->last_data_ns && now - a->last_data_ns <= a->recent_ns;
	uint32_t ua = now < a->array_end_ns ? a->busy_ua + (moving ? a->io_ua : 0) : moving ? a->io_ua : a->idle_ua;
	double code = a->na_per_code > 0 ? ua * 1000.0 / a->na_per_code + 0.5 : 0;
	return code > 4095 ? 4095 : (uint16_t)code;
}

static void adc_tick(struct adc *a, uint64_t now)
{
	if (!a->cs_n)
		return;
	int cs = *a->cs_n & 1, sclk = *a->sclk & 1;
	if (!cs && a->prev_cs) {  /* the sample: the first leading zero goes out with it */
		a->shift = adc_code(a, now);  /* 15 bits to go: three more zeros, the 12 bits; then three-state */
		a->left = 15;
		*a->sdata = 0;
	} else if (!cs && a->prev_sclk && !sclk) {
		*a->sdata = a->left > 0 ? (char)(a->shift >> --a->left & 1) : 1;
	} else if (cs) {
		*a->sdata = 1;
	}
	a->prev_cs = cs;
	a->prev_sclk = sclk;
}

static int nandbridge_tick(void *sess, uint64_t time_ps)
{
	struct session_s *s = sess;
	uint64_t now = time_ps / 1000;
	if (!clk_pos_edge(&s->edge, *s->clk))
		return RC_OK;
	if (s->last_edge_ps)
		s->period_ps = time_ps - s->last_edge_ps;
	s->last_edge_ps = time_ps;
	int we = *s->we_n & 1, re = *s->re_n & 1, sel = -1;
	for (int k = 0; k < TARGETS && sel < 0; k++)  /* the controller selects one target at a time */
		if (!((uint8_t)*s->ce_n >> k & 1))
			sel = k;
	if (sel >= 0 && s->t[sel].present) {
		struct target_s *c = &s->t[sel];
		if (sel != s->din_to)
			flush_din(s, now);
		s->talk = s->din_to = sel;
		if (we && !s->prev_we) {
			uint8_t byte = wire(s, (uint8_t)*s->dq_o);
			if (*s->cle & 1) {
				flush_din(s, now);
				c->status_mode = byte == 0x70;
				transact(s, sel, MSG_CMD, now, &byte, 1);
			} else if (*s->ale & 1) {
				flush_din(s, now);
				transact(s, sel, MSG_ADDR, now, &byte, 1);
			} else if (s->din_len < DIN_MAX) {
				s->din[s->din_len++] = byte;
				s->adc.last_data_ns = now;
			}
		}
		if (!re && s->prev_re) {
			s->adc.last_data_ns = now;
			if (c->status_mode)
				re_fell(s, time_ps, now < c->busy_end_ns ? c->status & ~0x60 : c->status);
			else
				re_fell(s, time_ps, c->out_ptr < c->out_len ? c->out[c->out_ptr++] : 0x00);
		}
	}
	if (re && !s->prev_re && s->win[s->last].until_ps == UINT64_MAX)
		s->win[s->last].until_ps = time_ps + s->t_rhoh_ps[s->t[s->talk].mode] + s->t[s->talk].delay_ps;
	/* the strobe lasts one system cycle, which spans several edges of a faster NAND clock: act on its rise */
	int go = s->adv_go && (*s->adv_go & 1);
	if (go && !s->prev_go) {
		uint8_t p[10];
		flush_din(s, now);
		put_u64(p, *s->adv_ns);
		p[8] = (uint8_t)*s->adv_temp;
		p[9] = (uint8_t)(*s->adv_temp >> 8);
		transact(s, 0, MSG_ADVANCE, now, p, sizeof p);  /* every chip: the rig has one clock */
	}
	s->prev_we = we;
	s->prev_re = re;
	s->prev_go = go;
	/* what the input gearing samples between this edge and the next, oldest first (one lane: at the edge), shown
	 * in dq_i the gearing's latency later */
	for (int k = 0; k < s->dq_lanes; k++) {
		s->samples[s->head] = wire(s, dq_at(s, time_ps + s->period_ps * (uint64_t)(k + 1) / (uint64_t)s->dq_lanes));
		s->head = (s->head + 1) % SAMPLES;
	}
	uint32_t word = 0;
	for (int k = 0; k < s->dq_lanes; k++)
		word |= (uint32_t)s->samples[(s->head + 2 * SAMPLES - s->latency - s->dq_lanes + k) % SAMPLES] << 8 * k;
	if (s->dq_lanes == 1)  /* Verilator keeps a signal of up to 8 bits in a byte, 16 in a short, 32 in an int */
		*(uint8_t *)s->dq_i = (uint8_t)word;
	else if (s->dq_lanes == 2)
		*(uint16_t *)s->dq_i = (uint16_t)word;
	else
		*(uint32_t *)s->dq_i = word;
	uint8_t rb = 0xFF;  /* pulled up: an empty socket reads ready */
	for (int k = 0; k < TARGETS; k++)
		if (s->t[k].present && now < s->t[k].busy_end_ns)
			rb &= (uint8_t)~(1u << k);
	*s->rb_n = (char)rb;
	adc_tick(&s->adc, now);
	return RC_OK;
}

static struct ext_module_s ext_mod = {
	"nandbridge", nandbridge_start, nandbridge_new, nandbridge_add_pads, NULL, nandbridge_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
	return register_module(&ext_mod);
}
