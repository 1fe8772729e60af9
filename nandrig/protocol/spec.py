"""The host <-> rig protocol (docs/protocol.md), written once.

Every opcode, status code, flag, capability, limit and record layout is named
here. The host client and the virtual rig use these names; the firmware uses
the same names from ``firmware/rig/protocol.h``, which :mod:`.cheader`
generates from this module; docs/protocol.md's command table is rendered
from :data:`COMMANDS` (tests keep both current).
"""
from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

from nandrig.protocol.layout import Layout, layout

VERSION = (1, 18)

# ---- framing ---------------------------------------------------------------------------------
# a serial link's rate at both ends: the bitstream's UART and the host's port. 3 Mbaud is the ULX3S's FT231X's top
# rate (its 3 MHz undivided; B3000000 on Linux); LiteX's own default, 115200, would take 90 ms to send a block's
# MEASURE reply. A STATUS or ABORT request (12 bytes encoded) fits the bitstream's 16-byte UART FIFO whatever the
# rate, which the firmware drains between blocks, and it sends by polling the transmitter: the rate sets neither
# side's pacing (docs/ulx3s.md)
SERIAL_BAUD = 3_000_000
REQUEST_TYPE, REPLY_TYPE = 0x52, 0x41  # 'R', 'A'
# a reply in parts (1.18): 'P' frames carry its payload from the offset in status_or_target while the command
# runs, then an 'E' frame carries the status, STREAM_END and the payload's tail; only to hosts of STREAMED_SINCE
PART_TYPE, END_TYPE = 0x50, 0x45  # 'P', 'E'
STREAMED_SINCE = (1, 18)
MAX_PAYLOAD = 16_384
FRAME_HEAD = layout("FRAME_HEAD", ("type", "u8"), ("opcode", "u8"), ("seq", "u16"),
                    ("status_or_target", "u16", "a reply's status (Err), or a part's offset (1.18); a request's "
                                                "target: the chip on CE# k it addresses (hosts before 1.13 send 0: "
                                                "target 0)"),
                    doc="the decoded body's header; the payload and a CRC-32 follow")
STREAM_END = layout("STREAM_END", ("offset", "u16", "where the tail that follows starts in the reply's payload: "
                                                   "the parts before it cover every byte up to there"),
                    doc="an 'E' frame's payload, before the tail")
FRAME_CRC_BYTES = 4
MIN_BODY = FRAME_HEAD.size + FRAME_CRC_BYTES
MAX_BODY = FRAME_HEAD.size + MAX_PAYLOAD + FRAME_CRC_BYTES


