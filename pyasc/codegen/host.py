"""Host code: one LLVM module per compiled graph, built with llvmlite and JIT-compiled (ORC LLJIT).

Given the runtime dims, the module computes every launch's block count and
tiling data (the schedule's field expressions and the GM base offsets — the
same `pyasc.symbolic` expressions the compiler evaluated), calls back into
the emulator to launch each kernel in order, and reads each If condition
through a second callback to pick the branch it runs. A host-driven runtime
loop is a loop here (one launch per body kernel an iteration); a device loop
is one launch whose tiling fields read the trip count, bound to the symbol
`launch.TRIP` after the host computed it or read it back. A third function
reports the workspace and output sizes.

    i64 pyasc_run(i64* dims, i64 (i64 step, i64 blocks, i64* fields, i64 n)* launch,
                  i64 (i64 cond_site, i64 offset)* cond)
    void pyasc_sizes(i64* dims, i64* out)     ; out[0] = workspace bytes, out[1 + j] = output j bytes

Callbacks and addresses are arguments, never constants in the IR, so the
object code is position independent of this process and can be cached. The
launch callback returns 0 on success and the condition callback 0 or 1;
any other value stops the run and is returned (a Python exception in a callback is kept by the caller and
re-raised after the run, never thrown through C).
"""
from __future__ import annotations

import ctypes
import enum
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import llvmlite
import llvmlite.binding as llvm
from llvmlite import ir

from .. import symbolic as sy
from ..memo import memoised
from ..symbolic import IntLike, Renderer, folded
from .launch import TRIP, DeviceLoopStep, IfStep, Launch, LaunchPlan, LoopKind, LoopStep, Step, base_field

I64 = ir.IntType(64)
I64P = I64.as_pointer()
LAUNCH_FN = ir.FunctionType(I64, [I64, I64, I64P, I64])
COND_FN = ir.FunctionType(I64, [I64, I64])
RUN_FN = ir.FunctionType(I64, [I64P, LAUNCH_FN.as_pointer(), COND_FN.as_pointer()])
SIZES_FN = ir.FunctionType(ir.VoidType(), [I64P, I64P])

LaunchCallback = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64),
                                  ctypes.c_int64)
CondCallback = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)


@dataclass(frozen=True)
class LaunchSite:
    """What the launch callback needs for step `index`: the kernel, its GM bindings, its field order."""

    index: int
    kernel: int
    args: dict[str, str]          # GM parameter -> device buffer name
    fields: tuple[str, ...]       # tiling data order (the program's declared fields)
    loops: tuple[int, ...] = ()   # the runtime loops around this launch, outermost first (for the profile)
    trip: int = -1                # a device loop's launch: the index in `fields` of its trip count (else -1)


class CondKind(enum.Enum):
    BOOL = "bool"      # the callback answers 0 or 1 (an If or while condition)
    INT = "int"        # the callback answers the value (a trip count, >= 0)
    TICK = "tick"      # nothing is read: loop `loop` starts an iteration (for the profile)


@dataclass(frozen=True)
class CondSite:
    """What the condition callback reads for If number `index`: a one-element value in a buffer."""

    index: int
    buffer: str
    dtype: str
    kind: CondKind = CondKind.BOOL
    loop: int = -1


@dataclass
class HostSource:
    ir: str
    sites: list[LaunchSite]
    conds: list[CondSite]         # indexed by the cond callback's first argument
    dims: list[str]               # dim symbols, in the order of the dims array
    outputs: int


