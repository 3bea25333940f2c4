"""Dependency cones, on workbooks whose dependencies are read off by hand."""

import openpyxl
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.table import Table

from regrade.workbook.cones import FormulaGraph, load_graph


def graph_of(book: openpyxl.Workbook) -> FormulaGraph:
    return FormulaGraph(book)


def test_cone_follows_chains_across_sheets_and_stops_at_constants():
    book = openpyxl.Workbook()
    data = book.active
    data.title = "Data"
    data["A1"], data["A2"], data["A3"] = 1, "=A1*2", "=TODAY()"
    report = book.create_sheet("My Report")
    report["B1"] = "=SUM(Data!A1:A2)+1"  # reads Data!A2 (a formula) and Data!A1 (a constant)
    report["B2"] = "=B1*3"
    report["B3"] = "=Data!A3+1"
    graph = graph_of(book)
    cone = graph.cone([("My Report", 2, 2)])
    assert cone.cells == {("My Report", 2, 2), ("My Report", 1, 2), ("Data", 2, 1)}
    assert cone.functions == {"SUM"}
    assert not cone.open
    assert graph.calls_in_cone([("My Report", 2, 2)], ["TODAY"]) == set()
    assert graph.calls_in_cone([("My Report", 3, 2)], ["TODAY", "NOW"]) == {"TODAY"}


def test_whole_columns_quoted_sheets_and_prefixed_functions():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "It's"
    sheet["A5"] = "=_xlfn.AGGREGATE(9,6,C1:C3)"
    sheet["B1"] = "=SUM('It''s'!A:A)"
    cone = graph_of(book).cone([("It's", 1, 2)])
    assert ("It's", 5, 1) in cone.cells
    assert cone.functions == {"SUM", "AGGREGATE"}


def test_defined_names_and_array_formulas_are_followed():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "=NOW()"
    sheet["A2"] = 3
    book.defined_names["stamp"] = DefinedName("stamp", attr_text="Sheet!$A$1")
    sheet["C1"] = ArrayFormula("C1", "=SUM(stamp*A2)")
    graph = graph_of(book)
    assert graph.calls_in_cone([("Sheet", 1, 3)], ["NOW"]) == {"NOW"}


def test_structured_references_resolve_to_their_table_columns():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Qty", "Price", "Stamp"])
    sheet.append([2, 3, "=RAND()"])
    sheet.append([4, 5, "=RAND()"])
    sheet.add_table(Table(displayName="Sales", ref="A1:C3"))
    sheet["E1"] = "=SUM(Sales[Price])"
    sheet["E2"] = "=SUM(Sales[Stamp])"
    graph = graph_of(book)
    assert graph.calls_in_cone([("Sheet", 1, 5)], ["RAND"]) == set()
    assert graph.calls_in_cone([("Sheet", 2, 5)], ["RAND"]) == {"RAND"}


def test_indirect_opens_the_cone_to_the_whole_workbook():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "=TODAY()"
    sheet["B1"] = '=INDIRECT("A"&1)'
    sheet["C1"] = "=ROW()"
    graph = graph_of(book)
    assert graph.cone([("Sheet", 1, 2)]).open
    assert graph.calls_in_cone([("Sheet", 1, 2)], ["TODAY"]) == {"TODAY"}  # it may read A1
    assert graph.calls_in_cone([("Sheet", 1, 3)], ["TODAY"]) == set()


def test_circular_references_terminate():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "=B1+1"
    sheet["B1"] = "=A1+1"
    assert graph_of(book).cone([("Sheet", 1, 1)]).cells == {("Sheet", 1, 1), ("Sheet", 1, 2)}


def test_an_unreadable_file_has_no_graph(tmp_path):
    bad = tmp_path / "bad.xlsx"
    bad.write_bytes(b"not a zip")
    assert load_graph(bad) is None


def test_references_to_other_workbooks_make_the_cone_external():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "=VLOOKUP(B1,'[1]Order Data'!$A:$B,2,FALSE)"
    sheet["A2"] = "=A1*2"
    sheet["A3"] = "=B1*2"
    graph = graph_of(book)
    assert graph.cone([("Sheet", 2, 1)]).external
    assert not graph.cone([("Sheet", 3, 1)]).external