# ---- limits ------------------------------------------------------------------------------------
class Limit:
    """Bounds a rig enforces on requests, and the sizes of its fixed tables (plain ints: several share a value)."""

    REPLY_CACHE_SESSIONS = 4  # sessions whose latest reply a rig keeps for retries
    STREAM_PART_MAX = 112  # payload bytes in one part of a streamed reply (at 1 Mbaud parts settle near 72)
    SCAN_BAD_MAX_BLOCKS = 4096  # per SCAN_BAD request
    CYCLE_MAX_BLOCKS = 256  # per CYCLE request
    CYCLE_MAX_ROUNDS = 1_000_000  # per CYCLE request: longer campaigns send several
    PARAM_PAGE_REPLY_BYTES = 1024  # READ PARAMETER PAGE's first bytes: three 256-byte copies, the extended page
    PAGE_BUFFER_BYTES = 32768  # the controller's page buffer: a chip's data + spare must fit
    MAX_BLOCKS = 16384  # blocks (all LUNs) whose factory marks the rig remembers
    ROW_BITS = 24  # the controller's row address: page, block and LUN bits
    READ_ID_BYTES = 5  # at address 0x00 (manufacturer, device, three more)
    READ_ID_ONFI_BYTES = 4  # at any other address ("ONFI" at 0x20)
    ADVANCE_TEMP_MIN_CENTI_C = -4000  # -40 degC
    ADVANCE_TEMP_MAX_CENTI_C = 30000  # 300 degC
    FLARES_WSIZE_MAX = 1024
    PERMILLE_MAX = 1000  # mix_pm, saferange_pm, alarm_use_pm
    FLARES_GUARD_Z10_MAX = 100  # guarded FLARES' count-bound z, in tenths
    FLARES_PE_MAX = (1 << 17) - 1  # the page profile record's P/E field
    PROFILE_SLOTS = 1024  # FLARES page profiles a rig keeps in RAM (per target)
    TARGETS_MAX = 8  # chips on one rig's bus, each on its own CE# (INFO's targets: bit k for target k)
    RIG_CODEWORD_BYTES = 2048  # data bytes per ECC codeword on every rig (INFO's codeword_bytes)
    CAPTURE_TRIM_MIN = -8  # the read-capture trim a rig sweeps at start-up, in capture steps (PHY cycles or quarters)
    CAPTURE_TRIM_MAX = 7  # (INFO's trim_pass: bit i for trim CAPTURE_TRIM_MIN + i)
    ECC_PROFILE_OFFSET = 2  # spare bytes 0-1 keep the bad-block mark
    ECC_PROFILE_BYTES = 12  # the FLARES page profile record
    ECC_PARITY_OFFSET = 14  # parity of codeword 0, 1, ... packed from here
    FLARES_TABLES_MODELS = 2  # FLARES models a rig holds at run time: one for every page, or lower and upper
    BUSY_NOT_SEEN = 0xFFFF_FFFF  # MEASURE_PAGE's busy_ns for a page whose array time a cache read hid
    RIG_TABLES_T_MAX = 64  # a rig's FLARES tables serve t 1..this on RIG_CODEWORD_BYTES codewords
    RIG_TABLES_PE_STEP = 250  # and tabulate P/E 0, 250, ... (RIG_TABLES_PE_COLS columns)
    RIG_TABLES_PE_COLS = 41

    @classmethod
    def items(cls) -> list[tuple[str, int]]:
        return [(k, v) for k, v in vars(cls).items() if k.isupper()]


# ---- codes -------------------------------------------------------------------------------------
class Opcode(enum.IntEnum):
    """A request's opcode byte (a reply echoes it)."""

    HELLO = 0x01
    INFO = 0x02
    RESET = 0x03
    READ_ID = 0x04
    READ_PARAM_PAGE = 0x05
    SCAN_BAD = 0x06
    ERASE = 0x10
    PROGRAM = 0x11
    READ = 0x12
    SET_READ_OFFSET = 0x13
    READ_BUFFER = 0x17
    SET_READ_REFS = 0x18
    SET_VERIFY_LEVELS = 0x1A
    ENERGY = 0x19
    CYCLE = 0x14
    MEASURE = 0x15
    READ_DISTURB = 0x16
    TIME = 0x20
    ADVANCE = 0x21
    STATUS = 0x30
    ABORT = 0x31
    FLARES_CONFIG = 0x40
    FLARES_PROGRAM = 0x41
    FLARES_READ = 0x42
    FLARES_TABLES = 0x43
    FLARES_CLOCK = 0x44


class Err(enum.IntEnum):
    """A reply's status."""

    OK = 0
    BAD_FRAME = 1  # payload length or layout wrong for the opcode
    UNKNOWN_COMMAND = 2  # opcode not known
    VERSION_MISMATCH = 3  # HELLO with an unsupported major version
    OUT_OF_RANGE = 4  # block, page, count or column outside the chip
    BAD_BLOCK = 5  # a factory bad block would be erased or programmed without the force flag
    CHIP_FAIL = 6  # the chip reported FAIL (status bit 0); payload as for success
    BUSY = 7  # a long command is running
    ABORTED = 8  # the command was aborted; payload holds the partial result
    UNSUPPORTED = 9  # the rig cannot do this (ADVANCE on real hardware)
    BAD_PARAMETER = 10  # a value is impossible (t above the rig's maximum, an unknown flag)
    TIMEOUT = 11  # the chip did not answer (R/B# stayed low)
    INTERNAL = 12  # the rig hit an unexpected condition; it stays up and keeps serving
    NO_SPACE = 13  # a table of fixed size in the rig is full (FLARES page profiles)
    HELD = 14  # HELLO from a session other than the one holding the rig, without TAKE_OVER; payload as for OK


# statuses whose reply still carries a payload
PAYLOAD_STATUSES = frozenset({Err.OK, Err.CHIP_FAIL, Err.ABORTED, Err.VERSION_MISMATCH, Err.HELD})


