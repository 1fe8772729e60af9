/* The rig protocol (docs/protocol.md). GENERATED from nandrig/protocol/spec.py by
 * `python -m nandrig.protocol.cheader`: edit the spec, not this file. */
#ifndef NANDRIG_PROTOCOL_H
#define NANDRIG_PROTOCOL_H
#include <stdint.h>
#include "frame.h"

#define PROTOCOL_VERSION_MAJOR 1
#define PROTOCOL_VERSION_MINOR 18
enum { T_REQUEST = 0x52, T_REPLY = 0x41, T_PART = 0x50, T_END = 0x45 };
#define STREAMED_SINCE_MINOR 18  /* of major 1 */
#define MAX_PAYLOAD 16384u
#define FRAME_CRC_BYTES 4u
#define MIN_BODY 10u
#define MAX_BODY 16394u

/* limits */
#define REPLY_CACHE_SESSIONS 4
#define STREAM_PART_MAX 112
#define SCAN_BAD_MAX_BLOCKS 4096
#define CYCLE_MAX_BLOCKS 256
#define CYCLE_MAX_ROUNDS 1000000
#define PARAM_PAGE_REPLY_BYTES 1024
#define PAGE_BUFFER_BYTES 32768
#define MAX_BLOCKS 16384
#define ROW_BITS 24
#define READ_ID_BYTES 5
#define READ_ID_ONFI_BYTES 4
#define ADVANCE_TEMP_MIN_CENTI_C (-4000)
#define ADVANCE_TEMP_MAX_CENTI_C 30000
#define FLARES_WSIZE_MAX 1024
#define PERMILLE_MAX 1000
#define FLARES_GUARD_Z10_MAX 100
#define FLARES_PE_MAX 131071
#define PROFILE_SLOTS 1024
#define TARGETS_MAX 8
#define RIG_CODEWORD_BYTES 2048
#define CAPTURE_TRIM_MIN (-8)
#define CAPTURE_TRIM_MAX 7
#define ECC_PROFILE_OFFSET 2
#define ECC_PROFILE_BYTES 12
#define ECC_PARITY_OFFSET 14
#define FLARES_TABLES_MODELS 2
#define BUSY_NOT_SEEN 4294967295u
#define RIG_TABLES_T_MAX 64
#define RIG_TABLES_PE_STEP 250
#define RIG_TABLES_PE_COLS 41

/* opcodes */
enum {
	OP_HELLO = 0x01,
	OP_INFO = 0x02,
	OP_RESET = 0x03,
	OP_READ_ID = 0x04,
	OP_READ_PARAM_PAGE = 0x05,
	OP_SCAN_BAD = 0x06,
	OP_ERASE = 0x10,
	OP_PROGRAM = 0x11,
	OP_READ = 0x12,
	OP_SET_READ_OFFSET = 0x13,
	OP_READ_BUFFER = 0x17,
	OP_SET_READ_REFS = 0x18,
	OP_SET_VERIFY_LEVELS = 0x1A,
	OP_ENERGY = 0x19,
	OP_CYCLE = 0x14,
	OP_MEASURE = 0x15,
	OP_READ_DISTURB = 0x16,
	OP_TIME = 0x20,
	OP_ADVANCE = 0x21,
	OP_STATUS = 0x30,
	OP_ABORT = 0x31,
	OP_FLARES_CONFIG = 0x40,
	OP_FLARES_PROGRAM = 0x41,
	OP_FLARES_READ = 0x42,
	OP_FLARES_TABLES = 0x43,
	OP_FLARES_CLOCK = 0x44,
};

/* reply statuses, from 0 */
enum {
	E_OK, E_BAD_FRAME, E_UNKNOWN_COMMAND, E_VERSION_MISMATCH, E_OUT_OF_RANGE, E_BAD_BLOCK, E_CHIP_FAIL, E_BUSY, E_ABORTED, E_UNSUPPORTED, E_BAD_PARAMETER, E_TIMEOUT, E_INTERNAL, E_NO_SPACE, E_HELD,
};

/* HELLO's rig_kind */
enum {
	RIG_KIND_VIRTUAL = 0x01,
	RIG_KIND_RTL = 0x02,
	RIG_KIND_HARDWARE = 0x03,
};

/* capability bits */
enum {
	CAP_VIRTUAL_TIME = 0x01,
	CAP_BCH = 0x02,
	CAP_RAW_READ = 0x04,
	CAP_FLARES = 0x08,
	CAP_ENERGY = 0x10,
	CAP_CYCLE_JOBS = 0x20,
};

/* STATUS's state */
enum {
	JOB_IDLE = 0x00,
	JOB_BUSY = 0x01,
};

/* INFO's capture */
enum {
	CAPTURE_CALIBRATED = 0x00,
	CAPTURE_NO_WINDOW = 0x01,
};

/* HelloFlag bits; others get E_BAD_PARAMETER */
enum {
	HELLO_FLAG_TAKE_OVER = 0x01,
	HELLO_FLAG_RELEASE = 0x02,
	HELLO_FLAG_OBSERVE = 0x04,
};
#define HELLO_FLAGS_ALL 0x07u

/* EraseFlag bits; others get E_BAD_PARAMETER */
enum {
	ERASE_FLAG_FORCE = 0x01,
};
#define ERASE_FLAGS_ALL 0x01u

/* ProgramFlag bits; others get E_BAD_PARAMETER */
enum {
	PROGRAM_FLAG_FORCE = 0x01,
	PROGRAM_FLAG_EXPLICIT = 0x02,
};
#define PROGRAM_FLAGS_ALL 0x03u

/* ReadFlag bits; others get E_BAD_PARAMETER */
enum {
	READ_FLAG_COMPARE = 0x02,
	READ_FLAG_RAW = 0x04,
};
#define READ_FLAGS_ALL 0x06u

/* CycleFlag bits; others get E_BAD_PARAMETER */
enum {
	CYCLE_FLAG_FORCE = 0x01,
	CYCLE_FLAG_PAGE_SET = 0x02,
};
#define CYCLE_FLAGS_ALL 0x03u

