"""``nandrig fit``, ``nandrig tables``, ``nandrig model ...`` and ``nandrig bench fit``."""
from __future__ import annotations

import json
import math
from pathlib import Path

import click

from nandrig.characterization.tables import PAPER_CODEWORD_BYTES
from nandrig import jsonsafe
from nandrig.errors import NandrigError

NONNEG = click.FloatRange(min=0.0)


def _echo_json(obj, reasons=None) -> None:
    click.echo(jsonsafe.dumps(obj, reasons, indent=2))


def _codeword_bits(codeword_bytes: int) -> int:
    if codeword_bytes <= 0:
        raise NandrigError(f"--codeword-bytes must be > 0, got {codeword_bytes}")
    return codeword_bytes * 8


@click.command("fit")
@click.option("--csv", "csv_path", required=True, type=click.Path(dir_okay=False),
              help="CSV with pe,retention_h,rber[,bits][,block][,page_type] (nandrig export --by-block writes all).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--model", type=click.Choice(["auto", "eq5", "eq2"]), default="auto", show_default=True,
              help="eq5: all six parameters; eq2: A, B, C from retention-0 data; auto: what the data supports.")
@click.option("--law", type=click.Choice(["auto", "power", "log"]), default="auto", show_default=True,
              help="Retention law: power (eq. 5), log (ln(1 + t/tau)), auto: both, the lower AIC wins.")
@click.option("--loss", type=click.Choice(["linear", "soft_l1", "huber", "cauchy"]), default="linear", show_default=True,
              help="Loss on the residuals; soft_l1/huber/cauchy down-weight outliers.")
@click.option("--save", "save_path", type=click.Path(dir_okay=False),
              help="Write the fit as JSON (usable as --params; per page type with --page-type).")
@click.option("--residuals", "resid_path", type=click.Path(dir_okay=False), help="Write per-point relative errors as CSV.")
@click.option("--plot", "plot_dir", type=click.Path(file_okay=False), help="Write rber_vs_pe.png with data and fit.")
def fit_cmd(csv_path, as_json, model, law, loss, save_path, resid_path, plot_dir) -> None:
    """Fit the RBER model (equation 5 of FLARES, or its log-time form) to measurements."""
    from nandrig.characterization.fitting import NULL_REASONS, fit_page_types, fit_summary, fit_table
    from nandrig.characterization.measurements import read_csv

    data = read_csv(csv_path)
    fits = fit_page_types(data, model=model, law=law, loss=loss)
    res = fits["all"]
    doc = {**res.to_json(), "page_types": {t: r.to_json() for t, r in fits.items() if t != "all"}}
    if save_path:
        Path(save_path).write_text(jsonsafe.dumps({"name": Path(save_path).stem, **doc}, NULL_REASONS, indent=2) + "\n")
    if resid_path:
        lines = ["pe,retention_h,rber,rel_err"] + [
            f"{data.pe[i]:g},{data.retention_h[i]:g},{float(data.rber[i])!r},{float(res.rel_err[i])!r}"
            for i in range(min(len(data), res.rel_err.size))]
        Path(resid_path).write_text("\n".join(lines) + "\n")
    if plot_dir and not res.undetermined:
        from nandrig.characterization.plots import plot_rber_vs_pe

        plot_rber_vs_pe(res.rber_params(Path(csv_path).stem), Path(plot_dir) / "rber_vs_pe.png", data,
                        band=res.rber_band)
    if as_json:
        _echo_json(doc, NULL_REASONS)
        return
    for name, r in fits.items():
        click.echo(("all pages" if name == "all" else f"{name} pages") + ": " + fit_summary(r))
        for line in fit_table(r):
            click.echo("  " + line)


