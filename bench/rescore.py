"""Benchmark: regrade rescore against the per-file LibreOffice pipeline SpreadsheetBench documents.

    python3 bench/rescore.py [--corpus DIR] [--n N] [--workers W] [--floor]
    python3 bench/rescore.py --corpus-manifest PATH   (the whole corpus's manifest, for a corpus run)

Takes the first N answer files of a SpreadsheetBench-layout corpus (default: 200 of
../shared/spreadsheetbench) and grades each as if it were an agent's output, three
ways, side by side:

(a) per file, ``soffice --headless --convert-to xlsx`` (a fresh LibreOffice each
    time, a private profile), then openpyxl ``data_only=True`` and SpreadsheetBench's
    value rules against the golden;
(b) ``regrade rescore`` with its default engines and an empty results cache;
(c) the same command again, the cache now warm;
(d) an empty results cache with the engines already warm: in one process, ``regrade.rescore``
    over the same files with a :class:`regrade.run.pool.WarmPool` of case workers that an
    earlier run (over another empty cache) left open, as ``regrade serve`` keeps them; only
    the second run is timed. openpyxl parses with the C parser there, as in every process of
    the ``regrade`` command (``regrade/xml_parser.py``; before 2026-12-06 this line ran with
    defusedxml's pure-Python one, a third slower).

With ``--floor``, ``bench/engine_floor.py`` measures the engines' own work on the same files
(their CPU and starts, divided among the workers): ``floor_s``, and each wall's ratio to it.
Each regrade run also records its own floor in its provenance (``engine_work``: the engines'
CPU and starts as that run spent them, plus the reading of goldens any grader needs, divided
among the workers; :class:`regrade.run.rescore.EngineWork`): ``own_floor`` gives it, its wall
time as that run measured it, and their ratio, for (b) and (d).

regrade's own modules are compiled to bytecode first, as installing it from a wheel does:
otherwise, where PYTHONDONTWRITEBYTECODE is set, (b) and (c) would each spend about a
quarter of a second compiling regrade's source, a cost no installed copy pays.

Prints per-workbook times (median for (a), whose files run one by one; wall / N for
all three), total wall time, the peak resident memory of the largest process, the
ratios (a)/(b) and (a)/(c), and how often (a)'s pass/fail equals (b)'s full grade.
The last line is one JSON object with these figures.
"""

from __future__ import annotations

import argparse
import compileall
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import DEFAULT_CORPUS, require_corpus  # noqa: E402

from regrade.engines.cached import CachedEngine  # noqa: E402
from regrade.grading.policies import TargetError, get_policy  # noqa: E402
from regrade.grading.grade import GoldenError, grade, load_golden  # noqa: E402
from regrade.runs.cases import golden_files, input_file, load_dataset  # noqa: E402



def answer_files(corpus: Path, n: int) -> list[dict]:
    rows = []
    for record in load_dataset(corpus):
        for number, path in golden_files(corpus, str(record["id"])).items():
            rows.append({"stack": "bench", "benchmark": "spreadsheetbench", "condition": "answers",
                         "task_id": str(record["id"]), "case": number, "output_path": str(path),
                         "answer_path": str(path), "answer_position": record.get("answer_position", ""),
                         "answer_sheet": record.get("answer_sheet") or ""})
            if len(rows) == n:
                return rows
    return rows


def whole_corpus_rows(corpus: Path) -> list[dict]:
    """Every answer file graded against itself (condition ``answers``), then every input file
    beside one graded against its answer (``inputs``): the whole-corpus run of docs/benchmarks.md."""
    answers = answer_files(corpus, 10**9)
    inputs = []
    for row in answers:
        given = input_file(Path(row["answer_path"]), row["task_id"], int(row["case"]))
        if given is not None:
            inputs.append({**row, "condition": "inputs", "output_path": str(given)})
    return answers + inputs


def write_manifest(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def run_measured(command: list[str], scratch: Path, cwd: Path) -> tuple[float, int, subprocess.CompletedProcess]:
    """Wall seconds and peak RSS (KiB, the largest process of its tree) of one command."""
    with tempfile.TemporaryFile("w+", dir=scratch) as out, tempfile.TemporaryFile("w+", dir=scratch) as err:
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True, cwd=cwd)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.monotonic() - started
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(command, os.waitstatus_to_exitcode(status), out.read(), err.read())
    return seconds, usage.ru_maxrss, done


