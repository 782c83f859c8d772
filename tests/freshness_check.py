"""pyasc.frontend.freshness under any Python: no false alarm on the standard library, and edits are caught.

Run as a script by any interpreter (`python3.12 tests/freshness_check.py [--quick]`); it loads freshness.py by
path (the module needs only the standard library, so pyasc's dependencies need not be installed) and
prints one JSON line: {"python", "functions", "false_alarms": [...], "missed_edits": [...]}.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import os
import sys
import tempfile
import textwrap
import types
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = ["json.decoder", "json.encoder", "argparse", "functools", "dataclasses", "typing", "email.message",
          "logging", "asyncio.base_events", "unittest.case", "http.client", "xml.etree.ElementTree", "inspect",
          "collections", "textwrap", "pathlib", "difflib", "ast", "enum", "csv", "tarfile", "zipfile"]
QUICK = ["argparse", "dataclasses", "typing", "asyncio.base_events", "zipfile"]  # `--quick`: the test suite's


def load_freshness() -> types.ModuleType:
    path = HERE.parent / "pyasc" / "frontend" / "freshness.py"
    spec = importlib.util.spec_from_file_location("freshness_standalone", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parsed(fn: types.FunctionType) -> tuple[list[str], int, ast.AST]:
    """The function's lines as pyasc reads them (inspect without unwrap), their first line, and their parse
    with file line numbers."""
    found, index = inspect.findsource(fn)
    lines, first = inspect.getblock(found[index:]), index + 1
    tree = ast.parse(textwrap.dedent("".join(lines)))
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) is not None:
            node.lineno += first - 1
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += first - 1
    return lines, first, tree


def functions(module: types.ModuleType):
    for value in vars(module).values():
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            yield value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr in vars(value).values():
                attr = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
                if isinstance(attr, types.FunctionType):
                    yield attr


EDITED = '''
import math


def k(x):
    y = x * 2.0 + 1.0
    return math.floor(y) - 0.5
'''
EDITS = [("x * 2.0", "x * 3.0"), ("math.floor", "math.ceil_"), ("+ 1.0", "- 1.0"), ("\ndef k", "\nSHIFT = 1\ndef k")]


def missed_edits(freshness: types.ModuleType) -> list[str]:
    missed = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (old, new) in enumerate(EDITS):
            path = os.path.join(tmp, f"edited_{i}.py")
            with open(path, "w") as f:
                f.write(EDITED)
            spec = importlib.util.spec_from_file_location(f"edited_{i}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            with open(path, "w") as f:
                f.write(EDITED.replace(old, new))
            import linecache

            linecache.checkcache(path)
            try:
                lines, first, tree = parsed(module.k)
            except (OSError, SyntaxError):
                continue  # nothing pyasc could compile either
            if freshness.source_mismatch(module.k, lines, first, tree) is None:
                missed.append(f"{old!r} -> {new!r}")
    return missed


def main() -> None:
    warnings.simplefilter("ignore")
    freshness = load_freshness()
    alarms, count = [], 0
    for name in QUICK if "--quick" in sys.argv else CORPUS:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for fn in functions(module):
            if fn.__name__ == "<lambda>" or not os.path.isfile(fn.__code__.co_filename):
                continue
            try:
                lines, first, tree = parsed(fn)
            except (OSError, TypeError, SyntaxError, IndexError):
                continue
            count += 1
            why = freshness.source_mismatch(fn, lines, first, tree)
            if why is not None:
                alarms.append(f"{fn.__module__}.{fn.__qualname__}: {why}")
    print(json.dumps({"python": sys.version.split()[0], "functions": count, "false_alarms": alarms,
                      "missed_edits": missed_edits(freshness)}))


if __name__ == "__main__":
    main()
