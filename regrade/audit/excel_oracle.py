"""An oracle captured from Excel 365 itself, as workbooks the conformance check runs.

Formulon's repository keeps, per suite of its function catalogue, cases of a few setup cells
and one formula, each with the value Microsoft Excel 365 computed for it
(``tests/oracle/golden/<suite>.golden.json``; ``fixtures/oracles/excel365`` holds a copy and
says where from). Excel's capture wrote each case on a worksheet of its own, the setup
cells, then the formula as a dynamic-array formula (``formula2``) in ``Z1``, whose value it
read back. :func:`write_workbooks` writes the same: one workbook per suite, a sheet per
case, the formula in ``Z1`` as Excel stores a dynamic-array formula (an array formula over
``Z1`` with the ``XLDAPR`` cell metadata; functions newer than Excel 2007 with the
``_xlfn.`` prefix of MS-XLSX 2.2.3, ``_xlfn._xlws.`` for FILTER and SORT), and Excel's
captured value cached in ``Z1``. :func:`oracle_files` then names, per workbook, exactly the
``Z1`` cells to compare, so :func:`regrade.audit.conformance.conformance` compares every
engine and the consensus with Excel's values as it does for any Excel-saved workbook.

What the oracle cannot tell: it was captured in Excel for Mac 365 in a ja-JP locale, so cases
that format, parse or fold text by locale (dates typed as text, TEXT formats, kana) say what
a Japanese Excel does; and Formulon was developed against it, so for Formulon it is in-sample.
Parameter names of LET and LAMBDA are written without the ``_xlpm.`` prefix Excel gives them.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import openpyxl
from openpyxl.formula.tokenizer import Tokenizer
from openpyxl.utils.formulas import FORMULAE
from openpyxl.worksheet.formula import ArrayFormula

from regrade.audit.conformance import OracleFile
from regrade.values import CellRef

RESULT_CELL = "Z1"  # where Excel's capture put each case's formula
WORKSHEET_FUNCTIONS = {"FILTER", "SORT", "PY"}  # MS-XLSX 2.2.3: _xlfn._xlws.
CREATOR = "regrade excel-oracle"  # docProps/app.xml: these files were written by regrade, not saved by Excel
SHEET_NAME = re.compile(r"[\[\]:*?/\\']")


@dataclass(frozen=True)
class OracleCase:
    suite: str
    id: str
    formula: str
    setup: dict[str, dict]  # A1 -> {"kind": number|text|bool|error|formula|blank, "value" | "formula"}
    expect: dict  # {"kind": number|text|bool|error, "value"}


def load_suites(folder: Path) -> dict[str, list[OracleCase]]:
    """Every ``*.golden.json`` of ``folder``: its cases that Excel computed (skipped ones left out)."""
    suites: dict[str, list[OracleCase]] = {}
    for path in sorted(folder.glob("*.golden.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        suite = str(data["suite"])
        suites[suite] = [OracleCase(suite, str(c["id"]), str(c["formula"]), dict(c.get("setup") or {}), c["expect"])
                         for c in data["cases"] if "expect" in c and not c.get("skipped")]
    return suites


LOCALE_FUNCTIONS = {  # results that depend on the locale's currency, code page (CHAR, CODE), double-byte characters or calendar
    "DOLLAR", "YEN", "ASC", "JIS", "DBCS", "PHONETIC", "BAHTTEXT", "NUMBERSTRING", "DATESTRING", "CHAR", "CODE",
    "LENB", "LEFTB", "RIGHTB", "MIDB", "FINDB", "SEARCHB", "REPLACEB",
}
_LOCALE_FORMAT = re.compile(r'"[^"]*(?:aaa|\[DBNum|\[\$-)[^"]*"')  # TEXT formats: day names, numerals, locale codes
_TEXT_DATE = re.compile(r'"[^"]*\d+\s*[-/.]\s*\d+(?:\s*[-/.]\s*\d+)?[^"]*"')  # a date typed as text: order by locale


def locale_dependent(case: OracleCase) -> str | None:
    """Why the case's value is that of a Japanese Excel rather than of Excel as such, or None.

    Excel's capture ran in a ja-JP locale. A case whose value a locale may change is told
    apart: text that is not ASCII (kana and full-width folding, double-byte counts), the
    functions of :data:`LOCALE_FUNCTIONS` (Excel's CHAR and CODE use the system's code page,
    DOLLAR its currency, the -B functions its double-byte character set), a TEXT format naming
    days, numerals or a locale, and a date or time typed as text (its order of day, month and
    year is the locale's)."""
    texts = [case.formula, *(str(c.get("value")) for c in case.setup.values() if c.get("kind") in ("text", "formula"))]
    if any(not text.isascii() for text in texts):
        return "text that is not ASCII"
    names = {token.value[:-1].upper().removeprefix("_XLFN.") for token in Tokenizer(case.formula).items
             if token.type == "FUNC" and token.subtype == "OPEN"}
    if names & LOCALE_FUNCTIONS:
        return f"{', '.join(sorted(names & LOCALE_FUNCTIONS))}: a locale's currency, code page or double-byte characters"
    if _LOCALE_FORMAT.search(case.formula):
        return "a TEXT format naming days, numerals or a locale"
    if _TEXT_DATE.search(case.formula) or any(_TEXT_DATE.search(f'"{c.get("value")}"') for c in case.setup.values()
                                              if c.get("kind") == "text"):
        return "a date or time typed as text"
    return None


def stored_formula(formula: str) -> str:
    """The formula as a file stores it: each function newer than Excel 2007 (not among the
    predefined functions of ECMA-376 Part 1, 18.17.7) with its ``_xlfn.`` prefix."""
    tokens = Tokenizer(formula if formula.startswith("=") else f"={formula}")
    parts = []
    for token in tokens.items:
        text = token.value
        if token.type == "FUNC" and token.subtype == "OPEN":
            head, _, name = text[:-1].rpartition(":")  # A1:OFFSET( is one token: a range ending in a call
            upper = name.upper()
            if not upper.startswith("_XL") and upper not in FORMULAE:
                name = ("_xlfn._xlws." if upper in WORKSHEET_FUNCTIONS else "_xlfn.") + name
            text = (f"{head}:" if head or text.startswith(":") else "") + name + "("
        parts.append(text)
    return "=" + "".join(parts)


def sheet_name(number: int, case_id: str) -> str:
    """The case's sheet, as Excel's capture named it: its ordinal and id, within 31 characters."""
    return f"c{number:03d}_{SHEET_NAME.sub('_', case_id)}"[:31]


def locale_neutral(suites: dict[str, list[OracleCase]]) -> tuple[dict[str, list[OracleCase]], Counter[str]]:
    """The cases no locale changes (:func:`locale_dependent`), and the others counted by why."""
    kept: dict[str, list[OracleCase]] = {}
    left_out: Counter[str] = Counter()
    for suite, cases in suites.items():
        kept[suite] = []
        for case in cases:
            if (why := locale_dependent(case)) is None:
                kept[suite].append(case)
            else:
                left_out[why.split(":")[0]] += 1
    return kept, left_out


def write_workbooks(suites: dict[str, list[OracleCase]], folder: Path) -> list[OracleFile]:
    """One workbook per suite in ``folder`` (see the module docstring); the files to compare."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for suite, cases in suites.items():
        if not cases:
            continue
        path = folder / f"{suite}.xlsx"
        book = openpyxl.Workbook()
        book.remove(book.worksheets[0])
        names = []
        for number, case in enumerate(cases, start=1):
            sheet = book.create_sheet(sheet_name(number, case.id))
            names.append(sheet.title)
            for address, cell in case.setup.items():
                _write_setup(sheet, address, cell)
            sheet[RESULT_CELL] = ArrayFormula(RESULT_CELL, stored_formula(case.formula))
        book.save(path)
        _as_excel_stores_it(path, [c.expect for c in cases])
        files.append(OracleFile(suite, 1, path, None, tuple(CellRef(name, 1, 26) for name in names)))
    return files


def _write_setup(sheet, address: str, cell: dict) -> None:  # noqa: ANN001: an openpyxl worksheet
    kind = cell.get("kind")
    if kind == "blank":
        return
    if kind == "formula":
        sheet[address] = stored_formula(str(cell.get("formula") or cell.get("value")))
    elif kind == "error":
        sheet[address] = str(cell.get("code") or cell.get("value"))
        sheet[address].data_type = "e"
    elif kind == "bool":
        sheet[address] = bool(cell["value"])
    elif kind == "text":
        _write_as_entered(sheet, address, str(cell["value"]))
    else:
        sheet[address] = float(cell["value"])


def _write_as_entered(sheet, address: str, text: str) -> None:  # noqa: ANN001: an openpyxl worksheet
    """A text as Excel's capture entered it (xlwings sets ``Range.Value``, which Excel parses as
    if typed): "" leaves the cell blank, TRUE and FALSE in any case become booleans, an error
    code an error, a plain number a number (the oracle shows it: ``COUNTIF(A1:A8,"TRUE")``
    counts a "TRUE" entered among three booleans TRUE as 4). Anything else stays text."""
    if text == "":
        return
    if text.strip().upper() in ("TRUE", "FALSE"):
        sheet[address] = text.strip().upper() == "TRUE"
        return
    if text.strip().upper() in _ERROR_CODES:
        sheet[address] = text.strip().upper()
        sheet[address].data_type = "e"
        return
    try:
        number = float(text) if re.fullmatch(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*", text) else None
    except ValueError:
        number = None
    if number is not None:
        sheet[address] = number
        return
    sheet[address] = text
    sheet[address].data_type = "s"  # a text that looks like a formula stays a text


_ERROR_CODES = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A")
_METADATA = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<metadata xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" '
    'xmlns:xda="http://schemas.microsoft.com/office/spreadsheetml/2017/dynamicarray">'
    '<metadataTypes count="1"><metadataType name="XLDAPR" minSupportedVersion="120000" copy="1" pasteAll="1" '
    'pasteValues="1" merge="1" splitFirst="1" rowColShift="1" clearFormats="1" clearComments="1" assign="1" '
    'coerce="1" cellMeta="1"/></metadataTypes><futureMetadata name="XLDAPR" count="1"><bk><extLst>'
    '<ext uri="{bdbb8cdc-fa1e-496e-a857-3c3f30c029c3}"><xda:dynamicArrayProperties fDynamic="1" fCollapsed="0"/>'
    '</ext></extLst></bk></futureMetadata><cellMetadata count="1"><bk><rc t="1" v="0"/></bk></cellMetadata>'
    '</metadata>')
_APP = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
        f'<Application>{CREATOR}</Application></Properties>')


def _as_excel_stores_it(path: Path, expects: list[dict]) -> None:
    """Rewrite the package openpyxl saved: each sheet's Z1 a dynamic-array formula (``cm="1"``
    and the XLDAPR metadata) caching Excel's value, and an app.xml naming regrade as its writer."""
    with zipfile.ZipFile(path) as archive:
        parts = {info.filename: archive.read(info) for info in archive.infolist()}
    sheets = sorted((name for name in parts if re.fullmatch(r"xl/worksheets/sheet\d+\.xml", name)),
                    key=lambda name: int(re.findall(r"\d+", name)[-1]))
    for name, expect in zip(sheets, expects):
        xml = parts[name].decode("utf-8")
        parts[name] = re.sub(r'<c r="Z1"([^>]*)>(<f t="array" ref="Z1">.*?</f>)(?:<v\s*/>|<v>.*?</v>)?</c>',
                             lambda m: _result_cell(m.group(1), m.group(2), expect), xml, count=1).encode("utf-8")
    parts["xl/metadata.xml"] = _METADATA.encode("utf-8")
    parts["docProps/app.xml"] = _APP.encode("utf-8")
    types = parts["[Content_Types].xml"].decode("utf-8")
    parts["[Content_Types].xml"] = types.replace("</Types>", '<Override PartName="/xl/metadata.xml" ContentType="'
                                                 'application/vnd.openxmlformats-officedocument.spreadsheetml.'
                                                 'sheetMetadata+xml"/></Types>').encode("utf-8")
    rels = parts["xl/_rels/workbook.xml.rels"].decode("utf-8")
    parts["xl/_rels/workbook.xml.rels"] = rels.replace("</Relationships>", '<Relationship Id="rIdMeta" Type="http://'
                                                       'schemas.openxmlformats.org/officeDocument/2006/relationships/'
                                                       'sheetMetadata" Target="metadata.xml"/></Relationships>'
                                                       ).encode("utf-8")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)


