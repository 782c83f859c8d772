"""The driver reuses what the router's check of a mixed launch made (its analyses and tilings) instead of making
them again, and lowers the same program either way."""
from __future__ import annotations

import dataclasses

import numpy as np

import pyasc
from pyasc.codegen import route
from pyasc.codegen.templates import TEMPLATES


def mm_bias_relu(a, b, bias):
    return pyasc.relu(a @ b + bias)


def _compile(monkeypatch, keep_check: bool):
    calls = {"analyze": 0, "tilings": 0}
    t = TEMPLATES["mixed"]

    def counted(name, fn):
        def call(*args):
            calls[name] += 1
            return fn(*args)
        return call

    monkeypatch.setitem(TEMPLATES, "mixed", dataclasses.replace(t, analyze=counted("analyze", t.analyze),
                                                                tilings=counted("tilings", t.tilings)))
    if not keep_check:
        monkeypatch.setattr(route, "Checked", lambda *args: None)
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-2, 3, (64, 64)).astype(np.float16) for _ in range(2))
    bias = rng.integers(-2, 3, 64).astype(np.float16)
    art = pyasc.kernel(mm_bias_relu, chip="tiny").compile(a, b, bias)
    monkeypatch.undo()
    assert any(k.template == "mixed" for k in art.kernels)
    return calls, {k: v for k, v in art.stages.items() if k.startswith(("tiling", "program", "launch"))}


def test_the_router_s_analyses_and_tilings_are_lowered_from_not_made_again(monkeypatch):
    reused, stages = _compile(monkeypatch, keep_check=True)
    again, stages_again = _compile(monkeypatch, keep_check=False)
    assert reused == {"analyze": 1, "tilings": 1}
    assert again == {"analyze": 2, "tilings": 2}
    assert stages == stages_again and stages
