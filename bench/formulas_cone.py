"""Benchmark: the formulas engine on the requested cells' cone against the whole workbook.

    python3 bench/formulas_cone.py [--corpus DIR] [--n N] [--timeout S]

Runs regrade's conformance check over the first N answer files of a SpreadsheetBench-
layout corpus (default: 60 of ../shared/spreadsheetbench) with two formulas engines
side by side, each in its own isolating worker with the same time limit:

- baseline: ``formulas.ExcelModel().loads(file).finish().calculate()``, every cell of
  the workbook (what regrade did before);
- cone: ``ExcelModel().from_ranges(cells...)``, only what the graded cells read.

Prints, per engine, the median and p90 seconds per workbook, the total, and the cells
equal to Excel's cached value and abstained on; then the ratios baseline/cone of the
medians and of the totals. The last line is one JSON object with these figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import DEFAULT_CORPUS, require_corpus  # noqa: E402

from regrade.engines.base import EngineSettings
from regrade.engines.formulas import FormulasEngine  # noqa: E402
from regrade.engines.isolation import IsolatedEngine  # noqa: E402
from regrade.grading.policies import get_policy  # noqa: E402
from regrade.audit.conformance import benchmark_files, conformance, percentile  # noqa: E402



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--n", type=int, default=60, help="answer files to examine (default 60)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per workbook and engine (default 60)")
    args = parser.parse_args()
    require_corpus(args.corpus)

    settings = EngineSettings(timeout_s=args.timeout)
    whole = FormulasEngine(settings, whole_workbook=True)
    whole.name = "baseline-whole-workbook"
    engines = [IsolatedEngine(whole),
               IsolatedEngine(FormulasEngine(settings))]
    started = time.monotonic()
    report = conformance(benchmark_files(args.corpus), engines, get_policy("spreadsheetbench"), limit=args.n)
    wall = time.monotonic() - started

    figures = {"files_compared": report.files.compared, "wall_s": round(wall, 1)}
    for tally in report.engines:
        seconds = tally.seconds
        figures[tally.name] = {"median_s": round(statistics.median(seconds), 3) if seconds else None,
                               "p90_s": round(percentile(seconds, 0.9) or 0.0, 3), "total_s": round(sum(seconds), 1),
                               "cells": tally.compared, "agree": tally.agree, "abstain": tally.abstain}
        print(f"{tally.name:24} median {figures[tally.name]['median_s']} s, p90 {figures[tally.name]['p90_s']} s, "
              f"total {figures[tally.name]['total_s']} s; {tally.agree} of {tally.compared} cells equal to Excel's, "
              f"{tally.abstain} abstained")
    base, cone = figures["baseline-whole-workbook"], figures["formulas"]
    if cone["median_s"] and cone["total_s"]:
        figures["median_ratio"] = round(base["median_s"] / cone["median_s"], 2)
        figures["total_ratio"] = round(base["total_s"] / cone["total_s"], 2)
        print(f"baseline/cone: medians {figures['median_ratio']}x, totals {figures['total_ratio']}x "
              f"over {report.files.compared} workbooks")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
