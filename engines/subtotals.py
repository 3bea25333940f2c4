"""SUBTOTAL's two subtleties, for the engines that miss them.

``SUBTOTAL(101..111, ...)`` is ``SUBTOTAL(1..11, ...)`` skipping hidden rows, and no
SUBTOTAL counts a cell that is itself a SUBTOTAL or AGGREGATE. gnumeric answers
``#NUM!`` for 101-111; pycel compiles SUBTOTAL to the plain function, counting hidden
rows and nested subtotals alike. Such an engine asks here whether a graded cell's
value depends on what it misses, and abstains if so: an abstention, never a wrong value.
"""

from __future__ import annotations

import re

from engines.cones import Cell, FormulaGraph

SKIPPING_HIDDEN = re.compile(r"(?<![A-Za-z0-9_.])SUBTOTAL\(\s*1(?:0[1-9]|1[01])\s*[,)]", re.IGNORECASE)
_CALLS_SUBTOTAL = re.compile(r"(?<![A-Za-z0-9_.])SUBTOTAL\(", re.IGNORECASE)
_NESTABLE = frozenset({"SUBTOTAL", "AGGREGATE"})


def skips_hidden_rows(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether the cone of ``cell`` calls SUBTOTAL 101-111."""
    return any(SKIPPING_HIDDEN.search(text) for text in graph.formulas_in_cone([cell]))


def counts_nested_subtotals(graph: FormulaGraph, cell: Cell) -> bool:
    """Whether some SUBTOTAL in the cone of ``cell`` reads, directly or through other
    formulas, a cell that calls SUBTOTAL or AGGREGATE (an over-estimate: Excel skips only
    the ones inside its ranges)."""
    calling = [c for c in graph.cells_in_cone([cell]) if _CALLS_SUBTOTAL.search(graph.formulas[c])]
    return any(graph.reads_a_call(c, _NESTABLE) for c in calling)
