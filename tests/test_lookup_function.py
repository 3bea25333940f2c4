"""XLOOKUP and XMATCH in Python, against values worked out by hand from Excel's documentation."""

import pytest

from regrade.values import ExcelError
from regrade.engines.functions.lookup import NotImplementedMode, xlookup, xmatch

COLUMN = [["apple"], ["Banana"], [3.0], ["cherry"], [3.0], [ExcelError("#DIV/0!")], [7.0]]
PRICES = [[1.0], [2.0], [30.0], [4.0], [50.0], [6.0], [70.0]]


def test_exact_match_ignores_case_and_types():
    assert xlookup("BANANA", COLUMN, PRICES) == 2.0
    assert xlookup("3", COLUMN, PRICES) == ExcelError("#N/A")  # text "3" never equals the number 3
    assert xlookup(3.0, COLUMN, PRICES) == 30.0  # the first of two 3s
    assert xlookup(3.0, COLUMN, PRICES, search_mode=-1) == 50.0  # the last one
    assert xlookup("kiwi", COLUMN, PRICES, "none") == "none"
    assert xmatch("cherry", COLUMN) == 4.0


def test_next_smaller_and_next_larger_stay_within_the_type():
    # numbers in the column: 3 (row 3), 3 (row 5), 7 (row 7)
    assert xlookup(5.0, COLUMN, PRICES, match_mode=-1) == 30.0  # next smaller is 3, first one
    assert xlookup(5.0, COLUMN, PRICES, match_mode=1) == 70.0  # next larger is 7
    assert xlookup(8.0, COLUMN, PRICES, match_mode=1) == ExcelError("#N/A")
    assert xmatch("b", COLUMN, match_mode=1) == 2.0  # "banana" is the smallest text above "b"
    assert xmatch("c", COLUMN, match_mode=-1) == 2.0  # "banana" is the largest text below "c"


def test_wildcards_match_text_only_and_tilde_escapes():
    assert xlookup("ch*", COLUMN, PRICES, match_mode=2) == 4.0
    assert xlookup("?pple", COLUMN, PRICES, match_mode=2) == 1.0
    assert xmatch("3*", COLUMN, match_mode=2) == ExcelError("#N/A")  # the 3s are numbers
    assert xmatch("a~*", [["a*"], ["ab"]], match_mode=2) == 1.0
    assert xmatch("a*", [["a*"], ["ab"]], match_mode=2, search_mode=-1) == 2.0


def test_a_two_dimensional_return_array_gives_a_row_or_a_column():
    table = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert xlookup("y", [["x"], ["y"]], table) == [[4.0, 5.0, 6.0]]
    assert xlookup("b", [["a", "b", "c"]], table) == [[2.0], [5.0]]
    assert xlookup("b", [["a", "b"]], table) == ExcelError("#VALUE!")  # 2 lookup columns, 3 result columns


def test_errors_and_what_is_not_computed():
    assert xlookup(ExcelError("#REF!"), COLUMN, PRICES) == ExcelError("#REF!")
    assert xmatch(1.0, [[1.0, 2.0], [3.0, 4.0]]) == ExcelError("#VALUE!")  # not a vector
    with pytest.raises(NotImplementedMode):
        xmatch(3.0, COLUMN, search_mode=2)
    with pytest.raises(NotImplementedMode):
        xmatch(None, COLUMN)


def test_lookup_answers_where_bisection_cannot_depend_on_the_layout():
    from regrade.engines.functions.lookup import lookup

    div0 = ExcelError("#DIV/0!")
    # the idiom LOOKUP(2, 1/(A=x), C): 1 where A matches, #DIV/0! elsewhere: the last match wins
    assert lookup(2.0, [[div0], [1.0], [div0], [1.0], [div0]], [["a"], ["b"], ["c"], ["d"], ["e"]]) == (3, "d")
    # sorted numbers: the largest value not above the lookup value
    assert lookup(25.0, [[10.0], [20.0], [30.0]], [["x"], ["y"], ["z"]]) == (1, "y")
    assert lookup(5.0, [[10.0], [20.0]], [["x"], ["y"]]) == ExcelError("#N/A")
    # array form: a wide array searches its first row and answers from its last
    assert lookup("b", [["a", "b", "c"], [1.0, 2.0, 3.0]]) == (1, 2.0)
    with pytest.raises(NotImplementedMode):
        lookup(15.0, [[30.0], [10.0], [20.0]], [["x"], ["y"], ["z"]])  # unsorted: Excel's answer depends on bisection


def test_a_vector_prepared_once_answers_as_each_search_alone():
    # MATCH(ROW(A1:A600), ROW(A1:A600)) and MATCH(x, range, 0) over an array of lookup values
    # search one vector many times: its keys are computed once (regrade/engines/functions/lookup.py)
    from regrade.engines.functions.lookup import Vector, lookup, lookup_in

    grid = [[1.0], [3.0], [3.0], [5.0], ["a"], [None], ["A"]]
    vector = Vector.of(grid)
    assert vector is not None
    # by hand: sorted numbers 1, 3, 3, 5 (text and blanks apart); the largest not above the value
    for value, expected in [(3.0, (2, 3.0)), (4.0, (2, 3.0)), (9.0, (3, 5.0)), (0.0, ExcelError("#N/A")),
                            ("b", (6, "A")), (True, ExcelError("#N/A"))]:
        assert lookup_in(value, vector, vector.values) == expected == lookup(value, grid, grid)
    # exact, without regard to case: the first "a" going down, the last going up
    assert [xmatch("A", vector), xmatch("A", vector, search_mode=-1), xmatch(3.0, vector)] == [5.0, 7.0, 2.0]
    assert Vector.of([[1.0, 2.0], [3.0, 4.0]]) is None  # neither one row nor one column
    unsorted = Vector([3.0, 1.0, 2.0], True)
    assert lookup_in(5.0, unsorted, ["x", "y", "z"]) == (2, "z")  # above them all: the last
    with pytest.raises(NotImplementedMode):
        lookup_in(2.0, unsorted, ["x", "y", "z"])
