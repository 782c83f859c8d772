"""Shared by the benchmark scripts: where results go and the machine facts every JSON carries."""
from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def write_json(path: str | os.PathLike, benchmark: str, settings: dict[str, Any], results: Any) -> Path:
    """Write one benchmark run (its settings, the machine, the command, the results); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": benchmark,
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "machine": {"python": sys.version.split()[0], "numpy": np.__version__, "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        **settings,
        "results": results,
    }
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path}")
    return path
