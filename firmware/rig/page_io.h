/* Page access every command shares (commands.c, flares_ops.c, ecc_layout.c). */
#ifndef NANDRIG_PAGE_IO_H
#define NANDRIG_PAGE_IO_H

#include <stdint.h>
#include "rig.h"

/* page + spare */
uint32_t raw_bytes(void);
/* E_OK, or E_OUT_OF_RANGE when the range leaves the chip */
int check_blocks(uint32_t first, uint32_t count);
int check_pages(uint32_t first, uint32_t count);
/* the factory mark: page 0's first spare byte, read once before the block is touched */
int is_bad(uint32_t block);
/* CHIP_RESULT of an operation, its status through *status; 0 bytes on a timeout */
uint32_t chip_result(uint8_t *out, struct op_result r, int *status);
/* a page into the buffer; with READ_FLAG_COMPARE counted against the seeded pattern */
struct op_result read_page(uint32_t block, uint32_t page, uint8_t flags, uint32_t seed);

#endif