class RigKind(enum.IntEnum):
    VIRTUAL = 1
    RTL = 2
    HARDWARE = 3


class Cap(enum.IntFlag):
    """HELLO's and INFO's capability bits."""

    VIRTUAL_TIME = 0x1  # ADVANCE works
    BCH = 0x2  # BCH decoder in the loop
    RAW_READ = 0x4  # raw data reads
    FLARES = 0x8  # FLARES on the rig (INFO's t_max > 0)
    ENERGY = 0x10  # a supply-current front end: ENERGY answers
    CYCLE_JOBS = 0x20  # CYCLE runs as its target's job: other targets' requests are served meanwhile (1.15)


class Capture(enum.IntEnum):
    """INFO's capture: how the start-up calibration of the read-capture point ended."""

    CALIBRATED = 0  # a trim window read the chip's ID and parameter page; its centre is in use
    NO_WINDOW = 1  # no trim read them in mode 0: wiring or board delay; the chip is left at mode 0, trim 0


class JobState(enum.IntEnum):
    IDLE = 0
    BUSY = 1


class HelloFlag(enum.IntFlag):
    TAKE_OVER = 0x01  # take the rig from the session holding it (between two commands: a long one finishes first)
    RELEASE = 0x02  # this session is done with the rig: it is free for the next host
    OBSERVE = 0x04  # look without taking: the rig's session and holder stay; only read-only requests follow


class EraseFlag(enum.IntFlag):
    FORCE = 0x01  # allow a factory bad block


class ProgramFlag(enum.IntFlag):
    FORCE = 0x01
    EXPLICIT = 0x02  # the payload carries the page bytes instead of a pattern seed


class ReadFlag(enum.IntFlag):
    COMPARE = 0x02  # count errors against the pattern
    RAW = 0x04  # return the page bytes


class MeasureFlag(enum.IntFlag):
    # each page read on its own (00h-30h), so each page's busy_ns is its tR; without it a chip with cache read
    # streams a block's pages through 31h/3Fh, the array reading each next page while the bus carries this one
    # (1.17): the first page's tR is seen, the others' are not (busy_ns Limit.BUSY_NOT_SEEN)
    TIMED = 0x01


class CycleFlag(enum.IntFlag):
    FORCE = 0x01
    # the request ends with a bitmap of the pages each round programs (bit p of byte p/8, LSB first;
    # ceil(pages_per_block/8) bytes): a block run as pseudo-SLC programs only its lower pages
    PAGE_SET = 0x02


# FLARES on the rig takes the page's type from the host (the chip's page map): with two models, an upper page's
UPPER_PAGE_FLAG = 0x08  # decisions use model 1


class FlaresProgramFlag(enum.IntFlag):
    FORCE = 0x01
    UPPER_PAGE = UPPER_PAGE_FLAG


class FlaresConfigFlag(enum.IntFlag):
    # a rewrite alarm no longer ends the evaluation: p_next still follows the projection, so the rewrite the
    # alarm asks for gets a t that reaches the data's age (the paper's Alg. 2 stops; docs/flares.md)
    EVALUATE_ON_ALARM = 0x01
    # guarded FLARES (docs/flares.md): t never below the model's projection, raised by the page type's measured
    # errors beyond the model's expectation (count bounds at guard_z10), a read using more than alarm_use_pm of
    # its t raises a rewrite alarm; FLARES as the baseline without it. Its constants follow (FLARES_GUARD_REQ):
    # a host of protocol 1.11 sends none and gets FLARES
    GUARDED = 0x02


class FlaresReadFlag(enum.IntFlag):
    """READ's flags, and the page's type."""

    COMPARE = ReadFlag.COMPARE
    RAW = ReadFlag.RAW
    UPPER_PAGE = UPPER_PAGE_FLAG


class FlaresTablesFlag(enum.IntFlag):
    COMMIT = 0x01  # after this chunk, check the staged tables (CRC, dimensions) and use them; else keep the old
    BUILTIN = 0x02  # go back to the compiled-in tables (no chunk)


class TablesSource(enum.IntEnum):
    """Which FLARES tables a rig decides with."""

    BUILTIN = 0  # compiled into the rig: none were sent since it started (a power cycle or reset loses them)
    LOADED = 1  # sent by FLARES_TABLES; ``crc`` names them


