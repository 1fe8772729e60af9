/* The ONFI parameter page as Linux's nand_onfi_detect() reads it (pure: built natively for tests).
 * nandrig.chip.param_page is the same rules; a test feeds both the same bytes. */
#ifndef NANDRIG_PARAM_PAGE_H
#define NANDRIG_PARAM_PAGE_H
#include <stdint.h>

/* every field 32 bits wide: the native test reads the record through ctypes */
struct param_info {
	int32_t copy;  /* the copy whose CRC held, -1 when the copies' bit-wise majority was taken */
	uint32_t revision_bits, onfi_version, features, optional_commands, jedec_id;
	uint32_t page_bytes, spare_bytes, pages_per_block, blocks_per_lun, luns, bits_per_cell;
	uint32_t row_cycles, column_cycles, max_bad_blocks, timing_modes, t_ccs_ns, t_adl_ns, bus_width;
	uint32_t ecc_bits, ecc_step_bytes;  /* 0, 0 when the chip gives no requirement */
	uint32_t page_bits, block_bits, lun_bits;  /* the row address: page, then block, then LUN */
	char manufacturer[12], model[20];
};

uint16_t onfi_crc16(const uint8_t *p, uint32_t n);  /* ONFI's CRC-16 (parameter pages, the extended page) */
/* the first copy whose CRC holds in the first ONFI_PARAM_PAGE_COPIES of raw (len bytes), or -1 */
int param_page_valid_copy(const uint8_t *raw, uint32_t len);
/* decodes a READ PARAMETER PAGE dump (copies, then the extended page): PARAM_OK or a PARAM_ERR_* */
int param_page_decode(const uint8_t *raw, uint32_t len, struct param_info *out);
/* PARAM_OK when the rig can drive the chip, or the PARAM_ERR_* naming the field it cannot */
int param_page_check_rig(const struct param_info *p);
#endif
