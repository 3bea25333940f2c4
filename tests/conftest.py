from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "fixtures" / "demo-run"


@pytest.fixture
def workbook(tmp_path):
    """Write a one-sheet workbook with openpyxl (formulas get no cached values)."""
    import openpyxl

    def make(cells: dict, name: str = "book.xlsx", title: str = "Sheet1") -> Path:
        book = openpyxl.Workbook()
        sheet = book.active
        sheet.title = title
        for coordinate, value in cells.items():
            sheet[coordinate] = value
        path = tmp_path / name
        book.save(path)
        return path

    return make
