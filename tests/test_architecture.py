"""Package boundaries (DESIGN.md §2): which layer may import which, read from the source of every module."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def imported_packages(package: str) -> set[str]:
    """Every `pyasc.x` / `simulator` a package (or module) imports, at module and function level."""
    where = ROOT / package.replace(".", "/")
    paths = sorted(where.rglob("*.py")) if where.is_dir() else [where.with_suffix(".py")]
    found: set[str] = set()
    for path in paths:
        here = list(path.relative_to(ROOT).parts[:-1])  # the package relative imports start from
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                names = [module] + [f"{module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                top = name.split(".")
                if top[0] == "simulator":
                    found.add("simulator")
                elif top[0] == "pyasc" and len(top) > 1:
                    found.add(f"pyasc.{top[1]}")
    return found


@pytest.mark.parametrize("package, forbidden", [
    ("simulator", {"pyasc"}),
    ("pyasc.ops", {"pyasc.ir", "pyasc.ge", "pyasc.frontend", "pyasc.runtime"}),
    ("pyasc.ir", {"pyasc.ge", "pyasc.frontend", "pyasc.runtime"}),
    ("pyasc.frontend", {"pyasc.ge", "pyasc.runtime", "simulator", "pyasc.target"}),
    ("pyasc.ge", {"pyasc.frontend", "pyasc.runtime", "pyasc.codegen", "simulator"}),
    ("pyasc.codegen", {"pyasc.frontend", "pyasc.runtime", "simulator"}),
    ("pyasc.target", {"pyasc.ir", "pyasc.ge", "pyasc.frontend", "pyasc.codegen", "pyasc.runtime", "pyasc.ops"}),
    # reverse mode knows graphs and the op registry: no Python syntax, no optimiser, no hardware
    ("pyasc.autodiff", {"pyasc.ge", "pyasc.frontend", "pyasc.runtime", "pyasc.codegen", "pyasc.target",
                        "pyasc.torch", "simulator"}),
])
def test_layers_import_only_what_they_build_on(package, forbidden):
    imported = imported_packages(package)
    bad = {p for p in imported if p in forbidden or p.split(".")[0] in forbidden}
    assert not bad, f"{package} imports {sorted(bad)}"


def test_only_the_target_and_the_runtime_import_the_emulator():
    """pyasc.target is the compiler's one door to the chip; the runtime launches on the emulator."""
    importers = sorted(p for p in _pyasc_packages() if "simulator" in imported_packages(p))
    assert importers == ["pyasc.runtime", "pyasc.target"]


def _pyasc_packages() -> list[str]:
    out = []
    for path in sorted((ROOT / "pyasc").iterdir()):
        if path.name.startswith("_") and path.name != "__init__.py":
            continue
        if path.is_dir() and (path / "__init__.py").exists():
            out.append(f"pyasc.{path.name}")
        elif path.suffix == ".py" and path.name != "__init__.py":
            out.append(f"pyasc.{path.stem}")
    return out


def test_the_tensor_types_are_a_leaf_both_ir_and_ops_share():
    from pyasc import ir, ops, tensor_type
    from pyasc.ir import types

    assert ir.TensorType is tensor_type.TensorType is types.TensorType and ir.Sym is tensor_type.Sym
    # dims are expressions of pyasc.symbolic, itself a leaf (but for the memo of its constructors, a leaf too):
    # the IR, the tiler and the host code share one algebra
    assert imported_packages("pyasc.tensor_type") <= {"pyasc.dtypes", "pyasc.symbolic"}
    assert imported_packages("pyasc.symbolic") <= {"pyasc.memo"}
    assert imported_packages("pyasc.memo") == set()
    assert ops.get("add").infer is not None
