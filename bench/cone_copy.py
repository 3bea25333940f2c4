"""Benchmark: full engines on the cone copy of heavy workbooks against the workbooks whole.

    python3 bench/cone_copy.py [--corpus DIR] [--engines NAMES] [--n N] [--timeout S]

Picks the answer files of a SpreadsheetBench-layout corpus (default ../shared/spreadsheetbench)
whose formulas ask for much work (``regrade.workbook.cone_copy.asks_much_work``), at most N
of them, and runs regrade's conformance check on them with each engine twice side by side,
each in its own isolating worker with the same time limit:

- baseline ``NAME-whole``: the engine computes the workbook (its linked copy) whole, what
  regrade did before the cone copy;
- ``NAME``: the engine computes the cone copy, the formulas the graded cells depend on.

Prints, per engine, the median and total seconds per workbook and the cells equal to Excel's
cached value and abstained on (a workbook past the limit abstains on all its cells); then
the ratios baseline/cone of the medians and totals. The last line is one JSON object.
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

from regrade.audit.conformance import benchmark_files, conformance  # noqa: E402
from regrade.engines.base import EngineSettings  # noqa: E402
from regrade.engines.isolation import IsolatedEngine  # noqa: E402
from regrade.engines.registry import get_engine  # noqa: E402
from regrade.grading.policies import get_policy  # noqa: E402
from regrade.workbook.cone_copy import asks_much_work  # noqa: E402



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--engines", default="ironcalc,libreoffice,formulon")
    parser.add_argument("--n", type=int, default=10, help="heavy answer files to examine (default 10)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per workbook and engine (default 120)")
    args = parser.parse_args()
    require_corpus(args.corpus)

    heavy = [f for f in benchmark_files(args.corpus) if asks_much_work(f.path)][:args.n]
    settings = EngineSettings(timeout_s=args.timeout)
    engines = []
    for name in args.engines.split(","):
        whole = get_engine(name, settings)
        whole.narrow_to_cone = False  # type: ignore[attr-defined]
        whole.name = f"{name}-whole"  # type: ignore[misc]
        engines += [IsolatedEngine(whole), IsolatedEngine(get_engine(name, settings))]
    started = time.monotonic()
    report = conformance(heavy, engines, get_policy("spreadsheetbench"), limit_s=args.timeout)
    figures: dict = {"files": [f"{f.case}_{f.group}" for f in heavy], "wall_s": round(time.monotonic() - started, 1)}
    for tally in report.engines:
        seconds = tally.seconds
        figures[tally.name] = {"median_s": round(statistics.median(seconds), 2) if seconds else None,
                               "total_s": round(sum(seconds), 1), "cells": tally.compared,
                               "agree": tally.agree, "abstain": tally.abstain}
        print(f"{tally.name:18} median {figures[tally.name]['median_s']} s, total {figures[tally.name]['total_s']} s; "
              f"{tally.agree} of {tally.compared} cells equal to Excel's, {tally.abstain} abstained")
    for name in args.engines.split(","):
        base, cone = figures[f"{name}-whole"], figures[name]
        if cone["median_s"] and cone["total_s"]:
            figures[f"{name}_ratio"] = {"median": round(base["median_s"] / cone["median_s"], 1),
                                        "total": round(base["total_s"] / cone["total_s"], 1)}
            print(f"{name}: whole/cone medians {figures[f'{name}_ratio']['median']}x, "
                  f"totals {figures[f'{name}_ratio']['total']}x over {len(heavy)} workbooks")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
