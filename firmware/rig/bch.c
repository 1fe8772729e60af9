#include <generated/csr.h>
#include <generated/soc.h>
#include "bch.h"
#include "onfi.h"

#ifdef BCH_T_MAX
enum { BCH_ENCODE = 0, BCH_DECODE = 1 };

int bch_present(void) { return 1; }
uint32_t bch_ecc_bytes(uint8_t t) { return (BCH_M * (uint32_t)t + 7) / 8; }

static void run(int op, uint32_t data_addr, uint32_t parity_addr, uint8_t t)
{
	onfi_bch_op_write((uint32_t)op);
	onfi_bch_t_write(t);
	onfi_bch_data_addr_write(data_addr);
	onfi_bch_parity_addr_write(parity_addr);
	onfi_bch_start_write(1);
	while (onfi_bch_busy_read())
		;
}

void bch_encode(uint32_t data_addr, uint32_t parity_addr, uint8_t t) { run(BCH_ENCODE, data_addr, parity_addr, t); }

int bch_decode(uint32_t data_addr, uint32_t parity_addr, uint8_t t)
{
	run(BCH_DECODE, data_addr, parity_addr, t);
	if (onfi_bch_fail_read())
		return -1;
	if (onfi_bch_erased_read()) {
		volatile uint8_t *buf = onfi_buffer();
		for (uint32_t i = 0; i < BCH_K_BYTES; i++)
			buf[data_addr + i] = 0xFF;
	}
	return (int)onfi_bch_corrected_read();
}
#else  /* a SoC without the engine: t_max is 0, so nothing else is called */
#define BCH_T_MAX 0
#define BCH_K_BYTES 0
int bch_present(void) { return 0; }
uint32_t bch_ecc_bytes(uint8_t t) { (void)t; return 0; }
void bch_encode(uint32_t data_addr, uint32_t parity_addr, uint8_t t) { (void)data_addr; (void)parity_addr; (void)t; }
int bch_decode(uint32_t data_addr, uint32_t parity_addr, uint8_t t) { (void)data_addr; (void)parity_addr; (void)t; return -1; }
#endif

uint8_t bch_t_max(uint32_t page_bytes, uint32_t spare_bytes, uint32_t codeword_bytes)
{
	uint32_t n_cw = page_bytes / codeword_bytes;
	uint8_t t = 0;
	/* the engine's codewords must be the ones READ counts errors for */
	if (!bch_present() || codeword_bytes != BCH_K_BYTES || n_cw == 0 || page_bytes % codeword_bytes)
		return 0;
	while (t < BCH_T_MAX && ECC_PARITY_OFFSET + n_cw * bch_ecc_bytes((uint8_t)(t + 1)) <= spare_bytes)
		t++;
	return t;
}
