"""Elementwise/buffer fusion: group the graph's ops into device kernels.

The algorithm is TVM's FuseOps (a post-dominator tree over the dataflow
graph; each op tries to join the group of its immediate post-dominator
together with every op on the paths between them), with the rules an NPU
vector/cube split needs and every decision recorded with its rule. Split by
concern, the way TVM separates its graph partitioner from the pass:

- analysis.py: the graph's compute nodes, fusion patterns, reductions, uses,
  post-dominators;
- legality.py: what may share a kernel, one rule function per anchor kind
  (elementwise, matmul, reduction), and the kernel's structure;
- partition.py: the groups, merges in a kept topological order, the cycle
  check, duplication, the schedule;
- fuser.py: the phases over one graph (matmul epilogues, post-dominators,
  multi-consumer producers: duplicate, extra output or boundary; an opaque
  op taking the views of its operands and result, vector kernels the views
  they read and (elementwise) the views they write their result through,
  found by views.py);
- fusion_pass.py: the pass over the root graph and every branch, and the
  one-kernel-per-op fallback (`schedule_for`).

Whether a kernel fits the chip is not decided here: the pass context's
capacity function (ge/capacity.py; default: the UB estimate from the chip
config) answers it, so fusion and codegen can never disagree about what fits.
Guards besides: group size (knob `fusion_max_ops`, default None: no cap), at most
`fusion_max_users` (6) readers of one value inside a kernel, and no kernel
may create a cycle between kernels.

Results: every compute node gets attr "fusion_group" (ids unique over the
root graph and all branches, numbered in schedule order);
`ctx.state.kernels` is the flat schedule described in ge/plan.py (each
graph's kernels in a topological order of the kernel DAG, an If's branch
kernels right after the If, then-branch first); `ctx.state.fusion_decisions`
records every decision (ge/decisions.py): FUSED, NOT_FUSED (with the rule
that refused), DUPLICATED, NOT_DUPLICATED, BOUNDARY and OWN_KERNEL for
data-movement ops and Ifs. Ops are named "exp %2" (op and canonical dump
name in the graph before fusion; "%1.then_branch/%0" inside a branch).

Rule names: merges "post_dominator", "extra_output", "duplicate", "view" (also
a view chain refused, the refusing rule in its detail); refusals
"max_ops", "data_movement_member", "two_matmuls", "matmul_with_reduction",
"matmul_prologue", "matmul_epilogue_shape", "column_reduction_shared",
"column_reduction_epilogue", "different_rows", "dropped_axes",
"not_row_shaped", "max_users", "cycle", "capacity"; duplication refusals
"duplicate_off", "shared_kernel", "graph_output", "expensive",
"not_elementwise", "full_operands" (or the consumer kernel's refusal);
boundaries "no_consumer_fits", "multi_output_off"; own kernels
"data_movement", "control"; notes "opt_level_0", "no_chip", "unfused".

At opt_level 0 every compute node is its own kernel. The pass is root_only
(it fuses the branches itself) and may run again: it recomputes all groups
(duplicates made by a previous run simply stay).
"""
from .fusion_pass import DEFAULT_KNOBS, UNFUSED_NOTE, FusionPass, capacity_of, schedule_for, singleton_kernels  # noqa: F401
