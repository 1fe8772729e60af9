"""The chip's supply as the rig measures it: the current-sense front end on the adapter's VCC line.

One home for the front end's figures: the gateware's sampler (gateware/supply), the firmware's conversion to
energy (generated into ``onfi_facts.h``) and the RTL rig's ADC model all take them from here.

Parts (docs/ulx3s.md, the adapter): a 1 Ω, 0.1 % thin-film shunt in the chip's VCC line; a TI INA240A2 current
sense amplifier (gain 50 V/V, ±0.20 % gain error and ±25 µV offset at most, 400 kHz bandwidth, 2.7-5.5 V
supply); an Analog Devices AD7476A ADC (12 bits, up to 1 MSPS, its reference is its 3.3 V supply, SPI: the
sample is taken at CS# falling, 16 SCLK cycles return four leading zeros and the 12 bits MSB first, up to
20 MHz SCLK). Full scale 3.3 V / 50 / 1 Ω = 66 mA, 16.1 µA a code; the shunt drops at most 66 mV of the
chip's 3.3 V (parts run down to 2.7 V). Below about 1 mA the amplifier's output is under its linear range
(50 mV above ground), so standby currents read as zero.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FrontEnd:
    shunt_mohm: int = 1000
    gain: int = 50  # V/V
    adc_bits: int = 12
    adc_ref_mv: int = 3300  # the ADC's reference: its supply
    vcc_mv: int = 3300  # the chip's supply
    sample_ns: int = 2000  # one conversion every 2 us (500 kS/s)
    sclk_ns: int = 80  # 12.5 MHz: 16 cycles take 1.28 us of each sample
    leading_zeros: int = 4  # what the AD7476A sends before its 12 bits

    @property
    def na_per_code(self) -> float:
        """Chip current per ADC code, in nA."""
        return self.adc_ref_mv * 1e9 / (1 << self.adc_bits) / self.gain / self.shunt_mohm

    def code(self, ua: float) -> int:
        """The ADC's code for a chip current (µA), clipped to full scale."""
        return max(0, min((1 << self.adc_bits) - 1, round(ua * 1000 / self.na_per_code)))

    def pj(self, code_sum: int) -> int:
        """Energy (pJ) of samples whose codes add up to ``code_sum``, each standing for ``sample_ns``."""
        num, den = self.adc_ref_mv * self.vcc_mv * self.sample_ns, (1 << self.adc_bits) * self.gain * self.shunt_mohm
        return code_sum // den * num + code_sum % den * num // den


FRONT_END = FrontEnd()