@click.command("tables")
@click.option("--params", "params_name", required=True, help="Built-in parameter set name or a JSON file.")
@click.option("--uber", "target", type=float, default=1e-11, show_default=True, help="Target UBER.")
@click.option("--codeword-bytes", type=int, default=PAPER_CODEWORD_BYTES, show_default=True, help="Data bytes per BCH codeword.")
@click.option("--t-min", type=int, default=1, show_default=True, help="Smallest correction capability t in the table.")
@click.option("--t-max", type=int, default=100, show_default=True, help="Largest correction capability t in the table.")
@click.option("--pe-max", type=int, default=10_000, show_default=True, help="Largest P/E count in max_ret_time.")
@click.option("--pe-step", type=int, default=250, show_default=True, help="P/E grid step of max_ret_time.")
@click.option("--json", "as_json", is_flag=True, help="Print the tables as JSON.")
@click.option("--c-header", "header", type=click.Path(dir_okay=False), help="Write the fixed-point C header here.")
@click.option("--page-type", type=click.Choice(["lower", "upper"]),
              help="Use only that page type's model from a nandrig fit --save file; without it such a file gives "
                   "the C header a model per page type and the JSON every model.")
def tables_cmd(params_name, target, codeword_bytes, t_min, t_max, pe_max, pe_step, as_json, header, page_type) -> None:
    """FLARES corr_table and max_ret_time for a model, target UBER and codeword."""
    from nandrig.characterization.rber import load_params, page_types_in
    from nandrig.characterization.tables import RBER_FRAC_BITS, CorrTable, RetentionGrid, tables_json, zero_in_fixed_point
    from nandrig.characterization.flares_tables import c_header

    params = load_params(params_name, page_type)
    table = CorrTable.build(target, _codeword_bits(codeword_bytes), t_min, t_max)
    grid = RetentionGrid.build(params, table, pe_max, pe_step)
    if header:
        lost = zero_in_fixed_point(table)
        if len(lost) == len(table.rber_max):
            raise NandrigError(f"every RBER bound for UBER {target:g} is below 2^-{RBER_FRAC_BITS}, the C header's "
                               "resolution: the header would be all zeros; raise the target UBER or --t-max")
        if lost:
            click.echo(f"nandrig: warning: t {lost[0]}..{lost[-1]} have RBER bounds below 2^-{RBER_FRAC_BITS} and "
                       "round to 0 in the header: FLARES on the rig never picks them", err=True)
        types = page_types_in(params_name) if page_type is None else []
        if {"lower", "upper"} <= set(types):  # a model per page type: the header carries both
            params = load_params(params_name, "lower")
            grid = RetentionGrid.build(params, table, pe_max, pe_step)
            text = c_header(params, table, grid, upper=load_params(params_name, "upper"))
        else:
            text = c_header(params, table, grid)
        Path(header).write_text(text)
    if as_json:
        doc = tables_json(params, table, grid)
        if page_type is None:
            for t in page_types_in(params_name):
                p = load_params(params_name, t)
                doc.setdefault("page_types", {})[t] = tables_json(p, table, RetentionGrid.build(p, table, pe_max, pe_step))
        _echo_json(doc)
    elif not header:
        click.echo(f"corr_table for UBER {target:g}, {codeword_bytes}-byte codeword, GF(2^{table.gf_m}):")
        for e in table.entries():
            click.echo(f"  t={e['t']:3d}  RBER ({e['rber_min']:.4e}, {e['rber_max']:.4e}]")
    else:
        click.echo(f"wrote {header}")


@click.group("model")
def model_grp() -> None:
    """Evaluate the RBER/UBER model and Arrhenius conversions."""


def _params_opt(f):
    return click.option("--params", "params_name", default="flares-taco2014", show_default=True,
                        help="Built-in parameter set or JSON file.")(f)


@model_grp.command("required-t")
@_params_opt
@click.option("--pe", type=NONNEG, required=True, help="P/E cycles.")
@click.option("--retention-h", type=NONNEG, default=0.0, show_default=True, help="Retention, hours at 25 degC.")
@click.option("--uber", "target", type=float, default=1e-11, show_default=True, help="Target UBER.")
@click.option("--codeword-bytes", type=int, default=PAPER_CODEWORD_BYTES, show_default=True,
              help="Data bytes per BCH codeword.")
