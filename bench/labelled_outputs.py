"""Labelled outputs: how often regrade's full verdicts are right on outputs whose truth is known.

    python3 bench/labelled_outputs.py CORPUS [--half a|b|all] [--engines NAMES] [--quorum N]
                                      [--workers W] [--out DIR] [--limit N]

For each task of a SpreadsheetBench-layout CORPUS whose first answer file Excel saved
with formulas in answer_position, builds four outputs (regrade.audit.labelled): the answer
itself and a copy without its graded formulas' caches (both correct), and one graded
formula changed with and without its old cache (both wrong). Rescores them all with
``regrade rescore`` (an empty results cache) and prints the table:

    right, of the cases judged | cases not judged | false recoveries (wrong called right)

and the same per label. ``--half`` keeps the tasks whose id hashes to that half
(bench/split.py): develop on one half, report on the other. The last line is one JSON
object with every figure. The outputs stay in --out (default: a temporary folder, removed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.corpus import DEFAULT_CORPUS  # noqa: E402

from bench.split import half_of  # noqa: E402
from regrade.audit.labelled import LABELS, NotLabellable, labelled_score, make_labelled  # noqa: E402
from regrade.grading.policies import get_policy  # noqa: E402
from regrade.results.files import read_results  # noqa: E402
from regrade.runs.cases import golden_files, load_dataset  # noqa: E402



def build(corpus: Path, half: str, folder: Path, limit: int | None) -> tuple[Path, Counter[str]]:
    """The labelled run in ``folder``: a dataset/ of the chosen tasks' first answer file, one
    output folder per label; returns the dataset folder and why tasks were left out."""
    policy = get_policy("spreadsheetbench")
    dataset = folder / "dataset"
    (dataset / "spreadsheet").mkdir(parents=True)
    kept, left_out = [], Counter[str]()
    for record in load_dataset(corpus):
        task = str(record["id"])
        if half != "all" and half_of(task) != half:
            continue
        answers = golden_files(corpus, task)
        if not answers:
            left_out["no answer file"] += 1
            continue
        number, answer = min(answers.items())
        try:
            made = make_labelled(answer, record.get("answer_position", ""), record.get("answer_sheet"), policy,
                                 folder / "outputs", f"{number}_{task}_output.xlsx")
        except NotLabellable as exc:
            left_out[str(exc).split(":")[0]] += 1
            continue
        if made.changed is None:
            left_out["no graded formula can be changed (only excel and uncached made)"] += 1
        (dataset / "spreadsheet" / task).mkdir()
        (dataset / "spreadsheet" / task / answer.name).symlink_to(answer.resolve())
        kept.append(record)
        if limit is not None and len(kept) >= limit:
            break
    (dataset / "dataset.json").write_text(json.dumps(kept), encoding="utf-8")
    return dataset, left_out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, nargs="?", default=DEFAULT_CORPUS)
    parser.add_argument("--half", choices=("a", "b", "all"), default="all")
    parser.add_argument("--engines", help="passed to regrade rescore --engines (default: its own)")
    parser.add_argument("--quorum", type=int, help="passed to regrade rescore --quorum")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--limit", type=int, help="only the first N labellable tasks")
    parser.add_argument("--out", type=Path, help="keep the labelled run here (must not exist)")
    args = parser.parse_args()
    scratch = None if args.out else tempfile.TemporaryDirectory()
    folder = args.out or Path(scratch.name)  # type: ignore[union-attr]
    try:
        dataset, left_out = build(args.corpus, args.half, folder, args.limit)
        command = [sys.executable, "-m", "regrade", "rescore", "--dataset", str(dataset), "--no-cache",
                   "--workers", str(args.workers), "-o", str(folder / "results.jsonl")]
        for label in LABELS:
            command += ["--condition", f"{label}={folder / 'outputs' / label}"]
        if args.engines:
            command += ["--engines", args.engines]
        if args.quorum:
            command += ["--quorum", str(args.quorum)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        _, records = read_results(folder / "results.jsonl")
        present = [r for r in records if Path(r["output_path"]).exists()]  # no changed-* output where none was made
        report(args, present, left_out)
    finally:
        if scratch is not None:
            scratch.cleanup()


def report(args: argparse.Namespace, records: list[dict], left_out: Counter[str]) -> None:
    total = labelled_score(records)
    tasks = len({r["task_id"] for r in records})
    print(f"{tasks} tasks of {args.corpus} (half {args.half}), {len(records)} labelled outputs; left out: "
          + (", ".join(f"{n} {why}" for why, n in left_out.most_common()) or "none"))
    print(f"{'label':<18}{'cases':>7}{'judged':>8}{'right':>7}{'right %':>9}{'not judged %':>14}{'false recoveries':>18}")
    rows = {"all": total, **{label: labelled_score([r for r in records if r["condition"] == label]) for label in LABELS}}
    for label, score in rows.items():
        print(f"{label:<18}{score.cases:>7}{score.judged:>8}{score.right:>7}{_text(score.right_pct):>9}"
              f"{_text(score.not_judged_pct):>14}{score.false_recoveries:>18}")
    wrong = Counter((r["condition"], r["verdict"]) for r in records if r["full_pass"] is not None
                    and r["full_pass"] != LABELS[r["condition"]])
    unjudged = Counter((r["condition"], r["verdict"]) for r in records if r["full_pass"] is None)
    print("wrong verdicts: " + (", ".join(f"{label} {verdict} {n}" for (label, verdict), n in sorted(wrong.items())) or "none"))
    print("not judged: " + (", ".join(f"{label} {verdict} {n}" for (label, verdict), n in sorted(unjudged.items())) or "none"))
    by_task = not_judged_by_task(records)
    if by_task:
        print("not judged, by task and cause (where regrade's reach ends on this corpus):")
        for task, causes in by_task.items():
            print(f"  {task}: " + "; ".join(f"{c['label']} {c['verdict']} ({c['cause']})" for c in causes))
    print(json.dumps({"corpus": str(args.corpus), "half": args.half, "engines": args.engines, "quorum": args.quorum,
                      "tasks": tasks, "left_out": dict(left_out),
                      "by_label": {label: vars(score) | {"right_pct": score.right_pct, "not_judged_pct": score.not_judged_pct}
                                   for label, score in rows.items()},
                      "wrong": [{"label": label, "verdict": v, "cases": n} for (label, v), n in sorted(wrong.items())],
                      "not_judged_by_task": by_task,
                      "wrong_tasks": sorted({f"{r['condition']}:{r['task_id']}" for r in records if r["full_pass"] is not None
                                             and r["full_pass"] != LABELS[r["condition"]]})}))


def not_judged_by_task(records: list[dict]) -> dict[str, list[dict]]:
    """Per task, its cases not judged, each with its cause: the case's reasons, and the rules or
    reasons by which the engines abstained on its cells (what `regrade diff --rules` counts)."""
    found: dict[str, list[dict]] = {}
    for record in sorted(records, key=lambda r: (r["task_id"], r["condition"])):
        if record["full_pass"] is not None:
            continue
        rules = sorted({f"{engine} {value.get('rule') or value['cannot_evaluate']}"
                        for cell in record.get("cells") or [] for engine, value in (cell.get("engines") or {}).items()
                        if isinstance(value, dict) and "cannot_evaluate" in value})
        cause = ", ".join(record.get("reasons") or []) + (f": {', '.join(rules)}" if rules else "")
        found.setdefault(record["task_id"], []).append({"label": record["condition"], "verdict": record["verdict"],
                                                        "cause": cause})
    return found


def _text(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    main()
