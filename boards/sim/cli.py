"""``nandrig sim serve|rtl``, ``nandrig bench chip`` and ``nandrig bench rig``."""
from __future__ import annotations

import json
import os
from pathlib import Path

import click

from nandrig.boards.catalog import BOARDS
from nandrig.protocol import SERIAL_BAUD


@click.command("chip")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile.")
def bench_chip_cmd(as_json, profile) -> None:
    """Calibration grid against the model (equation 5), byte and statistical path rates, and a whole-life run."""
    from nandrig.boards.sim.bench import bench_chip
    from nandrig.virtual_chip.profile import load_profile

    load_profile(profile)  # a clear error for an unknown profile before any work
    click.echo(json.dumps(bench_chip(profile), indent=2))


@click.command("rig")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile.")
@click.option("--seed", type=int, default=1, show_default=True, help="Chip seed.")
@click.option("--repeats", type=click.IntRange(1, 20), default=3, show_default=True, help="Block cycles to take the median of.")
@click.option("--board", type=click.Choice(BOARDS), help="Run the rig at this board's bitstream clocks (default: 100 MHz).")
@click.option("--targets", "counts", help="Comma-separated target counts, e.g. 1,2,4,8: block cycles on that many "
              "targets at once against the multi-target floor (--chip default mlc-small here).")
@click.option("--virtual", is_flag=True, help="With --targets: on the virtual rig (its model of the firmware's "
              "CYCLE jobs on the bus) instead of the RTL rig.")
@click.option("--alike", is_flag=True, help="With --targets: every socket holds a chip of --seed (dies alike), not "
              "seeds --seed, --seed+1, ...")
@click.option("--link-baud", type=click.IntRange(0, 12_000_000), default=SERIAL_BAUD, show_default=True,
              help="The block cycle's serial link paced at this rate, as a board's UART (0: unpaced).")
def bench_rig_cmd(as_json, profile, seed, repeats, board, counts, virtual, alike, link_baud) -> None:
    """RTL rig: block cycle with measurement against its physical floor; firmware size. With --targets: block
    cycles on several targets at once against the shared bus's floor."""
    from nandrig.virtual_chip.profile import load_profile
    from nandrig.boards.sim.rtl.bench import bench_rig, bench_targets
    from nandrig.boards.sim.benches.targets import bench_targets_virtual
    from nandrig.protocol import Limit

    echo = (lambda s: None) if as_json else (lambda s: click.echo(s, err=True))
    if (virtual or alike) and counts is None:
        raise click.UsageError("--virtual and --alike: options of a bench of several targets (--targets)")
    if virtual and board:
        raise click.UsageError("--virtual runs at the virtual rig's own clock: no --board")
    if counts is None:
        load_profile(profile)
        click.echo(json.dumps(bench_rig(profile, seed, repeats, echo, board=board, link_baud=link_baud), indent=2))
        return
    try:
        ns = tuple(sorted({int(c) for c in counts.split(",")}))
    except ValueError:
        raise click.UsageError(f"--targets {counts}: comma-separated target counts, e.g. 1,2,4,8") from None
    if ns[0] != 1 or ns[-1] > Limit.TARGETS_MAX:
        raise click.UsageError(f"--targets {counts}: counts from 1 (the reference) to {Limit.TARGETS_MAX}")
    profile = "mlc-small" if profile == "mlc-3x" and not _given("profile") else profile
    load_profile(profile)
    result = (bench_targets_virtual(profile, seed, ns, echo=echo, alike=alike) if virtual
              else bench_targets(profile, seed, ns, echo=echo, board=board, alike=alike))
    click.echo(json.dumps(result, indent=2))


def _given(param: str) -> bool:
    """Whether the command line set the option (not its default)."""
    ctx = click.get_current_context()
    return ctx.get_parameter_source(param) == click.core.ParameterSource.COMMANDLINE


@click.group("sim")
def sim_grp() -> None:
    """The simulated rigs."""


TARGETS_HELP = ("Chips on the rig's bus, one per CE#: a count N (seeds --seed, --seed+1, ...) or a list from target 0, "
                "e.g. .,mlc-16k:5,-,mlc-3x:9 (- an empty socket).  [default: 1]")


