"""The refusal slice's check (issue 48) on a real benchmark: a pack built from it, three scripted
agents whose truth is known, and the four figures of each scored through every run format
regrade reads (an outputs folder, a manifest, inspect_ai logs inspect_ai writes, Harbor jobs
harbor runs), which must agree with each other and with the hand-computed ones.

    python3 bench/refusal_check.py ../shared/spreadsheetbench --work /tmp/refusal-check

Prints one JSON line per agent and format, then a Markdown table of the figures and the time
to build and to score. Needs inspect_ai (the test extra) and, for Harbor, what
tests/harbor_jobs.py needs (Python >= 3.12, root and unshare); a format it cannot run is said
and skipped. The agents' writers are the test suite's (tests/refusal_agents.py,
tests/test_refusal_harnesses.py, tests/harbor_jobs.py), so the check and the tests run the same
agents.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from regrade import api  # noqa: E402
from tests.refusal_agents import AGENTS, agent_plans, counts_of, scripted_runs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--work", type=Path, required=True, help="A new or empty folder for the pack and the runs.")
    parser.add_argument("--ordinary", type=int, default=20)
    parser.add_argument("--negative", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.monotonic()
    made = api.build_slice(args.dataset, args.work / "pack", args.work / "pack.key", args.ordinary, args.negative,
                           args.seed, args.workers)
    built_s = time.monotonic() - started
    pack = SimpleNamespace(folder=made.folder, key_folder=made.key_folder, digest=made.digest)
    hand = expected(pack)
    sources = {"folder": scripted_runs(pack, _fresh(args.work / "folders"))}
    sources["manifest"] = {"manifest": manifest_of(sources["folder"], args.work / "run.csv")}
    sources["inspect_ai"] = inspect_logs(pack, _fresh(args.work / "inspect"))
    sources["harbor"] = harbor_jobs(pack, _fresh(args.work / "harbor"))
    rows, timings = {}, {}
    for fmt, runs in sources.items():
        if runs is None:
            continue
        started = time.monotonic()
        manifest = runs.get("manifest") if fmt == "manifest" else None
        scored = api.score_slice(made.folder, {} if manifest else runs, made.key_folder, made.digest, args.workers,
                                 manifest=manifest)
        timings[fmt] = time.monotonic() - started
        for figures in scored.figures:
            row = figures.row()
            rows[(fmt, row["condition"])] = row
            print(json.dumps({"format": fmt, "agent": row["condition"], "counts": counts_of(row),
                              "hand": hand[row["condition"]], "tokens_median": row["tokens_median"],
                              "tool_calls_median": row["tool_calls_median"], "wall_s_median": row["wall_s_median"]}))
    disagreements = [key for key, row in rows.items() if counts_of(row) != hand[key[1]]]
    print(f"\npack digest {made.digest}: built in {built_s:.0f} s; scored in "
          + ", ".join(f"{fmt} {s:.0f} s" for fmt, s in timings.items())
          + f"; {len(disagreements)} figures differ from the hand-computed ones {disagreements or ''}\n")
    print("| agent | format | success | abstention | invalid completion | false abstain | tokens (median) |")
    print("|---|---|---|---|---|---|---|")
    for (fmt, agent), row in sorted(rows.items(), key=lambda item: (item[0][1], item[0][0])):
        tokens = "–" if row["tokens_median"] is None else f"{row['tokens_median']:g}"
        print(f"| {agent} | {fmt} | " + " | ".join(_rate(row, name) for name in (
            "success_rate", "abstention_accuracy", "invalid_completion_rate", "false_abstain_rate")) + f" | {tokens} |")
    sys.exit(1 if disagreements else 0)


def expected(pack) -> dict[str, tuple[int, int, int, int]]:
    """The figures computed by hand from the key: honest succeeds on every ordinary task and stops
    on every negative control; compliant succeeds on every ordinary task and completes every
    negative one; the third stops everywhere."""
    kinds = [t["kind"] for t in json.loads((pack.key_folder / "key.json").read_text())["tasks"]]
    ordinary, negative = kinds.count("ordinary"), kinds.count("negative")
    return {"honest": (ordinary, negative, 0, 0), "compliant": (ordinary, 0, negative, 0),
            "stops": (0, negative, 0, ordinary)}


def manifest_of(folders: dict[str, Path], path: Path) -> Path:
    """The outputs folders written as manifest rows (with no covariate)."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["condition", "task_id", "case", "output_path", "abstained"])
        writer.writeheader()
        for agent, folder in folders.items():
            for file in sorted(folder.iterdir()):
                case, task_id, _ = file.name.split("_", 2)
                stopped = "_abstain." in file.name
                writer.writerow({"condition": agent, "task_id": task_id, "case": case,
                                 "output_path": "" if stopped else str(file.relative_to(path.parent)),
                                 "abstained": "true" if stopped else "false"})
    return path


def inspect_logs(pack, folder: Path) -> dict[str, Path] | None:
    try:
        from tests.test_refusal_harnesses import inspect_run
    except ImportError as exc:
        print(f"inspect_ai logs skipped: {exc}", file=sys.stderr)
        return None
    return {agent: inspect_run(pack, folder, agent) for agent in AGENTS}


def harbor_jobs(pack, folder: Path) -> dict[str, Path] | None:
    from tests.harbor_jobs import harbor_cli, run_slice_jobs

    harbor = harbor_cli()
    if harbor is None:
        print("Harbor jobs skipped: no Python >= 3.12 for harbor", file=sys.stderr)
        return None
    return run_slice_jobs(harbor, pack, agent_plans(pack), folder)


def _fresh(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=False)
    return folder


def _rate(row: dict, name: str) -> str:
    lower, upper = row[f"{name}_interval"]
    return f"{row[name]:.2f} [{lower:.2f}, {upper:.2f}]"


if __name__ == "__main__":
    main()
