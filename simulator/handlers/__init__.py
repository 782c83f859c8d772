"""Per-instruction handlers: each instruction compiles to a closure `h(group) -> next pc | None | BARRIER`.

A pipe instruction's handler resolves its operands for the group (checking
every capacity, alignment and bounds rule), appends its timing record to the
group's stream, and issues its memory action, which runs at once unless the
pipe is held back behind a wait_flag (see executor.py).

Modules: common (getters, checks, views), scalar (scalar unit, control flow,
sync), moves (GM <-> core data moves), cube (L1 -> L0, mmad, FixPipe), vector
(vector unit).
"""
from __future__ import annotations

from typing import Any, Callable

from .. import isa
from ..lockstep import Group, ProgramInfo
from .cube import _c_fixpipe, _c_load3d, _c_load_bias, _c_load_l0, _c_load_l0_2d, _c_mmad
from .moves import _c_copy, _c_copy_nd2nz
from .scalar import (
    _c_alu, _c_core_idx, _c_core_num, _c_cross_set, _c_cross_wait, _c_cvt, _c_else, _c_end_if, _c_end_loop, _c_falu,
    _c_flag, _c_group_idx, _c_if, _c_ld, _c_loop, _c_mov, _c_pipe_barrier, _c_st, _c_sub_idx, _c_sync_all,
    _c_tiling,
)
from .vector import (
    _c_vbinary, _c_vbroadcast, _c_vcast, _c_vcompare, _c_vcopy, _c_vdup, _c_vreduce, _c_vscalar, _c_vselect,
    _c_vgather, _c_vmrgsort4, _c_vsort32, _c_vtranspose, _c_vunary,
)

_COMPILERS: dict[type, Callable] = {
    isa.CoreIdx: _c_core_idx, isa.CoreNum: _c_core_num, isa.Tiling: _c_tiling, isa.Mov: _c_mov,
    isa.Alu: _c_alu, isa.Loop: _c_loop, isa.EndLoop: _c_end_loop, isa.If: _c_if, isa.Else: _c_else,
    isa.EndIf: _c_end_if, isa.SetFlag: _c_flag, isa.WaitFlag: _c_flag, isa.PipeBarrier: _c_pipe_barrier,
    isa.SyncAll: _c_sync_all, isa.Copy: _c_copy, isa.CopyNd2Nz: _c_copy_nd2nz, isa.LoadL0: _c_load_l0,
    isa.LoadBias: _c_load_bias, isa.Mmad: _c_mmad, isa.FixPipe: _c_fixpipe, isa.VBinary: _c_vbinary,
    isa.VScalar: _c_vscalar, isa.VUnary: _c_vunary, isa.VCompare: _c_vcompare, isa.VSelect: _c_vselect,
    isa.VCast: _c_vcast, isa.VDup: _c_vdup, isa.VCopy: _c_vcopy, isa.VReduce: _c_vreduce,
    isa.VBroadcast: _c_vbroadcast, isa.VTranspose: _c_vtranspose,
    isa.LoadL0Fractals: _c_load_l0_2d, isa.Load3D: _c_load3d,
    isa.ScalarLoad: _c_ld, isa.ScalarStore: _c_st, isa.FAlu: _c_falu, isa.Cvt: _c_cvt, isa.VGather: _c_vgather,
    isa.VSort32: _c_vsort32, isa.VMrgSort4: _c_vmrgsort4,
    isa.GroupIdx: _c_group_idx, isa.SubIdx: _c_sub_idx, isa.CrossSet: _c_cross_set, isa.CrossWait: _c_cross_wait,
}


def compile_instruction(rt: ProgramInfo, idx: int, instr: isa.Instr) -> Callable[[Group], Any]:
    return _COMPILERS[type(instr)](rt, idx, instr)
