"""The `pyasc` command line (also `python -m pyasc`), built with click.

    pyasc demo | ops | chips
    pyasc compile FILE.py::func --arg f32[1024,1024] ... [--chip] [--opt-level] [--dump DIR]
    pyasc tune FILE.py::func --arg ... [--top-k K] [--jobs N | --ray ADDRESS] [--json]
    pyasc diff DUMP_A DUMP_B
    pyasc cache list [--json] | show KEY | explain FILE.py::func --arg ... | stats [--json] | dir | clear |
                prune --max-size | verify [--fix] | warm FILE.py [--jobs N | --ray ADDRESS]

Every command has --help; a bad argument prints a usage line and exits 2;
a command that fails (a kernel that does not compile, a bad cache entry
left unfixed) exits 1.
"""
from __future__ import annotations

import inspect
import sys
from typing import Any, Callable, Sequence

import click

from .. import __version__
from .cache import cache
from .commands import compile_command, diff_command
from .tune import tune_command


@click.group("pyasc", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pyasc", message="%(prog)s %(version)s")
def cli() -> None:
    """pyasc: a Python kernel compiler for an Ascend-like NPU, with the NPU emulated in software."""


def chip_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--chip", default=None, metavar="PRESET",
                        help="chip preset (default: $PYASC_CHIP or 910b); `pyasc chips` lists them")(f)


def _check_chip(chip: str | None) -> None:
    from ..runtime.options import resolve_chip  # the runtime loads when a command runs, not for --help

    if chip is not None:
        try:
            resolve_chip(chip)
        except (TypeError, ValueError) as e:
            raise click.BadParameter(str(e), param_hint="--chip") from None


@cli.command()
@chip_option
@click.option("--opt-level", type=click.IntRange(0, 3), default=3, show_default=True,
              help="graph optimisation level 0-3")
def demo(chip: str | None, opt_level: int) -> None:
    """Compile and run the example kernels and print a correctness table."""
    from .. import demo as demo_module  # the examples load only for this command

    _check_chip(chip)
    sys.exit(demo_module.main(chip=chip, opt_level=opt_level))


@cli.command()
def ops() -> None:
    """List the ops in the registry with their fusion category."""
    click.echo(ops_table())


@cli.command()
def chips() -> None:
    """List the chip presets and their figures."""
    click.echo(chips_table())


def ops_table() -> str:
    from .. import ops as registry  # the registry loads only for this command

    rows = []
    for name in registry.names():
        op = registry.get(name)
        sig = f"pyasc.{name}{inspect.signature(op.api)}" if op.api is not None else "(internal)"
        flags = ",".join(f for f, on in (("composite", op.composite), ("expensive", op.expensive),
                                         ("impure", not op.pure)) if on)
        rows.append((name, op.category.name, flags or "-", sig))
    widths = [max(len(r[i]) for r in rows + [("op", "category", "flags", "")]) for i in range(3)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(("op", "category", "flags"), widths)) + "  api"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3] for r in rows]
    return "\n".join(lines) + f"\n{len(rows)} ops"


#: (column, figure of a chip config) for `pyasc chips`
CHIP_COLUMNS = (
    ("preset", lambda c: c.name),
    ("AIC", lambda c: str(c.aic_cores)),
    ("AIV", lambda c: str(c.aiv_cores)),
    ("clock GHz", lambda c: f"{c.clock_hz / 1e9:g}"),
    ("GM GiB", lambda c: f"{c.gm_bytes / 2**30:g}"),
    ("GM GB/s", lambda c: f"{c.gm_bytes_per_second / 1e9:.0f}"),
    ("UB KiB", lambda c: f"{c.ub_bytes // 1024}"),
    ("L1 KiB", lambda c: f"{c.l1_bytes // 1024}"),
    ("L0A/L0B/L0C KiB", lambda c: f"{c.l0a_bytes // 1024}/{c.l0b_bytes // 1024}/{c.l0c_bytes // 1024}"),
    ("GM->UB", lambda c: f"{c.gm_to_ub.startup}+B/{c.gm_to_ub.bytes_per_cycle:g}"),
    ("UB->GM", lambda c: f"{c.ub_to_gm.startup}+B/{c.ub_to_gm.bytes_per_cycle:g}"),
)


def chips_table() -> str:
    from ..target import get_chip, preset_names  # the hardware figures live in the chip config; loaded when asked

    rows = [[fn(get_chip(name)) for _, fn in CHIP_COLUMNS] for name in preset_names()]
    header = [title for title, _ in CHIP_COLUMNS]
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header] + rows]
    return "\n".join(lines) + "\n(DMA columns: start-up cycles + bytes per cycle per core)"


cli.add_command(compile_command)
cli.add_command(diff_command)
cli.add_command(cache)
cli.add_command(tune_command)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (the console script exits with it)."""
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="pyasc", standalone_mode=False)
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return 1
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0
