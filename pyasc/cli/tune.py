"""`pyasc tune FILE.py::func --arg ...`: autotune a kernel's tilings on the emulator (runtime/tuner.py)."""
from __future__ import annotations

import json
import sys
from typing import Any

import click

from .cache import executor_options
from .commands import kernel_for
from .targets import parse_args, target_options


@click.command("tune")
@click.argument("target", metavar="FILE.py::func")
@target_options
@click.option("--top-k", type=click.IntRange(1), default=8, show_default=True,
              help="candidates per device kernel: the cost model's choice and its best runners-up")
@executor_options
@click.option("--json", "as_json", is_flag=True, help="the result as one JSON document instead of a table")
def tune_command(target: str, args: tuple[str, ...], chip: str | None, opt_level: int | None, top_k: int,
                 jobs: int | None, ray_address: str | None, as_json: bool) -> None:
    """Run the cost model's top candidates of every device kernel of FILE.py::func on the emulator in parallel,
    print predicted vs simulated cycles for each and store the fastest in the cache folder: every later
    compile of these shapes on this chip uses it (in any process, on any machine sharing the folder).

    Candidates differ in tile sizes, buffer_num and how the work splits over the cores."""
    from ..errors import CompileError  # the compiler loads when a command runs, not for --help

    kernel = kernel_for(target, chip, opt_level)
    call_args = parse_args(args)
    bar: Any = None

    def progress(candidate: Any, done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label=f"tuning {kernel.__name__}: {total} emulator runs",
                                    file=sys.stderr)
            bar.__enter__()
        bar.update(max(0, done - bar.pos))  # runs finished (a run can measure several kernels' candidates)

    try:
        result = kernel.tune(*call_args, top_k=top_k, executor="ray" if ray_address else "process", workers=jobs,
                             address=ray_address, verbose=False, progress=progress)
    except CompileError as e:
        raise click.ClickException(str(e)) from None
    except ImportError as e:
        raise click.ClickException(str(e)) from None
    except (ConnectionError, RuntimeError) as e:
        raise click.ClickException(f"tuning {kernel.__name__} failed: {e}") from None
    except (TypeError, ValueError) as e:
        raise click.BadParameter(f"{kernel.__name__}(): {e}", param_hint="--arg") from None
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    click.echo(json.dumps(result.to_json(), indent=1) if as_json else result.table())
