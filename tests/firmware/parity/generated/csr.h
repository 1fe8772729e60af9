/* The BCH engine's registers as bch.c reads and writes them, answered by the stub bus (stub_bus.c). */
#ifndef NANDRIG_PARITY_CSR_H
#define NANDRIG_PARITY_CSR_H
#include <stdint.h>
void onfi_bch_op_write(uint32_t v);
void onfi_bch_t_write(uint32_t v);
void onfi_bch_data_addr_write(uint32_t v);
void onfi_bch_parity_addr_write(uint32_t v);
void onfi_bch_start_write(uint32_t v);
uint32_t onfi_bch_busy_read(void);
uint32_t onfi_bch_fail_read(void);
uint32_t onfi_bch_erased_read(void);
uint32_t onfi_bch_corrected_read(void);
#endif