/* MeasureFlag bits; others get E_BAD_PARAMETER */
enum {
	MEASURE_FLAG_TIMED = 0x01,
};
#define MEASURE_FLAGS_ALL 0x01u

/* FlaresProgramFlag bits; others get E_BAD_PARAMETER */
enum {
	FLARES_PROGRAM_FLAG_FORCE = 0x01,
	FLARES_PROGRAM_FLAG_UPPER_PAGE = 0x08,
};
#define FLARES_PROGRAM_FLAGS_ALL 0x09u

/* FlaresConfigFlag bits; others get E_BAD_PARAMETER */
enum {
	FLARES_CONFIG_FLAG_EVALUATE_ON_ALARM = 0x01,
	FLARES_CONFIG_FLAG_GUARDED = 0x02,
};
#define FLARES_CONFIG_FLAGS_ALL 0x03u

/* FlaresReadFlag bits; others get E_BAD_PARAMETER */
enum {
	FLARES_READ_FLAG_COMPARE = 0x02,
	FLARES_READ_FLAG_RAW = 0x04,
	FLARES_READ_FLAG_UPPER_PAGE = 0x08,
};
#define FLARES_READ_FLAGS_ALL 0x0Eu

/* FlaresTablesFlag bits; others get E_BAD_PARAMETER */
enum {
	FLARES_TABLES_FLAG_COMMIT = 0x01,
	FLARES_TABLES_FLAG_BUILTIN = 0x02,
};
#define FLARES_TABLES_FLAGS_ALL 0x03u

/* FLARES_READ's profile source */
enum {
	PROFILE_SOURCE_RAM = 0x00,
	PROFILE_SOURCE_SPARE = 0x01,
	PROFILE_SOURCE_NONE = 0x02,
	PROFILE_SOURCE_UNREADABLE = 0x03,
};

/* FLARES decision flags */
enum {
	DECIDE_ALARM = 0x01,
	DECIDE_INVALIDATE = 0x02,
	DECIDE_NEW_PROFILE = 0x04,
	DECIDE_BEYOND_REACH = 0x08,
};

/* FLARES tables in use */
enum {
	TABLES_BUILTIN = 0x00,
	TABLES_LOADED = 0x01,
};

/* requests whose replies stay out of the reply cache */
#define OP_UNCACHED(op) ((op) == OP_HELLO || (op) == OP_INFO || (op) == OP_READ_ID || (op) == OP_READ_PARAM_PAGE || (op) == OP_TIME || (op) == OP_STATUS || (op) == OP_ABORT)

/* requests whose replies go in parts to hosts of STREAMED_SINCE */
#define OP_STREAMED(op) ((op) == OP_MEASURE)

/* requests to the rig as a whole: their target is not read (the others act on the target's chip) */
#define OP_RIG_WIDE(op) ((op) == OP_HELLO || (op) == OP_READ_BUFFER || (op) == OP_TIME || (op) == OP_ADVANCE)

/* statuses whose reply keeps its payload */
#define STATUS_KEEPS_PAYLOAD(st) ((st) == E_OK || (st) == E_VERSION_MISMATCH || (st) == E_CHIP_FAIL || (st) == E_ABORTED || (st) == E_HELD)

/* FRAME_HEAD: the decoded body's header; the payload and a CRC-32 follow */
#define FRAME_HEAD_BYTES 6u
#define FRAME_HEAD_TYPE(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_FRAME_HEAD_TYPE(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define FRAME_HEAD_OPCODE(p) ((uint8_t)get_le((p) + 1, 1))
#define SET_FRAME_HEAD_OPCODE(p, v) put_le((p) + 1, (uint64_t)(v), 1)
#define FRAME_HEAD_SEQ(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_FRAME_HEAD_SEQ(p, v) put_le((p) + 2, (uint64_t)(v), 2)
#define FRAME_HEAD_STATUS_OR_TARGET(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_FRAME_HEAD_STATUS_OR_TARGET(p, v) put_le((p) + 4, (uint64_t)(v), 2)

/* STREAM_END: an 'E' frame's payload, before the tail */
#define STREAM_END_BYTES 2u
#define STREAM_END_OFFSET(p) ((uint16_t)get_le((p) + 0, 2))
#define SET_STREAM_END_OFFSET(p, v) put_le((p) + 0, (uint64_t)(v), 2)

/* HELLO_REQ */
#define HELLO_REQ_BYTES 9u
#define HELLO_REQ_MAJOR(p) ((uint16_t)get_le((p) + 0, 2))
#define SET_HELLO_REQ_MAJOR(p, v) put_le((p) + 0, (uint64_t)(v), 2)
#define HELLO_REQ_MINOR(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_HELLO_REQ_MINOR(p, v) put_le((p) + 2, (uint64_t)(v), 2)
#define HELLO_REQ_SESSION(p) ((uint32_t)get_le((p) + 4, 4))
#define SET_HELLO_REQ_SESSION(p, v) put_le((p) + 4, (uint64_t)(v), 4)
#define HELLO_REQ_FLAGS(p) ((uint8_t)get_le((p) + 8, 1))
#define SET_HELLO_REQ_FLAGS(p, v) put_le((p) + 8, (uint64_t)(v), 1)

/* EMPTY_REQ */
#define EMPTY_REQ_BYTES 0u

/* READ_ID_REQ */
#define READ_ID_REQ_BYTES 1u
#define READ_ID_REQ_ADDRESS(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_READ_ID_REQ_ADDRESS(p, v) put_le((p) + 0, (uint64_t)(v), 1)

/* SCAN_BAD_REQ */
#define SCAN_BAD_REQ_BYTES 6u
#define SCAN_BAD_REQ_FIRST_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_SCAN_BAD_REQ_FIRST_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define SCAN_BAD_REQ_COUNT(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_SCAN_BAD_REQ_COUNT(p, v) put_le((p) + 4, (uint64_t)(v), 2)

