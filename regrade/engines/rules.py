"""The rules by which an engine abstains instead of giving a value: one table, stable ids.

Each rule names the engines it applies to, when it fires, why (Excel's behaviour or the
engine's departure from it, in one sentence), where that was seen, and a probe workbook in
``fixtures/rules/`` on which it fires (``tests/test_rules.py`` runs every probe on every
engine the rule names). An abstention carries its rule's id (:func:`abstention`); results,
``regrade diff``, conformance and the probe report count abstentions by that id, so
rewording a message changes no count. ``regrade rules`` lists the table.

``reason`` is the broad kind a case-level verdict reports:

- ``unsupported-function``: the engine lacks a function (or a form of one) the cell needs;
- ``unsupported-name``: the engine cannot evaluate a defined name the cell reads;
- ``engine-departure``: the engine computes it, but not as Excel does, in a way regrade cannot mend;
- ``engine-error``, ``parse-error``: the engine failed on the formula itself;
- ``external-link``, ``locale-date``, ``implicit-intersection``, ``undocumented-behaviour``:
  no engine here can repeat what the Excel that saved the file did.

A **hazard** is a rule about the formula, not about one engine: a construct Excel computes in a
way an engine may not (a date read from text, an array where one value is usual, an
undocumented search order). It binds every engine that applies the departure rows
(:data:`DEPARTING_ENGINES`) except those *cleared* of it: shown, on cells whose value Excel
itself computed (the Excel 365 oracle of ``fixtures/oracles/excel365``, or a workbook Excel
saved under ``fixtures/oracles``), to compute that construct as Excel does. The clearing cells
are listed in the rule (:class:`Clearance`) and ``tests/test_rules.py`` runs them: an engine
that stops matching Excel there fails the suite instead of keeping its clearance. A
SpreadsheetBench task's value never clears an engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from regrade.values import CannotEvaluate

EVERY_ENGINE = ("ironcalc", "libreoffice", "formulon", "gnumeric", "formulas", "pycel")
DEPARTING_ENGINES = ("ironcalc", "libreoffice", "formulon")  # the engines that apply engines/departures.py
EXCEL365 = "excel365:"  # a clearing case of the Excel 365 oracle: excel365:<suite> (its locale-neutral cases) or excel365:<suite>/<case id>
PROBES = Path(__file__).resolve().parents[2] / "fixtures" / "rules"
ITS_PROBE = "its probe workbook shows it (fixtures/rules)"


@dataclass(frozen=True)
class Clearance:
    """An engine shown to compute a hazard's construct as Excel does, and the Excel-computed cells
    that show it: ``excel365:<suite>[/<case id>]`` (the Excel 365 oracle) or
    ``<path under fixtures/oracles>!<sheet>!<cell>`` (a workbook Excel saved, its cached value)."""

    engine: str
    cells: tuple[str, ...]
    note: str = ""  # what the clearance cannot say (in-sample, one cell ...)


@dataclass(frozen=True)
class Rule:
    id: str
    engines: tuple[str, ...]
    reason: str
    trigger: str  # when it fires
    why: str  # Excel's behaviour, or the engine's departure from it
    evidence: tuple[str, ...]  # where it was seen: a SpreadsheetBench task, a documentation page, a probe
    probe_cell: str  # the cell of fixtures/rules/<id>.xlsx on which it fires, "Sheet1!B1"
    # engines on which it fires only past IronCalc's bridge work budget: their probe runs with bridge_work 0
    past_bridge_budget: tuple[str, ...] = ()
    hazard: bool = False  # a property of the formula: binds every departing engine not cleared
    cleared: tuple[Clearance, ...] = ()

    @property
    def probe(self) -> Path:
        return PROBES / f"{self.id}.xlsx"

    @property
    def single_task(self) -> bool:
        """Whether the evidence is one SpreadsheetBench task alone (a rule to watch on new tasks)."""
        tasks = [e for e in self.evidence if e.startswith("SpreadsheetBench ")]
        return len(tasks) == 1 and len(self.evidence) == 1


def _rule(id: str, engines: tuple[str, ...], reason: str, trigger: str, why: str, evidence: tuple[str, ...],
          probe_cell: str = "Sheet1!B1", past_bridge_budget: tuple[str, ...] = ()) -> Rule:
    return Rule(id, engines, reason, trigger, why, evidence, probe_cell, past_bridge_budget)


def _hazard(id: str, reason: str, trigger: str, why: str, evidence: tuple[str, ...],
            cleared: tuple[Clearance, ...] = (), probe_cell: str = "Sheet1!B1") -> Rule:
    """A hazard binds every departing engine but those ``cleared``."""
    engines = tuple(e for e in DEPARTING_ENGINES if e not in {c.engine for c in cleared})
    return Rule(id, engines, reason, trigger, why, evidence, probe_cell, hazard=True, cleared=cleared)


RULES: tuple[Rule, ...] = (
    # --- no engine here can repeat it ---
    _rule("external-link", EVERY_ENGINE, "external-link",
          "the cell's cone reads another workbook ([1]Data!A1) that the file holds no usable cache of (none, "
          "a refresh error, a defined name of that workbook), or passes its cells to a function that needs a "
          "reference (SUMIF, OFFSET ...); other external references are computed from the file's cache",
          "the value comes from another workbook, which is not there to be read; with it closed, Excel gives "
          "#VALUE! where a function needs a reference, so a cache saved with it open cannot be repeated",
          (ITS_PROBE, "ECMA-376 Part 1, 18.14 (externalLink sheetDataSet)")),
    _rule("locale-date", EVERY_ENGINE, "locale-date",
          "a formula of the cone reads a text holding a date with day and month in numbers (01/09/2020) "
          "and may turn it into a number (arithmetic, VALUE, INT, a date function)",
          "Excel reads such text by the locale of the machine it runs on, which the file does not record; "
          "every engine here reads it month first",
          ("SpreadsheetBench 59643", "SpreadsheetBench 30709", "SpreadsheetBench 33157")),
    _rule("implicit-intersection", EVERY_ENGINE, "implicit-intersection",
          "a plain (not array) formula of the cone has MATCH or XMATCH look up an array computed from ranges "
          "by an operator (MATCH(k, A1:A9&B1:B9, 0))",
          "Excel evaluates a formula saved plain as a legacy one and meets such ranges by implicit "
          "intersection; every engine here computes the whole array",
          ("SpreadsheetBench 39931",
           "https://support.microsoft.com/office/implicit-intersection-operator-ce3be07b-0101-4450-a24e-c1c999be2b34")),
    _rule("approximate-lookup-over-empty", EVERY_ENGINE, "undocumented-behaviour",
          "an XLOOKUP or XMATCH of the cone with match_mode 1 or -1 over a lookup array holding empty cells",
          "Excel ranks empty elements apart from numbers in an approximate lookup, by a rule it does not "
          "document and no engine here follows",
          ("SpreadsheetBench 57448",)),
    _rule("text-format-rejected", ("ironcalc", "formulon"), "engine-departure",
          "the cell is #VALUE! and its cone calls TEXT",
          "Excel's TEXT renders a format code its number formats accept (a percent sign with an exponent, "
          "|#%e-#|); IronCalc and Formulon read fewer codes and give #VALUE! for the others (LibreOffice "
          "gives Err:502, libreoffice-engine-error)",
          ("Apache POI NumberFormatApproxTests.xlsx (fixtures/oracles/poi): 20 cells", ITS_PROBE)),
    _hazard("trigonometric-pole", "engine-departure",
          "the cell's value is beyond 1e5 in magnitude and its cone calls TAN, COT, SEC or CSC",
          "next to a pole the digits depend on how the function reduces its argument by pi: Excel's TAN of "
          "PI()/2 is 1.6325e16, every engine's 1.6331e16, and the difference grows as the value's square",
          ("IronCalc docs/TAN.xlsx and TRIGONOMETRIC.xlsx (fixtures/oracles/ironcalc): 8 cells", ITS_PROBE)),
    _hazard("date-in-1900", "engine-departure",
          "a DATE of the cone has its year written as a number up to 1900",
          "Excel reads a year of 0-1899 as 1900 plus it and counts days in its own 1900, which has a 29 "
          "February (serial 60); the engines count in the real calendar (DATE(1900,1,61) is 61 in Excel, 62 in "
          "all three), IronCalc and LibreOffice give 2 for DATE(1900,1,1), and LibreOffice reads 0-29 as 2000-2029",
          ("https://support.microsoft.com/office/date-function-e36c0c8c-4104-49da-ab83-82328b832349",
           "https://learn.microsoft.com/office/troubleshoot/excel/wrongly-assumes-1900-is-leap-year",
           "Apache POI FormulaEvalTestData_Copy.xlsx (fixtures/oracles/poi): DATE(1900,1,22222) is 22222", ITS_PROBE)),
    _hazard("mode-of-a-scalar", "engine-departure",
          "a MODE of the cone has an argument that is one value: a text or logical literal, or one cell",
          "Excel's MODE gives #VALUE! for such an argument unless it is a number (an empty cell, \"1\", TRUE); "
          "the engines skip it as they skip text inside a range",
          ("Apache POI FormulaEvalTestData_Copy.xlsx (fixtures/oracles/poi): MODE(B9,2,D7) with D7 empty, "
           "MODE(B8,\"1\",2,3): 3 cells", ITS_PROBE)),
    _hazard("product-of-single-cells", "engine-departure",
          "the cell is 0 and a SUMPRODUCT of its cone has only single cells and numbers as arguments",
          "Excel multiplies single cells as values, so a text among them is #VALUE!; the engines count the text "
          "as 0, as inside a larger range",
          ("Apache POI FormulaEvalTestData_Copy.xlsx (fixtures/oracles/poi): SUMPRODUCT(G1330:G1330,I1330:I1330)",
           ITS_PROBE)),
    _hazard("text-exponent-with-literal", "engine-departure",
          "the cell is a text with an exponent's sign and a literal character, and its cone calls TEXT",
          "with a literal between a format's E+ and its digits (|#.#|E+|#|) Excel writes the sign next to the "
          "digits, after the literal (|1.2|E|+5|); LibreOffice and Formulon write it after the E (|1.2|E+|5|), "
          "IronCalc puts the literal before the E",
          ("Apache POI NumberFormatApproxTests.xlsx (fixtures/oracles/poi): 6 cells", ITS_PROBE)),
    _hazard("address-of-a-workbook", "engine-departure",
          "the cell is a text that starts '[ and its cone calls ADDRESS",
          "given a sheet text that names a workbook ([Book1]Sheet1) Excel writes it unquoted "
          "([Book1]Sheet1!$C2); the engines quote it ('[Book1]Sheet1'!$C2)",
          ("Apache POI FormulaEvalTestData_Copy.xlsx (fixtures/oracles/poi): ADDRESS(2,3,3,TRUE,\"[Book1]Sheet1\")",
           ITS_PROBE)),
    # --- hazards of the formula, cleared per engine only by cells Excel computed ---
    _hazard("date-from-text", "engine-departure",
            "a formula of the cone reads a date or time from text: DATEVALUE, TIMEVALUE, or a date function "
            "(DAY, MONTH, EOMONTH, YEARFRAC ...) of a text joined with & (EOMONTH(1&\"Jan\"&2016,0))",
            "which texts Excel reads as dates and times, and how, is its own (\"9 Aug 2021\", \"1Jan2016\" are "
            "dates, \"1:30PM\" is #VALUE!); IronCalc and LibreOffice read other sets (both give 0.5625 for "
            "TIMEVALUE(\"1:30PM\"), IronCalc #VALUE! for \"9 Aug 2021\")",
            ("Excel 365 oracle: datevalue_timevalue (fixtures/oracles/excel365)",
             "https://support.microsoft.com/office/datevalue-function-df8b07d4-7761-4a93-bc33-b7471bbff252", ITS_PROBE),
            cleared=(Clearance("formulon", (EXCEL365 + "datevalue_timevalue",),
                               "in-sample: Formulon was developed against this oracle"),)),
    _hazard("date-text-in-criteria", "engine-departure",
            "a criteria argument of COUNTIF(S), SUMIF(S), AVERAGEIF(S), MAXIFS or MINIFS compares with a date "
            "written as text (\">=1/1/2020\", \">=\"&\"1-\"&B1&\"-2020\")",
            "Excel reads the text after the operator as a date, by its locale, and compares it with the dates of "
            "the range as a number; an engine that compares it as text, or reads it otherwise, counts other rows "
            "(0 where Excel counts some)",
            ("https://support.microsoft.com/office/countifs-function-dda3dc6e-f74e-4aee-88bc-aa8c2a866842",
             ITS_PROBE)),
    _hazard("textjoin-empty-flag", "engine-departure",
            "a formula of the cone calls TEXTJOIN with ignore_empty written as nothing (TEXTJOIN(\",\",,A1:A3))",
            "Excel reads the argument written as nothing as TRUE and skips the empty cells; LibreOffice reads it "
            "as FALSE and Formulon keeps them",
            ("IronCalc TEXTJOIN.xlsx (fixtures/oracles/ironcalc): Excel's cache of G14", ITS_PROBE),
            cleared=(Clearance("ironcalc", ("ironcalc/calc_tests/TEXT/TEXTJOIN.xlsx!Sheet1!G14",),
                               "one cell Excel saved"),)),
    _hazard("offset-array", "engine-departure",
            "a formula of the cone calls OFFSET with an array constant of offsets or sizes (OFFSET(A1:A17,,{1,2,3}))",
            "Excel makes one reference per element (SUMIF sums each); LibreOffice takes the first only, Formulon "
            "gives #VALUE!; no Excel-computed cell shows what IronCalc does",
            ("SpreadsheetBench 50250", ITS_PROBE)),
    _hazard("lookup-column-array", "engine-departure",
            "a formula of the cone calls VLOOKUP or HLOOKUP with an array constant of column or row numbers ({9,10})",
            "Excel returns one value per column and skips an empty cell there as empty; LibreOffice gives 0 for "
            "it, Formulon #VALUE!; no Excel-computed cell shows what IronCalc does",
            ("SpreadsheetBench 10281", ITS_PROBE)),
    _hazard("approximate-match-over-computed-array", "undocumented-behaviour",
            "the cone holds MATCH(value, an expression) or MATCH(value, an expression, 1)",
            "an approximate MATCH needs its array sorted; over a computed array, which may not be, Excel's answer "
            "comes from its binary search (MATCH(2, 1/(A1:A9=\"x\")) is the last \"x\"), which Excel does not "
            "document; LibreOffice gives the first match, and no Excel-computed cell shows the others' search",
            ("https://support.microsoft.com/office/match-function-e8dffd45-c762-47d6-bf89-533f4a37673a",
             "SpreadsheetBench 59902", ITS_PROBE)),
    # --- totals mending (engines/totals.py), for the engines that get SUBTOTAL or AGGREGATE wrong ---
    _hazard("sum-range-anchor", "engine-departure",
            "a formula of the cone calls SUMIF or AVERAGEIF with a sum range of one cell and a range of several "
            "(SUMIF(A1:A3,\"x\",B1))",
            "Excel takes the sum range's cell as the top left of a range the criteria range's shape (B1:B3); "
            "IronCalc sums that one cell",
            ("https://support.microsoft.com/office/sumif-function-169b8c99-c05c-4483-a712-1697a653039b",
             "excel365:sumif_anchor_extension_probes (IronCalc wrong on 5 of 7)", ITS_PROBE),
            cleared=(Clearance("libreoffice", (f"{EXCEL365}sumif_anchor_extension_probes",)),
                     Clearance("formulon", (f"{EXCEL365}sumif_anchor_extension_probes",),
                               "in-sample: Formulon was developed against this suite"))),
    _hazard("sum-range-of-another-shape", "engine-departure",
            "a formula of the cone calls SUMIF or AVERAGEIF with a sum range of several cells and another shape "
            "than its range (SUMIF(A1:A3,\"x\",B1:B2))",
            "Excel's documentation says it sums the range of the criteria range's shape from the sum range's top "
            "left cell; Formulon and IronCalc sum the cells given, and no Excel-computed cell shows the case",
            ("https://support.microsoft.com/office/sumif-function-169b8c99-c05c-4483-a712-1697a653039b", ITS_PROBE)),
    _rule("totals-not-computed", ("ironcalc", "formulon", "gnumeric", "pycel"), "engine-departure",
          "the cone holds a SUBTOTAL or AGGREGATE the engine gets wrong here (rows a filter or the user hides, "
          "nested subtotals, 101-111, AGGREGATE itself) and the cell is not one such call over references "
          "(IronCalc: only where its bridge, which computes SUBTOTAL where a filter hides rows, left one to it)",
          "SUBTOTAL and AGGREGATE skip hidden or filtered rows and nested subtotals as their arguments say; "
          "regrade computes only a direct call over references from the engine's values",
          ("https://support.microsoft.com/office/subtotal-function-7b027003-f060-4ade-9040-e478765b9939",),
          "Sheet1!B5", past_bridge_budget=("ironcalc",)),
    _rule("grader-lacks-subtotal-hidden", ("gnumeric",), "unsupported-function",
          "gnumeric stands for a value-only grader's recalculation and the cone calls SUBTOTAL 101-111",
          "gnumeric answers #NUM! for SUBTOTAL 101-111; as a grader's recalculation it keeps that blind spot",
          (ITS_PROBE,), "Sheet1!B5"),
    # --- IronCalc ---
    _rule("ironcalc-textjoin-empty-text", ("ironcalc",), "engine-departure",
          "the cell is a text with an empty piece between delimiters (\"a,,c\") and its cone calls TEXTJOIN",
          "Excel's TEXTJOIN with ignore_empty TRUE skips empty texts, a literal \"\" or a cell holding one; "
          "IronCalc skips empty cells and empty elements of a computed array only, and joins the others",
          ("excel365:text/textjoin_ignore_empty_true", ITS_PROBE)),
    _rule("ironcalc-offset-negative-size", ("ironcalc",), "engine-departure",
          "#VALUE! where the cone calls OFFSET with a height or a width",
          "Excel reads a negative height or width as reaching up or left from the reference (OFFSET(C5,2,2,-2,1) "
          "is C6:C7); IronCalc gives #VALUE!",
          ("excel365:offset_indirect_probes, references, lowrisk_probes (6 cells)", ITS_PROBE)),
    _rule("ironcalc-text-fraction", ("ironcalc",), "engine-departure",
          "a formula of the cone calls TEXT with a fraction format (\"# ?/?\")",
          "Excel writes the number as a fraction (\"1 1/2\"); IronCalc writes the format's blanks (\"  /2\")",
          ("excel365:text_format (4 cells)", ITS_PROBE)),
    _rule("ironcalc-lacks-function", ("ironcalc",), "unsupported-function",
          "the cell's own formula, as IronCalc computes it, calls a function IronCalc does not know",
          "IronCalc leaves a function it lacks lower-cased with #NAME?; IFERROR could hide that",
          (ITS_PROBE,)),
    _rule("ironcalc-error-from-missing-function", ("ironcalc",), "unsupported-function",
          "the cell is an error and its cone calls a function IronCalc lacks",
          "the error may come from the function IronCalc lacks, not from the workbook",
          (ITS_PROBE,), "Sheet1!B2"),
    _rule("ironcalc-computed-name", ("ironcalc",), "unsupported-name",
          "the cone reads a defined name that is a formula or a constant ({0,1,2}, Sheet1!$A$1*2)",
          "IronCalc evaluates a defined name only when it is one reference; it gives #NAME? or 0 for the others",
          ("SpreadsheetBench 57716",)),
    _rule("ironcalc-bridge-left", ("ironcalc",), "engine-departure",
          "the cone holds a call IronCalc gets wrong that the bridge left to IronCalc: a workbook past the "
          "bridge's work budget, a chain that did not settle, or a call reading a LET or LAMBDA name",
          "IronCalc's own value of that call departs from Excel's (engines/ironcalc/bridge.py lists how)",
          (ITS_PROBE,)),
    _rule("ironcalc-lookup-of-empty", ("ironcalc",), "engine-departure",
          "the cone holds VLOOKUP, HLOOKUP or XLOOKUP of an empty cell over a range that holds an empty cell",
          "IronCalc matches the empty cell of the range; Excel does not",
          ("SpreadsheetBench 7902",), "Sheet1!E1"),
    _rule("ironcalc-parse-error", ("ironcalc",), "parse-error",
          "IronCalc gives #ERROR!, its own marker of a formula it could not parse",
          "#ERROR! is not an Excel value: IronCalc did not read the formula",
          (ITS_PROBE,)),
    _rule("ironcalc-not-implemented", ("ironcalc",), "unsupported-function",
          "IronCalc gives #N/IMPL!, its marker of a part of a formula it has not implemented",
          "#N/IMPL! is not an Excel value: IronCalc did not compute the formula",
          (ITS_PROBE,)),
    # --- Formulon ---
    _rule("formulon-lacks-function", ("formulon",), "unsupported-function",
          "the cell's formula calls a function missing from Formulon's catalog or listed there as unavailable "
          "(EUROCONVERT, WEBSERVICE, CUBEVALUE ...), or the cell is an error and its cone calls one",
          "Formulon gives #NAME? (or #VALUE!) for a function it does not compute, where Excel, with the add-in "
          "or the connection, computes it",
          (ITS_PROBE, "formulon.Workbook.function_metadata: availability")),
    _rule("formulon-legacy-array-argument", ("formulon",), "engine-departure",
          "a formula of the cone saved plain (no array metadata) passes an array computed from ranges to "
          "LOOKUP's vectors, INDEX's array or AGGREGATE 14-19's array; a computed or constant array as XMATCH's or "
          "XLOOKUP's lookup value; or an array constant as a criteria argument of COUNTIF(S), SUMIF(S), "
          "AVERAGEIF(S), MAXIFS, MINIFS",
          "Excel evaluates a plain formula the legacy way, where these parameters take the whole array "
          "(LOOKUP(2,1/(A1:A3=\"a\"),B1:B3) is the last match); Formulon meets the array by implicit intersection",
          (ITS_PROBE, "fixtures/probes: lookup-last-match, aggregate-array-large, criteria-countifs-array-constant",
           "https://support.microsoft.com/office/implicit-intersection-operator-ce3be07b-0101-4450-a24e-c1c999be2b34")),
    _rule("offset-computed-array", ("ironcalc", "formulon"), "engine-departure",
          "a formula of the cone calls OFFSET with offsets or sizes computed from multi-cell ranges "
          "(OFFSET(A1,ROW(A1:A3)-ROW(A1),0)); Formulon's cell abstains only when it is #VALUE!; IronCalc's not "
          "where the OFFSET is a SUBTOTAL's reference, which its bridge computes one reference at a time",
          "where Excel evaluates that argument as an array (inside SUMPRODUCT, or in an array formula) OFFSET "
          "returns one reference per element: SUMPRODUCT(N(OFFSET(A1,ROW(A1:A3)-ROW(A1),0))) and "
          "SUMPRODUCT(SUBTOTAL(9,OFFSET(A1,ROW(A1:A3)-ROW(A1),0))) are the sum of A1:A3 (LibreOffice agrees); "
          "IronCalc takes the first element, Formulon gives #VALUE!",
          (ITS_PROBE, "SpreadsheetBench 57783 (Excel's cache: the sum over the matching rows)")),
    _rule("formulon-sequence-argument-left-out", ("formulon",), "engine-departure",
          "the cell is an error and a formula of its cone calls SEQUENCE with an argument written as nothing "
          "(SEQUENCE(,5), SEQUENCE(2,,5))",
          "Excel takes rows or columns written as nothing as 1 (SEQUENCE(,5) is {1,2,3,4,5}); Formulon gives "
          "#CALC! for every SEQUENCE with an argument written as nothing",
          (ITS_PROBE, "https://exceljet.net/functions/sequence-function")),
    _rule("formulon-structured-reference", ("formulon",), "engine-departure",
          "a formula of the cone holds a structured reference without its table's name ([@Qty]) or to a "
          "table's totals row (Stock[[#Totals],[Units]])",
          "Excel reads [@Qty] in a table as that row's Qty and [#Totals] as the totals row; Formulon gives "
          "#NAME? for the first and 0 for the second",
          (ITS_PROBE, "fixtures/probes: structured-at-unqualified, structured-totals"), "Sheet1!D3"),
    _rule("formulon-row-of-structured-reference", ("formulon",), "engine-departure",
          "a formula of the cone calls ROW or COLUMN of a structured reference (ROW(Sales[Qty]), COLUMN(Table1[]))",
          "Excel gives the row (column) numbers of the table's cells, as for any reference (SUMPRODUCT(ROW(Sales[Qty])) "
          "over rows 2 and 3 is 5; IronCalc and LibreOffice agree); Formulon gives #VALUE!, which an IFERROR "
          "around it can hide",
          (ITS_PROBE, "https://support.microsoft.com/office/row-function-3a63b74a-c4d0-4093-b49a-e76eb49a6d8d"),
          "Sheet1!D1"),
    _rule("formulon-plain-dynamic-array", ("formulon",), "engine-departure",
          "the cell is an error and a formula of its cone saved plain calls a dynamic-array function "
          "(FILTER, SORT, UNIQUE, SEQUENCE, TEXTSPLIT, VSTACK ...)",
          "Excel shows such a formula with @ and its first value; Formulon gives #CALC! or #VALUE!",
          (ITS_PROBE, "fixtures/probes: lookup-filter, lookup-textjoin-filter",
           "https://support.microsoft.com/office/implicit-intersection-operator-ce3be07b-0101-4450-a24e-c1c999be2b34")),
    # --- LibreOffice ---
    _rule("libreoffice-lacks-function", ("libreoffice",), "unsupported-function",
          "the cell's formula, as LibreOffice reads it, calls a function LibreOffice does not know",
          "LibreOffice leaves a function it lacks lower-cased in the formula",
          (ITS_PROBE,)),
    _rule("libreoffice-name-error", ("libreoffice",), "unsupported-function",
          "LibreOffice gives #NAME? (an unknown function or name)",
          "#NAME? from LibreOffice says it did not know a name the file uses, not that Excel would fail",
          (ITS_PROBE,)),
    _rule("libreoffice-engine-error", ("libreoffice",), "engine-error",
          "LibreOffice gives an Err:5xx code, which no Excel value matches",
          "Err:5xx is LibreOffice's failure to compile or compute the formula",
          (ITS_PROBE,)),
    _rule("libreoffice-filterxml", ("libreoffice",), "engine-departure",
          "the cone calls FILTERXML",
          "LibreOffice's FILTERXML gives the first match only, where Excel gives all, in an array formula too",
          ("SpreadsheetBench 54144",)),
    _rule("libreoffice-logical-as-number", ("libreoffice",), "engine-departure",
          "a formula of the cone reads a cell holding a TRUE or FALSE constant, or writes TRUE or FALSE beside & or "
          "a comparison, as a criterion of the *IF(S) functions or as the value TEXT formats (a logical a formula "
          "computes is not seen)",
          "LibreOffice has no logical type, TRUE is the number 1 with a boolean format; Excel's range SUM, AVERAGE "
          "and MIN skip logicals, its COUNTIF criterion TRUE matches no 1, TRUE>\"zzz\" holds and TRUE&\"x\" is "
          "\"TRUEx\", where LibreOffice counts, matches, compares and joins 1 and 0",
          ("excel365:aggregate, countif_edges, countif, operators, text_format, text_to_bool_probes "
           "(29 cells LibreOffice got wrong)",
           "https://wiki.openoffice.org/wiki/Documentation/How_Tos/Calc:_Logical_functions",
           "https://support.microsoft.com/office/sum-function-043e1c7d-7726-4e80-8f32-07b23e057f89", ITS_PROBE)),
    _rule("libreoffice-small-large-k", ("libreoffice",), "engine-departure",
          "#VALUE! where the cone calls SMALL or LARGE",
          "k beyond the count is #NUM! in Excel and #VALUE! in LibreOffice",
          ("SpreadsheetBench 15825",
           "https://support.microsoft.com/office/small-function-17da8222-7c82-42b2-961b-14c45384df07")),
    # --- gnumeric ---
    _rule("gnumeric-name-error", ("gnumeric",), "unsupported-function",
          "gnumeric gives #NAME? (an unknown function or name)",
          "#NAME? from gnumeric says it did not know a name the file uses (AGGREGATE, among others)",
          (ITS_PROBE,)),
    _rule("gnumeric-parse-error", ("gnumeric",), "parse-error",
          "gnumeric writes the formula back as _xlfngnumeric.ERROR(...): it could not parse it",
          "a formula gnumeric could not read has no gnumeric value",
          (ITS_PROBE,)),
    # --- formulas ---
    _rule("formulas-lacks-function", ("formulas",), "unsupported-function",
          "the cell's own formula calls a function the formulas package does not know",
          "formulas cannot compute a function it lacks",
          (ITS_PROBE,)),
    _rule("formulas-error-from-missing-function", ("formulas",), "unsupported-function",
          "the cell is an error and the workbook calls a function the formulas package lacks",
          "the error may come from the function formulas lacks",
          (ITS_PROBE,), "Sheet1!B2"),
    # --- pycel ---
    _rule("pycel-lacks-function", ("pycel",), "unsupported-function",
          "pycel fails on the cell for a function it lacks, in the cell or in one it reads",
          "pycel cannot compute a function it lacks",
          (ITS_PROBE,)),
    _rule("pycel-name-error", ("pycel",), "unsupported-function",
          "pycel gives #NAME? (an unknown function or name; defined names fail with openpyxl 3.1)",
          "#NAME? from pycel says it did not know a name the file uses",
          (ITS_PROBE,)),
)

BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}
assert len(BY_ID) == len(RULES), "rule ids are unique"


def abstention(rule_id: str, detail: str = "") -> CannotEvaluate:
    """The abstention a rule makes: its reason, its id, and what exactly (the rule's why by default)."""
    rule = BY_ID[rule_id]
    return CannotEvaluate(rule.reason, detail or rule.why, rule=rule.id)
