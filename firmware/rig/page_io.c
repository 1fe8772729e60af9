/* Page access every command shares: range checks, factory bad-block marks, reads into the buffer, an
 * operation's CHIP_RESULT. */
#include "page_io.h"

uint32_t raw_bytes(void) { return rig.chip->page_bytes + rig.chip->spare_bytes; }

int check_blocks(uint32_t first, uint32_t count)
{
	return count >= 1 && first < rig.chip->blocks && count <= rig.chip->blocks - first ? E_OK : E_OUT_OF_RANGE;
}

int check_pages(uint32_t first, uint32_t count)
{
	uint32_t n = rig.chip->pages_per_block;
	return count >= 1 && first < n && count <= n - first ? E_OK : E_OUT_OF_RANGE;
}

/* a factory mark: the first spare byte of a page the maker's convention names (nandrig/chip/vendor.py) */
static int marked(uint32_t block, uint32_t page)
{
	uint32_t col = rig.chip->page_bytes;
	onfi_read(rig.chip, block, page, ONFI_SRC_BUFFER, 0, raw_bytes(), RIG_CODEWORD_BYTES);
	return onfi_buffer()[col] != BAD_BLOCK_MARK;
}

int is_bad(uint32_t block)
{
	struct chip *c = rig.chip;
	uint8_t *bad_known = c->bad_known, *bad_mark = c->bad_mark;
	if (!(bad_known[block / 8] >> (block % 8) & 1)) {
		int bad;
		if (c->bits_per_cell > 1 && bbm_last_page_mlc(c->id[0]))
			bad = marked(block, c->pages_per_block - 1);
		else if (c->bits_per_cell == 1 && bbm_first_two_slc(c->id[0]))
			bad = marked(block, 0) || marked(block, 1);
		else
			bad = marked(block, 0);
		if (bad)
			bad_mark[block / 8] |= (uint8_t)(1 << (block % 8));
		bad_known[block / 8] |= (uint8_t)(1 << (block % 8));
	}
	return bad_mark[block / 8] >> (block % 8) & 1;
}

uint32_t chip_result(uint8_t *out, struct op_result r, int *status)
{
	SET_CHIP_RESULT_CHIP_STATUS(out, r.status);
	SET_CHIP_RESULT_BUSY_NS(out, r.busy_ns);
	*status = r.timed_out ? E_TIMEOUT : (r.status & ONFI_STATUS_FAIL) ? E_CHIP_FAIL : E_OK;
	return r.timed_out ? 0 : CHIP_RESULT_BYTES;
}

struct op_result read_page(uint32_t block, uint32_t page, uint8_t flags, uint32_t seed)
{
	int src = (flags & READ_FLAG_COMPARE) ? ONFI_SRC_PRBS : ONFI_SRC_BUFFER;
	return onfi_read(rig.chip, block, page, src, seed, raw_bytes(), RIG_CODEWORD_BYTES);
}
