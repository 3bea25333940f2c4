"""A corpus of hostile and broken workbooks, generated in code (nothing large is committed).

Every kind is an output for one golden (``Sheet1!A1`` = 42) with its expected outcome:
a typed failure reason (the file is refused or cannot be read), or a verdict (the file
is graded; where it holds 42 in A1 besides its hostile part, the verdict is
``confirmed-pass``). Used by tests/test_hostile.py and bench/hostile.py.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" ' \
     'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
XLSX_MAIN = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
XLSM_MAIN = "application/vnd.ms-excel.sheet.macroEnabled.main+xml"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
STYLES = (f'<styleSheet {NS}><numFmts count="0"/><fonts count="1"><font/></fonts><fills count="1"><fill><patternFill patternType="none"/></fill></fills>'
          '<borders count="1"><border/></borders>'
          '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
          '<cellXfs count="2"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
          '<xf numFmtId="14" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>'
          '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>')
ANSWER = '<c r="A1"><v>42</v></c>'


def cell_rows(*rows: str) -> str:
    return "".join(f'<row r="{n}">{cells}</row>' for n, cells in enumerate(rows, 1))


def worksheet(rows: str, head: str = "", tail: str = "") -> str:
    return f'<?xml version="1.0" encoding="UTF-8"?><worksheet {NS}>{head}<sheetData>{rows}</sheetData>{tail}</worksheet>'


def package(sheets: list[tuple[str, str]], *, extra: dict[str, bytes | str] | None = None, types: str = "",
            workbook_tail: str = "", main: str = XLSX_MAIN, shared: list[str] | None = None,
            workbook_rels: str = "", sheet_rels: dict[int, str] | None = None) -> bytes:
    """An .xlsx package, part by part, so that any part can be made hostile."""
    parts: dict[str, bytes | str] = {}
    overrides = [f'<Override PartName="/xl/workbook.xml" ContentType="{main}"/>',
                 '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>']
    entries, rels = [], []
    for index, (name, xml) in enumerate(sheets, 1):
        parts[f"xl/worksheets/sheet{index}.xml"] = xml
        overrides.append(f'<Override PartName="/xl/worksheets/sheet{index}.xml" '
                         'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>')
        entries.append(f'<sheet name="{name}" sheetId="{index}" r:id="rId{index}"/>')
        rels.append(f'<Relationship Id="rId{index}" Type="{REL}/worksheet" Target="worksheets/sheet{index}.xml"/>')
        if sheet_rels and index in sheet_rels:
            parts[f"xl/worksheets/_rels/sheet{index}.xml.rels"] = sheet_rels[index]
    rels.append(f'<Relationship Id="rIdS" Type="{REL}/styles" Target="styles.xml"/>')
    if shared is not None:
        items = "".join(f"<si><t>{text}</t></si>" for text in shared)
        parts["xl/sharedStrings.xml"] = f'<sst {NS} count="{len(shared)}" uniqueCount="{len(shared)}">{items}</sst>'
        overrides.append('<Override PartName="/xl/sharedStrings.xml" '
                         'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>')
        rels.append(f'<Relationship Id="rIdT" Type="{REL}/sharedStrings" Target="sharedStrings.xml"/>')
    parts["[Content_Types].xml"] = (
        '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>' + "".join(overrides) + types + "</Types>")
    parts["_rels/.rels"] = (f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                            f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>')
    parts["xl/workbook.xml"] = f'<workbook {NS}><sheets>{"".join(entries)}</sheets>{workbook_tail}</workbook>'
    parts["xl/_rels/workbook.xml.rels"] = ('<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                                           + "".join(rels) + workbook_rels + "</Relationships>")
    parts["xl/styles.xml"] = STYLES
    parts.update(extra or {})
    return zip_bytes(parts)


def zip_bytes(parts: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def answer_book(*rows: str, **options) -> bytes:
    """A workbook whose Sheet1!A1 holds 42, with more rows after it."""
    return package([("Sheet1", worksheet(cell_rows(ANSWER, *rows)))], **options)


def patched_sizes(data: bytes, part: str, declared: int, local_too: bool) -> bytes:
    """The zip with ``part``'s uncompressed size rewritten in its central directory entry
    (and its local header): a header that lies."""
    body = bytearray(data)
    name = part.encode()
    central = body.find(b"PK\x01\x02")
    while central != -1:
        name_length = struct.unpack_from("<H", body, central + 28)[0]
        if bytes(body[central + 46:central + 46 + name_length]) == name:
            struct.pack_into("<I", body, central + 24, declared)
            local = struct.unpack_from("<I", body, central + 42)[0]
            if local_too:
                struct.pack_into("<I", body, local + 22, declared)
        central = body.find(b"PK\x01\x02", central + 4)
    return bytes(body)


@dataclass(frozen=True)
class Kind:
    name: str
    filename: str
    make: Callable[[Path], None]  # writes the output at the given path
    expected: str  # a failure reason or a verdict
    why: str
    stage: str = "screen"  # "screen": refused before parsing; "read": the readers reject it; "graded"


def _write(data: bytes | str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return make


def _truncated(path: Path) -> None:
    data = answer_book()
    path.write_bytes(data[: len(data) // 2])


def _bad_crc(path: Path) -> None:
    data = bytearray(answer_book(*[f'<c r="B{n}"><v>{n}</v></c>' for n in range(2, 200)]))
    start = data.find(b"xl/worksheets/sheet1.xml") + len("xl/worksheets/sheet1.xml") + 20
    data[start] ^= 0xFF
    path.write_bytes(bytes(data))


def _inflating_bomb(path: Path) -> None:
    filler = b" " * (64 * 1024 * 1024)
    xml = worksheet(cell_rows(ANSWER)).replace("</worksheet>", "")
    path.write_bytes(package([("Sheet1", xml.encode() + filler + b"</worksheet>")]))  # type: ignore[list-item]


def _declared_bomb(path: Path) -> None:
    path.write_bytes(patched_sizes(answer_book(), "xl/worksheets/sheet1.xml", 0xF000_0000, local_too=True))


def _lying_bomb(path: Path) -> None:
    rows = [f'<c r="B{n}"><v>{n}</v></c>' for n in range(2, 2000)]
    path.write_bytes(patched_sizes(answer_book(*rows), "xl/worksheets/sheet1.xml", 100, local_too=True))


def _many_parts(path: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        with zipfile.ZipFile(io.BytesIO(answer_book())) as source:
            for item in source.infolist():
                archive.writestr(item.filename, source.read(item))
        for index in range(100_001):
            archive.writestr(f"customXml/item{index}.bin", b"")


def _encrypted(path: Path) -> None:
    from msoffcrypto.format.ooxml import OOXMLFile

    plain = io.BytesIO(answer_book())
    with path.open("wb") as out:
        OOXMLFile(plain).encrypt("secret", out)


def _legacy_xls(path: Path) -> None:
    import xlwt

    book = xlwt.Workbook()
    book.add_sheet("Sheet1").write(0, 0, 42)
    book.save(str(path))


def _docx(path: Path) -> None:
    path.write_bytes(zip_bytes({
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                               '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
                               'officedocument.wordprocessingml.document.main+xml"/></Types>',
        "word/document.xml": "<document/>"}))


def _directory(path: Path) -> None:
    path.mkdir()


def _symlink_to(target: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.symlink_to(target)
    return make


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _utf16_doctype(path: Path) -> None:
    xml = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE x [<!ENTITY a "42">]>' + worksheet(cell_rows(ANSWER))[38:]
    data = zipfile.ZipFile(io.BytesIO(answer_book()))
    parts = {i.filename: data.read(i) for i in data.infolist()}
    parts["xl/worksheets/sheet1.xml"] = b"\xff\xfe" + xml.encode("utf-16-le")
    path.write_bytes(zip_bytes(parts))


def _with_part(name: str, content: str) -> bytes:
    data = zipfile.ZipFile(io.BytesIO(answer_book()))
    parts: dict[str, bytes | str] = {i.filename: data.read(i) for i in data.infolist()}
    parts[name] = content
    return zip_bytes(parts)


def _without_part(name: str) -> bytes:
    data = zipfile.ZipFile(io.BytesIO(answer_book()))
    return zip_bytes({i.filename: data.read(i) for i in data.infolist() if i.filename != name})


LAUGHS = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
          + "".join(f'<!ENTITY lol{n} "{("&lol%s;" % ("" if n == 1 else n - 1)) * 10}">' for n in range(1, 10))
          + ']>' + worksheet(cell_rows(ANSWER + '<c r="B1" t="inlineStr"><is><t>&lol9;</t></is></c>'))[38:])
XXE = ('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
       + worksheet(cell_rows(ANSWER + '<c r="B1" t="inlineStr"><is><t>&xxe;</t></is></c>'))[38:])
EXTERNAL_LINK = (f'<externalLink {NS}><externalBook r:id="rId1"><sheetNames><sheetName val="Data"/></sheetNames>'
                 '<sheetDataSet><sheetData sheetId="0"><row r="1"><cell r="A1"><v>7</v></cell></row></sheetData>'
                 '</sheetDataSet></externalBook></externalLink>')
URL = "http://127.0.0.1:9/"  # the discard port: nothing listens, and nothing should try


def formula_cell(ref: str, formula: str, cached: str) -> str:
    return f'<c r="{ref}"><f>{formula.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")}</f><v>{cached}</v></c>'


def _dense_rows(path: Path) -> None:
    rows = "".join(f'<row r="{n}"><c r="B{n}"><v>{n % 97}</v></c></row>' for n in range(2, 1_048_577))
    path.write_bytes(package([("Sheet1", worksheet(f'<row r="1">{ANSWER}</row>' + rows))]))


def _many_sheets(path: Path) -> None:
    sheets = [("Sheet1", worksheet(cell_rows(ANSWER)))] + [(f"S{n}", worksheet("")) for n in range(2, 10_001)]
    path.write_bytes(package(sheets))


NESTED = "".join("IF(TRUE," for _ in range(63)) + "42" + ",0)" * 63
LONG = "0" + "+0" * 3998 + "+42"  # with its "=", 8,001 characters (Excel allows 8,192)


def kinds() -> list[Kind]:
    """Every hostile kind, with the outcome regrade must give it."""
    k = Kind
    return [
        # refused before any parser sees them
        k("text-file", "text.xlsx", _write("this is not a workbook\n"), "unreadable-output", "not a zip"),
        k("empty-file", "empty.xlsx", _write(b""), "unreadable-output", "zero bytes"),
        k("truncated-zip", "truncated.xlsx", _truncated, "unreadable-output", "the first half of a workbook"),
        k("corrupt-crc", "crc.xlsx", _bad_crc, "unreadable-output", "a flipped byte in a compressed part"),
        k("pdf-renamed", "pdf.xlsx", _write(b"%PDF-1.4\n%\xe2\xe3\n1 0 obj <<>> endobj\n"), "unreadable-output", "a PDF"),
        k("html-renamed", "html.xlsx", _write("<html><body><table><tr><td>42</td></tr></table></body></html>"),
          "unreadable-output", "an HTML export named .xlsx"),
        k("csv-renamed", "csv.xlsx", _write("answer\n42\n"), "unreadable-output", "a CSV named .xlsx"),
        k("gzip-renamed", "gzip.xlsx", _write(gzip.compress(b"42")), "unreadable-output", "a gzip file"),
        k("docx-renamed", "docx.xlsx", _docx, "unreadable-output", "a Word document named .xlsx"),
        k("zip-without-content-types", "notypes.xlsx", _write(_without_part("[Content_Types].xml")), "unreadable-output",
          "a zip that is no Office package"),
        k("ods-like-zip", "ods.xlsx", _write(zip_bytes({"mimetype": "application/vnd.oasis.opendocument.spreadsheet",
                                                           "content.xml": "<office:document-content/>"})),
          "unreadable-output", "an OpenDocument package named .xlsx"),
        k("inflating-zip-bomb", "bomb.xlsx", _inflating_bomb, "zip-bomb", "a sheet part of 64 MB of spaces, ~1000:1"),
        k("declared-zip-bomb", "declared.xlsx", _declared_bomb, "zip-bomb", "a part declaring 3.75 GB inflated"),
        k("lying-zip-bomb", "lying.xlsx", _lying_bomb, "zip-bomb", "a part inflating past the 100 bytes it declares"),
        k("too-many-parts", "parts.xlsx", _many_parts, "zip-bomb", "100,001 empty parts"),
        k("billion-laughs", "laughs.xlsx", _write(package([("Sheet1", LAUGHS)])), "hostile-xml",
          "an entity-expansion bomb in the sheet"),
        k("xxe-sheet", "xxe.xlsx", _write(package([("Sheet1", XXE)])), "hostile-xml", "an external entity on /etc/passwd"),
        k("xxe-shared-strings", "xxe-sst.xlsx",
          _write(_with_part("xl/sharedStrings.xml", '<?xml version="1.0"?><!DOCTYPE s [<!ENTITY e SYSTEM '
                            '"file:///etc/hostname">]><sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
                            '<si><t>&e;</t></si></sst>')), "hostile-xml", "an external entity in the shared strings"),
        k("doctype-content-types", "types-dtd.xlsx",
          _write(_with_part("[Content_Types].xml", '<?xml version="1.0"?><!DOCTYPE Types><Types xmlns="http://schemas'
                            f'.openxmlformats.org/package/2006/content-types"><Override PartName="/xl/workbook.xml" '
                            f'ContentType="{XLSX_MAIN}"/></Types>')), "hostile-xml", "a DTD in [Content_Types].xml"),
        k("utf16-doctype", "utf16.xlsx", _utf16_doctype, "hostile-xml", "a DTD in a UTF-16 sheet part"),
        k("encrypted", "encrypted.xlsx", _encrypted, "encrypted", "password-protected with msoffcrypto-tool"),
        k("legacy-xls-renamed", "legacy.xlsx", _legacy_xls, "legacy-format", "a BIFF8 .xls written by xlwt"),
        k("directory", "folder.xlsx", _directory, "unreadable-output", "a folder where a file should be"),
        k("dangling-link", "dangling.xlsx", _symlink_to("/nonexistent/regrade/output.xlsx"), "missing-output",
          "a symbolic link to nothing"),
        k("device-link", "zero.xlsx", _symlink_to("/dev/zero"), "unreadable-output", "an endless device: never read"),
        k("named-pipe", "pipe.xlsx", _fifo, "unreadable-output", "a FIFO: opening it would block forever"),
        k("missing", "missing.xlsx", lambda path: None, "missing-output", "no file at all"),
        # parsed: the bad part is rejected by the readers
        k("malformed-sheet-xml", "malformed.xlsx", _write(package([("Sheet1", worksheet(cell_rows(ANSWER)).replace("</row>", ""))])),
          "unreadable-output", "an unclosed element: openpyxl, IronCalc and Formulon refuse the file; LibreOffice "
          "alone reads the answer in it (Excel offers to repair such a file), below the quorum of two", "read"),
        k("invalid-xml-characters", "badchars.xlsx",
          _write(answer_book('<c r="B2" t="s"><v>0</v></c>', shared=["bad\x01\x02text"])),
          "artifact", "control characters XML forbids, in the shared strings: openpyxl refuses the file, "
          "LibreOffice and IronCalc read the answer in it", "read"),
        k("empty-sheet-part", "emptypart.xlsx", _write(package([("Sheet1", "")])), "unreadable-output",
          "a zero-byte sheet part", "read"),
        k("missing-workbook-part", "noworkbook.xlsx", _write(_without_part("xl/workbook.xml")), "unreadable-output",
          "the content types name a workbook part that is absent", "read"),
        # graded: hostile parts around a correct answer
        k("macro-enabled-xlsm", "macros.xlsm",
          _write(answer_book(main=XLSM_MAIN, extra={"xl/vbaProject.bin": b"\xd0\xcf\x11\xe0" + b"\x00" * 508},
                             types='<Default Extension="bin" ContentType="application/vnd.ms-office.vbaProject"/>')),
          "confirmed-pass", "a VBA project: never run"),
        k("macros-in-xlsx", "macros.xlsx",
          _write(answer_book(extra={"xl/vbaProject.bin": b"\xd0\xcf\x11\xe0" + b"\x00" * 508})), "confirmed-pass",
          "a VBA project in a file claiming to be .xlsx"),
        k("external-link", "extlink.xlsx",
          _write(answer_book(formula_cell("B2", "[1]Data!A1", "7"),
                             extra={"xl/externalLinks/externalLink1.xml": EXTERNAL_LINK,
                                    "xl/externalLinks/_rels/externalLink1.xml.rels":
                                        f'<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                                        f'<Relationship Id="rId1" Type="{REL}/externalLinkPath" Target="{URL}book.xlsx" '
                                        'TargetMode="External"/></Relationships>'},
                             workbook_tail='<externalReferences><externalReference r:id="rIdX"/></externalReferences>',
                             workbook_rels=f'<Relationship Id="rIdX" Type="{REL}/externalLink" '
                                           'Target="externalLinks/externalLink1.xml"/>')),
          "confirmed-pass", "a link to a workbook on a web server: never followed"),
        k("webservice", "webservice.xlsx", _write(answer_book(formula_cell("B2", f'_xlfn.WEBSERVICE("{URL}ws")', "0"))),
          "confirmed-pass", "WEBSERVICE beside the answer: LibreOffice declines the workbook, IronCalc computes A1", "graded"),
        k("webservice-answer", "webservice-answer.xlsx",
          _write(package([("Sheet1", worksheet(cell_rows(formula_cell("A1", f'_xlfn.WEBSERVICE("{URL}ws")', "42"))))])),
          "unevaluable", "the answer itself comes from the network: no engine may compute it"),
        k("hyperlink", "hyperlink.xlsx", _write(package([("Sheet1", worksheet(cell_rows(
            formula_cell("A1", f'HYPERLINK("{URL}page",42)', "42"))))])), "confirmed-pass", "a HYPERLINK to a web page"),
        k("indirect-external", "indirect.xlsx", _write(answer_book(formula_cell("B2", f"INDIRECT(\"'{URL}[x.xlsx]Sheet1'!A1\")", "0"))),
          "confirmed-pass", "INDIRECT naming a workbook on a web server"),
        k("web-query-connection", "connection.xlsx",
          _write(answer_book(extra={"xl/connections.xml": f'<connections {NS}><connection id="1" name="q" type="4" '
                                    f'refreshOnLoad="1"><webPr url="{URL}query"/></connection></connections>'},
                             types='<Override PartName="/xl/connections.xml" ContentType="application/vnd.openxmlformats-'
                                   'officedocument.spreadsheetml.connections+xml"/>')),
          "confirmed-pass", "a web query set to refresh on load"),
        k("zip-path-traversal", "traversal.xlsx", _write(answer_book(extra={"../../../tmp/regrade-evil.txt": "x"})),
          "confirmed-pass", "a part named ../../../tmp/...: regrade never extracts"),
        k("last-row", "lastrow.xlsx", _write(package([("Sheet1", worksheet(
            f'<row r="1">{ANSWER}{formula_cell("B1", "COUNT(C:C)", "1")}</row>'
            '<row r="1048576"><c r="C1048576"><v>1</v></c></row>', head='<dimension ref="A1:C1048576"/>'))])),
          "confirmed-pass", "a sheet reaching row 1,048,576 and a whole-column formula"),
        k("dense-million-rows", "dense.xlsx", _dense_rows, "confirmed-pass", "1,048,576 filled rows"),
        k("ten-thousand-sheets", "sheets.xlsx", _many_sheets, "confirmed-pass", "10,000 sheets"),
        k("circular-chain", "circular.xlsx", _write(answer_book(
            *[formula_cell(f"B{n}", f"B{n + 1}+1", "0") for n in range(2, 101)], formula_cell("B101", "B2+1", "0"))),
          "confirmed-pass", "a 100-cell circular reference chain"),
        k("nested-64-levels", "nested.xlsx", _write(package([("Sheet1", worksheet(cell_rows(formula_cell("A1", NESTED, "42"))))])),
          "confirmed-pass", "IF nested 64 deep, Excel's limit"),
        k("long-formula", "long.xlsx", _write(package([("Sheet1", worksheet(cell_rows(formula_cell("A1", LONG, "42"))))])),
          "confirmed-pass", f"a {len(LONG) + 1:,}-character formula"),
        k("long-text", "longtext.xlsx", _write(answer_book('<c r="B2" t="s"><v>0</v></c>', shared=["x" * 32767])),
          "confirmed-pass", "a 32,767-character string"),
        k("duplicate-sheet-names", "dupsheets.xlsx",
          _write(package([("Sheet1", worksheet(cell_rows(ANSWER))), ("Sheet1", worksheet(cell_rows('<c r="A1"><v>7</v></c>')))])),
          "confirmed-pass", "two sheets named Sheet1: the first is read"),
        k("duplicate-zip-members", "dupmembers.xlsx", _duplicate_members, "confirmed-pass",
          "two parts named xl/worksheets/sheet1.xml: the last is read, as zip readers do"),
        k("name-loop", "names.xlsx", _write(answer_book(
            formula_cell("B2", "LoopA", "0"),
            workbook_tail='<definedNames><definedName name="LoopA">LoopB</definedName>'
                          '<definedName name="LoopB">LoopA</definedName></definedNames>')),
          "confirmed-pass", "two defined names that refer to each other"),
        k("date-out-of-range", "baddate.xlsx", _write(answer_book('<c r="B2" s="1"><v>99999999999</v></c>')),
          "confirmed-pass", "a date serial far past year 9999"),
        k("unicode-file-name", "Données finales 2024 ✓.xlsx", _write(answer_book()), "confirmed-pass",
          "non-ASCII letters and spaces in the file name"),
    ]


def _duplicate_members(path: Path) -> None:
    import warnings

    data = zipfile.ZipFile(io.BytesIO(answer_book()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name: that is the point
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("xl/worksheets/sheet1.xml", worksheet(cell_rows('<c r="A1"><v>7</v></c>')))
            for item in data.infolist():
                archive.writestr(item.filename, data.read(item))


HEAVY = {"dense-million-rows", "ten-thousand-sheets"}  # minutes, not seconds: bench/hostile.py runs them


def build(folder: Path, names: set[str] | None = None) -> tuple[Path, list[tuple[Kind, Path]]]:
    """Write the golden and every kind's output into ``folder``; returns the golden and
    (kind, output path) pairs."""
    folder.mkdir(parents=True, exist_ok=True)
    golden = folder / "golden.xlsx"
    golden.write_bytes(answer_book())
    made = []
    for index, kind in enumerate(kinds()):
        if names is not None and kind.name not in names:
            continue
        path = folder / f"{index:02d}-{kind.filename}"
        kind.make(path)
        made.append((kind, path))
    return golden, made
