"""One test per answer_position shape found in SpreadsheetBench (docs/runs.md and the split)."""

import pytest

from regrade.runs.positions import CellBox, PositionError, box_spans, parse_answer_position


def boxes(text):
    return parse_answer_position(text).boxes


def test_plain_range():
    assert boxes("A3:D32") == (CellBox(None, 3, 1, 32, 4),)


def test_single_cell():
    assert boxes("B6") == (CellBox(None, 6, 2, 6, 2),)


def test_quoted_sheet():
    assert boxes("'Sheet1'!H3:H5") == (CellBox("Sheet1", 3, 8, 5, 8),)


def test_several_ranges_with_a_comma_inside_a_quoted_sheet_name():
    assert boxes("'Sales, 2023'!A1:B2,'X'!C1") == (CellBox("Sales, 2023", 1, 1, 2, 2), CellBox("X", 1, 3, 1, 3))


def test_ranges_separated_by_comma_and_space():
    assert boxes("G4:G6, G11:G13") == (CellBox(None, 4, 7, 6, 7), CellBox(None, 11, 7, 13, 7))


def test_missing_leading_quote():
    parsed = parse_answer_position("Sheet3'!A:G,'Sheet4'!A:G")
    assert parsed.boxes == (CellBox("Sheet3", None, 1, None, 7), CellBox("Sheet4", None, 1, None, 7))
    assert "mended unbalanced quotes around sheet 'Sheet3'" in parsed.repairs


def test_quote_after_the_exclamation_mark():
    assert boxes("'CS!'B1:B8,'S!'B1:B8") == (CellBox("CS", 1, 2, 8, 2), CellBox("S", 1, 2, 8, 2))


def test_whole_item_quoted():
    assert boxes("'99250!A1:F9','99251!A1:F9'") == (CellBox("99250", 1, 1, 9, 6), CellBox("99251", 1, 1, 9, 6))


def test_whole_columns_close_against_the_sheet_extent():
    (box,) = boxes("A:B")
    assert box == CellBox(None, None, 1, None, 2)
    assert box_spans(box, max_row=3, max_col=9) == (range(1, 4), range(1, 3))


def test_end_column_missing_means_the_start_column():
    parsed = parse_answer_position("BD2:308")
    assert parsed.boxes == (CellBox(None, 2, 56, 308, 56),)
    assert parsed.repairs == ("read 'BD2:308' as ending in column BD",)


def test_full_width_colon():
    assert boxes("G12\uff1aJ15") == (CellBox(None, 12, 7, 15, 10),)


def test_leading_non_breaking_space():
    assert boxes("\u00a0'Sheet 2'!B2:B8") == (CellBox("Sheet 2", 2, 2, 8, 2),)


def test_repeated_sheet_prefix():
    assert boxes("'Received'!'Received!A1:G16'") == (CellBox("Received", 1, 1, 16, 7),)


def test_typographic_quote():
    assert boxes("'Invoice List\u2018!A1:G10")[0].sheet == "Invoice List"


def test_item_without_sheet_follows_the_previous_sheet():
    assert boxes("'Sheet1'!D3,D10") == (CellBox("Sheet1", 3, 4, 3, 4), CellBox("Sheet1", 10, 4, 10, 4))


def test_absolute_references():
    assert boxes("$A$1:$B$2") == (CellBox(None, 1, 1, 2, 2),)


@pytest.mark.parametrize("text", ["", "hello world", "A1:B2:C3", "'One'!'Two!A1", "A0", "XFE1", "A1:C"])
def test_unreadable_positions_raise_with_the_text(text):
    with pytest.raises(PositionError):
        parse_answer_position(text)