/* ERASE_REQ */
#define ERASE_REQ_BYTES 5u
#define ERASE_REQ_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_ERASE_REQ_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define ERASE_REQ_FLAGS(p) ((uint8_t)get_le((p) + 4, 1))
#define SET_ERASE_REQ_FLAGS(p, v) put_le((p) + 4, (uint64_t)(v), 1)

/* PROGRAM_HEAD: PROGRAM's request before its seed or data */
#define PROGRAM_HEAD_BYTES 8u
#define PROGRAM_HEAD_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_PROGRAM_HEAD_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define PROGRAM_HEAD_PAGE(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_PROGRAM_HEAD_PAGE(p, v) put_le((p) + 4, (uint64_t)(v), 2)
#define PROGRAM_HEAD_T(p) ((uint8_t)get_le((p) + 6, 1))
#define SET_PROGRAM_HEAD_T(p, v) put_le((p) + 6, (uint64_t)(v), 1)
#define PROGRAM_HEAD_FLAGS(p) ((uint8_t)get_le((p) + 7, 1))
#define SET_PROGRAM_HEAD_FLAGS(p, v) put_le((p) + 7, (uint64_t)(v), 1)

/* PATTERN_SEED */
#define PATTERN_SEED_BYTES 4u
#define PATTERN_SEED_PATTERN_SEED(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_PATTERN_SEED_PATTERN_SEED(p, v) put_le((p) + 0, (uint64_t)(v), 4)

/* READ_REQ */
#define READ_REQ_BYTES 12u
#define READ_REQ_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_READ_REQ_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define READ_REQ_PAGE(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_READ_REQ_PAGE(p, v) put_le((p) + 4, (uint64_t)(v), 2)
#define READ_REQ_T(p) ((uint8_t)get_le((p) + 6, 1))
#define SET_READ_REQ_T(p, v) put_le((p) + 6, (uint64_t)(v), 1)
#define READ_REQ_FLAGS(p) ((uint8_t)get_le((p) + 7, 1))
#define SET_READ_REQ_FLAGS(p, v) put_le((p) + 7, (uint64_t)(v), 1)
#define READ_REQ_PATTERN_SEED(p) ((uint32_t)get_le((p) + 8, 4))
#define SET_READ_REQ_PATTERN_SEED(p, v) put_le((p) + 8, (uint64_t)(v), 4)

/* SET_READ_OFFSET_REQ */
#define SET_READ_OFFSET_REQ_BYTES 1u
#define SET_READ_OFFSET_REQ_OFFSET(p) ((int8_t)get_le((p) + 0, 1))
#define SET_SET_READ_OFFSET_REQ_OFFSET(p, v) put_le((p) + 0, (uint64_t)(v), 1)

/* ENERGY_REPLY: the chip's supply energy and time over R/B#-low and bus-transfer windows since the last ENERGY, and its idle power */
#define ENERGY_REPLY_BYTES 36u
#define ENERGY_REPLY_BUSY_PJ(p) ((uint64_t)get_le((p) + 0, 8))
#define SET_ENERGY_REPLY_BUSY_PJ(p, v) put_le((p) + 0, (uint64_t)(v), 8)
#define ENERGY_REPLY_BUSY_NS(p) ((uint64_t)get_le((p) + 8, 8))
#define SET_ENERGY_REPLY_BUSY_NS(p, v) put_le((p) + 8, (uint64_t)(v), 8)
#define ENERGY_REPLY_TRANSFER_PJ(p) ((uint64_t)get_le((p) + 16, 8))
#define SET_ENERGY_REPLY_TRANSFER_PJ(p, v) put_le((p) + 16, (uint64_t)(v), 8)
#define ENERGY_REPLY_TRANSFER_NS(p) ((uint64_t)get_le((p) + 24, 8))
#define SET_ENERGY_REPLY_TRANSFER_NS(p, v) put_le((p) + 24, (uint64_t)(v), 8)
#define ENERGY_REPLY_IDLE_UW(p) ((uint32_t)get_le((p) + 32, 4))
#define SET_ENERGY_REPLY_IDLE_UW(p, v) put_le((p) + 32, (uint64_t)(v), 4)

/* SET_READ_REFS_REQ: each read reference's read-retry offset, in the chip's steps */
#define SET_READ_REFS_REQ_BYTES 3u
#define SET_READ_REFS_REQ_VR1(p) ((int8_t)get_le((p) + 0, 1))
#define SET_SET_READ_REFS_REQ_VR1(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define SET_READ_REFS_REQ_VR2(p) ((int8_t)get_le((p) + 1, 1))
#define SET_SET_READ_REFS_REQ_VR2(p, v) put_le((p) + 1, (uint64_t)(v), 1)
#define SET_READ_REFS_REQ_VR3(p) ((int8_t)get_le((p) + 2, 1))
#define SET_SET_READ_REFS_REQ_VR3(p, v) put_le((p) + 2, (uint64_t)(v), 1)

/* SET_VERIFY_LEVELS_REQ: L1..L3's program-verify offsets through the chip design's vendor feature, in its steps; the upper pages programmed after it place their levels there (1.16) */
#define SET_VERIFY_LEVELS_REQ_BYTES 3u
#define SET_VERIFY_LEVELS_REQ_PV1(p) ((int8_t)get_le((p) + 0, 1))
#define SET_SET_VERIFY_LEVELS_REQ_PV1(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define SET_VERIFY_LEVELS_REQ_PV2(p) ((int8_t)get_le((p) + 1, 1))
#define SET_SET_VERIFY_LEVELS_REQ_PV2(p, v) put_le((p) + 1, (uint64_t)(v), 1)
#define SET_VERIFY_LEVELS_REQ_PV3(p) ((int8_t)get_le((p) + 2, 1))
#define SET_SET_VERIFY_LEVELS_REQ_PV3(p, v) put_le((p) + 2, (uint64_t)(v), 1)