@click.option("--t-max", type=int, default=100, show_default=True, help="Largest t to try.")
def required_t_cmd(params_name, pe, retention_h, target, codeword_bytes, t_max) -> None:
    """Print the smallest t meeting the target UBER."""
    from nandrig.characterization.rber import load_params
    from nandrig.characterization.uber import required_t

    p = load_params(params_name)
    rber = float(p.rber(pe, retention_h))
    if not 0 < rber < 0.5:
        raise NandrigError(f"model RBER {rber:.3g} at pe={pe:g}, retention {retention_h:g} h is outside (0, 0.5): "
                           "beyond what the model describes")
    click.echo(required_t(rber, target, _codeword_bits(codeword_bytes), t_max=t_max))


@model_grp.command("rber")
@_params_opt
@click.option("--pe", type=NONNEG, required=True, help="P/E cycles.")
@click.option("--retention-h", type=NONNEG, default=0.0, show_default=True, help="Retention, hours at 25 degC.")
def rber_cmd(params_name, pe, retention_h) -> None:
    """Print the model RBER."""
    from nandrig.characterization.rber import load_params

    click.echo(repr(float(load_params(params_name).rber(pe, retention_h))))


@model_grp.command("uber")
@click.option("--rber", type=float, required=True)
@click.option("--t", "t", type=click.IntRange(min=0), required=True)
@click.option("--codeword-bytes", type=int, default=PAPER_CODEWORD_BYTES, show_default=True)
def uber_cmd(rber, t, codeword_bytes) -> None:
    """Print log10 UBER and UBER for an RBER and t."""
    from nandrig.characterization.uber import check_rber, log_uber

    lu = log_uber(check_rber(rber), t, _codeword_bits(codeword_bytes))
    click.echo(json.dumps({"log10_uber": lu / math.log(10), "uber": math.exp(lu)}))


@model_grp.command("arrhenius")
@click.option("--bake-hours", type=NONNEG, required=True, help="Bake duration in hours.")
@click.option("--temp-c", type=float, required=True, help="Bake temperature, degC.")
@click.option("--ref-c", type=float, default=25.0, show_default=True, help="Reference temperature, degC.")
@click.option("--ea", type=float, default=1.1, show_default=True, help="Activation energy, eV.")
def arrhenius_cmd(bake_hours, temp_c, ref_c, ea) -> None:
    """Equivalent retention hours at the reference temperature."""
    from nandrig.characterization.arrhenius import acceleration_factor, equivalent_hours

    af = acceleration_factor(temp_c, ref_c, ea)
    click.echo(json.dumps({"acceleration_factor": af, "equivalent_hours": equivalent_hours(bake_hours, temp_c, ref_c, ea)}))


@model_grp.command("plot")
@_params_opt
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False), help="Measurements to show as points.")
@click.option("--uber", "target", type=float, default=1e-11, show_default=True)
@click.option("--codeword-bytes", type=int, default=PAPER_CODEWORD_BYTES, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True)
def plot_cmd(params_name, csv_path, target, codeword_bytes, out_dir) -> None:
    """Write rber_vs_pe.png and required_t.png, in the style of figures 3a and 3b of FLARES."""
    from nandrig.characterization.measurements import read_csv
    from nandrig.characterization.plots import plot_required_t, plot_rber_vs_pe
    from nandrig.characterization.rber import load_params
    from nandrig.characterization.tables import CorrTable

    p = load_params(params_name)
    data = read_csv(csv_path) if csv_path else None
    a = plot_rber_vs_pe(p, Path(out_dir) / "rber_vs_pe.png", data)
    b = plot_required_t(p, CorrTable.build(target, _codeword_bits(codeword_bytes)), Path(out_dir) / "required_t.png")
    click.echo(f"wrote {a} and {b}")


@click.command("fit")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True)
def bench_fit_cmd(as_json, repeats) -> None:
    """Median fit time for 1,000 and 100,000 binomially sampled points."""
    from nandrig.characterization.bench import bench_fit

    _echo_json(bench_fit(repeats))