def per_file_libreoffice(rows: list[dict], scratch: Path) -> tuple[list[float], int, dict[tuple, bool | None]]:
    """(a): one soffice conversion per file, then the value-only grade of the converted file."""
    import resource

    policy, reader = get_policy("spreadsheetbench"), CachedEngine(read_formulas=False)
    profile = (scratch / "profile").as_uri()
    seconds, verdicts = [], {}
    for index, row in enumerate(rows):
        out = scratch / f"a{index}"
        out.mkdir()
        started = time.monotonic()
        subprocess.run(["soffice", f"-env:UserInstallation={profile}", "--headless", "--convert-to", "xlsx",
                        "--outdir", str(out), row["output_path"]], capture_output=True, timeout=300)
        converted = next(out.glob("*.xlsx"), None)
        passed = None
        try:
            golden = load_golden(Path(row["answer_path"]))
            targets = golden.targets(policy, row["answer_position"], row["answer_sheet"] or None)
            if converted is not None:
                passed = bool(grade(policy, targets, golden, "cached", reader.evaluate(converted, targets)).passed)
        except (GoldenError, TargetError):
            passed = None
        seconds.append(time.monotonic() - started)
        verdicts[(row["task_id"], int(row["case"]))] = passed
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, peak, verdicts


def warm_engines_run(manifest: Path, scratch: Path, workers: int) -> float:
    """(d), in this process: the wall seconds of a rescore with an empty results cache whose
    case workers and engines an earlier run left open."""
    from regrade import api
    from regrade.run.pool import WarmPool

    warm = WarmPool()
    try:
        api.rescore(manifest=manifest, workers=workers, cache_dir=scratch / "warming-cache", warm=warm)
        started = time.monotonic()
        api.rescore(manifest=manifest, workers=workers, cache_dir=scratch / "empty-cache", warm=warm,
                    output=scratch / "warm-engines.jsonl")
        return time.monotonic() - started
    finally:
        warm.close()