/* CYCLE_REQ */
#define CYCLE_REQ_BYTES 15u
#define CYCLE_REQ_FIRST_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_CYCLE_REQ_FIRST_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define CYCLE_REQ_N_BLOCKS(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_CYCLE_REQ_N_BLOCKS(p, v) put_le((p) + 4, (uint64_t)(v), 2)
#define CYCLE_REQ_CYCLES(p) ((uint32_t)get_le((p) + 6, 4))
#define SET_CYCLE_REQ_CYCLES(p, v) put_le((p) + 6, (uint64_t)(v), 4)
#define CYCLE_REQ_PATTERN_SEED(p) ((uint32_t)get_le((p) + 10, 4))
#define SET_CYCLE_REQ_PATTERN_SEED(p, v) put_le((p) + 10, (uint64_t)(v), 4)
#define CYCLE_REQ_FLAGS(p) ((uint8_t)get_le((p) + 14, 1))
#define SET_CYCLE_REQ_FLAGS(p, v) put_le((p) + 14, (uint64_t)(v), 1)

/* MEASURE_REQ */
#define MEASURE_REQ_BYTES 15u
#define MEASURE_REQ_FIRST_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_MEASURE_REQ_FIRST_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define MEASURE_REQ_N_BLOCKS(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_MEASURE_REQ_N_BLOCKS(p, v) put_le((p) + 4, (uint64_t)(v), 2)
#define MEASURE_REQ_FIRST_PAGE(p) ((uint16_t)get_le((p) + 6, 2))
#define SET_MEASURE_REQ_FIRST_PAGE(p, v) put_le((p) + 6, (uint64_t)(v), 2)
#define MEASURE_REQ_N_PAGES(p) ((uint16_t)get_le((p) + 8, 2))
#define SET_MEASURE_REQ_N_PAGES(p, v) put_le((p) + 8, (uint64_t)(v), 2)
#define MEASURE_REQ_PATTERN_SEED(p) ((uint32_t)get_le((p) + 10, 4))
#define SET_MEASURE_REQ_PATTERN_SEED(p, v) put_le((p) + 10, (uint64_t)(v), 4)
#define MEASURE_REQ_FLAGS(p) ((uint8_t)get_le((p) + 14, 1))
#define SET_MEASURE_REQ_FLAGS(p, v) put_le((p) + 14, (uint64_t)(v), 1)

/* READ_DISTURB_REQ */
#define READ_DISTURB_REQ_BYTES 10u
#define READ_DISTURB_REQ_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_READ_DISTURB_REQ_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define READ_DISTURB_REQ_PAGE(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_READ_DISTURB_REQ_PAGE(p, v) put_le((p) + 4, (uint64_t)(v), 2)
#define READ_DISTURB_REQ_READS(p) ((uint32_t)get_le((p) + 6, 4))
#define SET_READ_DISTURB_REQ_READS(p, v) put_le((p) + 6, (uint64_t)(v), 4)

/* ADVANCE_REQ */
#define ADVANCE_REQ_BYTES 10u
#define ADVANCE_REQ_NS(p) ((uint64_t)get_le((p) + 0, 8))
#define SET_ADVANCE_REQ_NS(p, v) put_le((p) + 0, (uint64_t)(v), 8)
#define ADVANCE_REQ_TEMP_CENTI_C(p) ((int16_t)get_le((p) + 8, 2))
#define SET_ADVANCE_REQ_TEMP_CENTI_C(p, v) put_le((p) + 8, (uint64_t)(v), 2)

/* FLARES_CONFIG_REQ */
#define FLARES_CONFIG_REQ_BYTES 14u
#define FLARES_CONFIG_REQ_WSIZE(p) ((uint16_t)get_le((p) + 0, 2))
#define SET_FLARES_CONFIG_REQ_WSIZE(p, v) put_le((p) + 0, (uint64_t)(v), 2)
#define FLARES_CONFIG_REQ_MIX_PM(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_FLARES_CONFIG_REQ_MIX_PM(p, v) put_le((p) + 2, (uint64_t)(v), 2)
#define FLARES_CONFIG_REQ_SAFERANGE_PM(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_FLARES_CONFIG_REQ_SAFERANGE_PM(p, v) put_le((p) + 4, (uint64_t)(v), 2)
#define FLARES_CONFIG_REQ_MAXFAIL(p) ((uint8_t)get_le((p) + 6, 1))
#define SET_FLARES_CONFIG_REQ_MAXFAIL(p, v) put_le((p) + 6, (uint64_t)(v), 1)
#define FLARES_CONFIG_REQ_MAXCRITICAL(p) ((uint8_t)get_le((p) + 7, 1))
#define SET_FLARES_CONFIG_REQ_MAXCRITICAL(p, v) put_le((p) + 7, (uint64_t)(v), 1)
#define FLARES_CONFIG_REQ_MAXOVER(p) ((uint8_t)get_le((p) + 8, 1))
#define SET_FLARES_CONFIG_REQ_MAXOVER(p, v) put_le((p) + 8, (uint64_t)(v), 1)
#define FLARES_CONFIG_REQ_REQ_RET_S(p) ((uint32_t)get_le((p) + 9, 4))
#define SET_FLARES_CONFIG_REQ_REQ_RET_S(p, v) put_le((p) + 9, (uint64_t)(v), 4)
#define FLARES_CONFIG_REQ_FLAGS(p) ((uint8_t)get_le((p) + 13, 1))
#define SET_FLARES_CONFIG_REQ_FLAGS(p, v) put_le((p) + 13, (uint64_t)(v), 1)

/* FLARES_GUARD_REQ: after FLARES_CONFIG_REQ when its flags hold GUARDED */
#define FLARES_GUARD_REQ_BYTES 3u
#define FLARES_GUARD_REQ_GUARD_Z10(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_FLARES_GUARD_REQ_GUARD_Z10(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define FLARES_GUARD_REQ_ALARM_USE_PM(p) ((uint16_t)get_le((p) + 1, 2))
#define SET_FLARES_GUARD_REQ_ALARM_USE_PM(p, v) put_le((p) + 1, (uint64_t)(v), 2)