class ProfileSource(enum.IntEnum):
    """Where FLARES_READ found the page's profile."""

    RAM = 0
    SPARE = 1  # the record in the page's spare area (the rig had none in RAM)
    NONE = 2  # an erased record: the page was not written by FLARES_PROGRAM
    UNREADABLE = 3  # the record's own code could not correct it


class Decide(enum.IntFlag):
    """FLARES decision flags in FLARES_PROGRAM and FLARES_READ replies."""

    ALARM = 0x1  # rewrite alarm: the data is older than its t protects for
    INVALIDATE = 0x2  # too many decode failures: the page's data should be moved
    NEW_PROFILE = 0x4  # the page had no profile; FLARES started one at the model's t
    # the model's projection for the page needs more than the rig's t_cap corrects (on a new profile: the program
    # just made; else the page's next program): density control runs the block as pSLC, or retires it
    BEYOND_REACH = 0x8


# ---- records -----------------------------------------------------------------------------------
HELLO_REQ = layout("HELLO_REQ", ("major", "u16"), ("minor", "u16"), ("session", "u32"), ("flags", "u8"))
EMPTY_REQ = layout("EMPTY_REQ")
READ_ID_REQ = layout("READ_ID_REQ", ("address", "u8"))
SCAN_BAD_REQ = layout("SCAN_BAD_REQ", ("first_block", "u32"), ("count", "u16", "1..4096"))
ERASE_REQ = layout("ERASE_REQ", ("block", "u32"), ("flags", "u8"))
PROGRAM_HEAD = layout("PROGRAM_HEAD", ("block", "u32"), ("page", "u16"), ("t", "u8"), ("flags", "u8"),
                      doc="PROGRAM's request before its seed or data")
PATTERN_SEED = layout("PATTERN_SEED", ("pattern_seed", "u32"))
READ_REQ = layout("READ_REQ", ("block", "u32"), ("page", "u16"), ("t", "u8"), ("flags", "u8"), ("pattern_seed", "u32"))
SET_READ_OFFSET_REQ = layout("SET_READ_OFFSET_REQ", ("offset", "i8"))
ENERGY_REPLY = layout("ENERGY_REPLY", ("busy_pj", "u64"), ("busy_ns", "u64"), ("transfer_pj", "u64"),
                      ("transfer_ns", "u64"), ("idle_uw", "u32"),
                      doc="the chip's supply energy and time over R/B#-low and bus-transfer windows since the last "
                          "ENERGY, and its idle power")
SET_READ_REFS_REQ = layout("SET_READ_REFS_REQ", ("vr1", "i8"), ("vr2", "i8"), ("vr3", "i8"),
                           doc="each read reference's read-retry offset, in the chip's steps")
SET_VERIFY_LEVELS_REQ = layout("SET_VERIFY_LEVELS_REQ", ("pv1", "i8"), ("pv2", "i8"), ("pv3", "i8"),
                               doc="L1..L3's program-verify offsets through the chip design's vendor feature, in its "
                                   "steps; the upper pages programmed after it place their levels there (1.16)")
CYCLE_REQ = layout("CYCLE_REQ", ("first_block", "u32"), ("n_blocks", "u16", "1..256"), ("cycles", "u32"),
                   ("pattern_seed", "u32"), ("flags", "u8"))
MEASURE_REQ = layout("MEASURE_REQ", ("first_block", "u32"), ("n_blocks", "u16"), ("first_page", "u16"),
                     ("n_pages", "u16"), ("pattern_seed", "u32"), ("flags", "u8", "bit 0 TIMED (1.17)"))
READ_DISTURB_REQ = layout("READ_DISTURB_REQ", ("block", "u32"), ("page", "u16"), ("reads", "u32"))
ADVANCE_REQ = layout("ADVANCE_REQ", ("ns", "u64"), ("temp_centi_c", "i16"))
FLARES_CONFIG_REQ = layout("FLARES_CONFIG_REQ", ("wsize", "u16", "1..1024"), ("mix_pm", "u16", "0..1000"),
                           ("saferange_pm", "u16", "0..1000"),
                           ("maxfail", "u8"), ("maxcritical", "u8"), ("maxover", "u8"), ("req_ret_s", "u32"),
                           ("flags", "u8"))
