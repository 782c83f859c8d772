"""Integer expressions over named symbols: the one algebra of dims, tiling formulas and host code.

A value is either a Python `int` or an immutable `Expr`; the constructors
below (and Python's operators on an Expr) simplify as they build, so a
formula whose inputs are all known folds to an int. One `Renderer` walks an
expression for every back end: the Python evaluator (`evaluate`, the
compiler's), the tile programs' scalar instructions and the host's LLVM IR,
each a table of what every op becomes, so they can never disagree on which
expressions exist or where a computed value may be reused.

Semantics are Python's on unbounded integers: `//` and `%` floor, `ceildiv`
rounds up, comparisons give 0 or 1, `select(c, a, b)` is `a if c != 0 else b`.

    n = sym("n")
    tile = min_(n, 4096)
    blocks = ceildiv(n, tile)
    evaluate(blocks, {"n": 10000})   # 3
    str(align_up(n, 16))             # "ceildiv(n, 16)*16"

This module is a leaf: it imports nothing from pyasc but `pyasc.memo` (itself a leaf).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Union

from .memo import memoised

#: ops with their arity; "add"/"mul"/"min"/"max" take two or more arguments
BINARY = ("floordiv", "ceildiv", "mod", "lt", "le", "eq", "ne")
VARIADIC = ("add", "mul", "min", "max")
OPS = ("sym", *VARIADIC, *BINARY, "select")


class Expr:
    """A symbolic integer. Build with `sym` and the functions below; compare structurally with ==."""

    __slots__ = ("op", "args", "_hash", "_text", "_free", "_fn")

    def __init__(self, op: str, args: tuple) -> None:
        # only the simplifying constructors below call this
        self.op = op
        self.args = args
        self._hash = hash((op, args))
        self._text: str | None = None
        self._free: frozenset[str] | None = None   # free_symbols, computed once
        self._fn: Callable[[Mapping[str, int]], int] | None = None   # evaluate's compiled function, made once

    # structural identity -------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and other._hash == self._hash and other.op == self.op and other.args == self.args

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple:
        return (_rebuild, (self.op, self.args))

    # arithmetic ------------------------------------------------------------
    def __add__(self, o: "IntLike") -> "IntLike":
        return add(self, o)

    __radd__ = __add__

    def __sub__(self, o: "IntLike") -> "IntLike":
        return add(self, mul(-1, o))

    def __rsub__(self, o: "IntLike") -> "IntLike":
        return add(o, mul(-1, self))

    def __mul__(self, o: "IntLike") -> "IntLike":
        return mul(self, o)

    __rmul__ = __mul__

    def __neg__(self) -> "IntLike":
        return mul(-1, self)

    def __floordiv__(self, o: "IntLike") -> "IntLike":
        return floordiv(self, o)

    def __rfloordiv__(self, o: "IntLike") -> "IntLike":
        return floordiv(o, self)

    def __mod__(self, o: "IntLike") -> "IntLike":
        return mod(self, o)

    def __rmod__(self, o: "IntLike") -> "IntLike":
        return mod(o, self)

    def __int__(self) -> int:
        raise TypeError(f"symbolic expression {self} has no integer value until its symbols are bound")

    __index__ = __int__

    # text ----------------------------------------------------------------------
    def __str__(self) -> str:
        if self._text is None:
            self._text = _format(self)
        return self._text

    def __repr__(self) -> str:
        return f"Expr({str(self)!r})"

    @property
    def name(self) -> str:
        """The symbol's name (only for op "sym")."""
        if self.op != "sym":
            raise AttributeError(f"{self} is not a symbol")
        return self.args[0]


IntLike = Union[int, Expr]

# the compiler builds the same formulas again for every tiling candidate and every kernel (97-99% of the
# constructor calls of a compile repeat an earlier one): the constructors below remember their recent results
_memoised = memoised(1 << 15)


def _rebuild(op: str, args: tuple) -> IntLike:
    return _BUILDERS[op](*args)


def is_expr(v: Any) -> bool:
    return isinstance(v, Expr)


def _check(v: Any, what: str = "operand") -> IntLike:
    if isinstance(v, Expr):
        return v
    if isinstance(v, bool) or not isinstance(v, int):
        try:
            import numpy as np  # numpy integers are common operands; this module stays importable without it

            if isinstance(v, np.integer):
                return int(v)
        except ImportError:  # pragma: no cover - numpy is a core dependency
            pass
        raise TypeError(f"symbolic {what} must be an int or an Expr, got {type(v).__name__} {v!r}")
    return v