/* FLARES_PROGRAM_REQ */
#define FLARES_PROGRAM_REQ_BYTES 15u
#define FLARES_PROGRAM_REQ_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_FLARES_PROGRAM_REQ_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define FLARES_PROGRAM_REQ_PAGE(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_FLARES_PROGRAM_REQ_PAGE(p, v) put_le((p) + 4, (uint64_t)(v), 2)
#define FLARES_PROGRAM_REQ_FLAGS(p) ((uint8_t)get_le((p) + 6, 1))
#define SET_FLARES_PROGRAM_REQ_FLAGS(p, v) put_le((p) + 6, (uint64_t)(v), 1)
#define FLARES_PROGRAM_REQ_PATTERN_SEED(p) ((uint32_t)get_le((p) + 7, 4))
#define SET_FLARES_PROGRAM_REQ_PATTERN_SEED(p, v) put_le((p) + 7, (uint64_t)(v), 4)
#define FLARES_PROGRAM_REQ_PE(p) ((uint32_t)get_le((p) + 11, 4))
#define SET_FLARES_PROGRAM_REQ_PE(p, v) put_le((p) + 11, (uint64_t)(v), 4)

/* FLARES_TABLES_REQ: then the chunk's bytes, staged at offset in the page buffer */
#define FLARES_TABLES_REQ_BYTES 13u
#define FLARES_TABLES_REQ_OFFSET(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_FLARES_TABLES_REQ_OFFSET(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define FLARES_TABLES_REQ_TOTAL(p) ((uint32_t)get_le((p) + 4, 4))
#define SET_FLARES_TABLES_REQ_TOTAL(p, v) put_le((p) + 4, (uint64_t)(v), 4)
#define FLARES_TABLES_REQ_CRC(p) ((uint32_t)get_le((p) + 8, 4))
#define SET_FLARES_TABLES_REQ_CRC(p, v) put_le((p) + 8, (uint64_t)(v), 4)
#define FLARES_TABLES_REQ_FLAGS(p) ((uint8_t)get_le((p) + 12, 1))
#define SET_FLARES_TABLES_REQ_FLAGS(p, v) put_le((p) + 12, (uint64_t)(v), 1)

/* FLARES_TABLES_HEAD: FLARES tables as sent: then u64 corr_rber_max[t], u32 t_grid[t_grid], and per model u64 rber_wr[pe_cols], u64 rd_pe[pe_cols], u32 rd_t[t_grid], u32 max_ret_time_min[t][pe_cols]; CRC-32 over all of it */
#define FLARES_TABLES_HEAD_BYTES 11u
#define FLARES_TABLES_HEAD_FORMAT(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_FLARES_TABLES_HEAD_FORMAT(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define FLARES_TABLES_HEAD_MODELS(p) ((uint8_t)get_le((p) + 1, 1))
#define SET_FLARES_TABLES_HEAD_MODELS(p, v) put_le((p) + 1, (uint64_t)(v), 1)
#define FLARES_TABLES_HEAD_GF_M(p) ((uint8_t)get_le((p) + 2, 1))
#define SET_FLARES_TABLES_HEAD_GF_M(p, v) put_le((p) + 2, (uint64_t)(v), 1)
#define FLARES_TABLES_HEAD_T_MIN(p) ((uint8_t)get_le((p) + 3, 1))
#define SET_FLARES_TABLES_HEAD_T_MIN(p, v) put_le((p) + 3, (uint64_t)(v), 1)
#define FLARES_TABLES_HEAD_T_MAX(p) ((uint8_t)get_le((p) + 4, 1))
#define SET_FLARES_TABLES_HEAD_T_MAX(p, v) put_le((p) + 4, (uint64_t)(v), 1)
#define FLARES_TABLES_HEAD_PE_COLS(p) ((uint8_t)get_le((p) + 5, 1))
#define SET_FLARES_TABLES_HEAD_PE_COLS(p, v) put_le((p) + 5, (uint64_t)(v), 1)
#define FLARES_TABLES_HEAD_T_GRID(p) ((uint8_t)get_le((p) + 6, 1))
#define SET_FLARES_TABLES_HEAD_T_GRID(p, v) put_le((p) + 6, (uint64_t)(v), 1)
#define FLARES_TABLES_HEAD_CODEWORD_BYTES(p) ((uint16_t)get_le((p) + 7, 2))
#define SET_FLARES_TABLES_HEAD_CODEWORD_BYTES(p, v) put_le((p) + 7, (uint64_t)(v), 2)
#define FLARES_TABLES_HEAD_PE_STEP(p) ((uint16_t)get_le((p) + 9, 2))
#define SET_FLARES_TABLES_HEAD_PE_STEP(p, v) put_le((p) + 9, (uint64_t)(v), 2)

/* READ_BUFFER_REQ */
#define READ_BUFFER_REQ_BYTES 4u
#define READ_BUFFER_REQ_OFFSET(p) ((uint16_t)get_le((p) + 0, 2))
#define SET_READ_BUFFER_REQ_OFFSET(p, v) put_le((p) + 0, (uint64_t)(v), 2)
#define READ_BUFFER_REQ_COUNT(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_READ_BUFFER_REQ_COUNT(p, v) put_le((p) + 2, (uint64_t)(v), 2)

/* FLARES_CLOCK_REQ: FLARES' clock is the rig's, in whole seconds, plus this credit (0 at start-up), modulo 2**32 */
#define FLARES_CLOCK_REQ_BYTES 8u
#define FLARES_CLOCK_REQ_CREDIT_S(p) ((uint64_t)get_le((p) + 0, 8))
#define SET_FLARES_CLOCK_REQ_CREDIT_S(p, v) put_le((p) + 0, (uint64_t)(v), 8)

