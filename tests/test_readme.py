"""Every ```python snippet of the README runs (written to a file first: pyasc compiles from source)."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SECTIONS = ("Writing a kernel", "Convolutions", "Seeing what the compiler did", "The compile cache", "Using kernels from PyTorch",
            "The emulated chip")


def snippets() -> dict[str, str]:
    """Section title -> its python snippets, joined (the quick start is its own section)."""
    out: dict[str, str] = {}
    for part in re.split(r"^## ", README.read_text(), flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        code = re.findall(r"```python\n(.*?)```", body, flags=re.S)
        if code:
            out[title.strip()] = "\n".join(code)
    return out


def test_the_documented_sections_exist_with_a_snippet():
    assert set(SECTIONS) <= set(snippets())


@pytest.mark.parametrize("title", ["Quick start", *SECTIONS])
def test_snippet_runs(title, tmp_path, capsys):
    if "PyTorch" in title:
        pytest.importorskip("torch")
    path = tmp_path / "snippet.py"
    path.write_text(snippets()[title])
    runpy.run_path(str(path), run_name="__main__")
