"""How much of the numpy corpus (tests/corpus) compiles unchanged and matches numpy: a table and JSON.

    python benchmarks/corpus_report.py [--chip tiny] [--json out.json] [-k substring] [-v]

Each case runs once in numpy and once through pyasc on fresh objects; "ok" means the result, the arguments
after the call and the watched objects all match numpy. Other outcomes: compile_error (a located
CompileError: pyasc said no), mismatch (a wrong number: the worst kind), internal_error (a pyasc bug),
numpy_error (the case itself is broken).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
os.environ.setdefault("PYASC_CACHE", "0")

from tests.corpus.harness import all_cases, run_case  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chip", default="tiny")
    ap.add_argument("--json", default=None)
    ap.add_argument("-k", default="", help="only cases whose style.name contains this")
    ap.add_argument("-v", action="store_true", help="print every failure's detail")
    args = ap.parse_args()
    cases = [c for c in all_cases() if args.k in f"{c.style}.{c.name}"]
    outcomes = []
    t0 = time.perf_counter()
    for c in cases:
        outcomes.append(run_case(c, chip=args.chip))
    elapsed = time.perf_counter() - t0
    by_style: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        by_style[o.case.style][o.status] += 1
    statuses = ["ok", "compile_error", "mismatch", "internal_error", "numpy_error"]
    print(f"{'style':<16}" + "".join(f"{s:>16}" for s in statuses) + f"{'total':>8}")
    total = Counter()
    for style, counts in by_style.items():
        total.update(counts)
        print(f"{style:<16}" + "".join(f"{counts[s]:>16}" for s in statuses) + f"{sum(counts.values()):>8}")
    n = sum(total.values())
    print(f"{'all':<16}" + "".join(f"{total[s]:>16}" for s in statuses) + f"{n:>8}")
    print(f"\ncompile unchanged and match numpy: {total['ok']}/{n} = {100 * total['ok'] / max(n, 1):.1f}%  "
          f"({elapsed:.0f} s on {args.chip})")
    for o in outcomes:
        if o.status != "ok":
            detail = o.detail if args.v else o.detail.splitlines()[0][:160] if o.detail else ""
            print(f"  {o.status:<15} {o.case.style}.{o.case.name}: {detail}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"chip": args.chip, "total": n, "ok": total["ok"],
                       "cases": [{"style": o.case.style, "name": o.case.name, "status": o.status,
                                  "detail": o.detail.splitlines()[0] if o.detail else ""} for o in outcomes]}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