def _result_cell(attributes: str, formula: str, expect: dict) -> str:
    attributes = re.sub(r'\s+t="[^"]*"', "", attributes)
    kind, value = expect["kind"], expect.get("value")
    if kind == "number":
        typed, cached = "", repr(float(value or 0))
    elif kind == "bool":
        typed, cached = ' t="b"', "1" if value else "0"
    elif kind == "error":
        typed, cached = ' t="e"', _escape(str(value or expect.get("code")))
    else:
        typed, cached = ' t="str"', _escape(str(value))
    return f'<c r="Z1"{attributes}{typed} cm="1">{formula}<v>{cached}</v></c>'


def _escape(text: str) -> str:
    """Text as a cell's XML holds it: markup escaped, a control character as ``_xHHHH_``
    (ECMA-376 Part 1, 22.9.2.19), an underscore that would read as one as ``_x005F_``."""
    text = re.sub(r"_(?=x[0-9A-Fa-f]{4}_)", "_x005F_", text)
    text = "".join(f"_x{ord(c):04X}_" if ord(c) < 0x20 and c not in "\t\n\r" else c for c in text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def by_suite(by_file: list[dict], engines: list[str]) -> list[dict]:
    """Per suite (a function family) of a conformance report's ``by_file``: each engine's
    cells equal to Excel of those it computed, its abstentions, and the consensus's."""
    rows = []
    for entry in by_file:
        row: dict[str, object] = {"suite": entry["group"]}
        for name in engines:
            counts = entry["engines"].get(name) or {}
            computed = counts.get("compared", 0) - counts.get("abstain", 0)
            row[f"{name}_right"] = f"{counts.get('agree', 0)}/{computed}"
            row[f"{name}_abstain"] = counts.get("abstain", 0)
        consensus = entry["consensus"]
        row["consensus_right"] = f"{consensus['agree']}/{consensus['compared'] - consensus['abstain'] - consensus['disagree']}"
        row["consensus_undecided"] = consensus["abstain"] + consensus["disagree"]
        rows.append(row)
    return rows


ORACLES = Path(__file__).resolve().parents[2] / "fixtures" / "oracles"


def clearance_files(cells: tuple[str, ...], folder: Path) -> list[OracleFile]:
    """The files that show a hazard's clearance (:class:`regrade.engines.rules.Clearance`):
    ``excel365:<suite>`` (its locale-neutral cases) and ``excel365:<suite>/<case id>`` written to
    ``folder`` as :func:`write_workbooks` does; ``<path>!<sheet>!<cell>`` a cell of a workbook
    Excel saved under ``fixtures/oracles``, compared with its cached value."""
    from openpyxl.utils.cell import coordinate_to_tuple

    from regrade.engines.rules import EXCEL365

    chosen: dict[str, list[OracleCase]] = {}
    files: list[OracleFile] = []
    suites, _ = locale_neutral(load_suites(ORACLES / "excel365"))
    for cell in cells:
        if cell.startswith(EXCEL365):
            suite, _, case_id = cell[len(EXCEL365):].partition("/")
            found = [c for c in suites[suite] if not case_id or c.id == case_id]
            if not found:
                raise ValueError(f"{cell}: no such locale-neutral case in the Excel 365 oracle")
            chosen.setdefault(suite, []).extend(found)
        else:
            path, sheet, coordinate = cell.rsplit("!", 2)
            files.append(OracleFile(path, 1, ORACLES / path, None, (CellRef(sheet, *coordinate_to_tuple(coordinate)),)))
    return write_workbooks(chosen, folder) + files