/* FLARES_READ_REQ */
#define FLARES_READ_REQ_BYTES 11u
#define FLARES_READ_REQ_BLOCK(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_FLARES_READ_REQ_BLOCK(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define FLARES_READ_REQ_PAGE(p) ((uint16_t)get_le((p) + 4, 2))
#define SET_FLARES_READ_REQ_PAGE(p, v) put_le((p) + 4, (uint64_t)(v), 2)
#define FLARES_READ_REQ_FLAGS(p) ((uint8_t)get_le((p) + 6, 1))
#define SET_FLARES_READ_REQ_FLAGS(p, v) put_le((p) + 6, (uint64_t)(v), 1)
#define FLARES_READ_REQ_PATTERN_SEED(p) ((uint32_t)get_le((p) + 7, 4))
#define SET_FLARES_READ_REQ_PATTERN_SEED(p, v) put_le((p) + 7, (uint64_t)(v), 4)

/* HELLO_REPLY: then n bytes of identity (ASCII) */
#define HELLO_REPLY_BYTES 18u
#define HELLO_REPLY_MAJOR(p) ((uint16_t)get_le((p) + 0, 2))
#define SET_HELLO_REPLY_MAJOR(p, v) put_le((p) + 0, (uint64_t)(v), 2)
#define HELLO_REPLY_MINOR(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_HELLO_REPLY_MINOR(p, v) put_le((p) + 2, (uint64_t)(v), 2)
#define HELLO_REPLY_RIG_KIND(p) ((uint8_t)get_le((p) + 4, 1))
#define SET_HELLO_REPLY_RIG_KIND(p, v) put_le((p) + 4, (uint64_t)(v), 1)
#define HELLO_REPLY_CAPABILITIES(p) ((uint32_t)get_le((p) + 5, 4))
#define SET_HELLO_REPLY_CAPABILITIES(p, v) put_le((p) + 5, (uint64_t)(v), 4)
#define HELLO_REPLY_HOLDER(p) ((uint32_t)get_le((p) + 9, 4))
#define SET_HELLO_REPLY_HOLDER(p, v) put_le((p) + 9, (uint64_t)(v), 4)
#define HELLO_REPLY_BOOT(p) ((uint32_t)get_le((p) + 13, 4))
#define SET_HELLO_REPLY_BOOT(p, v) put_le((p) + 13, (uint64_t)(v), 4)
#define HELLO_REPLY_N(p) ((uint8_t)get_le((p) + 17, 1))
#define SET_HELLO_REPLY_N(p, v) put_le((p) + 17, (uint64_t)(v), 1)

/* INFO_REPLY */
#define INFO_REPLY_BYTES 92u
#define INFO_REPLY_READ_ID_OFFSET 0u
#define INFO_REPLY_READ_ID_SIZE 5u
#define INFO_REPLY_MANUFACTURER_OFFSET 5u
#define INFO_REPLY_MANUFACTURER_SIZE 12u
#define INFO_REPLY_MODEL_OFFSET 17u
#define INFO_REPLY_MODEL_SIZE 20u
#define INFO_REPLY_PAGE_BYTES(p) ((uint32_t)get_le((p) + 37, 4))
#define SET_INFO_REPLY_PAGE_BYTES(p, v) put_le((p) + 37, (uint64_t)(v), 4)
#define INFO_REPLY_SPARE_BYTES(p) ((uint16_t)get_le((p) + 41, 2))
#define SET_INFO_REPLY_SPARE_BYTES(p, v) put_le((p) + 41, (uint64_t)(v), 2)
#define INFO_REPLY_PAGES_PER_BLOCK(p) ((uint32_t)get_le((p) + 43, 4))
#define SET_INFO_REPLY_PAGES_PER_BLOCK(p, v) put_le((p) + 43, (uint64_t)(v), 4)
#define INFO_REPLY_BLOCKS(p) ((uint32_t)get_le((p) + 47, 4))
#define SET_INFO_REPLY_BLOCKS(p, v) put_le((p) + 47, (uint64_t)(v), 4)
#define INFO_REPLY_BITS_PER_CELL(p) ((uint8_t)get_le((p) + 51, 1))
#define SET_INFO_REPLY_BITS_PER_CELL(p, v) put_le((p) + 51, (uint64_t)(v), 1)
#define INFO_REPLY_TIMING_MODES(p) ((uint16_t)get_le((p) + 52, 2))
#define SET_INFO_REPLY_TIMING_MODES(p, v) put_le((p) + 52, (uint64_t)(v), 2)
#define INFO_REPLY_TIMING_MODE(p) ((uint8_t)get_le((p) + 54, 1))
#define SET_INFO_REPLY_TIMING_MODE(p, v) put_le((p) + 54, (uint64_t)(v), 1)
#define INFO_REPLY_ECC_BITS(p) ((uint8_t)get_le((p) + 55, 1))
#define SET_INFO_REPLY_ECC_BITS(p, v) put_le((p) + 55, (uint64_t)(v), 1)
#define INFO_REPLY_CODEWORD_BYTES(p) ((uint16_t)get_le((p) + 56, 2))
#define SET_INFO_REPLY_CODEWORD_BYTES(p, v) put_le((p) + 56, (uint64_t)(v), 2)
#define INFO_REPLY_T_MAX(p) ((uint8_t)get_le((p) + 58, 1))
#define SET_INFO_REPLY_T_MAX(p, v) put_le((p) + 58, (uint64_t)(v), 1)
#define INFO_REPLY_CAPABILITIES(p) ((uint32_t)get_le((p) + 59, 4))
#define SET_INFO_REPLY_CAPABILITIES(p, v) put_le((p) + 59, (uint64_t)(v), 4)
#define INFO_REPLY_CAPTURE(p) ((uint8_t)get_le((p) + 63, 1))
#define SET_INFO_REPLY_CAPTURE(p, v) put_le((p) + 63, (uint64_t)(v), 1)
#define INFO_REPLY_RD_TRIM(p) ((int8_t)get_le((p) + 64, 1))
#define SET_INFO_REPLY_RD_TRIM(p, v) put_le((p) + 64, (uint64_t)(v), 1)
#define INFO_REPLY_TRIM_PASS(p) ((uint16_t)get_le((p) + 65, 2))
#define SET_INFO_REPLY_TRIM_PASS(p, v) put_le((p) + 65, (uint64_t)(v), 2)
#define INFO_REPLY_HAS_UNIQUE_ID(p) ((uint8_t)get_le((p) + 67, 1))
#define SET_INFO_REPLY_HAS_UNIQUE_ID(p, v) put_le((p) + 67, (uint64_t)(v), 1)
#define INFO_REPLY_UNIQUE_ID_OFFSET 68u
#define INFO_REPLY_UNIQUE_ID_SIZE 16u
#define INFO_REPLY_ECC_STEP_BYTES(p) ((uint16_t)get_le((p) + 84, 2))
#define SET_INFO_REPLY_ECC_STEP_BYTES(p, v) put_le((p) + 84, (uint64_t)(v), 2)
#define INFO_REPLY_LUNS(p) ((uint8_t)get_le((p) + 86, 1))
#define SET_INFO_REPLY_LUNS(p, v) put_le((p) + 86, (uint64_t)(v), 1)
#define INFO_REPLY_PARAM_STATUS(p) ((uint8_t)get_le((p) + 87, 1))
#define SET_INFO_REPLY_PARAM_STATUS(p, v) put_le((p) + 87, (uint64_t)(v), 1)
#define INFO_REPLY_CAPTURE_STEP_PS(p) ((uint16_t)get_le((p) + 88, 2))
#define SET_INFO_REPLY_CAPTURE_STEP_PS(p, v) put_le((p) + 88, (uint64_t)(v), 2)
#define INFO_REPLY_TARGET(p) ((uint8_t)get_le((p) + 90, 1))
#define SET_INFO_REPLY_TARGET(p, v) put_le((p) + 90, (uint64_t)(v), 1)
#define INFO_REPLY_TARGETS(p) ((uint8_t)get_le((p) + 91, 1))
#define SET_INFO_REPLY_TARGETS(p, v) put_le((p) + 91, (uint64_t)(v), 1)

