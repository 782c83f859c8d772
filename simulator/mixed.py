"""Mixed launches: a cube program and a vector program run together in groups of one AIC and its AIVs.

    k = MixedKernel(aic_program, aiv_program)
    res = dev.launch(k, block_dim=groups, args={...}, tiling={...})

`block_dim` counts groups: each has one AIC (running `aic`) and `group_aivs`
(2) AIVs (running `aiv`). Both programs see the same GM arguments and tiling
data (each declares the ones it uses; the kernel's are the union, AIC's
first). The two sides exchange data only through GM, ordered by cross-core
flags (Program.cross_set / cross_wait).
"""
from __future__ import annotations

import json
from typing import Any, Optional

from .errors import ProgramError
from .program import Program

JSON_FORMAT = "simulator-mixed-kernel"


class MixedKernel:
    """A pair of programs launched together: `aic` on each group's cube core, `aiv` on its vector cores."""

    def __init__(self, aic: Program, aiv: Program, name: Optional[str] = None):
        if not isinstance(aic, Program) or aic.core_type != "aic":
            raise ProgramError(f"MixedKernel: aic must be a Program for core_type 'aic', got {aic!r}")
        if not isinstance(aiv, Program) or aiv.core_type != "aiv":
            raise ProgramError(f"MixedKernel: aiv must be a Program for core_type 'aiv', got {aiv!r}")
        self.aic, self.aiv = aic, aiv
        self.name = name or f"{aic.name}+{aiv.name}"

    @property
    def core_type(self) -> str:
        return "mix"

    @property
    def params(self) -> list[str]:
        return self.aic.params + [p for p in self.aiv.params if p not in self.aic.params]

    @property
    def tiling_fields(self) -> list[str]:
        return self.aic.tiling_fields + [f for f in self.aiv.tiling_fields if f not in self.aic.tiling_fields]

    def __len__(self) -> int:
        return len(self.aic) + len(self.aiv)

    def validate(self) -> None:
        """Both programs' block structure (ProgramError otherwise)."""
        self.aic.validate()
        self.aiv.validate()

    def listing(self) -> str:
        return f"mixed kernel {self.name}\n{self.aic.listing()}\n{self.aiv.listing()}"

    def to_dict(self) -> dict:
        return {"format": JSON_FORMAT, "name": self.name, "aic": self.aic.to_dict(), "aiv": self.aiv.to_dict()}

    def to_json(self, indent: Optional[int] = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Any) -> "MixedKernel":
        if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
            raise ProgramError(f"not a {JSON_FORMAT} document (missing or wrong 'format')")
        try:
            return cls(Program.from_dict(data["aic"]), Program.from_dict(data["aiv"]), data.get("name"))
        except KeyError as e:
            raise ProgramError(f"mixed kernel document lacks field {e.args[0]!r}") from None

    def __repr__(self) -> str:
        return f"MixedKernel({self.name!r}, aic={len(self.aic)} instructions, aiv={len(self.aiv)} instructions)"
