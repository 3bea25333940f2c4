"""LibreOffice helper: runs under Debian's /usr/bin/python3, which has the UNO bridge.

    /usr/bin/python3 engines/libreoffice/worker.py PROFILE_DIR MEMORY_MB [SANDBOX COMMAND ...]

It starts a headless soffice limited to MEMORY_MB of address space (under SANDBOX COMMAND when given: ``unshare --net
--map-current-user``, a network namespace with no interface but loopback, which is
down) with a private profile in PROFILE_DIR (never the user's)
that never updates external links and never runs macros, then answers requests, one JSON
object per line on stdin:

    {"path": "/abs/book.xlsx", "cells": [["Sheet1", 3, 2], ...],
     "formulas": [["Sheet1", 4, 2, "=SUM('Sheet1'!$B$2:$B$3)", null], ...]}   (Excel syntax, optional;
     the last item is the range of an array formula, set over the whole range)

with one JSON line on stdout:

    {"ok": true, "sheets": [...], "cells": [[kind, value, number_format, formula], ...]}
    {"ok": false, "reason": "load-failed", "detail": "..."}

``kind`` is "empty", "number", "text" or "error". This file imports nothing from
regrade (it runs in another interpreter) but its neighbour office_files.
"""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time

import uno  # type: ignore[import-not-found]
from com.sun.star.beans import PropertyValue  # type: ignore[import-not-found]
from com.sun.star.connection import NoConnectException  # type: ignore[import-not-found]
from com.sun.star.table import CellAddress  # type: ignore[import-not-found]

from office_files import accept_pipe, remove_office_files  # this file's folder, not the regrade package