def _floordiv(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    q = b.sdiv(x, y)
    r = b.srem(x, y)
    adjust = b.and_(b.icmp_signed("!=", r, ir.Constant(I64, 0)),
                    b.icmp_signed("!=", b.icmp_signed("<", r, ir.Constant(I64, 0)),
                                  b.icmp_signed("<", y, ir.Constant(I64, 0))))
    return b.sub(q, b.zext(adjust, I64))


def _mod(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    r = b.srem(x, y)
    adjust = b.and_(b.icmp_signed("!=", r, ir.Constant(I64, 0)),
                    b.icmp_signed("!=", b.icmp_signed("<", r, ir.Constant(I64, 0)),
                                  b.icmp_signed("<", y, ir.Constant(I64, 0))))
    return b.select(adjust, b.add(r, y), r)


def _llvm_table(b: ir.IRBuilder) -> dict[str, Any]:
    """The host's back end of `symbolic.Renderer`: each op as i64 LLVM instructions (Python's floor semantics)."""
    def binary(fn: Any) -> Any:
        return lambda render, x, y: fn(render(x), render(y))

    def pick(pred: str) -> Any:
        return lambda x, y: b.select(b.icmp_signed(pred, x, y), x, y)

    def compare(pred: str) -> Any:
        return binary(lambda x, y: b.zext(b.icmp_signed(pred, x, y), I64))

    return {
        "add": folded(b.add), "mul": folded(b.mul), "min": folded(pick("<")), "max": folded(pick(">")),
        "floordiv": binary(lambda x, y: _floordiv(b, x, y)),
        "ceildiv": binary(lambda x, y: b.neg(_floordiv(b, b.neg(x), y))),
        "mod": binary(lambda x, y: _mod(b, x, y)),
        "lt": compare("<"), "le": compare("<="), "eq": compare("=="), "ne": compare("!="),
        "select": lambda render, c, x, y: b.select(b.icmp_signed("!=", render(c), ir.Constant(I64, 0)),
                                                   render(x), render(y)),
    }


class ExprEmitter(Renderer):
    """Integer expressions as LLVM IR, one value per distinct expression and dominating region (push / pop)."""

    def __init__(self, b: ir.IRBuilder, symbols: dict[str, ir.Value]):
        def symbol(name: str) -> ir.Value:
            try:
                return symbols[name]
            except KeyError:
                raise KeyError(f"host code: symbol {name!r} is not a dim the host receives") from None
        super().__init__(_llvm_table(b), lambda n: ir.Constant(I64, n), symbol)


def build_host_source(plan: LaunchPlan, kernels: Sequence[Any], output_bytes: Sequence[IntLike | None],
                      name: str) -> HostSource:
    """The host module's IR and the tables its callbacks index (see the module docstring)."""
    module = ir.Module(name=f"pyasc_host_{name}")
    module.triple = llvm.get_process_triple()
    sites: list[LaunchSite] = []
    conds: list[CondSite] = []
    dims = list(plan.dim_symbols)

    # -- pyasc_run ----------------------------------------------------------------------------
    fn = ir.Function(module, RUN_FN, "pyasc_run")
    dims_arg, launch_arg, cond_arg = fn.args
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    symbols = {s: b.load(b.gep(dims_arg, [ir.Constant(I64, i)]), name=s.replace(".", "_")) for i, s in enumerate(dims)}
    width = max([len(k.program.tiling_fields) for k in kernels] + [1])
    fields_mem = b.alloca(I64, ir.Constant(I64, width), name="fields")
    ex = ExprEmitter(b, symbols)
    fail = fn.append_basic_block("fail")
    rc_slot = b.alloca(I64, name="rc")

    loop_stack: list[int] = []
    loop_count = [0]

    def emit_steps(steps: Sequence[Step]) -> None:
        for s in steps:
            if isinstance(s, Launch):
                emit_launch(s)
            elif isinstance(s, LoopStep):
                emit_loop(s)
            elif isinstance(s, DeviceLoopStep):
                emit_device_loop(s)
            else:
                emit_if(s)

    def read_back(loc: Any, dtype: str, kind: CondKind, what: str) -> ir.Value:
        """A one-element value read through the condition callback; a failed read (negative) stops the run."""
        site = CondSite(len(conds), loc.buffer, dtype, kind)
        conds.append(site)
        c = b.call(cond_arg, [ir.Constant(I64, site.index), ex(loc.offset)])
        b.store(c, rc_slot)
        ok = fn.append_basic_block(f"{what}_read{site.index}")
        b.cbranch(b.icmp_signed("<", c, ir.Constant(I64, 0)), fail, ok)
        b.position_at_end(ok)
        return c

    def emit_loop(s: LoopStep) -> None:
        emit_steps(s.init_steps)
        with b.goto_entry_block():  # one slot per loop, however often an enclosing loop runs this one
            go_slot = b.alloca(I64, name="loop_go")
            i_slot = b.alloca(I64, name="loop_i")
        kind = CondKind.INT if s.kind is LoopKind.FOR else CondKind.BOOL
        first = ex(s.first_expr) if s.first_expr is not None else read_back(s.first, s.first_dtype, kind, "first")
        b.store(ir.Constant(I64, 0), i_slot)
        if s.kind is LoopKind.WHILE:
            b.store(first, go_slot)
        head, body_bb, exit_bb = (fn.append_basic_block(n) for n in ("loop_head", "loop_body", "loop_exit"))
        b.branch(head)
        b.position_at_end(head)
        i = b.load(i_slot)
        more = b.icmp_signed("<", i, first) if s.kind is LoopKind.FOR else \
            b.icmp_signed("!=", b.load(go_slot), ir.Constant(I64, 0))
        b.cbranch(more, body_bb, exit_bb)
        b.position_at_end(body_bb)
        ex.push()
        loop_id = loop_count[0]
        loop_count[0] += 1
        tick = CondSite(len(conds), "", "", CondKind.TICK, loop_id)  # one callback an iteration: the profile counts them
        conds.append(tick)
        b.call(cond_arg, [ir.Constant(I64, tick.index), ir.Constant(I64, 0)])
        loop_stack.append(loop_id)
        emit_steps(s.body_steps)
        loop_stack.pop()
        if s.kind is LoopKind.WHILE:
            b.store(read_back(s.cond, s.cond_dtype, CondKind.BOOL, "cond"), go_slot)
        ex.pop()
        b.store(b.add(b.load(i_slot), ir.Constant(I64, 1)), i_slot)
        b.branch(head)
        b.position_at_end(exit_bb)

    def emit_device_loop(s: DeviceLoopStep) -> None:
        """One launch whose kernel runs the loop: the trip count (computed, or read back; at least 0) is bound
        to the symbol its tiling fields read, in a region of its own so no expression over it outlives it."""
        first = ex(s.first_expr) if s.first_expr is not None else read_back(s.first, s.first_dtype, CondKind.INT,
                                                                             "first")
        trip = b.select(b.icmp_signed("<", first, ir.Constant(I64, 0)), ir.Constant(I64, 0), first)
        loop_id = loop_count[0]
        loop_count[0] += 1
        loop_stack.append(loop_id)
        ex.push()
        ex.bind(sy.sym(TRIP), trip)
        emit_launch(s.launch, device_loop=True)
        ex.pop()
        loop_stack.pop()

    def emit_launch(s: Launch, device_loop: bool = False) -> None:
        k = kernels[s.kernel]
        order = tuple(k.program.tiling_fields)
        trip = next((i for i, f in enumerate(order) if k.fields.get(f) == sy.sym(TRIP)), -1) if device_loop else -1
        site = LaunchSite(len(sites), s.kernel, {p: loc.buffer for p, loc in s.args.items()}, order, tuple(loop_stack),
                          trip)
        sites.append(site)
        exprs = dict(k.fields)
        for p, loc in s.args.items():
            exprs[base_field(p)] = loc.offset
        blocks = ex(k.blocks)
        go = fn.append_basic_block(f"launch{site.index}")
        done = fn.append_basic_block(f"after{site.index}")
        b.cbranch(b.icmp_signed(">", blocks, ir.Constant(I64, 0)), go, done)
        b.position_at_end(go)
        ex.push()
        for i, f in enumerate(order):
            b.store(ex(exprs[f]), b.gep(fields_mem, [ir.Constant(I64, i)]))
        rc = b.call(launch_arg, [ir.Constant(I64, site.index), blocks, fields_mem, ir.Constant(I64, len(order))])
        ex.pop()
        b.store(rc, rc_slot)
        b.cbranch(b.icmp_signed("!=", rc, ir.Constant(I64, 0)), fail, done)
        b.position_at_end(done)

    def emit_if(s: IfStep) -> None:
        then_bb, else_bb, merge, pick = (fn.append_basic_block(n) for n in ("then", "else", "endif", "pick"))
        if s.predicate is not None:  # a shape predicate: computed here from the dims, nothing read back
            c = ex(s.predicate)
            b.branch(pick)
        else:
            site = CondSite(len(conds), s.cond.buffer, s.cond_dtype)
            conds.append(site)
            c = b.call(cond_arg, [ir.Constant(I64, site.index), ex(s.cond.offset)])
            b.store(c, rc_slot)
            b.cbranch(b.icmp_signed("<", c, ir.Constant(I64, 0)), fail, pick)  # a failed read is negative
        b.position_at_end(pick)
        b.cbranch(b.icmp_signed("!=", c, ir.Constant(I64, 0)), then_bb, else_bb)
        for bb, steps in ((then_bb, s.then_steps), (else_bb, s.else_steps)):
            b.position_at_end(bb)
            ex.push()
            emit_steps(steps)
            ex.pop()
            b.branch(merge)
        b.position_at_end(merge)

    emit_steps(plan.steps)
    b.ret(ir.Constant(I64, 0))
    b.position_at_end(fail)
    b.ret(b.load(rc_slot))

    # -- pyasc_sizes ----------------------------------------------------------------------------
    sizes = ir.Function(module, SIZES_FN, "pyasc_sizes")
    sd, out = sizes.args
    b2 = ir.IRBuilder(sizes.append_basic_block("entry"))
    syms2 = {s: b2.load(b2.gep(sd, [ir.Constant(I64, i)])) for i, s in enumerate(dims)}
    ex2 = ExprEmitter(b2, syms2)
    values = [plan.workspace_bytes] + [n if n is not None else 0 for n in output_bytes]
    for i, v in enumerate(values):
        b2.store(ex2(v), b2.gep(out, [ir.Constant(I64, i)]))
    b2.ret_void()
    return HostSource(str(module), sites, conds, dims, len(output_bytes))


# ---- compilation and loading ----------------------------------------------------------------------


_THREAD = threading.local()


def _target_machine() -> Any:
    """This machine's target (one per thread: LLVM does not promise that two threads may emit with one)."""
    tm = getattr(_THREAD, "target_machine", None)
    if tm is None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        # opt 0: the host code is a few stores and calls back into Python; optimising it only costs compile time
        tm = _THREAD.target_machine = target.create_target_machine(reloc="pic", codemodel="default", opt=0)
    return tm


def compile_object(source: HostSource) -> bytes:
    """Object code of the host module for this machine (what the disk cache stores)."""
    return _object_code(_MODULE_ID.sub("; ModuleID = \"pyasc_host\"", source.ir, count=1))


# the module's name is the kernel's: left out, kernels with the same launch structure (many are) compile to the
# same object code
_MODULE_ID = re.compile(r"^; ModuleID = .*$", re.M)


@memoised(256)
def _object_code(ir_text: str) -> bytes:
    """Object code of an IR text: a pure function of the text (and of this process's LLVM and CPU)."""
    mod = llvm.parse_assembly(ir_text)
    mod.verify()
    return _target_machine().emit_object(mod)


def toolchain_id() -> str:
    """What object code depends on besides the IR: llvmlite/LLVM versions and the host CPU."""
    llvm.initialize_native_target()
    return f"llvmlite {llvmlite.__version__}, LLVM {'.'.join(map(str, llvm.llvm_version_info))}, " \
           f"{llvm.get_process_triple()} {llvm.get_host_cpu_name()}"


@memoised(256)
def _linked(obj: bytes) -> tuple[Any, Any, Any, Any]:
    """(JIT, its resource tracker, pyasc_run, pyasc_sizes) of object code linked into a JIT of its own: a pure
    function of the code (the host functions keep no state between calls: no globals, everything in their
    arguments and callbacks), so kernels whose host code is the same share one."""
    jit = llvm.create_lljit_compiler(_target_machine())
    tracker = (llvm.JITLibraryBuilder().add_object_img(obj).export_symbol("pyasc_run")
               .export_symbol("pyasc_sizes").link(jit, "pyasc_host"))
    run = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.POINTER(ctypes.c_int64), LaunchCallback,
                           CondCallback)(tracker["pyasc_run"])
    sizes = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64))(
        tracker["pyasc_sizes"])
    return jit, tracker, run, sizes


