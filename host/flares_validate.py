"""``nandrig run flares-validate``: FLARES against errors the rig really measures.

Scenarios (after the FLARES paper's validation, Sec. 5.1), each on one page of
one block, with seeded patterns programmed and read on the rig:

* ``operating-points``: five wear levels, 1,000 random operations each (20 %
  programs). Every program is followed by a bake worth one year at 25 degC
  (about 11 minutes at 125 degC), so reads see one-year retention errors
  while FLARES, keeping time with the rig's clock, sees data minutes old: the
  temperature stress its model does not know and its measurement must catch.
* ``long-retention``: wear 5,000; every program is followed by two years at
  25 degC, beyond the one year FLARES protects for: rewrite alarms expected.
* ``continuous-wear``: 1,000 operating points from 1,000 to 10,000 P/E, each
  a program (with its one-year bake) and nine reads.

FLARES' model comes from the same chip: before the scenarios, pages of the
same kind as the one under test (upper or lower) are characterized on eight
other blocks (wear 1,000 to 10,000, retention 0 to one year) and eq. 5 is
fitted to them. Upper pages of an MLC part see about twice the block-average
RBER, so a model of the average page would let FLARES underestimate them.

The physical sequence does not depend on the t FLARES picks (an ECC is
digital), so each scenario is measured once and FLARES is replayed over the
trace for every WSIZE and MIX; decoding succeeds exactly when the page's
data-codeword error count is at most the t in use. Rewrite alarms are counted,
not acted on. The target t of an operation is the t that the page's measured
RBER around it requires (UBER 1e-11, one 4096-byte codeword over GF(2^16)).
"""
from __future__ import annotations

import json
import random
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.characterization.flares import Flares, FlaresAccess, FlaresConfig, Zone
from nandrig.chip.geometry import page_map
from nandrig.characterization.flares_tables import FixedTables
from nandrig.characterization.rber import RberParams
from nandrig.characterization.tables import PAPER_CODEWORD_BYTES, CorrTable, RetentionGrid
from nandrig.errors import NandrigError
from nandrig import protocol as P
from nandrig.host.rig import Rig

UBER = 1e-11
BAKE_C = 125.0
WSIZES = (10, 100)
MIXES_PM = (0, 500, 1000)
# read-intensive, balanced, write-intensive (the paper's videoserver, webserver, varmail)
WORKLOADS = {"videoserver": 0.9, "webserver": 0.5, "varmail": 0.2}
# decode latency for a 4 KB codeword at 8-bit parallelism, 100 MHz (FLARES paper): 83.9 us at t=1, 194 us at t=50
DECODE_US = (83.9, 194.0)
BUS_NS_PER_BYTE = 25  # ONFI timing mode 4
OPERATING_POINTS = (10, 100, 1000, 3000, 10000)  # P/E levels of the paper's operating-points experiment
PAPER = {
    "operating-points": "WSIZE 10 reacts fast but overestimates early in life; WSIZE 100 is more precise with some "
                        "delay; MIX 0 tracks the model, MIX 1 over-reacts and sometimes underestimates; "
                        "t can lag for a while after a sharp jump between operating points",
    "long-retention": "pages kept past the required retention must be refreshed (rewrite alarms)",
    "continuous-wear": "with WSIZE 10 and 100, FLARES never underestimated the target t",
    "throughput": "about +50 % throughput for read-intensive work early in life versus a fixed t = 50",
}


@dataclass
class Trace:
    """What the rig did and measured: one entry per operation."""

    ops: list[int]  # FlaresAccess.READ / FlaresAccess.PROGRAM
    errors: list[int]  # data-codeword errors of reads (0 for programs)
    now_s: list[int]  # rig clock, seconds, FLARES' time base
    pe: list[int]
    point: list[int]  # operating-point index
    read_busy_ns: list[int]
    prog_busy_ns: list[int]
    # FLARES in the rig (live runs): the t each operation used, and what the rig's decoder and FLARES reported
    t_used: list[int] = field(default_factory=list)
    failed: list[bool] = field(default_factory=list)
    zone: list[int] = field(default_factory=list)  # Zone.ALARM is a rewrite alarm


def decode_us(t: int) -> float:
    lo, hi = DECODE_US
    return lo + (hi - lo) * (t - 1) / 49.0


CALIBRATION_WEAR = (1000, 3000, 6000, 10000)
CALIBRATION_HOURS = (0.0, 24.0, 720.0, 8760.0)


