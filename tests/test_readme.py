"""Every ```python snippet of the README runs (written to a file first: pyasc compiles from source)."""
from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
SECTIONS = ("Writing a kernel", "Attention, found automatically", "Convolutions", "Seeing what the compiler did",
            "The compile cache", "Autotuning",
            "Using kernels from PyTorch", "The emulated chip", "Gradients")


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


def test_a_missing_optional_extra_is_reported_not_skipped_silently():
    from conftest import OPTIONAL_EXTRAS, missing_extras_lines

    assert missing_extras_lines(lambda name: object()) == []
    lines = missing_extras_lines(lambda name: None if name == "torch" else object())
    assert lines == ["NOTE: torch is not installed, so its tests were skipped; to run them: pip install "
                     "torch==2.13.0 (the CPU build, as .ci/run does) or pip install -e '.[torch]'"]
    readme = README.read_text()
    for name, how in OPTIONAL_EXTRAS.items():   # the README says the same, next to the test command
        assert how.split(" (")[0].split(" or ")[0] in readme, name
    ci = (README.parent / ".ci" / "run").read_text()
    assert "torch==2.13.0" in ci and "'.[test,ray]'" in ci    # CI installs every extra the suite tests


DOCS = (README, README.parent / "simulator" / "README.md")
#: folders the docs name as where the code writes its output (created on the first run, not kept in git)
WRITTEN_BY_CODE = {"benchmarks/results/"}


def test_every_install_command_installs_from_the_checkout():
    """`pyasc` on the public package index is another project: no command installs pyasc by name."""
    import tomllib

    project = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]
    assert project["name"] == "pyasc-emu"
    files = [*DOCS, *(README.parent / "examples").glob("*.py"), README.parent / "pyasc" / "torch" / "__init__.py"]
    commands = [(f.name, m) for f in files for m in re.findall(r"pip install [^`\n\"#;&)]*", f.read_text())]
    assert len(commands) >= 6
    for where, command in commands:
        specs = [w.strip("'\"") for w in command.split()[2:] if not w.startswith("-")]
        assert specs and specs[0] != "pyasc", (where, command)          # what pip installs first
        assert not any(re.match(r"pyasc[\[=<>~]", spec) for spec in specs), (where, command)
    checkout = [c for _, c in commands if re.search(r"-e '?\.(\[[a-z,]+\])?'?", c)]
    assert any("[test" in c for c in checkout) and any("[torch]" in c for c in checkout)


def test_license_file_and_metadata():
    import tomllib

    project = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (README.parent / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text


def test_the_docs_name_only_files_that_are_in_the_repository():
    """Links and path-like names in the READMEs point into the repository (not to a folder beside it)."""
    root = README.parent
    for doc in DOCS:
        text = doc.read_text()
        links = [t for t in re.findall(r"\]\(([^)]+)\)", text) if "://" not in t and not t.startswith("#")]
        paths = [t for t in re.findall(r"`([^`\s]+)`", text)
                 if "/" in t and not t.startswith(("http", "-")) and re.fullmatch(r"[\w./-]+", t)
                 and re.search(r"\.(md|py|toml|json|txt)$|/$", t) and t not in WRITTEN_BY_CODE]
        assert paths, doc
        for target in links + paths:
            if target.startswith("/") or target.startswith(".."):
                raise AssertionError(f"{doc.name} names {target}, which is outside the repository")
            assert (doc.parent / target).exists() or (root / target).exists(), (doc.name, target)


def test_the_cache_snippet_runs_again_with_the_disk_cache_on(tmp_path):
    """Its first run compiles; a second run in a new process finds both specialisations on disk."""
    import os
    import subprocess
    import sys

    path = tmp_path / "cache_snippet.py"
    path.write_text(snippets()["The compile cache"])
    env = {**os.environ, "PYASC_CACHE": "1", "PYASC_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(README.parent)}
    runs = [subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    assert "CacheInfo(hits=1, disk_hits=0, misses=2, currsize=2)" in runs[0].stdout
    assert "CacheInfo(hits=1, disk_hits=2, misses=0, currsize=2)" in runs[1].stdout