class HostError(RuntimeError):
    """The host code stopped with a callback's error code."""


@dataclass
class HostProgram:
    """A loaded host module: call `run` with the dims and two Python callbacks."""

    source: HostSource
    object_code: bytes
    _jit: Any = field(default=None, repr=False)
    _tracker: Any = field(default=None, repr=False)
    _run: Any = field(default=None, repr=False)
    _sizes: Any = field(default=None, repr=False)

    @classmethod
    def load(cls, source: HostSource, object_code: bytes | None = None) -> "HostProgram":
        obj = object_code if object_code is not None else compile_object(source)
        prog = cls(source, obj)
        prog._jit, prog._tracker, prog._run, prog._sizes = _linked(obj)
        return prog

    def _dims(self, env: dict[str, int]) -> Any:
        arr = (ctypes.c_int64 * max(1, len(self.source.dims)))()
        for i, s in enumerate(self.source.dims):
            arr[i] = int(env[s])
        return arr

    def sizes(self, env: dict[str, int]) -> tuple[int, list[int]]:
        out = (ctypes.c_int64 * (1 + self.source.outputs))()
        self._sizes(self._dims(env), out)
        return int(out[0]), [int(x) for x in out[1:]]

    def run(self, env: dict[str, int], launch: Callable[[LaunchSite, int, list[int]], None],
            cond: Callable[[CondSite, int], bool]) -> None:
        """Run the host code; `launch(site, blocks, fields)` and `cond(site, offset)` are Python callbacks."""
        errors: list[BaseException] = []

        def on_launch(step: int, blocks: int, fields: Any, n: int) -> int:
            try:
                launch(self.source.sites[step], int(blocks), [int(fields[i]) for i in range(n)])
                return 0
            except BaseException as e:  # kept and re-raised after the run: never thrown through C
                errors.append(e)
                return 1

        def on_cond(index: int, offset: int) -> int:
            try:
                site = self.source.conds[index]
                value = cond(site, int(offset))
                if site.kind is CondKind.TICK:
                    return 0
                if site.kind is CondKind.INT:
                    return max(int(value), 0)  # a trip count: range() of a negative count is empty
                return 1 if value else 0
            except BaseException as e:  # kept and re-raised after the run; the host stops on a negative value
                errors.append(e)
                return -1

        launch_cb, cond_cb = LaunchCallback(on_launch), CondCallback(on_cond)  # alive until the call returns
        rc = self._run(self._dims(env), launch_cb, cond_cb)
        if errors:
            raise errors[0]
        if rc != 0:
            raise HostError(f"host code stopped with code {rc}")
