/* ONFI facts every chip shares. GENERATED from nandrig/chip/onfi.py by
 * `python -m nandrig.chip.cheader`: edit the Python, not this file. */
#ifndef NANDRIG_ONFI_FACTS_H
#define NANDRIG_ONFI_FACTS_H
#include <stdint.h>

#define ONFI_PARAM_PAGE_BYTES 256
#define ONFI_PARAM_PAGE_COPIES 3
#define ONFI_CRC16_INIT 0x4F4E
#define ONFI_CRC16_POLY 0x8005
#define ONFI_READ_ID_ONFI_ADDRESS 0x20
#define ONFI_UNIQUE_ID_BYTES 16
#define ONFI_UNIQUE_ID_COPIES 16

/* optional-commands bits (parameter page) */
enum {
	ONFI_OPT_PAGE_CACHE_PROGRAM = 0x0001,
	ONFI_OPT_READ_CACHE = 0x0002,
	ONFI_OPT_GET_SET_FEATURES = 0x0004,
	ONFI_OPT_READ_UNIQUE_ID = 0x0020,
};

/* READ STATUS bits */
enum {
	ONFI_STATUS_FAIL = 0x01,
	ONFI_STATUS_FAILC = 0x02,
	ONFI_STATUS_ARDY = 0x20,
	ONFI_STATUS_RDY = 0x40,
	ONFI_STATUS_WP_N = 0x80,
};

/* SET/GET FEATURES addresses */
enum {
	FEATURE_TIMING_MODE = 0x01,
};

/* parameter-page byte offsets */
enum {
	ONFI_PP_SIGNATURE = 0,
	ONFI_PP_REVISION = 4,
	ONFI_PP_FEATURES = 6,
	ONFI_PP_OPTIONAL_COMMANDS = 8,
	ONFI_PP_EXT_PAGE_LENGTH = 12,
	ONFI_PP_PARAM_PAGES = 14,
	ONFI_PP_MANUFACTURER = 32,
	ONFI_PP_MODEL = 44,
	ONFI_PP_JEDEC_ID = 64,
	ONFI_PP_PAGE_BYTES = 80,
	ONFI_PP_SPARE_BYTES = 84,
	ONFI_PP_PAGES_PER_BLOCK = 92,
	ONFI_PP_BLOCKS_PER_LUN = 96,
	ONFI_PP_LUNS = 100,
	ONFI_PP_ADDRESS_CYCLES = 101,
	ONFI_PP_BITS_PER_CELL = 102,
	ONFI_PP_MAX_BAD_BLOCKS = 103,
	ONFI_PP_ENDURANCE = 105,
	ONFI_PP_GUARANTEED_BLOCKS = 107,
	ONFI_PP_PROGRAMS_PER_PAGE = 110,
	ONFI_PP_ECC_BITS = 112,
	ONFI_PP_TIMING_MODES = 129,
	ONFI_PP_T_PROG = 133,
	ONFI_PP_T_BERS = 135,
	ONFI_PP_T_R = 137,
	ONFI_PP_T_CCS = 139,
	ONFI_PP_T_ADL = 154,
	ONFI_PP_VENDOR_REVISION = 164,
	ONFI_PP_CRC = 254,
};

/* the extended parameter page */
#define ONFI_EXT_PAGE_SIGNATURE "EPPS"
#define ONFI_EXT_PAGE_HEADER_BYTES 32u
#define ONFI_EXT_PAGE_SECTIONS 8
#define ONFI_EXT_SECTION_ECC 2
#define ONFI_EXT_UNIT_BYTES 16u
#define ONFI_ECC_STEP_DEFAULT 512u
#define ONFI_ECC_IN_EXT_PAGE 0xFF

/* parameter-page features bits */
enum {
	ONFI_FEATURE_BUS_16 = 0x0001,
	ONFI_FEATURE_MULTI_LUN_OPS = 0x0002,
	ONFI_FEATURE_EXT_PARAM_PAGE = 0x0080,
};