@_memoised
def sym(name: str) -> Expr:
    """The symbol `name` (an identifier, optionally dotted: "x.d0")."""
    if not isinstance(name, str) or not name or not all(p.isidentifier() for p in name.split(".")):
        raise ValueError(f"a symbol name must be an identifier, got {name!r}")
    return Expr("sym", (name,))


# ---- simplifying constructors ---------------------------------------------------


def _sort_key(v: IntLike) -> tuple:
    return (0, v, "") if isinstance(v, int) else (1, 0, str(v))


def _split_coeff(v: IntLike) -> tuple[int, IntLike]:
    """v = coeff * rest, rest an Expr (or 1)."""
    if isinstance(v, int):
        return v, 1
    if v.op == "mul" and isinstance(v.args[0], int):
        rest = v.args[1:]
        return v.args[0], rest[0] if len(rest) == 1 else Expr("mul", rest)
    return 1, v


@_memoised
def add(*terms: IntLike) -> IntLike:
    """Sum with constants folded and like terms combined (2*n + n -> 3*n)."""
    const = 0
    coeffs: dict[IntLike, int] = {}
    order: list[IntLike] = []
    stack = [_check(t) for t in reversed(terms)]
    while stack:
        t = stack.pop()
        if isinstance(t, int):
            const += t
            continue
        if t.op == "add":
            stack.extend(reversed(t.args))
            continue
        c, rest = _split_coeff(t)
        if rest not in coeffs:
            coeffs[rest] = 0
            order.append(rest)
        coeffs[rest] += c
    live = sorted((r for r in order if coeffs[r] != 0), key=_sort_key)
    parts: list[IntLike] = [mul(coeffs[r], r) for r in live]
    if const:
        parts.append(const)
    if not parts:
        return 0
    if len(parts) == 1:
        return parts[0]
    return Expr("add", tuple(parts))


@_memoised
def mul(*factors: IntLike) -> IntLike:
    """Product with constants folded to one leading coefficient; a product with a sum is left as is."""
    const = 1
    rest: list[Expr] = []
    stack = [_check(f) for f in reversed(factors)]
    while stack:
        f = stack.pop()
        if isinstance(f, int):
            const *= f
        elif f.op == "mul":
            stack.extend(reversed(f.args))
        else:
            rest.append(f)
    if const == 0:
        return 0
    if not rest:
        return const
    rest.sort(key=_sort_key)
    if len(rest) == 1 and rest[0].op == "add":
        # distribute a constant over a sum, so that n*2 + (n + 1)*2 still folds
        return add(*(mul(const, t) for t in rest[0].args)) if const != 1 else rest[0]
    if const == 1 and len(rest) == 1:
        return rest[0]
    return Expr("mul", ((const,) if const != 1 else ()) + tuple(rest))


def _divides(d: int, v: IntLike) -> bool:
    """Whether the int `d` divides `v` for every value of its symbols."""
    if isinstance(v, int):
        return v % d == 0
    if v.op == "add":
        return all(_divides(d, t) for t in v.args)
    c, _ = _split_coeff(v)
    return c % d == 0


