"""The science layer: RBER model, UBER and required t, fitting, FLARES tables, Arrhenius, plots."""
from nandrig.characterization.arrhenius import acceleration_factor, equivalent_hours
from nandrig.characterization.rber import RberParams, builtin_param_sets, load_params
from nandrig.characterization.tables import ALWAYS, NEVER, CorrTable, RetentionGrid, max_ret_time
from nandrig.characterization.uber import gf_degree, log_uber, required_t, uber

__all__ = [
    "ALWAYS", "NEVER", "CorrTable", "RberParams", "RetentionGrid",
    "acceleration_factor", "builtin_param_sets", "equivalent_hours", "gf_degree",
    "load_params", "log_uber", "max_ret_time", "required_t", "uber",
]