@sim_grp.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), default=4700, show_default=True, help="TCP port on 127.0.0.1 (0: any free one).")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile.")
@click.option("--seed", type=int, default=0, show_default=True, help="Chip seed.")
@click.option("--state", "state", type=click.Path(dir_okay=False), help="Persist the chip here, also while a long command runs: a restart over it is a power-up (the chip keeps its wear, the rig its bad-block scan only). Default: $XDG_STATE_HOME/nandrig/serve/PROFILE-seedN.state.")
@click.option("--volatile", is_flag=True, help="Keep no state: a restart is a fresh chip (a database that recorded wear on the old one refuses it).")
@click.option("--exact", is_flag=True, help="Measure byte by byte and cycle op by op, as the RTL rig does.")
@click.option("--wiring", help="Simulated adapter: delay=NS round trip, dqN=0 or dqN=1 stuck, dqA~dqB shorted; comma-separated.")
@click.option("--targets", "targets_spec", help=TARGETS_HELP)
def serve_cmd(port, profile, seed, state, volatile, exact, wiring, targets_spec) -> None:
    """Serve the virtual rig over TCP until interrupted; its chips' wear survives a restart (its state file)."""
    import signal

    from nandrig.boards.sim.server import VirtualRig
    from nandrig.boards.sim.tcp_link import serve
    from nandrig.boards.sim.state_file import hold_state
    from nandrig.boards.sim.target import parse_targets
    from nandrig.boards.sim.wiring import Wiring

    others = parse_targets(targets_spec, profile, seed)
    if volatile and state:
        raise click.UsageError("--volatile keeps no state: it does not go with --state")
    if not volatile and not state:
        state = str(default_state(profile, seed, others))
    with hold_state(state):  # one process serves a chip: two would each write their copy of its wear
        rig = VirtualRig.open(profile, seed, state, others, exact=exact, wiring=Wiring.parse(wiring), volatile=True)
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

        def ready(p: int) -> None:
            kept = f"state {state}" if state else "volatile: no state kept, a restart is a fresh chip"
            more = "".join(f", {pr} seed {sd} on target {k}" for k, (pr, sd) in others.items())
            click.echo(f"nandrig sim: serving {profile} seed {seed}{more} ({kept}) on socket://127.0.0.1:{p}", err=True)

        try:
            serve(rig, port, ready=ready)
        except OSError as e:
            raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {e.strerror}") from None
        except KeyboardInterrupt:
            pass


def default_state(profile: str, seed: int, others: dict[int, tuple[str, int]] | None = None) -> Path:
    """Where ``sim serve`` keeps a rig's chips by default: this host's state folder, one file per profile and seed
    (and the other targets' when it has several)."""
    home = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    more = "".join(f"+t{k}-{Path(p).stem}-seed{s}" for k, (p, s) in sorted((others or {}).items()))
    return home / "nandrig" / "serve" / f"{Path(profile).stem}-seed{seed}{more}.state"


@sim_grp.command("rtl")
@click.option("--port", type=click.IntRange(0, 65535), default=4701, show_default=True, help="TCP port of the rig's UART (0: any free one).")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile.")
@click.option("--seed", type=int, default=0, show_default=True, help="Chip seed.")
@click.option("--rebuild", is_flag=True, help="Rebuild the SoC and firmware even if no source changed.")
@click.option("--bch", is_flag=True, help="With the BCH engine (cut to t_max 14): READ and PROGRAM with t > 0; simulates ~10x slower.")
@click.option("--board", type=click.Choice(BOARDS), help="Run at this board's bitstream clocks (default: 100 MHz).")
@click.option("--wiring", help="Simulated adapter: delay=NS round trip, dqN=0 or dqN=1 stuck, dqA~dqB shorted; comma-separated.")
@click.option("--targets", "targets_spec", help=TARGETS_HELP)
def rtl_cmd(port, profile, seed, rebuild, bch, board, wiring, targets_spec) -> None:
    """Run the rig SoC and firmware in Verilator with the virtual chip on its NAND pins (and more on the bus's
    further sockets)."""
    import signal
    import time

    from nandrig.virtual_chip.chip import VirtualChip
    from nandrig.boards.sim.rtl.run import RtlRig
    from nandrig.boards.sim.target import parse_targets
    from nandrig.boards.sim.wiring import Wiring

    chip, wired = VirtualChip(profile, seed), Wiring.parse(wiring)
    others = {k: VirtualChip(p, s) for k, (p, s) in parse_targets(targets_spec, profile, seed).items()}
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        with RtlRig(chip, port, echo=lambda s: click.echo(s, err=True), bch=bch, rebuild=rebuild, board=board,
                    wiring=wired, others=others) as rig:
            more = "".join(f", {c.profile.name} seed {c.seed} on target {k}" for k, c in others.items())
            click.echo(f"nandrig sim: RTL rig with {profile} seed {seed}{more} on {rig.url}", err=True)
            while rig.proc.poll() is None:
                time.sleep(0.5)
            raise click.ClickException(f"the simulator stopped (exit {rig.proc.returncode}); log in {rig.run_dir}")
    except KeyboardInterrupt:
        pass