FLARES_GUARD_REQ = layout("FLARES_GUARD_REQ", ("guard_z10", "u8", "0..100"), ("alarm_use_pm", "u16", "0..1000"),
                          doc="after FLARES_CONFIG_REQ when its flags hold GUARDED")
FLARES_PROGRAM_REQ = layout("FLARES_PROGRAM_REQ", ("block", "u32"), ("page", "u16"), ("flags", "u8"),
                            ("pattern_seed", "u32"), ("pe", "u32", "1..131071"))
FLARES_TABLES_REQ = layout("FLARES_TABLES_REQ", ("offset", "u32"), ("total", "u32"), ("crc", "u32"), ("flags", "u8"),
                           doc="then the chunk's bytes, staged at offset in the page buffer")
FLARES_TABLES_HEAD = layout(
    "FLARES_TABLES_HEAD", ("format", "u8", "1"), ("models", "u8", "1..2"), ("gf_m", "u8"), ("t_min", "u8"),
    ("t_max", "u8"), ("pe_cols", "u8"), ("t_grid", "u8"), ("codeword_bytes", "u16"), ("pe_step", "u16"),
    doc="FLARES tables as sent: then u64 corr_rber_max[t], u32 t_grid[t_grid], and per model u64 rber_wr[pe_cols], "
        "u64 rd_pe[pe_cols], u32 rd_t[t_grid], u32 max_ret_time_min[t][pe_cols]; CRC-32 over all of it")
READ_BUFFER_REQ = layout("READ_BUFFER_REQ", ("offset", "u16"), ("count", "u16", f"1..{MAX_PAYLOAD}"))
FLARES_CLOCK_REQ = layout(
    "FLARES_CLOCK_REQ", ("credit_s", "u64", "25 degC-equivalent seconds the target's data aged beyond the rig's clock "
                                            "(the Arrhenius equivalent of its bakes less their duration): a total, not "
                                            "an increment, so a repeated request changes nothing"),
    doc="FLARES' clock is the rig's, in whole seconds, plus this credit (0 at start-up), modulo 2**32")
FLARES_READ_REQ = layout("FLARES_READ_REQ", ("block", "u32"), ("page", "u16"), ("flags", "u8"),
                         ("pattern_seed", "u32"))

# a restarted rig has lost its reply cache and any command it was running: a request re-sent to it runs again
BOOT_DOC = "nonzero, drawn anew each time the rig starts"
HELLO_REPLY = layout("HELLO_REPLY", ("major", "u16"), ("minor", "u16"), ("rig_kind", "u8"), ("capabilities", "u32"),
                     ("holder", "u32", "the session holding the rig after this HELLO (0: free)"),
                     ("boot", "u32", BOOT_DOC), ("n", "u8"),
                     doc="then n bytes of identity (ASCII)")
INFO_REPLY = layout(
    "INFO_REPLY", ("read_id", "bytes5"), ("manufacturer", "bytes12"), ("model", "bytes20"), ("page_bytes", "u32"),
    ("spare_bytes", "u16"), ("pages_per_block", "u32"), ("blocks", "u32"), ("bits_per_cell", "u8"),
    ("timing_modes", "u16"), ("timing_mode", "u8"), ("ecc_bits", "u8"), ("codeword_bytes", "u16"), ("t_max", "u8"),
    ("capabilities", "u32"), ("capture", "u8"), ("rd_trim", "i8"), ("trim_pass", "u16"), ("has_unique_id", "u8"),
    ("unique_id", "bytes16"), ("ecc_step_bytes", "u16"), ("luns", "u8"), ("param_status", "u8"),
    ("capture_step_ps", "u16"), ("target", "u8"), ("targets", "u8"))
