"""Several launches of one kernel call: totals and one Chrome trace with the launches end to end."""
import json

import numpy as np
import pytest

from simulator import CallProfile, Device
from simulator.examples import matmul_epilogue, vector_add


def test_a_call_profile_sums_its_launches_and_lays_them_end_to_end(rng, tmp_path):
    dev = Device("tiny")
    x = rng.standard_normal(2000).astype(np.float32)
    a = rng.standard_normal((64, 64)).astype(np.float16)
    with dev.call():
        _, r1 = vector_add.run(x, x, "tiny", device=dev, sanitize=False)
        _, r2 = matmul_epilogue.run(a, a, "tiny", groups=1, sanitize=False, device=dev)
    prof = CallProfile([r1, r2])
    assert prof.cycles == r1.cycles + r2.cycles and prof.time_s == pytest.approx(r1.time_s + r2.time_s)
    assert prof.gm_read_bytes == r1.gm_read_bytes + r2.gm_read_bytes
    assert prof.pipe_busy["MTE2"] == r1.pipe_busy["MTE2"] + r2.pipe_busy["MTE2"] and prof.pipe_busy["M"] > 0
    assert "kernel call: 2 launch(es)" in prof.summary()
    path = tmp_path / "call.json"
    prof.save_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    launches = [e for e in events if e.get("cat") == "launch" and e["pid"] == 0]
    assert [e["name"] for e in launches] == [r1.program, r2.program]
    assert launches[1]["ts"] == pytest.approx(launches[0]["ts"] + launches[0]["dur"])
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names[0] == "kernel call" and names[1] == "core 0 (AIC)" and names[1001] == "core 0 (AIV)"
    assert len([e for e in events if e.get("name") == "process_name" and e["pid"] == 1001]) == 1
    second = [e for e in events if e["ph"] == "X" and e.get("pid") == 1 and e.get("cat") == "instr"]
    assert min(e["ts"] for e in second) >= launches[1]["ts"]  # the AIC only runs in the second launch
    flows = [e["id"] for e in events if e["ph"] == "s"]
    assert len(flows) == len(set(flows))
