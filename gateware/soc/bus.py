"""The SoC's SRAM in banks, each behind registers of its own.

The 192 KiB SRAM is 96 block RAMs spread across the ECP5. Driven straight from the bus, the arbiter's grant
reached every block RAM's write enable in one cycle (16 of the ULX3S build's 19 ns in routing); behind one
register stage, that register's address bits still fanned out to all 96 (17.6 of 18.4 ns). Here each 64 KiB
bank has its own copy of the request registers, so each copy drives a third of the block RAMs, and the
read data returns through a register too. An access takes two cycles more than LiteX's SRAM, which the
CPU's caches mostly hide.
"""
from __future__ import annotations

from migen import Array, If, Memory, Module, Signal
from migen.fhdl.specials import WRITE_FIRST
from litex.soc.interconnect import wishbone

BANK_BYTES = 0x1_0000


class BankedSRAM(Module):
    def __init__(self, size: int, name: str = "sram") -> None:
        assert size % BANK_BYTES == 0, "the SRAM is whole 64 KiB banks"
        words = BANK_BYTES // 4
        low = (words - 1).bit_length()
        self.bus = bus = wishbone.Interface(data_width=32, address_width=32, addressing="word")
        bank = bus.adr[low:low + (size // BANK_BYTES - 1).bit_length()]
        ports, stage, which = [], Signal(2), Signal(max=max(size // BANK_BYTES, 2))
        for k in range(size // BANK_BYTES):
            mem = Memory(32, words, name=f"{name}{k}")
            port = mem.get_port(write_capable=True, we_granularity=8, mode=WRITE_FIRST)
            self.specials += mem, port
            adr, dat, we = Signal(low), Signal(32), Signal(4)  # this bank's copy of the request
            self.comb += [port.adr.eq(adr), port.dat_w.eq(dat), port.we.eq(we)]
            self.sync += [
                we.eq(0),
                If((stage == 0) & bus.cyc & bus.stb & ~bus.ack,
                    adr.eq(bus.adr[:low]), dat.eq(bus.dat_w),
                    If(bus.we & (bank == k), we.eq(bus.sel)),
                ),
            ]
            ports.append(port)
        # 0: idle; 1: the banks see the request (a write happens); 2: the read data is out, into dat_r
        self.sync += [
            bus.ack.eq(0),
            If((stage == 0) & bus.cyc & bus.stb & ~bus.ack,
                stage.eq(1), which.eq(bank),
            ).Elif(stage == 1,
                stage.eq(2),
            ).Elif(stage == 2,
                stage.eq(0), bus.ack.eq(1), bus.dat_r.eq(Array(p.dat_r for p in ports)[which]),
            ),
        ]
