/* The ONFI parameter page by the kernel's rules: copies by CRC, bit-wise majority, revision, extended page. */
#include <string.h>
#include "param_page.h"
#include "onfi_facts.h"
#include "protocol.h"

static uint32_t le(const uint8_t *p, int n)
{
	uint32_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

uint16_t onfi_crc16(const uint8_t *p, uint32_t n)
{
	uint16_t crc = ONFI_CRC16_INIT;
	for (uint32_t i = 0; i < n; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (int k = 0; k < 8; k++)
			crc = (crc & 0x8000) ? (uint16_t)(crc << 1 ^ ONFI_CRC16_POLY) : (uint16_t)(crc << 1);
	}
	return crc;
}

static int copy_ok(const uint8_t *p) { return onfi_crc16(p, ONFI_PP_CRC) == le(p + ONFI_PP_CRC, 2); }

static uint32_t ncopies(uint32_t len)
{
	uint32_t n = len / ONFI_PARAM_PAGE_BYTES;
	return n < ONFI_PARAM_PAGE_COPIES ? n : ONFI_PARAM_PAGE_COPIES;
}

int param_page_valid_copy(const uint8_t *raw, uint32_t len)
{
	for (uint32_t k = 0; k < ncopies(len); k++)
		if (copy_ok(raw + ONFI_PARAM_PAGE_BYTES * k))
			return (int)k;
	return -1;
}

static uint32_t bits_for(uint32_t n)  /* bits that address n items */
{
	uint32_t b = 0;
	while (n > 1 && (1u << b) < n)
		b++;
	return b;
}

static void text(char *dst, const uint8_t *src, int n)  /* the kernel's sanitize_string, space padded */
{
	for (int i = 0; i < n; i++)
		dst[i] = (src[i] >= 0x20 && src[i] < 0x7F) ? (char)src[i] : '?';
}

/* the extended page's ECC section, when byte 112 is 0xFF on an ONFI 2.1+ page that lists the feature */
static void ext_ecc(const uint8_t *raw, uint32_t len, struct param_info *o, const uint8_t *p)
{
	uint32_t start = ONFI_PARAM_PAGE_BYTES * p[ONFI_PP_PARAM_PAGES], n = le(p + ONFI_PP_EXT_PAGE_LENGTH, 2) * ONFI_EXT_UNIT_BYTES;
	if (o->onfi_version < 21 || !(o->features & ONFI_FEATURE_EXT_PARAM_PAGE) || n < ONFI_EXT_PAGE_HEADER_BYTES
	    || start + n > len)
		return;
	const uint8_t *e = raw + start;
	if (onfi_crc16(e + 2, n - 2) != le(e, 2) || memcmp(e + 2, ONFI_EXT_PAGE_SIGNATURE, 4))
		return;
	uint32_t cursor = ONFI_EXT_PAGE_HEADER_BYTES;
	for (int s = 0; s < ONFI_EXT_PAGE_SECTIONS; s++) {
		if (e[16 + 2 * s] == ONFI_EXT_SECTION_ECC) {
			if (cursor + 2 <= n && e[cursor + 1]) {
				o->ecc_bits = e[cursor];
				o->ecc_step_bytes = 1u << e[cursor + 1];
			}
			return;
		}
		cursor += e[17 + 2 * s] * ONFI_EXT_UNIT_BYTES;
	}
}

int param_page_decode(const uint8_t *raw, uint32_t len, struct param_info *o)
{
	static uint8_t major[ONFI_PARAM_PAGE_BYTES];
	const uint8_t *p;
	memset(o, 0, sizeof *o);
	o->copy = param_page_valid_copy(raw, len);
	if (o->copy >= 0) {
		p = raw + ONFI_PARAM_PAGE_BYTES * o->copy;
	} else {
		uint32_t n = ncopies(len);
		for (uint32_t i = 0; i < ONFI_PARAM_PAGE_BYTES; i++) {
			uint8_t v = 0;
			for (int bit = 0; bit < 8; bit++) {
				uint32_t ones = 0;
				for (uint32_t k = 0; k < n; k++)
					ones += raw[ONFI_PARAM_PAGE_BYTES * k + i] >> bit & 1;
				if (2 * ones > n)
					v |= (uint8_t)(1 << bit);
			}
			major[i] = v;
		}
		if (n == 0 || !copy_ok(major))
			return PARAM_ERR_NO_VALID_COPY;
		p = major;
	}
	o->revision_bits = le(p + ONFI_PP_REVISION, 2);
	for (int bit = 1; bit < 16; bit++)
		if (o->revision_bits >> bit & 1 && onfi_revision_version(bit))
			o->onfi_version = onfi_revision_version(bit);
	if (!o->onfi_version)
		return PARAM_ERR_REVISION;
	o->features = le(p + ONFI_PP_FEATURES, 2);
	o->optional_commands = le(p + ONFI_PP_OPTIONAL_COMMANDS, 2);
	o->jedec_id = p[ONFI_PP_JEDEC_ID];
	text(o->manufacturer, p + ONFI_PP_MANUFACTURER, sizeof o->manufacturer);
	text(o->model, p + ONFI_PP_MODEL, sizeof o->model);
	o->page_bytes = le(p + ONFI_PP_PAGE_BYTES, 4);
	o->spare_bytes = le(p + ONFI_PP_SPARE_BYTES, 2);
	o->pages_per_block = le(p + ONFI_PP_PAGES_PER_BLOCK, 4);
	o->blocks_per_lun = le(p + ONFI_PP_BLOCKS_PER_LUN, 4);
	o->luns = p[ONFI_PP_LUNS];
	o->row_cycles = p[ONFI_PP_ADDRESS_CYCLES] & 0xF;
	o->column_cycles = p[ONFI_PP_ADDRESS_CYCLES] >> 4;
	o->bits_per_cell = p[ONFI_PP_BITS_PER_CELL];
	o->max_bad_blocks = le(p + ONFI_PP_MAX_BAD_BLOCKS, 2);
	o->timing_modes = le(p + ONFI_PP_TIMING_MODES, 2);
	o->t_ccs_ns = le(p + ONFI_PP_T_CCS, 2);
	o->t_adl_ns = le(p + ONFI_PP_T_ADL, 2);
	o->bus_width = (o->features & ONFI_FEATURE_BUS_16) ? 16 : 8;
	o->page_bits = bits_for(o->pages_per_block);
	o->block_bits = bits_for(o->blocks_per_lun);
	o->lun_bits = bits_for(o->luns);
	if (p[ONFI_PP_ECC_BITS] != ONFI_ECC_IN_EXT_PAGE) {
		o->ecc_bits = p[ONFI_PP_ECC_BITS];
		o->ecc_step_bytes = ONFI_ECC_STEP_DEFAULT;
	} else {
		ext_ecc(raw, len, o, p);
	}
	if (!o->page_bytes || !o->pages_per_block || !o->blocks_per_lun || !o->luns)
		return PARAM_ERR_GEOMETRY;
	return PARAM_OK;
}

int param_page_check_rig(const struct param_info *p)
{
	uint32_t bits = p->page_bits + p->block_bits + p->lun_bits;
	if (p->bus_width != 8)
		return PARAM_ERR_BUS_WIDTH;
	if (p->page_bytes + p->spare_bytes > PAGE_BUFFER_BYTES)
		return PARAM_ERR_PAGE_SIZE;
	if (bits > ROW_BITS || bits > 8 * p->row_cycles || (uint64_t)p->luns * p->blocks_per_lun > MAX_BLOCKS)
		return PARAM_ERR_ADDRESSING;
	return PARAM_OK;
}
