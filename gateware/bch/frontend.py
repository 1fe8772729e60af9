"""The BCH engine's frontend: one codeword at a time between the page buffer and the encoder/decoder.

Encode reads the codeword's ``k_bytes`` data bytes from ``data_addr`` and
writes its ceil(m t / 8) parity bytes at ``parity_addr``. Decode reads the
data and then the parity, and applies each correction the decoder streams out
to the data byte in place (corrections in the parity are counted, not
written); ``corrected`` is the count, ``fail`` an uncorrectable codeword and
``erased`` a codeword of at most t zero bits, which its consumer rewrites as
all 0xFF (the decoder's doc tells why).

The buffer port answers reads two cycles late, so reads are issued ahead into
a small FIFO with room kept for every read in flight; the engine's streams
then see ordinary valid/ready handshakes.
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, fifo, wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.decoder import ERR_LAYOUT, BchDecoder
from nandrig.gateware.bch.encoder import BchEncoder

ENCODE, DECODE = 0, 1
READ_LATENCY = 2  # PageBuffer engine port
FIFO_DEPTH = 4


class BchFrontend(wiring.Component):
    def __init__(self, config: BchConfig = BchConfig(), addr_bits: int = 16) -> None:
        self.config = config
        super().__init__({
            "op": In(1), "t": In(range(config.t_max + 1)), "data_addr": In(addr_bits), "parity_addr": In(addr_bits),
            "start": In(1), "busy": Out(1), "corrected": Out(16), "fail": Out(1), "erased": Out(1),
            # the page buffer's engine port
            "addr": Out(addr_bits), "we": Out(1), "wdata": Out(8), "rdata": In(8),
        })

    def elaborate(self, platform):
        cfg = self.config
        mod = Module()
        mod.submodules.enc = enc = BchEncoder(cfg)
        mod.submodules.dec = dec = BchDecoder(cfg)
        beat = data.StructLayout({"data": 8, "first": 1, "last": 1})
        mod.submodules.fifo = q = fifo.SyncFIFOBuffered(width=beat.size, depth=FIFO_DEPTH)

        op, t = Signal(1), Signal.like(self.t)
        data_addr, parity_addr = Signal.like(self.data_addr), Signal.like(self.parity_addr)
        total = Signal(16)  # bytes to feed: data, plus parity when decoding
        idx = Signal(16)  # next byte to read
        mod.d.comb += [enc.t.eq(t), dec.t.eq(t)]
        ecc_bytes = Array(Const(cfg.ecc_bytes(v), 8) for v in range(cfg.t_max + 1))

        # ---- feed: reads issued ahead, data two cycles later into the FIFO ----------------------
        feeding = Signal()
        flight = Signal(READ_LATENCY)  # a read issued 1, 2 cycles ago
        flags = [Signal(2, name=f"flags{i}") for i in range(READ_LATENCY)]  # first/last of those reads
        in_flight = sum(flight[i] for i in range(READ_LATENCY))
        issue = Signal()
        port_free = Signal()  # nothing writes the buffer this cycle
        # byte idx's address and whether it is still to read are registers, updated as each read goes out: the
        # compares and sums stay off the path from issue to the buffer's address (the ULX3S's critical path)
        more, read_addr = Signal(), Signal.like(self.addr)
        mod.d.comb += issue.eq(feeding & port_free & more & (q.level + in_flight < FIFO_DEPTH))
        mod.d.sync += [flight.eq(Cat(issue, flight[:-1])), flags[0].eq(Cat(idx == 0, idx + 1 == total))]
        mod.d.sync += [later.eq(earlier) for earlier, later in zip(flags, flags[1:])]
        with mod.If(issue):
            mod.d.sync += [idx.eq(idx + 1), more.eq(idx + 1 < total),
                           read_addr.eq(Mux(idx + 1 == cfg.k_bytes, parity_addr, read_addr + 1))]
        word = Signal(beat)
        mod.d.comb += [word.data.eq(self.rdata), word.first.eq(flags[-1][0]), word.last.eq(flags[-1][1]),
                       q.w_data.eq(word), q.w_en.eq(flight[-1])]
        out = beat(q.r_data)
        for sink in (enc.data_in, dec.data_in):
            mod.d.comb += [sink.payload.data.eq(out.data), sink.payload.first.eq(out.first),
                           sink.payload.last.eq(out.last)]
        with mod.If(op == ENCODE):
            mod.d.comb += [enc.data_in.valid.eq(q.r_rdy), q.r_en.eq(enc.data_in.ready)]
        with mod.Else():
            mod.d.comb += [dec.data_in.valid.eq(q.r_rdy), q.r_en.eq(dec.data_in.ready)]
        with mod.If(feeding & (idx == total) & ~flight.any() & ~q.r_rdy):
            mod.d.sync += feeding.eq(0)

        # ---- write back: parity bytes, or corrected data bytes (read, wait, write) -------------
        par_idx = Signal(8)
        fix_addr, fix_mask = Signal.like(self.addr), Signal(8)
        fix_wait = Signal(READ_LATENCY)  # the read of a byte to fix, moving towards its write
        fix_read = Signal()
        mod.d.comb += port_free.eq(~enc.parity_out.valid & ~fix_wait[-1])
        mod.d.comb += self.addr.eq(Mux(issue, read_addr, Mux(enc.parity_out.valid, parity_addr + par_idx, fix_addr)))
        with mod.If(enc.parity_out.valid):
            mod.d.comb += [enc.parity_out.ready.eq(1), self.we.eq(1), self.wdata.eq(enc.parity_out.payload.data)]
            mod.d.sync += par_idx.eq(Mux(enc.parity_out.payload.last, 0, par_idx + 1))
        with mod.If(fix_wait[-1]):
            mod.d.comb += [self.we.eq(1), self.wdata.eq(self.rdata ^ fix_mask)]
        mod.d.sync += fix_wait.eq(Cat(fix_read, fix_wait[:-1]))
        # corrections wait in a queue until the status says the codeword decoded: a failed codeword stays
        # exactly as read (the Chien search may have found some roots before the failure shows)
        mod.submodules.errq = errq = fifo.SyncFIFO(width=ERR_LAYOUT.size, depth=cfg.t_max + 1)
        mod.d.comb += [errq.w_data.eq(dec.errors.payload), errq.w_en.eq(dec.errors.valid),
                       dec.errors.ready.eq(errq.w_rdy)]
        err = ERR_LAYOUT(errq.r_data)
        decoded, apply = Signal(), Signal()  # status seen; it allows the corrections
        # a correction taken from the queue waits a cycle in a register before its read goes out: the queue's
        # read, the range check and the address sum are one path, the buffer's address mux another
        pending, pending_addr, pending_mask = Signal(), Signal.like(self.addr), Signal(8)
        with mod.If(decoded & errq.r_rdy & ~fix_wait.any() & ~pending):  # one correction at a time
            mod.d.comb += errq.r_en.eq(1)
            with mod.If(apply & (err.byte < cfg.k_bytes)):
                mod.d.sync += [pending.eq(1), pending_addr.eq(data_addr + err.byte), pending_mask.eq(err.mask)]
        with mod.If(pending):
            mod.d.comb += [fix_read.eq(1), self.addr.eq(pending_addr)]
            mod.d.sync += [fix_addr.eq(pending_addr), fix_mask.eq(pending_mask), pending.eq(0)]

        # ---- start / done -------------------------------------------------------------------------
        enc_done = Signal()
        mod.d.comb += dec.status.ready.eq(op == DECODE)
        with mod.If(enc.parity_out.valid & enc.parity_out.payload.last):
            mod.d.sync += enc_done.eq(1)
        with mod.If(dec.status.valid & (op == DECODE)):
            st = dec.status.payload
            mod.d.sync += [self.corrected.eq(st.corrected), self.fail.eq(st.fail), self.erased.eq(st.erased),
                           decoded.eq(1), apply.eq(~st.fail & ~st.erased)]
        with mod.If(decoded & ~errq.r_rdy & ~fix_wait.any() & ~pending):
            mod.d.sync += [self.busy.eq(0), decoded.eq(0)]
        with mod.If((op == ENCODE) & enc_done & ~feeding):
            mod.d.sync += [self.busy.eq(0), enc_done.eq(0)]
        with mod.If(self.start & ~self.busy):
            mod.d.sync += [self.busy.eq(1), feeding.eq(1), op.eq(self.op), t.eq(self.t), idx.eq(0), par_idx.eq(0),
                           more.eq(1), read_addr.eq(self.data_addr),
                           data_addr.eq(self.data_addr), parity_addr.eq(self.parity_addr), enc_done.eq(0),
                           total.eq(cfg.k_bytes + Mux(self.op == DECODE, ecc_bytes[self.t], 0)),
                           self.corrected.eq(0), self.fail.eq(0), self.erased.eq(0)]
        return mod