def calibrate(rig: Rig, blocks: list[int], upper: bool, seed: int = 7) -> tuple[RberParams, dict]:
    """Fit eq. 5 to the pages of one kind (upper or lower) measured on ``blocks``."""
    from nandrig.characterization.fitting import fit

    info = rig.info()
    kind = np.array([page_map(p, info.pages_per_block)[1] == upper for p in range(info.pages_per_block)])
    groups = [blocks[i::len(CALIBRATION_WEAR)] for i in range(len(CALIBRATION_WEAR))]
    for grp, pe in zip(groups, CALIBRATION_WEAR):
        for b in grp:
            rig.cycle(b, 1, pe, seed)
    points, elapsed = [], 0.0
    for hours in CALIBRATION_HOURS:
        rig.advance(hours=hours - elapsed)
        elapsed = hours
        for grp, pe in zip(groups, CALIBRATION_WEAR):
            errs = sum(int(rig.measure(b, 1, seed).errors[0][kind].sum()) for b in grp)
            bits = len(grp) * int(kind.sum()) * info.raw_page_bytes * 8
            if errs:
                points.append((pe, hours, errs / bits, bits))
    a = np.array(points, float)
    res = fit(a[:, 0], a[:, 1], a[:, 2], a[:, 3])
    name = f"calibrated on blocks {blocks[0]}-{blocks[-1]}, {'upper' if upper else 'lower'} pages"
    return res.rber_params(name), {"model": name, "r2_log": res.r2_log, "points": len(points),
                                   "params": res.rber_params().as_dict()}


