/* LiteX sim module: the rig's UART as a TCP port, with flow control.
 *
 * The host's bytes are taken from the socket only while the module's receive buffer has room for them,
 * so a frame of any size (FLARES_TABLES chunks, PROGRAM with a page's bytes) waits in the socket until
 * the simulated UART has taken what came before; nothing is overwritten, as nothing is on a real UART
 * with the host sending no faster than the link. The rig's bytes are written to the socket as the UART
 * gives them. One host at a time; when it disconnects, the next may connect.
 *
 * While the firmware marks itself idle (VirtualTime's idle: no frame, no CYCLE job) and the link has been quiet
 * for QUIET_EDGES, the module waits for the host's next byte (up to WAIT_MS at a time) instead of letting the
 * simulation run the firmware's idle loop: an idle RTL rig takes no CPU, and its clock does not run on by
 * however long the host took to send.
 *
 * With "edges_per_byte" (a serial byte's time in system-clock edges: its ten bits at the board's baud rate) the
 * link carries a byte each way at most that often, as a real UART does; without it, one per edge.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <json-c/json.h>
#include "error.h"
#include "modules.h"

#define RX_BYTES 4096
#define POLL_EDGES 64 /* clock edges between socket polls: the firmware takes a byte in tens of cycles */
#define QUIET_EDGES 4096 /* after the last byte either way: the firmware has read its UART and marked itself */
#define WAIT_MS 20

struct session_s {
	char *sys_clk;
	char *rx, *rx_valid, *rx_ready; /* into the rig (the UART's sink) */
	char *tx, *tx_valid, *tx_ready; /* out of the rig (its source) */
	char *idle; /* the firmware's idle mark (absent: never waits) */
	clk_edge_state_t edge;
	int listen_fd, fd;
	unsigned edges, quiet;
	unsigned edges_per_byte, tx_gap, rx_gap; /* edges since the last byte out and in */
	int tx_offered; /* tx_ready as set at the last edge */
	uint8_t buf[RX_BYTES];
	unsigned head, len;
};

static int uartbridge_start(void *b)
{
	(void)b;
	return RC_OK;
}

static int uartbridge_new(void **sess, char *args)
{
	struct session_s *s = calloc(1, sizeof *s);
	json_object *js = json_tokener_parse(args), *jp = NULL, *je = NULL;
	struct sockaddr_in sin;
	int one = 1;
	if (!s || !js || !json_object_object_get_ex(js, "port", &jp)) {
		eprintf("[uartbridge] needs {\"port\": N}\n");
		return RC_ERROR;
	}
	if (json_object_object_get_ex(js, "edges_per_byte", &je))
		s->edges_per_byte = (unsigned)json_object_get_int(je);
	s->fd = -1;
	s->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)json_object_get_int(jp));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&sin, sizeof sin) || listen(s->listen_fd, 1)
	    || fcntl(s->listen_fd, F_SETFL, O_NONBLOCK)) {
		eprintf("[uartbridge] cannot listen on port %d\n", json_object_get_int(jp));
		return RC_ERROR;
	}
	*sess = s;
	return RC_OK;
}

#define PAD(pad, field) do { if (!strcmp(pads[i].name, pad)) s->field = (void *)pads[i].signal; } while (0)

static int uartbridge_add_pads(void *sess, struct pad_list_s *plist)
{
	struct session_s *s = sess;
	struct pad_s *pads = plist->pads;
	if (!strcmp(plist->name, "sys_clk")) {
		s->sys_clk = (char *)pads[0].signal;
		return RC_OK;
	}
	if (!strcmp(plist->name, "sim_idle")) {
		s->idle = (char *)pads[0].signal;
		return RC_OK;
	}
	if (strcmp(plist->name, "serial"))
		return RC_OK;
	for (int i = 0; pads[i].name; i++) {
		PAD("sink_data", rx); PAD("sink_valid", rx_valid); PAD("sink_ready", rx_ready);
		PAD("source_data", tx); PAD("source_valid", tx_valid); PAD("source_ready", tx_ready);
	}
	return RC_OK;
}

static void drop_host(struct session_s *s)
{
	close(s->fd);
	s->fd = -1;
}

/* accept a host, or take what fits of what it sent */
static void poll_socket(struct session_s *s)
{
	if (s->fd < 0) {
		int one = 1;
		s->fd = accept(s->listen_fd, NULL, NULL);
		if (s->fd >= 0)
			setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		return;
	}
	while (s->len < RX_BYTES) {
		unsigned tail = (s->head + s->len) % RX_BYTES;
		unsigned room = tail >= s->head ? RX_BYTES - tail : s->head - tail;
		ssize_t n = recv(s->fd, s->buf + tail, room, MSG_DONTWAIT);
		if (n > 0) {
			s->len += (unsigned)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			drop_host(s);
		return;
	}
}

/* the firmware idle and the link quiet: wait for the host (or a host to connect) */
static void wait_for_host(struct session_s *s)
{
	struct pollfd p = {.fd = s->fd >= 0 ? s->fd : s->listen_fd, .events = POLLIN};
	if (poll(&p, 1, WAIT_MS) > 0)
		poll_socket(s);
}

static int uartbridge_tick(void *sess, uint64_t time_ps)
{
	struct session_s *s = sess;
	(void)time_ps;
	if (!clk_pos_edge(&s->edge, *s->sys_clk))
		return RC_OK;
	if (s->len || (*s->tx_valid & 1))
		s->quiet = 0;
	else if (s->quiet < QUIET_EDGES)
		s->quiet++;
	if (s->idle && (*s->idle & 1) && s->quiet >= QUIET_EDGES)
		wait_for_host(s);
	else if (++s->edges % POLL_EDGES == 0)
		poll_socket(s);
	if ((*s->tx_valid & 1) && s->tx_offered) { /* the byte was taken at this edge */
		uint8_t c = (uint8_t)*s->tx;
		if (s->fd >= 0 && send(s->fd, &c, 1, MSG_NOSIGNAL) != 1)
			drop_host(s);
		s->tx_gap = 0;
	} else if (s->tx_gap < s->edges_per_byte) {
		s->tx_gap++;
	}
	s->tx_offered = s->tx_gap + 1 >= s->edges_per_byte;
	*s->tx_ready = (char)s->tx_offered;
	if (s->len && (*s->rx_valid & 1) && (*s->rx_ready & 1)) { /* the byte offered last edge was taken */
		s->head = (s->head + 1) % RX_BYTES;
		s->len--;
		s->rx_gap = 0;
	} else if (s->rx_gap < s->edges_per_byte) {
		s->rx_gap++;
	}
	*s->rx_valid = s->len && s->rx_gap + 1 >= s->edges_per_byte ? 1 : 0;
	if (s->len)
		*s->rx = (char)s->buf[s->head];
	return RC_OK;
}

static struct ext_module_s ext_mod = {
	"uartbridge", uartbridge_start, uartbridge_new, uartbridge_add_pads, NULL, uartbridge_tick
};

int litex_sim_ext_module_init(int (*register_module)(struct ext_module_s *))
{
	return register_module(&ext_mod);
}
