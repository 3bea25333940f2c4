"""Benchmark: a generated grader audit, this checkout's code against a named baseline, side by side.

    python3 bench/audit.py --baseline REV [--tasks 120] [--seed 7] [--rounds 2] [--workers W] [--corpus DIR]

Runs ``regrade audit grader spreadsheetbench-official regrade --controls-from CORPUS --tasks N
--seed S --pack-out PACK --workers W --format json`` with this checkout's code and with the code
of the git revision REV (checked out in a temporary worktree, removed after), alternating
within each round (this then the baseline, the baseline then this, and so on), so that a slow
hour of the machine falls on both. Each run has an empty results cache (an XDG_CACHE_HOME of
its own) with the machine's compiled WebAssembly modules linked in (``~/.cache/regrade/wasm``:
a cold run of an installed regrade finds them there), and regrade's source compiled to
bytecode first, as installing it from a wheel does. ``--tasks 0`` audits the whole split
(about 45 minutes a run on two cores).

Prints each run's wall time, its CPU as ``getrusage`` counts the processes it waited for (a lower
bound: the whole-split audit's 161% of two cores by ``time -v`` was 193% by /proc/stat), and its
exit status; the median wall of each side and their ratio (the baseline's over this code's:
above 1 means this code is faster); and whether every run made the same pack (its digest) and
the same report of both graders. A run whose reports differ from the others' is a change of
verdicts, not of speed: the script says so and exits 1. The last line is one JSON object with
these figures.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import DEFAULT_CORPUS, require_corpus  # noqa: E402
from regrade.engines.wasm_cache import cache_directory  # noqa: E402

COMPILED_MODULES = cache_directory()  # this process's, before each run is given an XDG_CACHE_HOME of its own


def audit_once(code: Path, scratch: Path, corpus: Path, tasks: int, seed: int, workers: int) -> dict:
    """One audit with the code at ``code`` in a fresh folder under ``scratch``: its wall time,
    exit status, pack digest and the two graders' reports (without what names the run)."""
    if scratch.exists():
        shutil.rmtree(scratch)
    (scratch / "xdg" / "regrade").mkdir(parents=True)
    if COMPILED_MODULES.is_dir():
        (scratch / "xdg" / "regrade" / "wasm").symlink_to(COMPILED_MODULES, target_is_directory=True)
    command = [sys.executable, "-m", "regrade.cli", "audit", "grader", "spreadsheetbench-official", "regrade",
               "--controls-from", str(corpus), "--pack-out", str(scratch / "pack"), "--workers", str(workers),
               "--format", "json", *(["--tasks", str(tasks), "--seed", str(seed)] if tasks else [])]
    env = {**os.environ, "XDG_CACHE_HOME": str(scratch / "xdg"), "PYTHONPATH": str(code)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=scratch, env=env)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the processes the run waited for
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    reports = []
    try:
        for report in json.loads(done.stdout)["reports"]:  # {"format_version", "reports", "warnings"}
            reports.append({k: v for k, v in report.items() if k != "regrade_version"})
    except (json.JSONDecodeError, KeyError, TypeError):
        pass  # no report: the status and stderr say why
    digest = reports[0]["pack_digest"] if reports else None
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "status": done.returncode, "pack_digest": digest,
            "reports": reports,
            "stderr_tail": done.stderr[-500:] if done.returncode not in (0, 1) else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="The git revision to compare with (a commit, tag or branch).")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--tasks", type=int, default=120, help="Tasks drawn for the pack (0: the whole split).")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=2, help="Runs of each side, alternating.")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    require_corpus(args.corpus)
    baseline = subprocess.run(["git", "rev-parse", "--verify", f"{args.baseline}^{{commit}}"], capture_output=True,
                              text=True, cwd=ROOT)
    if baseline.returncode != 0:
        sys.exit(f"no such revision: {args.baseline}")
    revision = baseline.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="regrade-bench-audit-") as tmp:
        scratch = Path(tmp)
        worktree = scratch / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(worktree), revision], check=True,
                       capture_output=True, cwd=ROOT)
        try:
            sides = {"this": ROOT, "baseline": worktree}
            for code in sides.values():
                compileall.compile_dir(code / "regrade", quiet=1)
            runs: dict[str, list[dict]] = {"this": [], "baseline": []}
            for round_ in range(args.rounds):
                order = ["this", "baseline"] if round_ % 2 == 0 else ["baseline", "this"]
                for side in order:
                    run = audit_once(sides[side], scratch / f"{side}-{round_}", args.corpus, args.tasks, args.seed,
                                     args.workers)
                    runs[side].append(run)
                    print(f"{side} ({'this checkout' if side == 'this' else revision[:12]}) round {round_ + 1}: "
                          f"{run['wall_s']} s ({run['cpu_s']} CPU s), exit {run['status']}, "
                          f"pack {str(run['pack_digest'])[:12]}", flush=True)
                    if run["stderr_tail"]:
                        print(f"  stderr: {run['stderr_tail']}", file=sys.stderr)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], capture_output=True, cwd=ROOT)
    every = runs["this"] + runs["baseline"]
    same_pack = len({r["pack_digest"] for r in every}) == 1 and every[0]["pack_digest"] is not None
    same_reports = all(r["reports"] == every[0]["reports"] for r in every) and bool(every[0]["reports"])
    medians = {side: statistics.median(r["wall_s"] for r in done) for side, done in runs.items()}
    figures = {"tasks": args.tasks or "all", "seed": args.seed, "workers": args.workers, "baseline": revision,
               "walls_s": {side: [r["wall_s"] for r in done] for side, done in runs.items()},
               "cpu_s": {side: [r["cpu_s"] for r in done] for side, done in runs.items()},
               "median_s": medians, "ratio_baseline_over_this": round(medians["baseline"] / medians["this"], 3),
               "same_pack": same_pack, "same_reports": same_reports,
               "pack_digest": every[0]["pack_digest"] if same_pack else None}
    print(f"median: this {medians['this']} s, baseline {medians['baseline']} s, "
          f"ratio {figures['ratio_baseline_over_this']}; same pack: {same_pack}; same reports: {same_reports}")
    print(json.dumps(figures))
    if not (same_pack and same_reports):
        print("the runs' packs or reports differ: that is a change of verdicts, not of speed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