PROFILE_SETTINGS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>1</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Content/Update"><prop oor:name="Link" oor:op="fuse"><value>2</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
</oor:items>
"""

# com.sun.star.util.NumberFormat
LOGICAL = 1024
# com.sun.star.sheet.FormulaResult
RESULT_ERROR = 4
# com.sun.star.sheet.CellFlags
FORMULA_CELLS = 16
# com.sun.star.sheet.AddressConvention
XL_OOX = 3


def prop(name, value):
    p = PropertyValue()
    p.Name, p.Value = name, value
    return p


def limit_office(memory_mb: int) -> None:
    """In soffice before it starts: its memory limit, and death with this helper (Linux's
    PR_SET_PDEATHSIG), so that a helper killed at a workbook's time limit leaves no soffice."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def start_office(profile: str, memory_mb: int, sandbox: list):
    user = os.path.join(profile, "user")
    os.makedirs(user, exist_ok=True)
    with open(os.path.join(user, "registrymodifications.xcu"), "w", encoding="utf-8") as handle:
        handle.write(PROFILE_SETTINGS)
    pipe = accept_pipe(profile)
    office = subprocess.Popen(
        [*sandbox, "soffice", "--headless", "--invisible", "--nologo", "--norestore", "--nodefault", "--nolockcheck",
         f"-env:UserInstallation=file://{profile}", f"--accept=pipe,name={pipe};urp;StarOffice.ComponentContext"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=lambda: limit_office(memory_mb),
    )
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    deadline = time.monotonic() + 60
    while True:
        try:
            context = resolver.resolve(f"uno:pipe,name={pipe};urp;StarOffice.ComponentContext")
            break
        except NoConnectException:
            if office.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("soffice did not start")
            time.sleep(0.1)
    desktop = context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
    return office, desktop, known_functions(context)


def known_functions(context) -> set:
    """The names of every function this LibreOffice knows."""
    descriptions = context.ServiceManager.createInstanceWithContext("com.sun.star.sheet.FunctionDescriptions", context)
    names = set()
    for index in range(descriptions.getCount()):
        for field in descriptions.getByIndex(index):
            if field.Name == "Name":
                names.add(str(field.Value).upper())
    return names


LOWER_CASE_CALL = re.compile(r'(?<![A-Za-z0-9_."])([a-z][a-z0-9_.]*)\(')


def recase_known_functions(doc, known: set) -> int:
    """Formulas saved without Excel's _xlfn. prefix (as openpyxl writes them) reach LibreOffice
    as unknown, lower-cased names; re-case those LibreOffice knows. Returns how many changed."""
    changed = 0
    for sheet in doc.Sheets:
        formulas = sheet.queryContentCells(FORMULA_CELLS)
        for address in formulas.getRangeAddresses():
            block = sheet.getCellRangeByPosition(address.StartColumn, address.StartRow, address.EndColumn, address.EndRow)
            for r, row in enumerate(block.getFormulaArray()):
                for c, formula in enumerate(row):
                    if not LOWER_CASE_CALL.search(formula):
                        continue
                    fixed = LOWER_CASE_CALL.sub(lambda m: m.group(1).upper() + "(" if m.group(1).upper() in known else m.group(0), formula)
                    if fixed != formula:
                        block.getCellByPosition(c, r).setFormula(fixed)
                        changed += 1
    return changed


def read_cells(doc, sheet, cells: list) -> list:
    """Readings of ``cells`` ((row, column) pairs, 1-based) of one sheet.

    A UNO call costs milliseconds, so cells are read a block at a time: their bounding
    box when it is dense enough, else one block per row (one call per cell took 35 s
    for the 6,403 answer cells of SpreadsheetBench task 41-47; a block takes 0.1 s).
    """
    rows = [row for row, _ in cells]
    columns = [column for _, column in cells]
    top, left, bottom, right = min(rows), min(columns), max(rows), max(columns)
    if (bottom - top + 1) * (right - left + 1) <= 4 * len(cells) + 4096:
        boxes = [(top, left, bottom, right)]
    else:
        by_row: dict = {}
        for row, column in cells:
            by_row.setdefault(row, []).append(column)
        boxes = [(row, min(cols), row, max(cols)) for row, cols in by_row.items()]
    readings: dict = {}
    for top, left, bottom, right in boxes:
        readings.update(read_block(doc, sheet.getCellRangeByPosition(left - 1, top - 1, right - 1, bottom - 1), top, left))
    return [readings[(row, column)] for row, column in cells]


def read_block(doc, block, top: int, left: int) -> dict:
    """Every cell of ``block`` as {(row, column): [kind, value, number_format, formula]}."""
    values, formulas = block.getDataArray(), block.getFormulaArray()
    formula_cells = cells_of(block.queryContentCells(FORMULA_CELLS).getRangeAddresses(), top, left)
    error_cells = cells_of(block.queryFormulaCells(RESULT_ERROR).getRangeAddresses(), top, left)
    formats = format_grid(doc, block, top, left)
    readings = {}
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            formula = formulas[r][c] if (r, c) in formula_cells else None
            if (r, c) in error_cells:
                readings[(top + r, left + c)] = ["error", block.getCellByPosition(c, r).getString(), None, formula]
            elif isinstance(value, str):
                kind = "empty" if value == "" and formula is None and formulas[r][c] == "" else "text"
                readings[(top + r, left + c)] = [kind, None if kind == "empty" else value, None, formula]
            else:
                fmt, logical = formats.get((r, c), ("General", False))
                readings[(top + r, left + c)] = ["bool", value != 0, fmt, formula] if logical else ["number", value, fmt, formula]
    return readings


def cells_of(addresses, top: int, left: int) -> set:
    """The (row, column) offsets, from the block's corner, of every cell of the range ``addresses``."""
    found = set()
    for address in addresses:
        for row in range(address.StartRow, address.EndRow + 1):
            for column in range(address.StartColumn, address.EndColumn + 1):
                found.add((row - top + 1, column - left + 1))
    return found


def format_grid(doc, block, top: int, left: int) -> dict:
    """{(row, column) offset: (format string, is it a boolean format)}, from the block's
    ranges of uniform format; cells in General are left out."""
    grid, known = {}, {}
    ranges = block.getCellFormatRanges()
    for index in range(ranges.getCount()):
        part = ranges.getByIndex(index)
        key = part.NumberFormat
        if key not in known:
            known[key] = number_format(doc, key)
        if known[key] == ("General", False):
            continue
        for cell in cells_of([part.getRangeAddress()], top, left):
            grid[cell] = known[key]
    return grid


def number_format(doc, key: int) -> tuple:
    """The format string of number format ``key`` and whether LibreOffice calls it boolean."""
    try:
        fmt = doc.NumberFormats.getByKey(key)
        return fmt.FormatString, bool(fmt.Type & LOGICAL)
    except Exception:
        return "General", False


def set_excel_formulas(doc, formulas: list) -> None:
    """Replace cells' formulas with Excel-syntax ones, parsed as Excel writes them (OOXML)."""
    if not formulas:
        return
    parser = doc.createInstance("com.sun.star.sheet.FormulaParser")
    parser.setPropertyValue("CompileEnglish", True)
    parser.setPropertyValue("FormulaConvention", XL_OOX)
    names = list(doc.Sheets.ElementNames)
    sheets: dict = {}  # each sheet asked of LibreOffice once: every call is a round trip over its pipe
    for name, row, column, formula, *area in formulas:
        sheet = resolve_sheet(name, names)
        if sheet is None:
            continue
        if sheet not in sheets:
            sheets[sheet] = doc.Sheets.getByName(sheet)
        address = CellAddress()
        address.Sheet, address.Column, address.Row = names.index(sheet), column - 1, row - 1
        tokens = parser.parseFormula(formula, address)
        if area and area[0]:  # an array formula: set over its whole range
            sheets[sheet].getCellRangeByName(area[0]).setArrayTokens(tokens)
        else:
            sheets[sheet].getCellByPosition(column - 1, row - 1).setTokens(tokens)


def resolve_sheet(requested: str, sheets: list) -> str | None:
    """Exact name first, then case-insensitive, as engines/sheets.py does."""
    if requested in sheets:
        return requested
    folded = requested.strip().casefold()
    return next((name for name in sheets if name.strip().casefold() == folded), None)


def evaluate(desktop, known: set, request: dict) -> dict:
    url = uno.systemPathToFileUrl(os.path.abspath(request["path"]))
    # Read-only, as nothing is ever saved; but LibreOffice ignores array formulas set in a
    # read-only document, so a request that sets some opens an untitled copy instead
    # (AsTemplate: no location, so nothing can be written back and no lock file is made).
    arrays = any(len(entry) > 4 and entry[4] for entry in request.get("formulas", []))
    access = prop("AsTemplate", True) if arrays else prop("ReadOnly", True)
    options = (prop("Hidden", True), access, prop("MacroExecutionMode", 0), prop("UpdateDocMode", 0))
    try:
        doc = desktop.loadComponentFromURL(url, "_blank", 0, options)
    except Exception as exc:
        return {"ok": False, "reason": "load-failed", "detail": f"LibreOffice cannot load it: {exc}"}
    if doc is None or not hasattr(doc, "Sheets"):
        if doc is not None:
            doc.close(True)
        return {"ok": False, "reason": "load-failed", "detail": "LibreOffice did not open it as a spreadsheet"}
    try:
        recase_known_functions(doc, known)
        set_excel_formulas(doc, request.get("formulas", []))
        doc.calculateAll()  # every formula, cached value or not: the profile computes nothing on load
        sheets = list(doc.Sheets.ElementNames)
        wanted: dict = {}
        for name, row, column in request["cells"]:
            if (sheet := resolve_sheet(name, sheets)) is not None:
                wanted.setdefault(sheet, []).append((row, column))
        readings = {}
        for sheet, cells in wanted.items():
            for cell, reading in zip(cells, read_cells(doc, doc.Sheets.getByName(sheet), cells)):
                readings[(sheet, *cell)] = reading
        cells = []
        for name, row, column in request["cells"]:
            sheet = resolve_sheet(name, sheets)
            cells.append(readings[(sheet, row, column)] if sheet else None)
        return {"ok": True, "sheets": sheets, "cells": cells}
    finally:
        doc.close(True)


def main() -> None:
    profile = sys.argv[1]
    office, desktop, known = start_office(profile, int(sys.argv[2]), sys.argv[3:])
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = evaluate(desktop, known, json.loads(line))
        except Exception as exc:  # a UNO failure mid-document: report it, keep serving
            reply = {"ok": False, "reason": "crashed", "detail": f"LibreOffice failed: {type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)
        if office.poll() is not None:
            raise SystemExit("soffice died")  # the engine starts a new helper for the next workbook
    # End of input: regrade closed the pipe or its process is gone (a pool worker ends
    # with os._exit, which runs no atexit hook), so the profile is ours to remove.
    try:
        desktop.terminate()
        office.wait(10)
    except Exception:
        office.kill()
        office.wait(10)
    remove_office_files(profile)


if __name__ == "__main__":
    main()
