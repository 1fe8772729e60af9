"""The controller's registers as data: name, width, description. The LiteX wrapper maps them to CSRs."""
from __future__ import annotations

import enum

from amaranth.lib import data

from nandrig.protocol import Limit


class OnfiOp(enum.IntEnum):
    RESET = 0
    READ_ID = 1
    READ_PARAM = 2
    READ_STATUS = 3
    SET_FEATURES = 4
    GET_FEATURES = 5
    ERASE = 6
    PROGRAM = 7
    READ = 8
    CHANGE_READ_COLUMN = 9
    SELFTEST = 10
    READ_UNIQUE_ID = 11
    CACHE_PROGRAM = 12  # 80h ... 15h: the chip takes the next page while it programs this one
    READ_CACHE = 13  # 31h: out of the cache register the page read before, while the array reads the next
    READ_CACHE_END = 14  # 3Fh: the last page of a cache read
    # launches: the operation's command, address and data cycles, then the bus is free while the target works;
    # its R/B# (``ready``) says when, READ_STATUS gives the result, CHANGE_READ_COLUMN a read's data
    ERASE_LAUNCH = 15
    PROGRAM_LAUNCH = 16
    READ_LAUNCH = 17
    CACHE_PROGRAM_LAUNCH = 18  # 80h ... 15h: R/B# rises once the chip can take the next page (its array still busy)


class OnfiSource(enum.IntEnum):
    BUFFER = 0  # program from the page buffer; reads only store
    PRBS = 1  # program the seeded PRBS; reads store and count errors against it
    WALK = 2  # walking ones then zeros (interface self-test)


OP_BITS = 5
assert max(OnfiOp) < 1 << OP_BITS
TARGET_BITS = (Limit.TARGETS_MAX - 1).bit_length()  # a build drives up to TARGETS_MAX chips, one CE# each
TRIM_BITS = 4  # rd_trim: the protocol's CAPTURE_TRIM_MIN..CAPTURE_TRIM_MAX
assert -(1 << TRIM_BITS - 1) == Limit.CAPTURE_TRIM_MIN and (1 << TRIM_BITS - 1) - 1 == Limit.CAPTURE_TRIM_MAX
CCS_BITS = 10  # the tCCS register: PHY cycles, 11 us at 90 MHz, far beyond any part's figure

CONTROL = [
    ("op", OP_BITS, "Operation to run on `start` (OnfiOp: RESET, READ_ID, READ_PARAM, READ_STATUS, SET_FEATURES, "
                    "GET_FEATURES, ERASE, PROGRAM, READ, CHANGE_READ_COLUMN, SELFTEST: vendor-specific, not issued "
                    "by the firmware, READ_UNIQUE_ID, CACHE_PROGRAM, READ_CACHE, READ_CACHE_END; ERASE_LAUNCH, "
                    "PROGRAM_LAUNCH, READ_LAUNCH, CACHE_PROGRAM_LAUNCH: end once the target is busy, without waiting "
                    "for it)"),
    ("target", TARGET_BITS, "Target (CE#) the operation selects and whose R/B# it waits on"),
    ("mode", 3, "ONFI timing mode 0-5 the bus runs at; switch after SET FEATURES (timing mode)"),
    ("row", Limit.ROW_BITS, "Row address: page | block << page bits | LUN << (page + block bits), each field "
                            "as wide as its count rounded up to a power of two"),
    ("col", 16, "Column address (byte within the page)"),
    ("length", 16, "Data bytes to transfer"),
    ("buf_addr", 16, "Page-buffer byte address the transfer starts at"),
    ("src", 2, "Data source / expected pattern (OnfiSource: BUFFER, PRBS, WALK)"),
    ("seed", 31, "PRBS-31 seed of the page (nandrig.chip.pattern.page_seed of campaign, block, page)"),
    ("faddr", 8, "Feature address (SET/GET FEATURES) or READ ID address"),
    ("params", 32, "SET FEATURES P1..P4, P1 in the low byte"),
    ("cw_bytes", 16, "Codeword length for per-codeword error counts (bytes)"),
    ("timeout", 32, "R/B# wait limit in PHY cycles"),
    ("rd_trim", TRIM_BITS, "Signed trim of the read capture point in capture steps (PHY cycles, or a quarter of one "
                         "with the ECP5's input gearing): the start-up calibration's"),
    ("wp_n", 1, "WP# pin (0 protects the chip)"),
    ("ccs", CCS_BITS, "tCCS in PHY cycles, from the chip's parameter page (bytes 139-140); 0: ONFI's 500 ns"),
]

STATUS = [
    ("busy", 1, "An operation is running"),
    ("ready", Limit.TARGETS_MAX, "R/B# of each target, synchronized: bit k high when target k is ready (0 where "
                                 "the build has no target k)"),
    ("timed_out", 1, "The last operation gave up waiting for R/B#"),
    ("chip_status", 8, "Status byte read after ERASE/PROGRAM, or by READ_STATUS"),
    ("busy_cycles", 32, "Chip busy time of the last R/B# wait (PHY cycles, WE# high of the confirm to R/B# high)"),
    ("op_cycles", 32, "System cycles from `start` to done of the last operation"),
    ("err_1to0", 32, "Bits stored 1 read 0 in the last compared read"),
    ("err_0to1", 32, "Bits stored 0 read 1 in the last compared read"),
    ("max_cw", 16, "Most errors in one codeword of the last compared read"),
    ("codewords", 16, "Codewords counted in the last compared read"),
]

# the BCH engine beside the controller (gateware/bch/frontend.py): one codeword per bch_start
BCH_CONTROL = [
    ("bch_op", 1, "0 encode: parity of the codeword at bch_data_addr written at bch_parity_addr; "
                  "1 decode: data and parity read from there, corrections applied to the data in place"),
    ("bch_t", 8, "Correction capability of this codeword, 1..t_max"),
    ("bch_data_addr", 16, "Page-buffer byte address of the codeword's data (k_bytes bytes)"),
    ("bch_parity_addr", 16, "Page-buffer byte address of its parity (ceil(m t / 8) bytes)"),
]

BCH_STATUS = [
    ("bch_busy", 1, "A codeword is being encoded or decoded (the NAND sequencer waits meanwhile)"),
    ("bch_corrected", 16, "Errors corrected in the last decoded codeword (zero bits when erased)"),
    ("bch_fail", 1, "The last decoded codeword was uncorrectable; the buffer holds it as read"),
    ("bch_erased", 1, "The last decoded codeword was erased (at most t zero bits): read it as all 0xFF"),
]


def layout(table: list[tuple[str, int, str]]) -> data.StructLayout:
    return data.StructLayout({name: width for name, width, _ in table})


CONTROL_LAYOUT, STATUS_LAYOUT = layout(CONTROL), layout(STATUS)
BCH_CONTROL_LAYOUT, BCH_STATUS_LAYOUT = layout(BCH_CONTROL), layout(BCH_STATUS)