# what each INFO field means (docs/protocol.md's INFO table)
INFO_FIELDS = {
    "read_id": "READ ID (address 0x00) bytes", "manufacturer": "manufacturer (ASCII, space padded)",
    "model": "model (ASCII, space padded)", "page_bytes": "data bytes per page", "spare_bytes": "spare bytes per page",
    "pages_per_block": "pages per block", "blocks": "blocks", "bits_per_cell": "bits per cell",
    "timing_modes": "timing modes supported (bit i = mode i)", "timing_mode": "current timing mode",
    "ecc_bits": "ECC bits the chip requires per ecc_step_bytes (byte 112, or the extended page's ECC section when "
                "byte 112 is 0xFF); 0 when the chip gives none",
    "codeword_bytes": "rig codeword_bytes for READ's per-codeword counts",
    "t_max": "rig t_max (0 when the rig has no decoder)", "capabilities": "capabilities",
    "capture": "start-up read-capture calibration: 0 calibrated, 1 no passing window (chip left at mode 0)",
    "rd_trim": "read-capture trim in use, in capture steps: PHY cycles, or quarters of one with input gearing "
               "(centre of the passing window)",
    "trim_pass": "trims that read the chip correctly in the current mode (bit i: trim CAPTURE_TRIM_MIN + i)",
    "has_unique_id": "1 when the chip lists READ UNIQUE ID and a copy's complement checked out, else 0",
    "unique_id": "the chip's ONFI unique ID (zeros without one): who this physical chip is",
    "ecc_step_bytes": "data bytes per ecc_bits (512 from byte 112; the extended page's codeword size)",
    "luns": "LUNs (parameter page byte 100); blocks counts all of them, LUN = block / (blocks / luns)",
    "param_status": "0, or why the parameter page describes no chip this rig drives (ParamError: the geometry "
                    "fields are then zero and chip commands answer OUT_OF_RANGE)",
    "capture_step_ps": "what one step of rd_trim moves the capture point, in ps (since 1.11)",
    "target": "the target this INFO describes (the request's): every field above is that chip's (since 1.13)",
    "targets": "the targets holding a chip the rig found at start-up: bit k for the chip on CE# k (since 1.13)",
}
READ_ID_HEAD = layout("READ_ID_HEAD", ("n", "u8"), doc="then n ID bytes")
BYTE_REPLY = layout("BYTE_REPLY", ("value", "u8"))
CHIP_RESULT = layout("CHIP_RESULT", ("chip_status", "u8"), ("busy_ns", "u32"),
                     doc="a chip operation's status byte and busy time (R/B# low)")
READ_HEAD = layout("READ_HEAD", ("chip_status", "u8"), ("busy_ns", "u32"), ("n_cw", "u8"))
CODEWORD_COUNTS = layout("CODEWORD_COUNTS", ("err_1to0", "u16"), ("err_0to1", "u16"), ("corrected", "i16"))
CYCLE_HEAD = layout("CYCLE_HEAD", ("cycles_done_min", "u32"))
CYCLE_BLOCK = layout("CYCLE_BLOCK", ("cycles_done", "u32"), ("failed", "u8"))
MEASURE_PAGE = layout("MEASURE_PAGE", ("err_1to0", "u16"), ("err_0to1", "u16"),
                      ("busy_ns", "u32", "the page's tR; BUSY_NOT_SEEN where a cache read hid it"))
READ_DISTURB_REPLY = layout("READ_DISTURB_REPLY", ("reads_done", "u32"), ("busy_us", "u32"))
CLOCK_REPLY = layout("CLOCK_REPLY", ("rig_clock_ns", "u64"))
STATUS_REPLY = layout("STATUS_REPLY", ("state", "u8", "0 idle, 1 busy"), ("opcode", "u8"), ("seq", "u16"), ("done", "u32"),
                      ("total", "u32"), ("boot", "u32", BOOT_DOC))
FLARES_CONFIG_REPLY = layout("FLARES_CONFIG_REPLY", ("t_min", "u8"), ("t_cap", "u8"), ("profile_slots", "u16"),
                             ("tables_source", "u8", "TablesSource"), ("tables_crc", "u32", "0 for BUILTIN"))
FLARES_TABLES_REPLY = layout("FLARES_TABLES_REPLY", ("source", "u8", "TablesSource"), ("models", "u8"),
                             ("crc", "u32", "0 for BUILTIN"), doc="the tables in use after the request")
FLARES_CLOCK_REPLY = layout("FLARES_CLOCK_REPLY", ("now_s", "u32", "FLARES' clock with the credit: what a program now "
                                                                  "stamps its page with"))
FLARES_DECISION = layout("FLARES_DECISION", ("t", "u8"), ("zone", "u8"), ("p", "u8"), ("flags", "u8"))
FLARES_READ_TAIL = layout("FLARES_READ_TAIL", ("source", "u8"), ("deterr", "u16"), ("failed", "u8"))