/* why a parameter page describes no chip the rig drives (INFO param_status) */
enum {
	PARAM_OK = 0,
	PARAM_ERR_NO_VALID_COPY = 1,
	PARAM_ERR_REVISION = 2,
	PARAM_ERR_GEOMETRY = 3,
	PARAM_ERR_BUS_WIDTH = 4,
	PARAM_ERR_PAGE_SIZE = 5,
	PARAM_ERR_ADDRESSING = 6,
};

/* the ONFI version a revision bit names, 0 for a bit no version has */
static inline uint32_t onfi_revision_version(int bit)
{
	switch (bit) {
	case 1: return 10;
	case 2: return 20;
	case 3: return 21;
	case 4: return 22;
	case 5: return 23;
	default: return 0;
	}
}

/* factory bad-block marks by maker (nandrig/chip/vendor.py): which pages carry them */
#define BAD_BLOCK_MARK 0xFF
static inline int bbm_last_page_mlc(uint8_t maker)
{
	return maker == 0xAD || maker == 0xEC;
}
static inline int bbm_first_two_slc(uint8_t maker)
{
	return maker == 0x01 || maker == 0x98 || maker == 0xAD || maker == 0xC2 || maker == 0xEC;
}

/* read-retry tables (nandrig/chip/read_retry.py): the SET FEATURES writes that move VR1..VR3 (refs) and,
 * where the design has the vendor feature, PV1..PV3 (verify; n_writes 0: none), chosen by the parameter
 * page's manufacturer and model prefix. A parameter byte's source: 0 the constant in value[], 1..3 the
 * first..third offset */
#define RETRY_REFERENCES 3
#define OFFSET_MAX_WRITES 3
#define RETRY_TABLES 2
struct offset_write { uint8_t address, source[4], value[4]; };
struct offset_feature {
	int8_t min_offset, max_offset;
	uint8_t n_writes;
	struct offset_write writes[OFFSET_MAX_WRITES];
};
struct retry_table {
	const char *manufacturer, *model_prefix;
	struct offset_feature refs, verify;
};
static inline const struct retry_table *retry_table(int i)
{
	static const struct retry_table tables[RETRY_TABLES] = {
		{"NANDRIG", "NRV-MLC3X", {-128, 127, 1, {{0x89, {1, 2, 3, 0}, {0x00, 0x00, 0x00, 0x00}}}}, {-40, 40, 1, {{0x8A, {1, 2, 3, 0}, {0x00, 0x00, 0x00, 0x00}}}}},
		{"NANDRIG", "NRV-MLCSMALL", {-100, 100, 3, {{0xA0, {1, 0, 0, 0}, {0x00, 0x00, 0x00, 0x00}}, {0xA1, {2, 0, 0, 0}, {0x00, 0x00, 0x00, 0x00}}, {0xA2, {3, 0, 0, 0}, {0x00, 0x00, 0x00, 0x00}}}}, {-30, 30, 3, {{0xA4, {0, 1, 0, 0}, {0x00, 0x00, 0x00, 0x00}}, {0xA5, {0, 2, 0, 0}, {0x00, 0x00, 0x00, 0x00}}, {0xA6, {0, 3, 0, 0}, {0x00, 0x00, 0x00, 0x00}}}}},
	};
	return i >= 0 && i < RETRY_TABLES ? &tables[i] : 0;
}

/* the supply-current front end (nandrig/chip/supply.py): energy (pJ) = code sum * ENERGY_PJ_NUM / ENERGY_PJ_DEN */
#define FRONT_END_SAMPLE_NS 2000u
#define FRONT_END_SCLK_NS 80u
#define FRONT_END_ADC_BITS 12u
#define FRONT_END_VCC_MV 3300u
#define ENERGY_PJ_NUM 21780000000ull
#define ENERGY_PJ_DEN 204800000ull

#endif
