"""The official grader's cell selection, quirk by quirk (worked out by hand from evaluation.py)."""

import pytest

from regrade.values import CellRef
from regrade.grading.official import OfficialGraderError, official_targets


def test_no_sheet_means_the_golden_first_sheet():
    assert official_targets("A1:B1", ["First", "Second"]) == [CellRef("First", 1, 1), CellRef("First", 1, 2)]


def test_cells_come_column_by_column():
    assert official_targets("A1:B2", ["S"]) == [CellRef("S", 1, 1), CellRef("S", 2, 1), CellRef("S", 1, 2), CellRef("S", 2, 2)]


def test_whole_columns_raise():
    with pytest.raises(OfficialGraderError):
        official_targets("'S'!A:G", ["S"])


def test_missing_end_column_is_an_empty_range_that_passes_vacuously():
    assert official_targets("BD2:308", ["S"]) == []


def test_a_leading_space_shifts_the_column_arithmetic_into_a_bad_name():
    # ' G' is column (32-65+1)*26+7 = -825: no column name, so the cell name is "11", a whole row
    with pytest.raises(OfficialGraderError):
        official_targets("G4:G6, G11:G13", ["S"])


def test_a_leading_non_breaking_space_makes_an_empty_range():
    # '\xa0A' is column (160-65+1)*26+1 = 2497 > column C: no columns, nothing compared
    assert official_targets("\u00a0A1:C3", ["S"]) == []


def test_quote_after_exclamation_mark_still_works():
    assert official_targets("'CS!'B1:B2", ["CS"]) == [CellRef("CS", 1, 2), CellRef("CS", 2, 2)]


def test_two_exclamation_marks_raise():
    with pytest.raises(OfficialGraderError):
        official_targets("'Received'!'Received!A1:G16'", ["Received"])


def test_unknown_sheet_raises():
    with pytest.raises(OfficialGraderError):
        official_targets("'Nope'!A1", ["S"])


def test_lower_case_range_is_read_with_ord_arithmetic():
    # 'a' is ord('a')-64 = 33, column AG
    assert official_targets("a1:a1", ["S"]) == [CellRef("S", 1, 33)]