@dataclass(frozen=True)
class Repeat:
    """``count`` copies of a record (``count`` names a field or a quantity of the request)."""

    count: str
    record: Layout

    def text(self) -> str:
        return f"{self.count} × ({self.record.text()})"


Part = Layout | Repeat | str  # a str is prose for what no record describes


@dataclass(frozen=True)
class Command:
    opcode: Opcode
    request: tuple[Part, ...]
    reply: tuple[Part, ...]
    flags: type[enum.IntFlag] | None = None
    long: bool = False  # may run for minutes: the rig answers STATUS and ABORT meanwhile
    cached: bool = True  # replies kept for retries; read-only commands stay out
    rig_wide: bool = False  # the rig as a whole (its link, clock, oven, job, page buffer): no target

    @staticmethod
    def render(parts: tuple[Part, ...]) -> str:
        text = [p if isinstance(p, str) else p.text() for p in parts]
        return ", ".join(t for t in text if t != "—") or "—"


_DECISION = "decision"
COMMANDS: dict[Opcode, Command] = {c.opcode: c for c in (
    Command(Opcode.HELLO, (HELLO_REQ,), (HELLO_REPLY, "n bytes identity (ASCII)"), HelloFlag, cached=False,
            rig_wide=True),
    Command(Opcode.INFO, (EMPTY_REQ,), ("see below",), cached=False),
    Command(Opcode.RESET, (EMPTY_REQ,), ("u8 chip_status",)),
    Command(Opcode.READ_ID, (READ_ID_REQ,), (READ_ID_HEAD, "n bytes"), cached=False),
    Command(Opcode.READ_PARAM_PAGE, (EMPTY_REQ,), ("1024 bytes: three 256-byte copies, then the extended parameter page's copies",), cached=False),
    Command(Opcode.SCAN_BAD, (SCAN_BAD_REQ,),
            ("ceil(count/8) bytes: bit i (LSB first) set when block first+i carries a factory bad-block mark",),
            long=True),
    Command(Opcode.ERASE, (ERASE_REQ,), (CHIP_RESULT,), EraseFlag),
    Command(Opcode.PROGRAM, (PROGRAM_HEAD, "then u32 pattern_seed (flags bit 1 clear) or the page bytes, "
                                          "at most data+spare (bit 1 set)"), (CHIP_RESULT,), ProgramFlag),
    Command(Opcode.READ, (READ_REQ,), (READ_HEAD, Repeat("n_cw", CODEWORD_COUNTS), "then the raw page if flags bit 2 "
                                       "(BAD_PARAMETER when it would not fit MAX_PAYLOAD: use READ_BUFFER)"),
            ReadFlag),
    Command(Opcode.READ_BUFFER, (READ_BUFFER_REQ,),
            ("count bytes of the page as the last READ left it (decoded when read with t), from offset; "
             "OUT_OF_RANGE beyond data+spare",), rig_wide=True),
    Command(Opcode.SET_READ_OFFSET, (SET_READ_OFFSET_REQ,), ("u8 chip_status",)),
    Command(Opcode.SET_READ_REFS, (SET_READ_REFS_REQ,), ("u8 chip_status",)),
    Command(Opcode.SET_VERIFY_LEVELS, (SET_VERIFY_LEVELS_REQ,), ("u8 chip_status",)),
    Command(Opcode.ENERGY, (EMPTY_REQ,), (ENERGY_REPLY,)),
    Command(Opcode.CYCLE, (CYCLE_REQ, "then, with flags bit 1 (PAGE_SET), ceil(pages_per_block/8) bytes: bit p "
                                      "(LSB first) set for each page a round programs"), (CYCLE_HEAD, Repeat("n_blocks", CYCLE_BLOCK)), CycleFlag, long=True),
    Command(Opcode.MEASURE, (MEASURE_REQ,), (Repeat("n_blocks × n_pages", MEASURE_PAGE),), long=True),
    Command(Opcode.READ_DISTURB, (READ_DISTURB_REQ,), (READ_DISTURB_REPLY,), long=True),
    Command(Opcode.TIME, (EMPTY_REQ,), (CLOCK_REPLY,), cached=False, rig_wide=True),
    Command(Opcode.ADVANCE, (ADVANCE_REQ,), (CLOCK_REPLY,), rig_wide=True),  # every target ages alike
    # a target's job (1.15: CYCLEs on several targets run at once; a rig of 1.14 reads every STATUS as target 0's)
    Command(Opcode.STATUS, (EMPTY_REQ,), (STATUS_REPLY,), cached=False),
    Command(Opcode.ABORT, (EMPTY_REQ,), ("u8 aborted (1 if a command was running on the target)",), cached=False),
    Command(Opcode.FLARES_CONFIG, (FLARES_CONFIG_REQ, "then, with flags bit 1 (GUARDED),", FLARES_GUARD_REQ),
            (FLARES_CONFIG_REPLY,)),
    Command(Opcode.FLARES_PROGRAM, (FLARES_PROGRAM_REQ,), (CHIP_RESULT, _DECISION), FlaresProgramFlag),
    Command(Opcode.FLARES_READ, (FLARES_READ_REQ,), (_DECISION, FLARES_READ_TAIL, "then READ's reply"), FlaresReadFlag),
    Command(Opcode.FLARES_TABLES, (FLARES_TABLES_REQ, "then the chunk"), (FLARES_TABLES_REPLY,), FlaresTablesFlag),
    Command(Opcode.FLARES_CLOCK, (FLARES_CLOCK_REQ,), (FLARES_CLOCK_REPLY,)),
)}

