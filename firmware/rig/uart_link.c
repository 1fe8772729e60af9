/* Polled UART: the firmware never sleeps, so interrupts would only add latency and code. */
#include <generated/csr.h>
#include <libbase/uart.h>
#include "link.h"

int link_getc(void)
{
	if (uart_rxempty_read())
		return -1;
	int c = uart_rxtx_read();
	uart_ev_pending_write(UART_EV_RX);
	return c;
}

void link_write(const uint8_t *p, size_t n)
{
	while (n--) {
		while (uart_txfull_read())
			;
		uart_rxtx_write(*p++);
	}
}

int link_put(uint8_t c)
{
	if (uart_txfull_read())
		return 0;
	uart_rxtx_write(c);
	return 1;
}
