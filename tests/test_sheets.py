"""The quick scan of sheet XML for formula cells (engines/sheets.formula_cells), against openpyxl."""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import openpyxl

from regrade.workbook.sheets import formula_cells

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo-run" / "dataset" / "spreadsheet"


def openpyxl_formula_cells(path: Path) -> dict[str, set[tuple[int, int]]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        book = openpyxl.load_workbook(path)
    return {sheet.title: {(c.row, c.column) for row in sheet.iter_rows() for c in row if c.data_type == "f"}
            for sheet in book.worksheets}


def test_the_scan_finds_what_openpyxl_finds_in_excel_written_files():
    files = sorted(DEMO.glob("*/*.xlsx"))
    assert len(files) >= 20
    with_formulas = 0
    for path in files:
        scanned = formula_cells(path)
        assert scanned == openpyxl_formula_cells(path), path.name
        with_formulas += any(scanned.values())
    assert with_formulas >= 10  # shared formulas among them: Excel writes ranges of copied formulas that way


def test_the_scan_declines_what_it_cannot_read(tmp_path):
    book = openpyxl.Workbook()
    book.active["A1"] = "=1+1"
    plain = tmp_path / "plain.xlsx"
    book.save(plain)
    assert formula_cells(plain) == {"Sheet": {(1, 1)}}
    prefixed = tmp_path / "prefixed.xlsx"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(prefixed, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = data.replace(b"<c ", b"<x:c ").replace(b"</c>", b"</x:c>")
            target.writestr(item, data)
    assert formula_cells(prefixed) is None  # namespace-prefixed elements: openpyxl is asked instead
    (tmp_path / "broken.xlsx").write_bytes(b"not a zip")
    assert formula_cells(tmp_path / "broken.xlsx") is None