/* READ_ID_HEAD: then n ID bytes */
#define READ_ID_HEAD_BYTES 1u
#define READ_ID_HEAD_N(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_READ_ID_HEAD_N(p, v) put_le((p) + 0, (uint64_t)(v), 1)

/* BYTE_REPLY */
#define BYTE_REPLY_BYTES 1u
#define BYTE_REPLY_VALUE(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_BYTE_REPLY_VALUE(p, v) put_le((p) + 0, (uint64_t)(v), 1)

/* CHIP_RESULT: a chip operation's status byte and busy time (R/B# low) */
#define CHIP_RESULT_BYTES 5u
#define CHIP_RESULT_CHIP_STATUS(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_CHIP_RESULT_CHIP_STATUS(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define CHIP_RESULT_BUSY_NS(p) ((uint32_t)get_le((p) + 1, 4))
#define SET_CHIP_RESULT_BUSY_NS(p, v) put_le((p) + 1, (uint64_t)(v), 4)

/* READ_HEAD */
#define READ_HEAD_BYTES 6u
#define READ_HEAD_CHIP_STATUS(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_READ_HEAD_CHIP_STATUS(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define READ_HEAD_BUSY_NS(p) ((uint32_t)get_le((p) + 1, 4))
#define SET_READ_HEAD_BUSY_NS(p, v) put_le((p) + 1, (uint64_t)(v), 4)
#define READ_HEAD_N_CW(p) ((uint8_t)get_le((p) + 5, 1))
#define SET_READ_HEAD_N_CW(p, v) put_le((p) + 5, (uint64_t)(v), 1)

/* CODEWORD_COUNTS */
#define CODEWORD_COUNTS_BYTES 6u
#define CODEWORD_COUNTS_ERR_1TO0(p) ((uint16_t)get_le((p) + 0, 2))
#define SET_CODEWORD_COUNTS_ERR_1TO0(p, v) put_le((p) + 0, (uint64_t)(v), 2)
#define CODEWORD_COUNTS_ERR_0TO1(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_CODEWORD_COUNTS_ERR_0TO1(p, v) put_le((p) + 2, (uint64_t)(v), 2)
#define CODEWORD_COUNTS_CORRECTED(p) ((int16_t)get_le((p) + 4, 2))
#define SET_CODEWORD_COUNTS_CORRECTED(p, v) put_le((p) + 4, (uint64_t)(v), 2)

/* CYCLE_HEAD */
#define CYCLE_HEAD_BYTES 4u
#define CYCLE_HEAD_CYCLES_DONE_MIN(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_CYCLE_HEAD_CYCLES_DONE_MIN(p, v) put_le((p) + 0, (uint64_t)(v), 4)

/* CYCLE_BLOCK */
#define CYCLE_BLOCK_BYTES 5u
#define CYCLE_BLOCK_CYCLES_DONE(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_CYCLE_BLOCK_CYCLES_DONE(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define CYCLE_BLOCK_FAILED(p) ((uint8_t)get_le((p) + 4, 1))
#define SET_CYCLE_BLOCK_FAILED(p, v) put_le((p) + 4, (uint64_t)(v), 1)

/* MEASURE_PAGE */
#define MEASURE_PAGE_BYTES 8u
#define MEASURE_PAGE_ERR_1TO0(p) ((uint16_t)get_le((p) + 0, 2))
#define SET_MEASURE_PAGE_ERR_1TO0(p, v) put_le((p) + 0, (uint64_t)(v), 2)
#define MEASURE_PAGE_ERR_0TO1(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_MEASURE_PAGE_ERR_0TO1(p, v) put_le((p) + 2, (uint64_t)(v), 2)
#define MEASURE_PAGE_BUSY_NS(p) ((uint32_t)get_le((p) + 4, 4))
#define SET_MEASURE_PAGE_BUSY_NS(p, v) put_le((p) + 4, (uint64_t)(v), 4)