class Validator:
    """Measures scenarios on the rig. With ``live`` the rig runs FLARES itself (FLARES_PROGRAM / FLARES_READ,
    its compiled-in tables, its BCH decoder): the trace then holds the t it chose and the failures it saw."""

    def __init__(self, rig: Rig, params: RberParams | None, block: int, page: int, seed: int = 1,
                 echo: Callable[[str], None] = lambda s: None, live: FlaresConfig | None = None) -> None:
        self.rig, self.params, self.block, self.page, self.seed = rig, params, block, page, seed
        self.echo, self.live = echo, live
        info = rig.info()
        if not 0 <= page < info.pages_per_block:
            raise NandrigError(f"page {page} is outside 0..{info.pages_per_block - 1}")
        if live and not info.capabilities & P.Cap.FLARES:
            raise NandrigError("this rig does not run FLARES itself (it needs a BCH decoder and room for parity)")
        self.data_codewords = -(-info.page_bytes // info.codeword_bytes)
        self.page_bits = info.page_bytes * 8
        # targets for the codeword FLARES protects: the paper's 4096 bytes, or the rig's own
        self.table = CorrTable.build(UBER, (info.codeword_bytes if live else PAPER_CODEWORD_BYTES) * 8)
        if params is not None:
            self.tables = FixedTables.build(params, self.table, RetentionGrid.build(params, self.table, 10_000, 250))
        self.programs = 0
        self.pe = 0

    # -- measuring on the rig --------------------------------------------------------
    def _to_wear(self, pe: int) -> None:
        if pe - 1 > self.pe:
            res = self.rig.cycle(self.block, 1, pe - 1 - self.pe, self.seed)
            self.pe += res.done[self.block]

    def _program(self, trace: Trace, point: int, retention_h: float, temp_c: float) -> None:
        self.rig.erase(self.block)
        self.pe += 1
        self.programs += 1
        seed = self.seed * 1_000_003 + self.programs
        for p in range(self.page + 1):  # pages in order up to the one under test
            if self.live:
                res = self.rig.flares_program(self.block, p, seed=seed, pe=self.pe)
            else:
                res = self.rig.program(self.block, p, seed=seed)
        now = self.rig.time_ns() // 1_000_000_000
        self.rig.advance(hours=retention_h / acceleration_factor(temp_c), temp_c=temp_c)
        self._record(trace, FlaresAccess.PROGRAM, 0, now, point)
        trace.prog_busy_ns.append(res.busy_ns)
        if self.live:
            self._record_live(trace, res.step, False)

    def _read(self, trace: Trace, point: int) -> None:
        seed = self.seed * 1_000_003 + self.programs
        if self.live:
            fr = self.rig.flares_read(self.block, self.page, seed=seed)
            r = fr.read
        else:
            r = self.rig.read(self.block, self.page, seed=seed)
        errors = sum(c.errors for c in r.codewords[:self.data_codewords])
        self._record(trace, FlaresAccess.READ, errors, self.rig.time_ns() // 1_000_000_000, point)
        trace.read_busy_ns.append(r.busy_ns)
        if self.live:
            self._record_live(trace, fr.step, fr.failed > 0)

    @staticmethod
    def _record_live(trace: Trace, step, failed: bool) -> None:
        trace.t_used.append(step.t)
        trace.failed.append(failed)
        trace.zone.append(int(step.zone))

    def _record(self, trace: Trace, op: FlaresAccess, errors: int, now: int, point: int) -> None:
        trace.ops.append(int(op))
        trace.errors.append(errors)
        trace.now_s.append(now)
        trace.pe.append(self.pe)
        trace.point.append(point)

    def measure(self, scenario: str, scale: float = 1.0, wear: tuple[int, ...] = OPERATING_POINTS) -> Trace:
        """One scenario's operations and their measured errors; ``wear`` sets the operating points' P/E levels."""
        rng = random.Random(zlib.crc32(scenario.encode()) ^ self.seed)  # str hash() is salted per process
        tr = Trace([], [], [], [], [], [], [])
        n = max(10, int(1000 * scale))
        if scenario == "operating-points":
            for k, pe in enumerate(wear):
                self._to_wear(pe)
                self._program(tr, k, 8760.0, BAKE_C)
                for _ in range(n - 1):
                    if rng.random() < 0.2:
                        self._program(tr, k, 8760.0, BAKE_C)
                    else:
                        self._read(tr, k)
                self.echo(f"  operating point {k + 1}/{len(wear)} (P/E {pe}) measured")
        elif scenario == "long-retention":
            self._to_wear(5000)
            self._program(tr, 0, 2 * 8760.0, 25.0)
            for _ in range(n - 1):
                if rng.random() < 0.2:
                    self._program(tr, 0, 2 * 8760.0, 25.0)
                else:
                    self._read(tr, 0)
        elif scenario == "continuous-wear":
            points = max(10, int(1000 * scale))
            for k in range(points):
                self._to_wear(1000 + (9000 * k) // (points - 1))
                self._program(tr, k, 8760.0, BAKE_C)
                for _ in range(9):
                    self._read(tr, k)
                if (k + 1) % 100 == 0:
                    self.echo(f"  continuous wear: {k + 1}/{points} operating points (P/E {self.pe})")
        else:
            raise NandrigError(f"unknown scenario {scenario!r}")
        return tr

    # -- FLARES over a trace -------------------------------------------------------------
    def targets(self, tr: Trace) -> np.ndarray:
        """Target t per operation: what the measured RBER of its operating point (or of its
        neighbourhood in continuous wear) requires."""
        ops, errs, point = np.array(tr.ops), np.array(tr.errors, float), np.array(tr.point)
        reads = ops == int(FlaresAccess.READ)
        out = np.zeros(len(ops), dtype=int)
        n_points = point.max() + 1
        half = 25 if n_points > 50 else 0  # continuous wear: smooth over +-25 operating points
        for k in range(n_points):
            sel = reads & (np.abs(point - k) <= half)
            rber = max(errs[sel].sum() / max(sel.sum() * self.page_bits, 1), 1e-12)
            out[point == k] = int(self.table.t_for(min(rber, 0.49)))
        out[out < 0] = self.table.t_max
        return out

    def outcome(self, tr: Trace, target: np.ndarray, chosen: list[int], fails: int, alarms: int,
                under_after: int) -> dict:
        """A run's figures from the t chosen per operation against the target t."""
        reads = [c for c, op in zip(chosen, tr.ops) if op == FlaresAccess.READ]
        over = [c - int(t) for c, t in zip(chosen, target)]
        return {"ops": len(tr.ops), "reads": len(reads),
                "under_target_ops": int(sum(c < t for c, t in zip(chosen, target))),
                "under_target_ops_after_first_evaluation": int(under_after),
                "decode_failures": int(fails), "mean_overprovision": float(np.mean(over)),
                "rewrite_alarms": int(alarms), "mean_t": float(np.mean(chosen)),
                "mean_target_t": float(np.mean(target)),
                "read_gain_vs_fixed50": self.gains(tr, reads), "chosen_t": list(chosen)}

    def live_run(self, tr: Trace, target: np.ndarray) -> dict:
        """The figures of a scenario FLARES ran in the rig: its t, its decoder's failures."""
        fails = sum(f for f, op in zip(tr.failed, tr.ops) if op == FlaresAccess.READ)
        zone = np.array(tr.zone)
        evaluated = np.cumsum(zone != Zone.NONE) > 0
        under_after = int(np.sum(evaluated & (np.array(tr.t_used) < target)))
        return self.outcome(tr, target, tr.t_used, fails, int(np.sum(zone == Zone.ALARM)), under_after)

    def replay(self, tr: Trace, target: np.ndarray, wsize: int, mix_pm: int) -> dict:
        f = Flares(self.tables, FlaresConfig(wsize=wsize, mix_pm=mix_pm))
        pe0 = tr.pe[0]
        pp = f.new_page(f.cold_start(pe0))
        pp.pecycles = pe0 - 1
        chosen, fails, alarms = [], 0, 0
        under_after, evaluated = 0, False
        for op, err, now, tgt, pe in zip(tr.ops, tr.errors, tr.now_s, target, tr.pe):
            if op == FlaresAccess.PROGRAM:
                pp.pecycles = pe - 1  # the rig's cycling programmed this page too; upPage counts this one
            fail = op == FlaresAccess.READ and err > pp.p_cur
            d = f.up_page(pp, FlaresAccess(op), err, fail, now)
            alarms += d.alarm
            evaluated |= d.zone != 0
            under_after += evaluated and pp.p_cur < tgt
            if op == FlaresAccess.READ:
                fails += fail
            chosen.append(pp.p_cur)
        return self.outcome(tr, target, chosen, fails, alarms, under_after)

    def gains(self, tr: Trace, read_ts: list[int]) -> dict:
        """Throughput with FLARES' t against a fixed t = 50 for each operation mix."""
        raw = (self.page_bits // 8) * BUS_NS_PER_BYTE / 1000.0  # us on the bus
        t_read = np.mean(tr.read_busy_ns) / 1000.0 + raw
        t_prog = np.mean(tr.prog_busy_ns) / 1000.0 + raw
        dec = float(np.mean([decode_us(t) for t in read_ts])) if read_ts else decode_us(50)
        out = {}
        for name, share in WORKLOADS.items():
            flares = share * (t_read + dec) + (1 - share) * t_prog
            fixed = share * (t_read + decode_us(50)) + (1 - share) * t_prog
            out[name] = fixed / flares - 1.0
        return out


def validate(rig: Rig, params: RberParams | None, block: int, page: int, scale: float = 1.0,
             echo: Callable[[str], None] = lambda s: None, spare_blocks: list[int] | None = None,
             live: FlaresConfig | None = None) -> dict:
    """Run the three scenarios; with ``params`` None, FLARES' model is calibrated on ``spare_blocks`` first.

    With ``live`` the rig runs FLARES itself with those constants over its own tables and decoder, one run per
    scenario (no model is calibrated or replayed: the rig's is compiled in)."""

    info = rig.info()
    if not 0 <= page < info.pages_per_block:
        raise NandrigError(f"page {page} is outside 0..{info.pages_per_block - 1}")
    model = {"model": "the rig's compiled-in tables (firmware/rig/flares_tables.h)" if live
             else params.name if params else ""}
    if params is None and live is None:
        if not spare_blocks or len(spare_blocks) < len(CALIBRATION_WEAR):
            raise NandrigError("calibrating FLARES' model needs at least 4 spare blocks")
        upper = page_map(page, info.pages_per_block)[1]
        echo(f"calibrating the RBER model on {'upper' if upper else 'lower'} pages of blocks "
             f"{spare_blocks[0]}-{spare_blocks[-1]}")
        params, model = calibrate(rig, spare_blocks, upper)
    v = Validator(rig, params, block, page, echo=echo, live=live)
    runs = []
    traces = {}
    for scenario in ("operating-points", "long-retention", "continuous-wear"):
        echo(f"measuring {scenario} on block {block} page {page}" + (" with FLARES in the rig" if live else ""))
        if live:
            rig.flares_config(live)  # every scenario starts without page history
        tr = v.measure(scenario, scale)
        target = v.targets(tr)
        traces[scenario] = {"target_t": target.tolist(), "pe": tr.pe, "point": tr.point, "ops": tr.ops}
        if live:
            runs.append({"scenario": scenario, "wsize": live.wsize, "mix": live.mix_pm / 1000, **v.live_run(tr, target)})
            continue
        for wsize in WSIZES:
            for mix in MIXES_PM:
                r = v.replay(tr, target, wsize, mix)
                runs.append({"scenario": scenario, "wsize": wsize, "mix": mix / 1000, **r})
    return {
        "chip_block": block, "page": page, "model": model, "uber": UBER,
        "codeword_bytes": info.codeword_bytes if live else PAPER_CODEWORD_BYTES,
        "flares_in_rig": live is not None,
        "decode_latency_source": "FLARES paper, 83.9 us (t=1) to 194 us (t=50), linear" + (
            "; decode failures are the rig decoder's" if live else "; failures inferred from errors > t"),
        "paper": PAPER, "runs": runs, "traces": traces,
    }


def summary(result: dict) -> dict:
    """The JSON the CLI prints: per run, without the per-operation traces."""
    keys = ("scenario", "wsize", "mix", "ops", "under_target_ops", "under_target_ops_after_first_evaluation",
            "decode_failures", "mean_overprovision",
            "rewrite_alarms", "read_gain_vs_fixed50", "mean_t", "mean_target_t")
    out = {k: v for k, v in result.items() if k not in ("runs", "traces")}
    out["runs"] = [{k: r[k] for k in keys} for r in result["runs"]]
    return out


def dumps(result: dict) -> str:
    return json.dumps(summary(result), indent=2)