def page_set_bytes(pages, pages_per_block: int) -> bytes:
    """CYCLE's page-set bitmap (flags PAGE_SET): bit p, LSB first, for each page a round programs."""
    out = bytearray(-(-pages_per_block // 8))
    for p in pages:
        if not 0 <= p < pages_per_block:
            raise ValueError(f"page {p} is outside 0..{pages_per_block - 1}")
        out[p // 8] |= 1 << (p % 8)
    return bytes(out)


def page_set(bitmap: bytes) -> tuple[int, ...]:
    """The pages a page-set bitmap names, in order."""
    return tuple(p for p in range(8 * len(bitmap)) if bitmap[p // 8] >> (p % 8) & 1)


def read_reply_bytes(page_bytes: int, spare_bytes: int, codeword_bytes: int) -> int:
    """READ's reply with the raw page: its head, counts per data codeword and for the spare, the page."""
    n_cw = -(-page_bytes // codeword_bytes) + (1 if spare_bytes else 0)
    return READ_HEAD.size + n_cw * CODEWORD_COUNTS.size + page_bytes + spare_bytes


UNCACHED = frozenset(op for op, c in COMMANDS.items() if not c.cached)
# requests whose target names the chip they act on: to a target without a chip they answer OUT_OF_RANGE
TARGETED = frozenset(op for op, c in COMMANDS.items() if not c.rig_wide)
LONG = frozenset(op for op, c in COMMANDS.items() if c.long)
# long commands that only read the chip: run twice (a restarted rig re-sent one), they measure again and wear
# nothing, so a damaged reply is asked for again at once; the others (CYCLE wears, READ_DISTURB disturbs) are
# re-sent only after a STATUS of the same boot
REREAD = frozenset({Opcode.MEASURE, Opcode.SCAN_BAD})
# replies a rig sends in parts as its pages are measured (to hosts of STREAMED_SINCE): on a serial link a block's
# MEASURE reply takes about as long as reading the block, so sent at the end it would double the read's time
STREAMED = frozenset({Opcode.MEASURE})
FLAG_ENUMS = (HelloFlag, EraseFlag, ProgramFlag, ReadFlag, CycleFlag, MeasureFlag, FlaresProgramFlag, FlaresConfigFlag,
              FlaresReadFlag, FlaresTablesFlag)


@functools.cache  # the virtual rig checks a request's flags against it at every page operation
def all_flags(flags: type[enum.IntFlag]) -> int:
    """Every bit a flag enum defines: the rig refuses the others with BAD_PARAMETER."""
    mask = 0
    for f in flags:
        mask |= int(f)
    return mask


def fixed_request(op: Opcode) -> Layout | None:
    """The request's record when the request is exactly one record."""
    req = COMMANDS[op].request
    return req[0] if len(req) == 1 and isinstance(req[0], Layout) else None


LAYOUTS: tuple[Layout, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Layout))
