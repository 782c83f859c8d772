"""The templates, registered by name (`codegen/template.py` says what each declares).

`TEMPLATES` is the one registry the driver (`lower.py`), the router (`route.py`) and fusion's capacity
function (`capacity.py`) read; `TEMPLATE_OPS` says which registry ops a template lowers whole (derived from
the templates' own `ops`).
"""
from __future__ import annotations

from ..lowering import REDUCE, VECTOR
from ..template import Template
from . import attention, attention_combine, column, conv, conv_edges, conv_launch, conv_weights, datamove, device_loop, \
    formats, horizontal, matmul, mixed, pool, transpose2d, update, vector

TEMPLATES: dict[str, Template] = {
    t.name: t for t in (vector.TEMPLATE, column.TEMPLATE, matmul.TEMPLATE, mixed.TEMPLATE, datamove.TEMPLATE,
                        formats.TEMPLATE, transpose2d.TEMPLATE, update.TEMPLATE, conv.TEMPLATE, conv_weights.TEMPLATE,
                        conv_edges.TEMPLATE, conv_launch.TEMPLATE, pool.TEMPLATE, attention.TEMPLATE,
                        attention_combine.TEMPLATE, device_loop.TEMPLATE, *horizontal.GROUPS.values(),
                        horizontal.MIXED_GROUP, horizontal.PROLOGUE_GROUP)
}

#: registry op -> the template that lowers a kernel of that op whole
TEMPLATE_OPS: dict[str, str] = {op: t.name for t in TEMPLATES.values() for op in t.ops}


def template_of_op(op: str) -> Template | None:
    """The template that lowers a kernel holding just `op` (or anchored on it), if one does."""
    name = TEMPLATE_OPS.get(op)
    return TEMPLATES[name] if name is not None else None


def lowered_by(op: str) -> str | None:
    """Which part of codegen lowers an op: "vector" or "reduce" (instruction by instruction, the tables in
    `lowering`), a template name (lowered whole), or None (no lowering)."""
    if op in VECTOR:
        return "vector"
    if op in REDUCE:
        return "reduce"
    return TEMPLATE_OPS.get(op)