def test_external_cells_are_those_whose_own_cone_reads_another_workbook():
    """One walk for many cells gives, cell by cell, what each cell's own cone says: through
    chains, a cycle, whole columns, defined names and other sheets."""
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = "=VLOOKUP(B1,'[1]Order Data'!$A:$B,2,FALSE)"  # reads another workbook itself
    sheet["A2"] = "=A1*2"  # through A1
    sheet["A3"] = "=A2+1"  # through A2 and A1
    sheet["A4"] = "=B1*2"  # reads a constant only
    sheet["C1"], sheet["C2"] = "=C2+A4", "=C1+1"  # a cycle that reads nothing external
    sheet["D1"], sheet["D2"] = "=D2+A3", "=D1+1"  # a cycle that does
    sheet["E1"] = "=SUM(A:A)"  # a whole column holding A1
    sheet["E2"] = "=SUM(C:C)"  # a whole column of the clean cycle
    sheet["F1"] = "=Linked*2"
    book.defined_names["Linked"] = DefinedName("Linked", attr_text="Other!$A$1")
    other = book.create_sheet("Other")
    other["A1"] = "=Sheet!A2+1"
    other["B1"] = "=Sheet!E2"
    graph = graph_of(book)
    cells = sorted(graph.formulas) + [("Sheet", 9, 9)]  # and a cell that holds no formula
    expected = {cell for cell in cells if graph.cone([cell]).external}
    assert expected == {("Sheet", 1, 1), ("Sheet", 2, 1), ("Sheet", 3, 1), ("Sheet", 1, 4), ("Sheet", 2, 4),
                        ("Sheet", 1, 5), ("Sheet", 1, 6), ("Other", 1, 1)}  # read off by hand
    assert graph.external_cells(cells) == expected
    assert graph.external_cells([("Sheet", 2, 1), ("Sheet", 4, 1)]) == {("Sheet", 2, 1)}
    assert graph.external_cells([]) == set()


def test_dependency_levels_order_cells_after_those_they_read_even_through_other_formulas():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"] = 1
    sheet["B1"] = "=A1+1"  # reads a constant: first
    sheet["C1"] = "=B1*2"  # not asked for, but D1 reads B1 through it
    sheet["D1"] = "=C1+1"  # after B1
    sheet["E1"] = "=SUM(B1:D1)"  # after D1
    sheet["F1"] = "=A1*3"  # reads a constant: first
    graph = graph_of(book)
    cells = [("Sheet", 1, column) for column in (2, 4, 5, 6)]
    assert graph.dependency_levels(cells) == [[("Sheet", 1, 2), ("Sheet", 1, 6)], [("Sheet", 1, 4)], [("Sheet", 1, 5)]]


def test_dependency_levels_are_unknown_for_a_cycle_or_an_open_cone():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"], sheet["B1"] = "=B1+1", "=A1+1"  # a cycle
    sheet["C1"] = '=INDIRECT("A1")'  # reads a cell no one can name in advance
    sheet["D1"] = "=1+1"
    graph = graph_of(book)
    assert graph.dependency_levels([("Sheet", 1, 1), ("Sheet", 1, 4)]) is None
    assert graph.dependency_levels([("Sheet", 1, 3), ("Sheet", 1, 4)]) is None
    assert graph.dependency_levels([("Sheet", 1, 4)]) == [[("Sheet", 1, 4)]]