def _exact_div(v: IntLike, d: int) -> IntLike:
    """v / d for a v that `_divides` shows to be a multiple of d."""
    if isinstance(v, int):
        return v // d
    if v.op == "add":
        return add(*(_exact_div(t, d) for t in v.args))
    c, rest = _split_coeff(v)
    return mul(c // d, rest)


@_memoised
def floordiv(a: IntLike, b: IntLike) -> IntLike:
    a, b = _check(a), _check(b)
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError(f"symbolic floordiv of {a} by zero")
        if isinstance(a, int):
            return a // b
        if b == 1:
            return a
        if b > 0 and _divides(b, a):
            return _exact_div(a, b)
        if a.op == "floordiv" and isinstance(a.args[1], int) and a.args[1] > 0 and b > 0:
            return floordiv(a.args[0], a.args[1] * b)  # (x // p) // q == x // (p*q) for p, q > 0
    if isinstance(a, int) and a == 0:
        return 0
    return Expr("floordiv", (a, b))


@_memoised
def ceildiv(a: IntLike, b: IntLike) -> IntLike:
    a, b = _check(a), _check(b)
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError(f"symbolic ceildiv of {a} by zero")
        if isinstance(a, int):
            return -(-a // b)
        if b == 1:
            return a
        if b > 0 and _divides(b, a):
            return _exact_div(a, b)
    if isinstance(a, int) and a == 0:
        return 0
    return Expr("ceildiv", (a, b))


@_memoised
def mod(a: IntLike, b: IntLike) -> IntLike:
    a, b = _check(a), _check(b)
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError(f"symbolic mod of {a} by zero")
        if isinstance(a, int):
            return a % b
        if b == 1 or (b > 0 and _divides(b, a)):
            return 0
    return Expr("mod", (a, b))


def align_up(a: IntLike, b: IntLike) -> IntLike:
    """The smallest multiple of b that is >= a."""
    return mul(ceildiv(a, b), b)


def align_down(a: IntLike, b: IntLike) -> IntLike:
    return mul(floordiv(a, b), b)


def _minmax(op: str, pick: Callable[[Iterable[int]], int], values: tuple) -> IntLike:
    if not values:
        raise TypeError(f"{op}() needs at least one argument")
    const: int | None = None
    rest: list[Expr] = []
    stack = [_check(v) for v in reversed(values)]
    while stack:
        v = stack.pop()
        if isinstance(v, int):
            const = v if const is None else pick((const, v))
        elif v.op == op:
            stack.extend(reversed(v.args))
        elif v not in rest:
            rest.append(v)
    rest = _drop_dominated(op, rest)
    if not rest:
        assert const is not None
        return const
    rest.sort(key=_sort_key)
    parts: tuple = tuple(rest) + (() if const is None else (const,))
    if len(parts) == 1:
        return parts[0]
    return Expr(op, parts)


def _drop_dominated(op: str, rest: list[Expr]) -> list[Expr]:
    """min(x + 3, x + 5) -> x + 3: terms that differ only by a constant compare exactly."""
    best: dict[IntLike, tuple[int, Expr]] = {}
    order: list[IntLike] = []
    for v in rest:
        base, off = _split_const(v)
        if base not in best:
            best[base] = (off, v)
            order.append(base)
        elif (off < best[base][0]) == (op == "min"):
            best[base] = (off, v)
    return [best[b][1] for b in order]


def _split_const(v: Expr) -> tuple[IntLike, int]:
    if v.op == "add" and isinstance(v.args[-1], int):
        rest = v.args[:-1]
        return (rest[0] if len(rest) == 1 else Expr("add", rest)), v.args[-1]
    return v, 0


@_memoised
def min_(*values: IntLike) -> IntLike:
    return _minmax("min", min, values)


@_memoised
def max_(*values: IntLike) -> IntLike:
    return _minmax("max", max, values)


def _compare(op: str, a: IntLike, b: IntLike, fn: Callable[[int, int], bool]) -> IntLike:
    a, b = _check(a), _check(b)
    if isinstance(a, int) and isinstance(b, int):
        return int(fn(a, b))
    if a == b:
        return int(fn(0, 0))
    diff = add(a, mul(-1, b))
    if isinstance(diff, int):
        return int(fn(diff, 0))
    return Expr(op, (a, b))


@_memoised
def lt(a: IntLike, b: IntLike) -> IntLike:
    return _compare("lt", a, b, lambda x, y: x < y)


@_memoised
def le(a: IntLike, b: IntLike) -> IntLike:
    return _compare("le", a, b, lambda x, y: x <= y)


def gt(a: IntLike, b: IntLike) -> IntLike:
    return lt(b, a)


def ge(a: IntLike, b: IntLike) -> IntLike:
    return le(b, a)


@_memoised
def eq(a: IntLike, b: IntLike) -> IntLike:
    return _compare("eq", a, b, lambda x, y: x == y)


@_memoised
def ne(a: IntLike, b: IntLike) -> IntLike:
    return _compare("ne", a, b, lambda x, y: x != y)


@_memoised
def select(cond: IntLike, a: IntLike, b: IntLike) -> IntLike:
    cond, a, b = _check(cond), _check(a), _check(b)
    if isinstance(cond, int):
        return a if cond != 0 else b
    if a == b:
        return a
    return Expr("select", (cond, a, b))



_BUILDERS: dict[str, Callable[..., IntLike]] = {
    "sym": sym, "add": add, "mul": mul, "floordiv": floordiv, "ceildiv": ceildiv, "mod": mod,
    "min": min_, "max": max_, "lt": lt, "le": le, "eq": eq, "ne": ne, "select": select,
}


def build(op: str, *args: IntLike) -> IntLike:
    """The expression `op(*args)`, simplified (the inverse of reading `e.op, e.args`)."""
    try:
        fn = _BUILDERS[op]
    except KeyError:
        raise ValueError(f"unknown symbolic op {op!r}; known: {', '.join(OPS)}") from None
    return fn(*args)


# ---- queries -----------------------------------------------------------------------

class Renderer:
    """Renders integer expressions in one back end: the walk and the reuse of computed values, written once.

    A back end is a table `op -> fn(render, *args)` (each renders the arguments it needs: a lazy `select`
    renders one branch), how it renders an int (`const`) and a symbol (`symbol`). The Python evaluator, the
    tile programs' scalar emitter and the host's LLVM emitter are three such tables.

    With `memo`, a value computed while a scope is open is reused by that scope and the scopes opened inside
    it, never after it is closed (`push` / `pop`): emitted code reuses a register or an SSA value only where
    its definition dominates; `bind` gives an expression a value made elsewhere (a loop variable)."""

    def __init__(self, table: Mapping[str, Callable[..., Any]], const: Callable[[int], Any],
                 symbol: Callable[[str], Any], memo: bool = True):
        self.table, self.const, self.symbol = table, const, symbol
        self.scopes: list[dict[Expr, Any]] | None = [{}] if memo else None

    def __call__(self, e: IntLike) -> Any:
        if isinstance(e, int):
            return self.const(e)
        scopes = self.scopes
        if scopes is None:
            return self.symbol(e.args[0]) if e.op == "sym" else self.table[e.op](self, *e.args)
        for sc in reversed(scopes):
            hit = sc.get(e)
            if hit is not None:
                return hit
        v = self.symbol(e.args[0]) if e.op == "sym" else self.table[e.op](self, *e.args)
        scopes[-1][e] = v
        return v

    def lookup(self, e: Expr) -> Any:
        """The value an open scope holds for `e`, or None."""
        for sc in reversed(self.scopes or ()):
            hit = sc.get(e)
            if hit is not None:
                return hit
        return None

    def bind(self, e: Expr, value: Any) -> None:
        assert self.scopes is not None
        self.scopes[-1][e] = value

    def push(self) -> None:
        assert self.scopes is not None
        self.scopes.append({})

    def pop(self) -> None:
        assert self.scopes is not None
        self.scopes.pop()


def folded(fn: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    """A variadic op as a left fold of a binary back-end operation."""
    def apply(render: Callable[[IntLike], Any], *args: IntLike) -> Any:
        out = render(args[0])
        for a in args[1:]:
            out = fn(out, render(a))
        return out
    return apply


def _binary(fn: Callable[[int, int], int]) -> Callable[..., int]:
    return lambda render, a, b: fn(render(a), render(b))


#: Python's semantics of every op but `select` on unbounded integers (a variadic op as the step of a left fold)
INT_OPS: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "min": min,
    "max": max,
    "floordiv": lambda a, b: a // b,
    "ceildiv": lambda a, b: -(-a // b),
    "mod": lambda a, b: a % b,
    "lt": lambda a, b: int(a < b),
    "le": lambda a, b: int(a <= b),
    "eq": lambda a, b: int(a == b),
    "ne": lambda a, b: int(a != b),
}

#: the Python back end as a Renderer table (the ops of INT_OPS; `select` evaluates one branch)
EVAL_TABLE: dict[str, Callable[..., int]] = {
    **{op: (folded if op in VARIADIC else _binary)(fn) for op, fn in INT_OPS.items()},
    "select": lambda render, c, a, b: render(a) if render(c) != 0 else render(b),
}


class UnboundSymbolError(KeyError):
    """evaluate() met a symbol with no binding."""


def evaluate(v: IntLike, bindings: Mapping[str, int]) -> int:
    """The int value of `v` with every symbol bound; raises UnboundSymbolError naming a missing one.

    The cost model evaluates the same formulas thousands of times per compile (every statement of every
    candidate's schedule), so each expression is compiled once into a Python function of the bindings with
    INT_OPS's semantics (`_compiled`); it gives what a `Renderer` over EVAL_TABLE gives (a test checks)."""
    if isinstance(v, int):
        return v
    if v.__class__ is Expr:   # (its function kept on it: no memo lookup, no hashing, per call)
        fn = v._fn
        if fn is None:
            fn = v._fn = _compiled(v)
    else:
        fn = _compiled(v)
    try:
        return fn(bindings)
    except UnboundSymbolError:
        raise
    except KeyError as e:
        if not e.args or not isinstance(e.args[0], str) or e.args[0] in bindings:
            raise
        raise UnboundSymbolError(f"symbol {e.args[0]!r} of {v} is not bound "
                                 f"(bound: {', '.join(sorted(bindings)) or 'none'})") from None


#: Python source of each op over its arguments' sources (INT_OPS's semantics; `select` evaluates one branch)
_PY_OPS: dict[str, Callable[[list[str]], str]] = {
    "add": lambda a: "(" + " + ".join(a) + ")",
    "mul": lambda a: "(" + " * ".join(a) + ")",
    "min": lambda a: "_min(" + ", ".join(a) + ")",
    "max": lambda a: "_max(" + ", ".join(a) + ")",
    "floordiv": lambda a: f"({a[0]} // {a[1]})",
    "ceildiv": lambda a: f"(-(-{a[0]} // {a[1]}))",
    "mod": lambda a: f"({a[0]} % {a[1]})",
    "lt": lambda a: f"_int({a[0]} < {a[1]})",
    "le": lambda a: f"_int({a[0]} <= {a[1]})",
    "eq": lambda a: f"_int({a[0]} == {a[1]})",
    "ne": lambda a: f"_int({a[0]} != {a[1]})",
    "select": lambda a: f"({a[1]} if {a[0]} != 0 else {a[2]})",
}
_PY_NAMES = {"_int": int, "_min": min, "_max": max}


def _source(v: IntLike) -> str:
    if isinstance(v, int):
        return f"({v!r})"
    if v.op == "sym":
        return f"_int(b[{v.args[0]!r}])"
    return _PY_OPS[v.op]([_source(a) for a in v.args])


@memoised(1 << 14)
def _compiled(e: Expr) -> Callable[[Mapping[str, int]], int]:
    """`e` as a Python function of the bindings; an expression too deep for Python's parser is walked."""
    try:
        return eval(f"lambda b: {_source(e)}", dict(_PY_NAMES))  # noqa: S307 - source built above from ints and names
    except (SyntaxError, RecursionError, MemoryError):
        return lambda b: _value(e, b)


def _value(v: IntLike, bindings: Mapping[str, int]) -> int:
    if isinstance(v, int):
        return v
    op, args = v.op, v.args
    if op == "sym":
        return int(bindings[args[0]])
    if op == "select":
        return _value(args[1] if _value(args[0], bindings) != 0 else args[2], bindings)
    fn = INT_OPS[op]
    out = _value(args[0], bindings)
    for a in args[1:]:
        out = fn(out, _value(a, bindings))
    return out


def substitute(v: IntLike, mapping: Mapping[str, IntLike]) -> IntLike:
    """`v` with the named symbols replaced (by ints or expressions), simplified."""
    if isinstance(v, int):
        return v
    if v.op == "sym":
        return _check(mapping.get(v.args[0], v))
    return _BUILDERS[v.op](*(substitute(a, mapping) for a in v.args))


def free_symbols(v: IntLike) -> frozenset[str]:
    if isinstance(v, int):
        return _NO_SYMBOLS
    if v._free is None:
        if v.op == "sym":
            v._free = frozenset((v.args[0],))
        else:
            out: set[str] = set()
            for a in v.args:
                out |= free_symbols(a)
            v._free = frozenset(out)
    return v._free


_NO_SYMBOLS: frozenset[str] = frozenset()


def is_static(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def walk(v: IntLike) -> Iterable[Expr]:
    """Every sub-expression of `v`, children before parents (each distinct one once)."""
    seen: set[Expr] = set()
    out: list[Expr] = []

    def visit(e: IntLike) -> None:
        if isinstance(e, int) or e in seen:
            return
        seen.add(e)
        if e.op != "sym":
            for a in e.args:
                visit(a)
        out.append(e)

    visit(v)
    return out


# ---- text and JSON -------------------------------------------------------------------

_INFIX = {"lt": "<", "le": "<=", "eq": "==", "ne": "!="}


def _format(e: Expr) -> str:
    if e.op == "sym":
        return e.args[0]
    if e.op == "add":
        c0, rest0 = _split_coeff(e.args[0])
        out = f"-{_atom(mul(-c0, rest0), 'mul')}" if c0 < 0 else _atom(e.args[0], "add")
        for t in e.args[1:]:
            c, rest = _split_coeff(t)
            if c < 0:
                out += f" - {_atom(mul(-c, rest), 'add')}"
            else:
                out += f" + {_atom(t, 'add')}"
        return out
    if e.op == "mul":
        # a later factor that is a quotient needs parentheses: a*b // 2 reads as (a*b) // 2
        factors = e.args[1:] if e.args[0] == -1 else e.args
        text = _atom(factors[0], "mul") + "".join("*" + _atom(a, "div") for a in factors[1:])
        return "-" + text if e.args[0] == -1 else text
    if e.op in _INFIX:
        return f"{_atom(e.args[0], 'cmp')} {_INFIX[e.op]} {_atom(e.args[1], 'cmp')}"
    if e.op in ("floordiv", "mod"):
        sep = " // " if e.op == "floordiv" else " % "
        return f"{_atom(e.args[0], 'mul')}{sep}{_atom(e.args[1], 'div')}"
    return f"{e.op}({', '.join(str(a) for a in e.args)})"


def _atom(v: IntLike, ctx: str) -> str:
    """Text of `v` as an operand in context `ctx`, parenthesised where precedence needs it."""
    text = str(v)
    if isinstance(v, int):
        return f"({text})" if v < 0 and ctx != "add" else text
    loose = {"add": (), "mul": ("add", "lt", "le", "eq", "ne"), "div": ("add", "mul", "floordiv", "mod", "lt", "le",
                                                                       "eq", "ne"),
             "cmp": ("lt", "le", "eq", "ne")}[ctx]
    return f"({text})" if v.op in loose else text


def to_json(v: IntLike) -> Any:
    """A JSON-able form: ints as ints, expressions as ["op", arg, ...] (symbols ["sym", name])."""
    if isinstance(v, int):
        return v
    return [v.op, *(a if v.op == "sym" else to_json(a) for a in v.args)]


def from_json(data: Any) -> IntLike:
    if isinstance(data, bool):
        raise ValueError(f"not a symbolic expression: {data!r}")
    if isinstance(data, int):
        return data
    if not isinstance(data, list) or not data or data[0] not in OPS:
        raise ValueError(f"not a symbolic expression: {data!r}")
    if data[0] == "sym":
        if len(data) != 2:
            raise ValueError(f"a symbol is ['sym', name], got {data!r}")
        return sym(data[1])
    return _BUILDERS[data[0]](*(from_json(a) for a in data[1:]))


# ---- parsing the printed form ----------------------------------------------------------

_CALLS = ("ceildiv", "min", "max", "select")


def parse(text: str) -> IntLike:
    """The expression whose `str()` is `text` (names, ints, + - * // %, comparisons, ceildiv/min/max/select).

    `parse(str(e)) == e` for every expression this module builds; the IR's older text dims
    ("(x_d0+1)") read the same way.
    """
    import ast  # only parsing needs the ast module; building and evaluating do not

    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"not a symbolic expression: {text!r}") from None
    return _from_ast(tree.body, text)


def _from_ast(node: Any, text: str) -> IntLike:
    import ast  # see parse()

    bin_ops = {ast.Add: add, ast.Sub: lambda a, b: add(a, mul(-1, b)), ast.Mult: mul, ast.FloorDiv: floordiv,
               ast.Mod: mod}
    cmp_ops = {ast.Lt: lt, ast.LtE: le, ast.Gt: gt, ast.GtE: ge, ast.Eq: eq, ast.NotEq: ne}
    if isinstance(node, ast.Name):
        return sym(node.id)
    if isinstance(node, ast.Attribute):  # a dotted symbol name ("x.d0")
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            return sym(".".join([node.id, *reversed(parts)]))
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return mul(-1, _from_ast(node.operand, text))
    if isinstance(node, ast.BinOp) and type(node.op) in bin_ops:
        return bin_ops[type(node.op)](_from_ast(node.left, text), _from_ast(node.right, text))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in cmp_ops:
        return cmp_ops[type(node.ops[0])](_from_ast(node.left, text), _from_ast(node.comparators[0], text))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS \
            and not node.keywords:
        return build(node.func.id, *(_from_ast(a, text) for a in node.args))
    raise ValueError(f"not a symbolic expression: {text!r}")
