"""The `pyasc` command line (also `python -m pyasc`): demo, ops, --version."""
from __future__ import annotations

import argparse
import sys
from typing import Sequence


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="pyasc", description="pyasc: a Python kernel compiler for an "
                                     "Ascend-like NPU, with the NPU emulated in software.")
    parser.add_argument("--version", action="version", version=f"pyasc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="compile and run the example kernels and print a correctness table")
    demo.add_argument("--chip", default=None, help="chip preset (default: $PYASC_CHIP or 910b)")
    demo.add_argument("--opt-level", type=int, default=3, choices=range(4), metavar="N",
                      help="graph optimisation level 0-3 (default 3)")
    sub.add_parser("ops", help="list the ops in the registry with their fusion category")
    return parser


def _ops_table() -> str:
    import inspect

    from . import ops

    rows = []
    for name in ops.names():
        op = ops.get(name)
        sig = f"pyasc.{name}{inspect.signature(op.api)}" if op.api is not None else "(internal)"
        flags = ",".join(f for f, on in (("composite", op.composite), ("expensive", op.expensive),
                                         ("impure", not op.pure)) if on)
        rows.append((name, op.category.name, flags or "-", sig))
    widths = [max(len(r[i]) for r in rows + [("op", "category", "flags", "")]) for i in range(3)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(("op", "category", "flags"), widths)) + "  api"]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  " + r[3] for r in rows]
    return "\n".join(lines) + f"\n{len(rows)} ops"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from . import demo

        try:
            from .runtime.options import resolve_chip

            if args.chip is not None:
                resolve_chip(args.chip)
        except (TypeError, ValueError) as e:
            parser.exit(2, f"pyasc demo: {e}\n")
        return demo.main(chip=args.chip, opt_level=args.opt_level)
    if args.command == "ops":
        print(_ops_table())
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
