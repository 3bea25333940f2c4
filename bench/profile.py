"""Profile: where a rescore of a SpreadsheetBench corpus spends its time, by phase and by workbook.

    python3 bench/profile.py [--corpus DIR] [--every K] [--task ID ...] [--engines E,E] [--json FILE]

The cases are those of the whole-corpus run in docs/benchmarks.md: every answer file graded
against itself, and every task's input file against its answer (``--every K`` keeps every
K-th case, in a fixed order, for a quicker sample; ``--task ID``, repeatable, keeps the
cases of those tasks, to time the slow tail alone). They are graded one at a time in this
process with the default engines, each in its worker under its limits, as ``regrade
rescore --workers 1 --no-cache`` grades them, and each phase of a case is timed:

- ``golden``: reading the golden's graded cells (a golden read once is kept: cases share it);
- ``screen``: screening the output before any engine opens it;
- ``value-only``: the value-only reading of the output (``cached``: openpyxl, in its worker);
- one phase per full engine: its whole pipeline for the output (analysis, linked and cone
  copies, the engine, its rules, the shared rules), as the parent waits for it;
- ``grading``: the consensus, both grades and the cell reasons, with the rest of the case;
- ``writing``: the case's record as JSON.

Each engine's worker is started once before the first case (its seconds are printed apart);
a worker replaced after serving its share of workbooks, or after a timeout, starts again
inside the case that needed it, as in a real run.

Prints each phase's total seconds and share of the whole, the per-case median and p99, and
the slowest 1% of cases with their phases. The last line is one JSON object with the same
figures (``--json FILE`` also writes each case's phases). Times depend on the machine's load:
quote them with the load they were taken under.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import DEFAULT_CORPUS, require_corpus  # noqa: E402

import regrade.grading.rescore as rescoring  # noqa: E402
from regrade.engines.registry import default_full_engines, open_engine  # noqa: E402
from regrade.grading.consensus import default_quorum  # noqa: E402
from regrade.grading.policies import get_policy  # noqa: E402
from regrade.engines.base import DEFAULT_TIMEOUT_S  # noqa: E402
from regrade.results.files import grading_fields  # noqa: E402
from regrade.runs.cases import Case, golden_files, input_file, load_dataset  # noqa: E402


def corpus_cases(corpus: Path) -> list[Case]:
    """Every answer against itself (condition ``answers``), every input against its answer (``inputs``)."""
    cases: list[Case] = []
    for record in load_dataset(corpus):
        task = str(record["id"])
        for number, answer in golden_files(corpus, task).items():
            common = {"task_id": task, "case": number, "answer_path": answer,
                      "answer_position": record.get("answer_position", ""), "answer_sheet": record.get("answer_sheet")}
            cases.append(Case(condition="answers", output_path=answer, **common))
            start = input_file(answer, task, number)
            if start is not None:
                cases.append(Case(condition="inputs", output_path=start, **common))
    return cases


class Phases:
    """Seconds per phase of the case being graded."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)

    @contextmanager
    def timing(self, phase: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.current[phase] += time.perf_counter() - started

    def timed(self, phase: str, function):
        def wrapper(*args, **kwargs):
            with self.timing(phase):
                return function(*args, **kwargs)
        return wrapper


class TimedEngine:
    """An engine whose ``evaluate`` is timed as the phase ``phase``."""

    def __init__(self, engine, phase: str, phases: Phases):
        self._engine, self._phase, self._phases = engine, phase, phases
        self.name = engine.name

    def evaluate(self, path, cells):
        with self._phases.timing(self._phase):
            return self._engine.evaluate(path, cells)

    def __getattr__(self, name):
        return getattr(self._engine, name)


def start_engines(engines: list[TimedEngine]) -> dict[str, float]:
    """Start each engine's worker on a one-formula workbook, outside the cases' times; the seconds each took."""
    import tempfile

    import openpyxl

    from regrade.values import CellRef

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "start.xlsx"
        book = openpyxl.Workbook()
        book.active["A1"], book.active["B1"] = 1, "=A1+1"
        book.save(path)
        seconds = {}
        for engine in engines:
            started = time.perf_counter()
            engine._engine.evaluate(path, [CellRef(book.active.title, 1, 2)])
            seconds[engine.name] = round(time.perf_counter() - started, 2)
    return seconds


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--every", type=int, default=1, help="keep every K-th case (default: all)")
    parser.add_argument("--task", action="append", default=[], help="keep only this task's cases (repeatable)")
    parser.add_argument("--engines", default=None, help="full engines, comma-separated (default: regrade's)")
    parser.add_argument("--json", type=Path, default=None, help="also write each case's phases here")
    args = parser.parse_args()
    require_corpus(args.corpus)
    cases = corpus_cases(args.corpus)[::max(1, args.every)]
    if args.task:
        cases = [case for case in cases if case.task_id in set(args.task)]
    names = args.engines.split(",") if args.engines else default_full_engines()
    phases = Phases()
    rescoring.load_golden = phases.timed("golden", rescoring.load_golden)
    rescoring.screen = phases.timed("screen", rescoring.screen)
    shallow = TimedEngine(open_engine("cached", DEFAULT_TIMEOUT_S, as_grader=True), "value-only", phases)
    fulls = [TimedEngine(open_engine(name, DEFAULT_TIMEOUT_S), name, phases) for name in names]
    policy, quorum = get_policy("spreadsheetbench"), default_quorum(len(fulls))
    start_s = start_engines([shallow, *fulls])
    rows = []
    started = time.perf_counter()
    try:
        for number, case in enumerate(cases, start=1):
            phases.current = defaultdict(float)
            case_started = time.perf_counter()
            result = rescoring.rescore_case(case, policy, shallow, fulls, quorum)
            measured = sum(phases.current.values())
            phases.current["grading"] += time.perf_counter() - case_started - measured
            with phases.timing("writing"):
                json.dumps(grading_fields(result), default=str)
            total = time.perf_counter() - case_started
            rows.append({"condition": case.condition, "task_id": case.task_id, "case": case.case,
                         "verdict": result.verdict, "seconds": round(total, 4),
                         "phases": {k: round(v, 4) for k, v in phases.current.items()}})
            print(f"[{number}/{len(cases)}] {case.condition} {case.task_id} {case.case}: {total:.2f} s", file=sys.stderr)
    finally:
        for engine in (shallow, *fulls):
            engine.close()
    wall = time.perf_counter() - started
    totals: dict[str, float] = defaultdict(float)
    for row in rows:
        for phase, seconds in row["phases"].items():
            totals[phase] += seconds
    whole = sum(totals.values()) or 1.0
    seconds = [row["seconds"] for row in rows]
    slowest = sorted(rows, key=lambda r: -r["seconds"])[:max(1, len(rows) // 100)]
    print(f"{len(rows)} cases of {args.corpus} in {wall:.1f} s; engines {', '.join(names)}; "
          f"starting them took {', '.join(f'{k} {v:.1f} s' for k, v in start_s.items())} (not counted below)")
    print(f"{'phase':12s} {'seconds':>9s} {'share':>6s}")
    for phase, value in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"{phase:12s} {value:9.1f} {100 * value / whole:5.1f}%")
    print(f"per case: median {statistics.median(seconds):.3f} s, p99 {percentile(seconds, 0.99):.2f} s, "
          f"max {max(seconds):.1f} s; the slowest 1% ({len(slowest)} cases) take "
          f"{100 * sum(r['seconds'] for r in slowest) / whole:.0f}% of the time")
    for row in slowest:
        top = ", ".join(f"{k} {v:.1f}" for k, v in sorted(row["phases"].items(), key=lambda i: -i[1])[:3])
        print(f"  {row['condition']} {row['task_id']} case {row['case']}: {row['seconds']:.1f} s ({top})")
    if args.json is not None:
        args.json.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    print(json.dumps({"cases": len(rows), "wall_s": round(wall, 1), "engines": names, "start_s": start_s,
                      "phases_s": {k: round(v, 1) for k, v in totals.items()},
                      "median_case_s": round(statistics.median(seconds), 3), "p99_case_s": round(percentile(seconds, 0.99), 2),
                      "slowest_share": round(sum(r["seconds"] for r in slowest) / whole, 3),
                      "slowest": [{k: r[k] for k in ("condition", "task_id", "case", "seconds", "phases")} for r in slowest]}))


if __name__ == "__main__":
    main()
