"""`pyasc compile` (a kernel's stage summary) and `pyasc diff` (two dumps, stage by stage)."""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import click

from .targets import load_kernel, parse_args, target_options


def kernel_for(target: str, chip: str | None, opt_level: int | None) -> Any:
    try:
        return load_kernel(target, chip=chip, opt_level=opt_level)
    except (TypeError, ValueError) as e:
        if isinstance(e, click.BadParameter):
            raise
        raise click.BadParameter(str(e), param_hint="--chip/--opt-level") from None


def compile_or_fail(kernel: Any, args: tuple[Any, ...]) -> Any:
    """The artifact; a kernel that does not compile is exit status 1 with pyasc's own message."""
    from ..errors import CompileError  # the compiler loads when a command runs, not for --help

    try:
        return kernel.compile(*args)
    except CompileError as e:
        raise click.ClickException(str(e)) from None
    except (TypeError, ValueError) as e:
        raise click.BadParameter(f"{kernel.__name__}(): {e}", param_hint="--arg") from None


@click.command("compile")
@click.argument("target", metavar="FILE.py::func")
@target_options
@click.option("--dump", "dump_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="also write every stage into a folder under DIR")
def compile_command(target: str, args: tuple[str, ...], chip: str | None, opt_level: int | None,
                    dump_dir: Path | None) -> None:
    """Compile FILE.py::func for the given arguments and print its stage summary.

    Each graph stage shows its op histogram and how it changed from the stage before (a transpose that
    vanished, a fusion that fired), then the device kernels, the fusion log and the memory plan.
    """
    from ..runtime.dump import write_dump  # the runtime loads when a command runs, not for --help
    from ..runtime.report import compile_report  # (likewise)

    kernel = kernel_for(target, chip, opt_level)
    compiled = compile_or_fail(kernel, parse_args(args))
    click.echo(compile_report(compiled))
    if dump_dir is not None:
        try:
            folder = write_dump(dump_dir, compiled)
        except OSError as e:
            raise click.ClickException(f"cannot write the dump into {dump_dir}: {e}") from None
        click.echo(f"\ndumped to {folder}")


def dump_folder(path: Path) -> Path:
    """A kernel's dump folder, or a dump root that holds exactly one."""
    from ..runtime.dump import stage_of  # the runtime loads when a command runs, not for --help

    if any(stage_of(p.name) for p in path.iterdir()):
        return path
    inner = [p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if len(inner) == 1:
        return inner[0]
    raise click.BadParameter(f"{path} is not a dump folder (no NN_<stage> files)"
                             + (f" and holds {len(inner)} kernel folders; name one" if inner else ""),
                             param_hint="DUMP")


def stages_in(folder: Path) -> dict[str, str]:
    """Stage name -> its text file's contents, in file (pipeline) order."""
    from ..runtime.dump import stage_of  # the runtime loads when a command runs, not for --help

    out = {}
    for p in sorted(folder.iterdir()):
        found = stage_of(p.name)
        if found is not None and found[1] == "text":
            out[found[0]] = p.read_text(encoding="utf-8")
    return out


@click.command("diff")
@click.argument("dump_a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("dump_b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--context", "-U", type=click.IntRange(0), default=3, show_default=True,
              help="lines of context around each change")
@click.option("--stat", is_flag=True, help="only the per-stage summary, no line diffs")
def diff_command(dump_a: Path, dump_b: Path, context: int, stat: bool) -> None:
    """Diff two dumps (PYASC_DUMP_DIR or `pyasc compile --dump`) stage by stage.

    Stages are matched by name, so a pass that ran in one compile and not the other shows as a stage
    only in A or only in B, e.g. a compile with and without a pass.
    """
    a_dir, b_dir = dump_folder(dump_a), dump_folder(dump_b)
    a, b = stages_in(a_dir), stages_in(b_dir)
    names = list(a) + [n for n in b if n not in a]
    changed = 0
    click.echo(f"--- {a_dir}\n+++ {b_dir}")
    for name in names:
        if name not in b:
            click.echo(f"only in A: {name}")
            changed += 1
        elif name not in a:
            click.echo(f"only in B: {name}")
            changed += 1
        elif a[name] == b[name]:
            click.echo(f"same:      {name}")
        else:
            lines = list(difflib.unified_diff(a[name].splitlines(), b[name].splitlines(), f"A/{name}",
                                              f"B/{name}", n=context, lineterm=""))
            plus = sum(1 for ln in lines[2:] if ln.startswith("+"))
            minus = sum(1 for ln in lines[2:] if ln.startswith("-"))
            click.echo(f"differs:   {name} (+{plus} -{minus} lines)")
            if not stat:
                click.echo("\n".join("    " + ln for ln in lines))
            changed += 1
    click.echo(f"{changed} of {len(names)} stages differ")
