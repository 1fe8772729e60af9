"""The ``nandrig`` command. Each area registers its own subcommands here.

User mistakes (bad options, bad files, impossible requests) end as one line
on stderr and a non-zero exit, never a traceback.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from nandrig import __version__
from nandrig.errors import Interrupted, NandrigError
from nandrig.host.storage.databases import database_errors, first_line


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nandrig")
def cli() -> None:
    """Characterize raw MLC NAND flash on a real or simulated rig."""


@cli.group()
def bench() -> None:
    """Benchmarks that print their measurements (medians) as JSON."""


@click.command("demo")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="out/demo", show_default=True)
def demo_cmd(out_dir) -> None:
    """The main job on the embedded default rig; prints where its results are."""
    from nandrig.demo import run_demo

    run_demo(Path(out_dir))


def _register() -> None:
    from nandrig.boards.sim import cli as sim
    from nandrig.boards.ulx3s import cli as ulx3s
    from nandrig.characterization import cli as chz
    from nandrig.host import cli as host

    for cmd in (chz.fit_cmd, chz.tables_cmd, chz.model_grp, demo_cmd, sim.sim_grp, host.rig_grp, host.run_grp,
                host.resume_cmd, host.ls_cmd, host.cancel_cmd, host.export_cmd, host.report_cmd, host.serve_cmd, host.workload_grp, ulx3s.board_grp):
        cli.add_command(cmd)
    from nandrig import twin

    sim.sim_grp.add_command(twin.profile_cmd)
    bench.add_command(chz.bench_fit_cmd)
    bench.add_command(sim.bench_chip_cmd)
    bench.add_command(sim.bench_rig_cmd)
    bench.add_command(host.bench_link_cmd)
    bench.add_command(host.bench_policy_cmd)
    bench.add_command(host.bench_workload_cmd)
    from nandrig.boards import bench_cli

    bench.add_command(bench_cli.bench_bch_cmd)
    bench.add_command(bench_cli.bench_onfi_cmd)


_register()


def main(argv: list[str] | None = None) -> int:
    try:
        # a command that ends with click's Exit(code) (a check that found faults) returns the code here
        code = cli.main(args=argv, prog_name="nandrig", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("nandrig: aborted", err=True)
        return 130
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:
        click.echo(f"nandrig: error: {e.format_message()}", err=True)
        return e.exit_code
    except Interrupted as e:
        click.echo(f"nandrig: interrupted: {e}", err=True)
        return 130
    except NandrigError as e:
        click.echo(f"nandrig: error: {e}", err=True)
        return 1
    except OSError as e:  # a file the user named: missing folder, no permission, a full disk
        where = f" {e.filename}" if e.filename else ""
        click.echo(f"nandrig: error: cannot use{where}: {e.strerror or e}", err=True)
        return 1
    except database_errors() as e:  # a damaged file met by a command that only reads it; a server gone away
        said = first_line(e)
        damaged = any(w in said for w in ("malformed", "not a database"))
        click.echo(f"nandrig: error: database: {said}" + ("; restore a copy" if damaged else ""), err=True)
        return 1
    except KeyboardInterrupt:
        click.echo("nandrig: interrupted", err=True)
        return 130
    return code if isinstance(code, int) else 0


def entry() -> None:
    """Console-script entry point."""
    sys.exit(main())
