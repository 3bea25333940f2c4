"""Conformance by half: a `regrade conformance --format json` report split by task-id hash.

    python3 bench/halves.py REPORT.json [REPORT.json ...]

For each report (the first is the baseline), prints per half (bench/split.py) and per
engine the cells compared, equal to Excel, abstained, and the share right of those decided;
the consensus likewise (abstained, disagreed, decided by one engine alone); then, per rule
id, the cells it abstained on in each half and on how many tasks. A rule found on one half
that fires on the other only where it was found, or costs cells there, shows here. The
last line is one JSON object with every figure.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.split import half_of  # noqa: E402


def halves(report: dict) -> dict:
    out: dict = {}
    for half in ("a", "b"):
        files = [f for f in report["by_file"] if half_of(f["group"]) == half]
        engines: dict[str, Counter] = defaultdict(Counter)
        rules: dict[str, Counter] = defaultdict(Counter)
        rule_tasks: dict[str, set] = defaultdict(set)
        consensus: Counter = Counter()
        for f in files:
            for name, counts in f["engines"].items():
                engines[name].update({k: v for k, v in counts.items() if k != "abstentions"})
                for rule, cells in counts.get("abstentions", {}).items():
                    rules[rule][name] += cells
                    rule_tasks[rule].add(f["group"])
            consensus.update(f["consensus"])
        out[half] = {"tasks": len({f["group"] for f in files}), "files": len(files),
                     "engines": {n: dict(c) | {"right_pct": _pct(c["agree"], c["compared"] - c["abstain"])}
                                 for n, c in engines.items()},
                     "consensus": dict(consensus) | {
                         "right_pct": _pct(consensus["agree"], consensus["compared"] - consensus["abstain"] - consensus["disagree"]),
                         "not_decided_pct": _pct(consensus["abstain"] + consensus["disagree"], consensus["compared"])},
                     "rules": {r: {"cells": dict(c), "tasks": len(rule_tasks[r])} for r, c in sorted(rules.items())}}
    return out


def _pct(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 2) if whole else None


def main() -> None:
    results = {}
    for name in sys.argv[1:]:
        split = halves(json.loads(Path(name).read_text(encoding="utf-8")))
        results[name] = split
        print(f"== {name}")
        for half, figures in split.items():
            print(f"half {half}: {figures['tasks']} tasks, {figures['files']} files compared")
            for engine, c in figures["engines"].items():
                print(f"  {engine:<12} compared {c['compared']:>7} agree {c['agree']:>7} abstain {c['abstain']:>6}"
                      f"  right {c['right_pct']}%")
            c = figures["consensus"]
            print(f"  {'consensus':<12} compared {c['compared']:>7} agree {c['agree']:>7} abstain {c['abstain']:>6} "
                  f"disagree {c['disagree']:>6} by-one {c.get('decided_by_one', 0):>5}  right {c['right_pct']}%"
                  f"  not decided {c['not_decided_pct']}%")
        rules = sorted(set(split["a"]["rules"]) | set(split["b"]["rules"]))
        for rule in rules:
            a, b = split["a"]["rules"].get(rule, {}), split["b"]["rules"].get(rule, {})
            print(f"  rule {rule:<40} a: {sum(a.get('cells', {}).values()):>6} cells {a.get('tasks', 0):>3} tasks"
                  f"   b: {sum(b.get('cells', {}).values()):>6} cells {b.get('tasks', 0):>3} tasks")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
