"""Goldens a process has read (grading/grade.py load_golden): the last few kept whole, the
values read of those before remembered within a bound, and a file written again read again."""

import pytest

from regrade.grading import grade as grade_module
from regrade.grading.grade import forget_goldens, load_golden
from regrade.grading.policies import get_policy

POLICY = get_policy("spreadsheetbench")


@pytest.fixture
def readings(monkeypatch):
    """How many times a golden's file is opened by openpyxl, and its values read from it."""
    forget_goldens()
    counted = {"books": 0, "cells": 0}
    real_book, real_cells = grade_module.read_book, grade_module.read_cells

    def read_book(*args, **kwargs):
        counted["books"] += 1
        return real_book(*args, **kwargs)

    def read_cells(*args, **kwargs):
        counted["cells"] += 1
        return real_cells(*args, **kwargs)

    monkeypatch.setattr(grade_module, "read_book", read_book)
    monkeypatch.setattr(grade_module, "read_cells", read_cells)
    yield counted
    forget_goldens()


def goldens(workbook, count: int) -> list:
    """``count`` goldens, the n-th holding n, n + 1 and "text n" in A1:C1."""
    return [workbook({"A1": n, "B1": n + 1, "C1": f"text {n}"}, name=f"golden{n}.xlsx") for n in range(count)]


def values(golden) -> list:
    return [golden.value(ref) for ref in golden.targets(POLICY, "A1:C1", None)]


def test_a_golden_past_the_open_ones_keeps_its_values_and_is_not_read_again(workbook, readings):
    paths = goldens(workbook, grade_module.OPEN_GOLDENS + 2)
    for n, path in enumerate(paths):
        assert values(load_golden(path)) == [n, n + 1, f"text {n}"]
    assert readings == {"books": len(paths), "cells": len(paths)}
    first = load_golden(paths[0])
    assert first._values_book is None  # its file no longer held open
    assert values(first) == [0, 1, "text 0"]
    assert readings == {"books": len(paths), "cells": len(paths)}  # neither opened nor read again


def test_a_golden_written_again_is_read_again(workbook, readings):
    path = goldens(workbook, 1)[0]
    assert values(load_golden(path)) == [0, 1, "text 0"]
    workbook({"A1": 7, "B1": 8, "C1": "text 0"}, name=path.name)  # the same size, a new modification time
    assert values(load_golden(path)) == [7, 8, "text 0"]
    assert readings == {"books": 2, "cells": 2}


def test_the_values_remembered_are_bounded_the_oldest_forgotten_first(workbook, readings, monkeypatch):
    monkeypatch.setattr(grade_module, "REMEMBERED_GOLDEN_CELLS", 3 * (grade_module.OPEN_GOLDENS + 1))
    paths = goldens(workbook, grade_module.OPEN_GOLDENS + 3)  # three cells each: two goldens too many
    for path in paths:
        values(load_golden(path))
    opened = readings["books"]
    assert values(load_golden(paths[2])) == [2, 3, "text 2"]  # remembered
    assert readings["books"] == opened
    assert values(load_golden(paths[0])) == [0, 1, "text 0"]  # forgotten: read again
    assert readings["books"] == opened + 1