/* READ_DISTURB_REPLY */
#define READ_DISTURB_REPLY_BYTES 8u
#define READ_DISTURB_REPLY_READS_DONE(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_READ_DISTURB_REPLY_READS_DONE(p, v) put_le((p) + 0, (uint64_t)(v), 4)
#define READ_DISTURB_REPLY_BUSY_US(p) ((uint32_t)get_le((p) + 4, 4))
#define SET_READ_DISTURB_REPLY_BUSY_US(p, v) put_le((p) + 4, (uint64_t)(v), 4)

/* CLOCK_REPLY */
#define CLOCK_REPLY_BYTES 8u
#define CLOCK_REPLY_RIG_CLOCK_NS(p) ((uint64_t)get_le((p) + 0, 8))
#define SET_CLOCK_REPLY_RIG_CLOCK_NS(p, v) put_le((p) + 0, (uint64_t)(v), 8)

/* STATUS_REPLY */
#define STATUS_REPLY_BYTES 16u
#define STATUS_REPLY_STATE(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_STATUS_REPLY_STATE(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define STATUS_REPLY_OPCODE(p) ((uint8_t)get_le((p) + 1, 1))
#define SET_STATUS_REPLY_OPCODE(p, v) put_le((p) + 1, (uint64_t)(v), 1)
#define STATUS_REPLY_SEQ(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_STATUS_REPLY_SEQ(p, v) put_le((p) + 2, (uint64_t)(v), 2)
#define STATUS_REPLY_DONE(p) ((uint32_t)get_le((p) + 4, 4))
#define SET_STATUS_REPLY_DONE(p, v) put_le((p) + 4, (uint64_t)(v), 4)
#define STATUS_REPLY_TOTAL(p) ((uint32_t)get_le((p) + 8, 4))
#define SET_STATUS_REPLY_TOTAL(p, v) put_le((p) + 8, (uint64_t)(v), 4)
#define STATUS_REPLY_BOOT(p) ((uint32_t)get_le((p) + 12, 4))
#define SET_STATUS_REPLY_BOOT(p, v) put_le((p) + 12, (uint64_t)(v), 4)

/* FLARES_CONFIG_REPLY */
#define FLARES_CONFIG_REPLY_BYTES 9u
#define FLARES_CONFIG_REPLY_T_MIN(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_FLARES_CONFIG_REPLY_T_MIN(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define FLARES_CONFIG_REPLY_T_CAP(p) ((uint8_t)get_le((p) + 1, 1))
#define SET_FLARES_CONFIG_REPLY_T_CAP(p, v) put_le((p) + 1, (uint64_t)(v), 1)
#define FLARES_CONFIG_REPLY_PROFILE_SLOTS(p) ((uint16_t)get_le((p) + 2, 2))
#define SET_FLARES_CONFIG_REPLY_PROFILE_SLOTS(p, v) put_le((p) + 2, (uint64_t)(v), 2)
#define FLARES_CONFIG_REPLY_TABLES_SOURCE(p) ((uint8_t)get_le((p) + 4, 1))
#define SET_FLARES_CONFIG_REPLY_TABLES_SOURCE(p, v) put_le((p) + 4, (uint64_t)(v), 1)
#define FLARES_CONFIG_REPLY_TABLES_CRC(p) ((uint32_t)get_le((p) + 5, 4))
#define SET_FLARES_CONFIG_REPLY_TABLES_CRC(p, v) put_le((p) + 5, (uint64_t)(v), 4)

/* FLARES_TABLES_REPLY: the tables in use after the request */
#define FLARES_TABLES_REPLY_BYTES 6u
#define FLARES_TABLES_REPLY_SOURCE(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_FLARES_TABLES_REPLY_SOURCE(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define FLARES_TABLES_REPLY_MODELS(p) ((uint8_t)get_le((p) + 1, 1))
#define SET_FLARES_TABLES_REPLY_MODELS(p, v) put_le((p) + 1, (uint64_t)(v), 1)
#define FLARES_TABLES_REPLY_CRC(p) ((uint32_t)get_le((p) + 2, 4))
#define SET_FLARES_TABLES_REPLY_CRC(p, v) put_le((p) + 2, (uint64_t)(v), 4)

/* FLARES_CLOCK_REPLY */
#define FLARES_CLOCK_REPLY_BYTES 4u
#define FLARES_CLOCK_REPLY_NOW_S(p) ((uint32_t)get_le((p) + 0, 4))
#define SET_FLARES_CLOCK_REPLY_NOW_S(p, v) put_le((p) + 0, (uint64_t)(v), 4)

/* FLARES_DECISION */
#define FLARES_DECISION_BYTES 4u
#define FLARES_DECISION_T(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_FLARES_DECISION_T(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define FLARES_DECISION_ZONE(p) ((uint8_t)get_le((p) + 1, 1))
#define SET_FLARES_DECISION_ZONE(p, v) put_le((p) + 1, (uint64_t)(v), 1)
#define FLARES_DECISION_P(p) ((uint8_t)get_le((p) + 2, 1))
#define SET_FLARES_DECISION_P(p, v) put_le((p) + 2, (uint64_t)(v), 1)
#define FLARES_DECISION_FLAGS(p) ((uint8_t)get_le((p) + 3, 1))
#define SET_FLARES_DECISION_FLAGS(p, v) put_le((p) + 3, (uint64_t)(v), 1)

/* FLARES_READ_TAIL */
#define FLARES_READ_TAIL_BYTES 4u
#define FLARES_READ_TAIL_SOURCE(p) ((uint8_t)get_le((p) + 0, 1))
#define SET_FLARES_READ_TAIL_SOURCE(p, v) put_le((p) + 0, (uint64_t)(v), 1)
#define FLARES_READ_TAIL_DETERR(p) ((uint16_t)get_le((p) + 1, 2))
#define SET_FLARES_READ_TAIL_DETERR(p, v) put_le((p) + 1, (uint64_t)(v), 2)
#define FLARES_READ_TAIL_FAILED(p) ((uint8_t)get_le((p) + 3, 1))
#define SET_FLARES_READ_TAIL_FAILED(p, v) put_le((p) + 3, (uint64_t)(v), 1)

#endif
