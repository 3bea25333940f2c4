"""Excel's TEXT of a text value (engines/functions/text.py); expected values worked out by hand
from Excel's documented number-format sections, and from SpreadsheetBench caches where named."""

import pytest

from regrade.values import ExcelError
from regrade.engines.functions.lookup import NotImplementedMode
from regrade.engines.functions.text import show_text, text_input, text_section


@pytest.mark.parametrize("value, format_text, expected", [
    ("0405", "00\\:00 \\a\\m", 405.0),  # numeric text is read as its number (task 49467)
    (" 12 ", "0", 12.0),
    (None, "0", 0.0),  # an empty cell is 0
    (7.5, "0", 7.5),  # numbers are left to the engine
    (True, "0", True),  # so are logical values: TEXT(TRUE, "0") is "TRUE"
    ("abc", "0;;;\\0", "0"),  # the fourth section shows text (task 57716)
    ("", "0;;;\\0", "0"),  # "" is text too: SUMPRODUCT(--TEXT(RIGHT(blanks,3),"0;;;\0")) is 0 in task 57716
    ("abc", "0.00", "abc"),  # no text section: unchanged
    ("x", '"Mr "@', "Mr x"),
    ("x", '"[" @ "]"', "[ x ]"),
    ("x", "0;-0;0;[Blue]@_)", "x "),
])
def test_text_of_a_text_value(value, format_text, expected):
    assert text_input(value, format_text) == expected


def test_an_error_format_is_the_answer():
    assert text_input("abc", ExcelError("#N/A")) == ExcelError("#N/A")


@pytest.mark.parametrize("value", ["1/2/2020", "12:30", "$1,200", "50%", "1Jan2016", "Jan 5"])
def test_text_excel_may_read_as_a_date_or_amount_is_left_to_the_engine(value):
    with pytest.raises(NotImplementedMode):
        text_input(value, "0")


def test_sections_split_outside_quotes_and_escapes():
    assert text_section('0;"a;b";0;@') == "@"
    assert text_section("0\\;0;0;0") is None  # an escaped ; does not split: three sections
    assert text_section("0;0") is None
    with pytest.raises(NotImplementedMode):
        text_section("0;@")  # @ in a section that is not the text section: regrade is unsure
    with pytest.raises(NotImplementedMode):
        show_text("x", "0@")  # a digit placeholder in a text section
    with pytest.raises(NotImplementedMode):
        show_text("x", "Mr @")  # letters unquoted: Excel may read M as a month
