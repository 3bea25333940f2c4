"""Floor: the CPU seconds the default engines' own computing takes on the files a rescore sends them.

    python3 bench/engine_floor.py [--corpus DIR] [--n N | --task ID ...] [--workers W] [--json FILE]

Whatever regrade does around them, a cold rescore cannot take less wall time than the
engines' own work divided among its workers, plus their start. This measures that work on
the cases ``bench/rescore.py`` grades (the first N answer files, each against itself; the
default) or on the corpus cases of some tasks (``--task``, as ``bench/profile.py`` builds
them). A case whose graded cells hold no formula sends nothing to an engine and is skipped,
as a rescore skips it. Per case, one after another in this process, without regrade's
analysis, rewrites, rules or isolation:

- Formulon: ``formulon.Workbook.load`` of the file's bytes and ``recalc()`` (this process's CPU),
  on the cone copy where regrade computes one, with the tall ranges regrade cuts for it cut
  (``engines/formulon.py``; the cutting itself not counted: it is regrade's work, not Formulon's);
- IronCalc: ``ironcalc.load_from_xlsx`` and ``evaluate()`` (this process's CPU), both on the
  cone copy where regrade computes one (``workbook/cone_copy.py``), without IronCalc's bridge
  or the whole-column cuts. IronCalc's share is small on ``bench/rescore.py``'s files; on a
  workbook regrade cuts (``--task 17049``: criteria over whole columns) the uncut engine does
  far more than regrade's, and the figure is no floor there;
- LibreOffice: regrade's LibreOffice engine computing the graded cells, counted as the CPU
  of its helper and soffice alone (the rewrites regrade computes in this process are not counted).

Also each engine's start (Formulon compiling its WebAssembly module, soffice starting). Prints
the sums, the floor ``(engines + starts) / workers``, and one JSON line; ``--json FILE`` keeps
each case's figures. CPU seconds depend less on the machine's load than wall seconds, but
still do: quote them with the load they were taken under.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import DEFAULT_CORPUS, require_corpus  # noqa: E402
from bench.profile import corpus_cases  # noqa: E402
from bench.rescore import answer_files  # noqa: E402

from regrade.processes.cpu_time import process_tree_cpu_seconds  # noqa: E402
from regrade.engines.cached import CachedEngine  # noqa: E402
from regrade.engines.formulon import cut_tall_ranges  # noqa: E402
from regrade.engines.libreoffice.engine import LibreOfficeEngine  # noqa: E402
from regrade.grading.consensus import engine_cells  # noqa: E402
from regrade.grading.grade import GoldenError, load_golden, spilled_cells  # noqa: E402
from regrade.grading.policies import TargetError, get_policy  # noqa: E402
from regrade.workbook.analysis import WorkbookAnalysis  # noqa: E402
from regrade.workbook.cone_copy import cone_workbook  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--n", type=int, default=200, help="the first N answer files (bench/rescore.py's cases)")
    parser.add_argument("--task", action="append", default=[], help="the corpus cases of this task instead (repeatable)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    require_corpus(args.corpus)
    if args.task:
        cases = [(str(c.output_path), str(c.answer_path), c.answer_position, c.answer_sheet)
                 for c in corpus_cases(args.corpus) if c.task_id in set(args.task)]
    else:
        cases = [(r["output_path"], r["answer_path"], r["answer_position"], r["answer_sheet"] or None)
                 for r in answer_files(args.corpus, args.n)]

    import formulon
    import ironcalc

    started = time.process_time()
    formulon.Workbook.create_default().close()
    starts = {"formulon": time.process_time() - started}
    office = LibreOfficeEngine()
    office.start()
    assert office._helper is not None, "LibreOffice did not start"
    helper = office._helper.pid
    starts["libreoffice"] = process_tree_cpu_seconds(helper) or 0.0

    policy, reader = get_policy("spreadsheetbench"), CachedEngine()
    totals = {"formulon": 0.0, "ironcalc": 0.0, "libreoffice": 0.0}
    rows = []
    for output, answer, position, sheet in cases:
        try:
            targets = load_golden(Path(answer)).targets(policy, position, sheet)
        except (GoldenError, TargetError):
            continue
        stored = reader.evaluate(Path(output), targets)
        cells = engine_cells(targets, stored, spilled_cells(Path(output), stored))
        if not cells:
            continue
        row: dict = {"output": output, "cells": len(cells)}
        analysis = WorkbookAnalysis(Path(output))
        with cone_workbook(Path(output), analysis.graph, cells) as computed:  # as regrade narrows a heavy one
            row["cone_copy"] = computed != Path(output)
            data = computed.read_bytes()
            try:
                started = time.process_time()
                book = formulon.Workbook.load(data)
                loading = time.process_time() - started
                row["formulon_cuts"] = len(cuts.originals) if (cuts := cut_tall_ranges(WorkbookAnalysis(computed), book)) else 0
                started = time.process_time()
                book.recalc()
                book.close()
            except Exception:  # FormulonError: what it cannot load costs what it cost
                loading = 0.0
            row["formulon"] = loading + time.process_time() - started
            started = time.process_time()
            try:
                ironcalc.load_from_xlsx(str(computed)).evaluate()
            except Exception:  # WorkbookError: likewise
                pass
            row["ironcalc"] = time.process_time() - started
        before = process_tree_cpu_seconds(helper) or 0.0
        office.compute(WorkbookAnalysis(Path(output)), cells)
        if office._helper is None or office._helper.pid != helper:  # restarted after a timeout: count the new one
            helper = office._helper.pid if office._helper is not None else helper
            before = 0.0
        row["libreoffice"] = (process_tree_cpu_seconds(helper) or 0.0) - before
        for engine in totals:
            totals[engine] += row[engine]
        rows.append(row)
    office.close()

    engines = sum(totals.values())
    floor = (engines + sum(starts.values())) / args.workers
    print(f"{len(rows)} of {len(cases)} cases send cells to the engines")
    for engine, seconds in totals.items():
        print(f"  {engine:12} {seconds:8.1f} CPU s   (start {starts.get(engine, 0.0):.1f} s)")
    print(f"engines {engines:.1f} CPU s; floor on {args.workers} workers: {floor:.1f} s wall")
    figures = {"cases": len(cases), "engine_cases": len(rows), "workers": args.workers,
               "cpu_s": {k: round(v, 2) for k, v in totals.items()}, "start_cpu_s": {k: round(v, 2) for k, v in starts.items()},
               "floor_wall_s": round(floor, 2)}
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
