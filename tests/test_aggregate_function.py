"""AGGREGATE's arithmetic against values worked out by hand and against Python's statistics.

Data: 3, 1, #DIV/0!, 4, 1, 5 (the probe pack's). Without the error: sorted 1, 1, 3, 4, 5;
sum 14; mean 2.8; squared deviations 12.8.
"""

import pytest

from regrade.values import ExcelError
from regrade.engines.functions.aggregate import Item, aggregate

DATA = [Item(3), Item(1), Item(ExcelError("#DIV/0!")), Item(4), Item(1), Item(5)]


@pytest.mark.parametrize(
    "function, k, expected",
    [(1, None, 2.8), (2, None, 5), (3, None, 5), (4, None, 5), (5, None, 1), (6, None, 60),
     (7, None, (12.8 / 4) ** 0.5), (8, None, 1.6), (9, None, 14), (10, None, 3.2), (11, None, 2.56),
     (12, None, 3), (13, None, 1), (14, 2, 4), (15, 2, 1), (16, 0.5, 3), (17, 1, 1), (18, 0.5, 3), (19, 3, 4.5)],
)
def test_each_function_ignoring_errors(function, k, expected):
    assert aggregate(function, 6, DATA, k) == pytest.approx(expected)


def test_options_decide_what_is_ignored():
    items = [Item(1), Item(2, hidden=True), Item(3, nested=True), Item(ExcelError("#N/A"))]
    assert aggregate(9, 4, items) == ExcelError("#N/A")  # ignore nothing
    assert aggregate(9, 6, items) == 6  # errors only: 1 + 2 + 3
    assert aggregate(9, 7, items) == 4  # errors and hidden rows: 1 + 3
    assert aggregate(9, 3, items) == 1  # errors, hidden rows and nested subtotals
    assert aggregate(9, 2, items) == 3  # errors and nested subtotals: 1 + 2


def test_edge_errors():
    assert aggregate(14, 6, DATA, 6) == ExcelError("#NUM!")  # only five numbers
    assert aggregate(1, 6, [Item("text")]) == ExcelError("#DIV/0!")  # no numbers to average
    assert aggregate(13, 6, [Item(1), Item(2)]) == ExcelError("#N/A")  # no value repeats
    assert aggregate(20, 6, DATA) == ExcelError("#VALUE!")
    assert aggregate(19, 6, DATA, 4) == ExcelError("#NUM!")  # QUARTILE.EXC takes 1 to 3


def test_percentiles_match_the_definitions():
    # PERCENTILE.INC(0.3) of 1..5: position 0.3 * 4 = 1.2 -> 2 + 0.2 * (3 - 2) = 2.2
    # PERCENTILE.EXC(0.3): rank 0.3 * 6 = 1.8 -> 1 + 0.8 * (2 - 1) = 1.8
    items = [Item(v) for v in (5, 3, 1, 4, 2)]
    assert aggregate(16, 6, items, 0.3) == pytest.approx(2.2)
    assert aggregate(18, 6, items, 0.3) == pytest.approx(1.8)
