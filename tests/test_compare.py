"""SpreadsheetBench's value rules, with the expected results worked out by hand."""

import datetime as dt

import pytest

from regrade.engines.readings import decoded_text, decoded_texts
from regrade.values import CannotEvaluate, CellRef, ExcelError
from regrade.grading.policies import (KnownExtent, SpreadsheetBenchPolicy, get_policy, spreadsheetbench_equal,
                                      spreadsheetbench_surely_equal)


@pytest.mark.parametrize(
    "golden, output, equal",
    [
        (1, 1.004, True),  # both round to 1.0
        (1, 1.006, False),  # 1.0 vs 1.01
        (3.5, "3.5", True),  # numeric text becomes a number
        (True, 1, True),  # a bool is an int in Python, so it rounds to 1.0
        ("TRUE", True, False),  # text vs number
        (None, "", True),
        ("", None, True),
        (0, None, False),
        ("abc", "abc ", False),
        (dt.datetime(2024, 1, 2), 45293, True),  # round(serial 45293.0, 0) and round(45293.0, 2): both float 45293.0
        (dt.datetime(2024, 1, 2), 45293.4, False),  # 45293.0 vs 45293.4
        (dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 2, 11), True),  # 45293.46 rounds to 45293
        (dt.time(12, 30), dt.time(12, 30, 59), True),  # str()[:-3]: "12:30:00" -> "12:30", "12:30:59" -> "12:30"
        (dt.time(12, 30), dt.time(12, 31), False),  # "12:30" vs "12:31"
        (ExcelError("#N/A"), "#N/A", True),  # a cached error reads as its code text
        ("nan", "nan", False),  # the same text, but it reads as the number NaN, which equals nothing
        ("NaN", "nan", False),
        ("abc", "abc", True),
        (2.675, 2.675, True),
        (False, False, True),
        (False, 0, True),  # both round to 0.0
    ],
)
def test_value_rules(golden, output, equal):
    assert spreadsheetbench_equal(golden, output) is equal


def test_what_is_settled_as_equal_at_once_is_equal_under_the_rules():
    utc = dt.timezone.utc
    values = [1, 1.0, 1.004, True, False, 0, None, "", "1", "abc", "nan", " NaN ", "banana", float("nan"), 2.675,
              dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 2, 11), dt.date(2024, 1, 2), dt.time(12, 30),
              dt.time(12, 30, 59), dt.timedelta(hours=1), ExcelError("#N/A"), "#N/A", "a_x0041_b", "a\x01b",
              CannotEvaluate("timeout")]
    pairs = [(a, b) for a in values for b in values]
    settled = spreadsheetbench_surely_equal([a for a, _ in pairs], [b for _, b in pairs])
    for (a, b), sure in zip(pairs, settled):
        if sure:
            assert spreadsheetbench_equal(a, b), (a, b)
    assert [repr(a) for (a, b), sure in zip(pairs, settled) if sure] == [  # each with itself alone: NaN is not
        "1", "1.0", "1.004", "True", "False", "0", "None", "''", "'1'", "'abc'", "2.675",
        "datetime.datetime(2024, 1, 2, 0, 0)", "datetime.datetime(2024, 1, 2, 11, 0)", "datetime.date(2024, 1, 2)",
        "datetime.time(12, 30)", "datetime.time(12, 30, 59)", "datetime.timedelta(seconds=3600)", "'#N/A'",
        "'a\\x01b'"]
    # a text that may read as NaN, or holds an escape a recomputed grade decodes, is left to the rules; so is an
    # aware date-time or time, which no reading gives and which the rules would not normalise
    aware = [dt.datetime(2024, 1, 2, tzinfo=utc), dt.time(12, 30, tzinfo=utc)]
    assert spreadsheetbench_surely_equal(["nan", " NaN ", "banana", "a_x0041_b", *aware],
                                         ["nan", " NaN ", "banana", "a_x0041_b", *aware]) == [False] * 6


def test_cells_decoded_at_once_are_each_cell_decoded():
    # ECMA-376 Part 1, 22.9.2.19: _xHHHH_ is U+HHHH; only a text holding "_x" can change
    cells = {CellRef("S", row, 1): value for row, value in enumerate(
        ["_x0001_", "a_x000D__x000A_b", "_x005F_x0001_", "a_xb", "_X0001_", "plain", 3.0, None, ExcelError("#N/A")], 1)}
    decoded = decoded_texts(cells)
    assert decoded == {ref: decoded_text(value) for ref, value in cells.items()}
    assert list(decoded) == list(cells) and decoded is not cells
    assert [decoded[CellRef("S", row, 1)] for row in (1, 2, 3, 4, 5)] == ["\x01", "a\r\nb", "_x0001_", "a_xb", "_X0001_"]
    assert cells[CellRef("S", 1, 1)] == "_x0001_"  # the cells given are left as they were


def test_an_abstention_cannot_be_compared():
    with pytest.raises(ValueError):
        spreadsheetbench_equal(1, CannotEvaluate("timeout"))


def test_correct_policy_uses_answer_sheet_when_the_position_names_none():
    extents = [KnownExtent("Data", 10, 5), KnownExtent("Result", 3, 2)]
    targets = SpreadsheetBenchPolicy().targets("A1:A2", "Result", extents)
    assert [str(t) for t in targets] == ["Result!A1", "Result!A2"]


def test_unknown_policy_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        get_policy("nope")


def test_the_golden_reads_graded_cells_and_measures_its_sheet_only_for_a_whole_column(workbook):
    from regrade.grading.grade import load_golden

    path = workbook({"A1": 1, "A2": "x", "A3": 3.5, "C5": 7})  # Sheet1 ends at row 5
    golden = load_golden(path)
    policy = SpreadsheetBenchPolicy()
    assert golden.targets(policy, "A2:A3", None) == [CellRef("Sheet1", 2, 1), CellRef("Sheet1", 3, 1)]
    assert golden._sizes is None  # a closed box needs no size
    assert [golden.value(CellRef("Sheet1", r, 1)) for r in (2, 3)] == ["x", 3.5]
    column = golden.targets(policy, "A:A", None)
    assert column == [CellRef("Sheet1", r, 1) for r in range(1, 6)]  # to row 5, the sheet's last
    assert [golden.value(ref) for ref in column] == [1, "x", 3.5, None, None]


def test_the_golden_gives_its_graded_cells_and_their_values_again_until_a_value_is_read(workbook):
    from regrade.grading.grade import load_golden

    path = workbook({"A1": 1, "A2": "x", "B1": 2})
    golden = load_golden(path)
    policy = SpreadsheetBenchPolicy()
    targets = golden.targets(policy, "A1:A2", None)
    assert golden.targets(policy, "A1:A2", None) is targets  # a task's other condition: the same cells
    assert golden.targets(policy, "A1:A2", "Sheet1") is not targets  # another key, computed again
    unread = object()
    first = golden.values_read(targets, unread)
    assert first == [1, "x"] and golden.values_read(targets, unread) is first
    asked = [*targets, CellRef("Sheet1", 1, 2)]
    assert golden.values_read(asked, unread) == [1, "x", unread]  # another list: B1 not read yet
    assert golden.value(CellRef("Sheet1", 1, 2)) == 2  # reads B1: what was given before may be stale
    assert golden.values_read(asked, unread) == [1, "x", 2]