def own_floor_of(results: Path) -> dict:
    """A regrade results file's own floor, its wall time and their ratio (its provenance's ``engine_work``)."""
    work = json.loads(results.read_text().splitlines()[0]).get("engine_work") or {}
    return {"floor_s": work.get("floor_s"), "wall_s": work.get("wall_s"), "wall_over_floor": work.get("wall_over_floor")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--floor", action="store_true", help="Also measure the engines' floor (bench/engine_floor.py).")
    parser.add_argument("--corpus-manifest", type=Path, metavar="PATH",
                        help="Only write the whole corpus's manifest to PATH (every answer against itself, every "
                             "input against its answer), for `regrade rescore --manifest PATH`, and stop.")
    parser.add_argument("--warm-engines-child", nargs=2, metavar=("MANIFEST", "SCRATCH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.corpus_manifest:
        require_corpus(args.corpus)
        rows = whole_corpus_rows(args.corpus)
        write_manifest(rows, args.corpus_manifest)
        print(f"wrote {len(rows)} cases to {args.corpus_manifest}")
        return
    if args.warm_engines_child:
        manifest, scratch = map(Path, args.warm_engines_child)
        print(json.dumps({"seconds": warm_engines_run(manifest, scratch, args.workers)}))
        return
    require_corpus(args.corpus)
    rows = answer_files(args.corpus, args.n)
    n = len(rows)
    with tempfile.TemporaryDirectory(prefix="regrade-bench-") as tmp:
        scratch = Path(tmp)
        manifest = scratch / "manifest.csv"
        write_manifest(rows, manifest)

        a_started = time.monotonic()
        a_seconds, a_peak, a_verdicts = per_file_libreoffice(rows, scratch)
        a_wall = time.monotonic() - a_started

        compileall.compile_dir(ROOT / "regrade", quiet=1)  # as installing a wheel does, PYTHONDONTWRITEBYTECODE or not
        command = [sys.executable, "-m", "regrade.cli", "rescore", "--manifest", str(manifest),
                   "--workers", str(args.workers), "--cache-dir", str(scratch / "cache")]
        b_wall, b_peak, b = run_measured([*command, "-o", str(scratch / "cold.jsonl")], scratch, ROOT)
        c_wall, c_peak, c = run_measured([*command, "-o", str(scratch / "warm.jsonl")], scratch, ROOT)
        for label, done in (("cold", b), ("warm", c)):
            if done.returncode != 0:
                sys.exit(f"regrade rescore ({label}) failed: {done.stderr[-2000:]}")
        records = [json.loads(line) for line in (scratch / "cold.jsonl").read_text().splitlines()[1:]]
        warm = [json.loads(line) for line in (scratch / "warm.jsonl").read_text().splitlines()[1:]]
        child = subprocess.run([sys.executable, __file__, "--workers", str(args.workers), "--warm-engines-child",
                                str(manifest), str(scratch)], capture_output=True, text=True, cwd=ROOT,
                               env={**os.environ, "OPENPYXL_DEFUSEDXML": "False"})  # the C parser, as the command has
        if child.returncode != 0:
            sys.exit(f"the warm-engines run failed: {child.stderr[-2000:]}")
        d_wall = json.loads(child.stdout.strip().splitlines()[-1])["seconds"]
        warm_engines = [json.loads(line) for line in (scratch / "warm-engines.jsonl").read_text().splitlines()[1:]]
        own_floor = {label: own_floor_of(scratch / name) for label, name in (("b", "cold.jsonl"), ("d", "warm-engines.jsonl"))}
        floor = None
        if args.floor:
            measured = subprocess.run([sys.executable, str(ROOT / "bench" / "engine_floor.py"), "--corpus",
                                       str(args.corpus), "--n", str(n), "--workers", str(args.workers)],
                                      capture_output=True, text=True, cwd=ROOT)
            floor = json.loads(measured.stdout.strip().splitlines()[-1])["floor_wall_s"] if measured.returncode == 0 \
                else None

    b_verdicts = {(r["task_id"], int(r["case"])): r["full_pass"] for r in records}
    agree = sum(a_verdicts[k] == b_verdicts.get(k) for k in a_verdicts)
    same_warm = warm == records
    same_warm_engines = warm_engines == records
    figures = {
        "workbooks": n,
        "workers": args.workers,
        "cold_libreoffice_s": round(a_wall, 2),
        "cold_libreoffice_median_s": round(statistics.median(a_seconds), 3),
        "regrade_cold_s": round(b_wall, 2),
        "regrade_warm_s": round(c_wall, 2),
        "per_workbook_s": {"a": round(a_wall / n, 4), "b": round(b_wall / n, 4), "c": round(c_wall / n, 4)},
        "peak_rss_mb": {"a": round(a_peak / 1024), "b": round(b_peak / 1024), "c": round(c_peak / 1024)},
        "ratio_cold": round(a_wall / b_wall, 1),
        "ratio_warm": round(a_wall / c_wall, 1),
        "regrade_warm_engines_s": round(d_wall, 2),
        "ratio_warm_engines": round(a_wall / d_wall, 1),
        "warm_engines_equals_cold": same_warm_engines,
        "floor_s": floor,
        "cold_over_floor": round(b_wall / floor, 2) if floor else None,
        "warm_engines_over_floor": round(d_wall / floor, 2) if floor else None,
        "own_floor": own_floor,
        "verdict_agreement": round(agree / n, 4),
        "undecided_by_regrade": sum(v is None for v in b_verdicts.values()),
        "warm_equals_cold": same_warm,
    }
    print(f"{n} answer files of {args.corpus}, graded as outputs")
    print(f"(a) soffice --convert-to xlsx per file + openpyxl: {a_wall:.1f} s, median {statistics.median(a_seconds):.3f} s "
          f"a workbook, peak {figures['peak_rss_mb']['a']} MB")
    print(f"(b) regrade rescore, cold cache, {args.workers} workers: {b_wall:.1f} s ({b_wall / n:.4f} s a workbook), "
          f"peak {figures['peak_rss_mb']['b']} MB")
    print(f"(c) regrade rescore, warm cache: {c_wall:.1f} s ({c_wall / n:.4f} s a workbook), peak {figures['peak_rss_mb']['c']} MB")
    print(f"(d) regrade, empty results cache, engines warm: {d_wall:.1f} s ({d_wall / n:.4f} s a workbook)")
    print(f"(a)/(b) = {figures['ratio_cold']}x   (a)/(c) = {figures['ratio_warm']}x   (a)/(d) = "
          f"{figures['ratio_warm_engines']}x   "
          f"(a) and (b) agree on {agree} of {n} ({figures['undecided_by_regrade']} undecided by regrade)")
    for label, own in own_floor.items():
        print(f"({label}) by its own provenance: wall {own['wall_s']} s, floor {own['floor_s']} s, "
              f"{own['wall_over_floor']}x the floor")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
