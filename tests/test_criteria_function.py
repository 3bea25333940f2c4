"""COUNTIF's criteria (engines/functions/criteria.py): each expected count worked out by hand
from Excel's documented rules (the probe array-sumproduct-countif checks the bridge end to end)."""

import pytest

from regrade.values import ExcelError
from regrade.engines.functions.criteria import countif
from regrade.engines.functions.lookup import NotImplementedMode
from regrade.engines.functions.values import as_number

CELLS = [1.0, 2.0, "2", "apple", "Apricot", "banana", None, "", True, ExcelError("#N/A"), 10.0]


@pytest.mark.parametrize(
    "criterion, expected, why",
    [
        (2.0, 2, "the number 2 and the text 2"),
        ("2", 2, "a numeric text criterion is the number"),
        (">1", 2, "2 and 10; text never compares with a number"),
        ("<=2", 2, "1 and 2"),
        ("<>2", 9, "all but the two 2s, blanks and text included"),
        ("a*", 2, "apple, Apricot: wildcards ignore case"),
        ("?pple", 1, "apple"),
        ("<>a*", 9, "everything but apple and Apricot"),
        ("", 2, "the blank cell and the empty text"),
        ("=", 1, "only the blank cell"),
        ("<>", 10, "every cell but the blank one"),
        (True, 1, "the logical TRUE, not the number 1"),
        ("TRUE", 1, "TRUE written as text is the logical value"),
        (ExcelError("#N/A"), 1, "the same error"),
        (None, 0, "an empty criterion cell is 0: no cell holds 0"),
        ("ban~*", 0, "~* is a literal star"),
    ],
)
def test_criteria(criterion, expected, why):
    assert countif(CELLS, criterion) == expected, why


def test_text_orders_alphabetically_and_never_against_numbers():
    assert countif(["apple", "Apricot", "banana", "2", 5.0, None], "<b") == 3  # apple, Apricot and the text 2
    assert countif(["apple", "Apricot", "banana", "2", 5.0, None], ">=B") == 1  # banana


def test_a_date_written_as_text_is_left_to_the_engine():
    with pytest.raises(NotImplementedMode):
        countif(CELLS, "<1/1/2024")
    with pytest.raises(NotImplementedMode):
        countif(CELLS, ">=12:30")


def test_only_text_excel_reads_as_a_number_is_numeric():
    # Excel's VALUE(" 12 ") is 12 and VALUE("1e3") 1000; VALUE("inf"), VALUE("nan") and
    # VALUE("1_000") are #VALUE!, though Python's float() reads all three
    assert as_number(" 12 ") == 12.0 and as_number("1e3") == 1000.0 and as_number("-.5") == -0.5
    assert as_number("inf") is None and as_number("nan") is None and as_number("1_000") is None
    assert countif(["1_000", "inf"], 1000.0) == 0  # neither text reads as a number


def test_conditional_aggregates_over_the_rows_every_criterion_matches():
    from regrade.engines.functions.criteria import conditional

    keys = ["x", 5.0, "y", True, None]
    amounts = [1.0, 2.0, "n/a", 8.0, 16.0]
    # "<>x" matches rows 2-5 (a number, text, TRUE and a blank); the amounts there: 2, text, 8, 16
    assert conditional("COUNT", [(keys, "<>x")], None) == 4
    assert conditional("SUM", [(keys, "<>x")], amounts) == 26  # 2 + 8 + 16: text is skipped
    assert conditional("AVERAGE", [(keys, "<>x")], amounts) == 26 / 3
    assert conditional("MAX", [(keys, "<>x")], amounts) == 16 and conditional("MIN", [(keys, "<>x")], amounts) == 2
    assert conditional("SUM", [(keys, "<>x"), (amounts, ">4")], amounts) == 24  # rows 4 and 5
    assert conditional("AVERAGE", [(keys, "z")], amounts) == ExcelError("#DIV/0!")  # no row matches
    assert conditional("MAX", [(keys, "z")], amounts) == 0  # MAXIFS of nothing is 0
    assert conditional("SUM", [(keys, "x")], [ExcelError("#N/A"), 1.0, 1.0, 1.0, 1.0]) == ExcelError("#N/A")
    assert conditional("SUM", [(keys, "y")], [ExcelError("#N/A"), 1.0, 1.0, 1.0, 1.0]) == 1  # the error is not matched
    assert conditional("COUNT", [(keys, "x"), (keys[:2], "x")], None) == ExcelError("#VALUE!")  # ranges of two sizes
