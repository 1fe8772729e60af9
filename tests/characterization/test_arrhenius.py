import math

import pytest

from nandrig.characterization.arrhenius import acceleration_factor, bake_hours_for, equivalent_hours
from nandrig.errors import NandrigError


def test_reference_temperature_is_identity():
    assert acceleration_factor(25.0) == 1.0
    assert equivalent_hours(10.0, 25.0) == 10.0


def test_known_acceleration_factor():
    # 125 degC vs 25 degC at 1.1 eV: exp(1.1 / 8.617333262e-5 * (1/298.15 - 1/398.15)), worked by hand
    assert acceleration_factor(125.0) == pytest.approx(math.exp(10.7535), rel=1e-3)
    # so a year at 25 degC is about 11 minutes at 125 degC
    assert bake_hours_for(8760.0, 125.0) * 60 == pytest.approx(11.2, abs=0.1)


def test_monotone_and_invertible():
    assert acceleration_factor(85) < acceleration_factor(125) < acceleration_factor(150)
    assert acceleration_factor(125, ea_ev=0.7) < acceleration_factor(125, ea_ev=1.1)
    assert bake_hours_for(equivalent_hours(3.0, 150.0, ref_c=40.0), 150.0, ref_c=40.0) == pytest.approx(3.0)


@pytest.mark.parametrize("kw", [dict(temp_c=-300), dict(temp_c=100, ea_ev=0), dict(temp_c=100, ref_c=float("nan"))])
def test_bad_input(kw):
    with pytest.raises(NandrigError):
        acceleration_factor(**kw)
    with pytest.raises(NandrigError):
        equivalent_hours(-1.0, 100.0)
