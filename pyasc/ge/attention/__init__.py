"""Attention found on the graph: the `attention` pass (rules.py) and its analyses.

constants.py (compile-time values: scales, masks), masks.py (what masks, the causal triangle), spellings.py
(the recognisers of each piece, as tables), match.py (one attention pattern), heads.py (heads of one tensor
joined by a concatenate), rules.py (the pass: the two rewrite rules, the fusion-log decisions).
"""
from .rules import RULE_HEADS, RULE_SINGLE, AttentionPass  # noqa: F401