def test_cells_read_apart_when_none_reads_another_through_any_formula():
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["A1"], sheet["A2"] = 1, 2
    sheet["B1"] = "=MAX(A1:A2)"  # reads constants only
    sheet["B2"] = "=A1*2"  # not asked for
    sheet["C1"] = "=B2+1"  # reads B2, which reads a constant
    sheet["D1"] = "=SUM(C1:C2)"  # reads C1, one of the set
    sheet["E1"] = "=B1+B2"  # reads B1 directly
    sheet["F1"] = "=A1+RAND()"  # volatile
    sheet["G1"] = "=H1+1"  # H1 reads G1 back: a cycle through a formula not asked for
    sheet["H1"] = "=G1*2"
    sheet["I1"] = '=INDIRECT("A1")'  # may read anything
    sheet["J1"], sheet["K1"] = "=A1+K1", "=YEAR(TODAY())"  # reads TODAY(): one value where the caller holds it so
    graph = graph_of(book)
    cell = {name: ("Sheet", 1, column) for column, name in enumerate("ABCDEFGHIJ", start=1)}
    assert graph.read_apart([cell["B"], cell["C"]])
    assert not graph.read_apart([cell["C"], cell["D"]])  # D1 reads C1
    assert graph.read_apart([cell["B"], cell["D"]])
    assert not graph.read_apart([cell["B"], cell["E"]])  # E1 reads B1
    assert not graph.read_apart([cell["B"], cell["F"]])  # RAND differs each time
    assert not graph.read_apart([cell["B"], cell["J"]])  # TODAY: a volatile
    assert graph.read_apart([cell["B"], cell["J"]], steady=frozenset({"TODAY"}))
    assert not graph.read_apart([cell["B"], cell["F"]], steady=frozenset({"TODAY"}))
    assert not graph.read_apart([cell["G"]])  # G1 reads itself through H1
    assert not graph.read_apart([cell["B"], cell["I"]])  # INDIRECT: unknown
    assert not graph.read_apart([("Sheet", 9, 9)])  # not a formula


def test_subtotal_subtleties_are_found_through_the_cone():
    from regrade.engines.totals import counts_nested_subtotals, skips_hidden_rows

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "S"
    sheet["A1"], sheet["A2"], sheet["A3"] = 1, "=SUBTOTAL(109,A1)", "=SUBTOTAL(9,A1:A2)"  # A3 reads A2's subtotal
    sheet["B1"], sheet["B2"], sheet["B3"] = "=A2*2", "=SUBTOTAL(9,A1)", "=subtotal( 101 ,A1)+1"
    graph = graph_of(book)
    assert sorted(graph.formulas_in_cone([("S", 1, 2)])) == ["=A2*2", "=SUBTOTAL(109,A1)"]
    assert skips_hidden_rows(graph, ("S", 1, 2))  # through A2
    assert skips_hidden_rows(graph, ("S", 3, 2)) and not skips_hidden_rows(graph, ("S", 2, 2))
    assert counts_nested_subtotals(graph, ("S", 3, 1)) and not counts_nested_subtotals(graph, ("S", 2, 2))


def test_the_other_cells_of_an_array_formulas_range_read_what_it_reads():
    # SpreadsheetBench 34435: C2:C15 holds {=LOOKUP(TODAY()-A2:A15, ...)}; C3 shows one of its
    # results, so C3's value depends on TODAY too. D1 reads C3.
    book = openpyxl.Workbook()
    sheet = book.active
    sheet["C1"] = ArrayFormula("C1:C3", "=TODAY()-A1:A3")
    sheet["D1"] = "=C3+1"
    graph = graph_of(book)
    assert graph.calls_in_cone([("Sheet", 3, 3)], ["TODAY"]) == {"TODAY"}
    assert graph.calls_in_cone([("Sheet", 1, 4)], ["TODAY"]) == {"TODAY"}
    assert graph.calls_in_cone([("Sheet", 4, 3)], ["TODAY"]) == set()  # below the range


def test_inputs_are_the_cone_formulas_and_the_contents_they_read():
    def book(a2: object, unread: object, b1: str = "=EOMONTH(A2,0)") -> openpyxl.Workbook:
        wb = openpyxl.Workbook()
        ws = wb.active
        ws["A2"], ws["B1"], ws["C1"], ws["D9"] = a2, b1, "=B1+SUM(A1:A3)", unread
        return wb

    first = graph_of(book(44968, "x")).inputs(("Sheet", 1, 3))
    assert first is not None
    # what C1 does not read may differ; what it reads, directly or through B1, may not
    assert graph_of(book(44968, "y")).inputs(("Sheet", 1, 3)) == first
    assert graph_of(book(44969, "x")).inputs(("Sheet", 1, 3)) != first
    assert graph_of(book(44968, "x", b1="=EOMONTH(A2,1)")).inputs(("Sheet", 1, 3)) != first
    # an open cone may read anything: its inputs are not known
    assert graph_of(book(44968, "x", b1="=INDIRECT(\"A2\")")).inputs(("Sheet", 1, 3)) is None
