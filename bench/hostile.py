"""Scale check: rescore 1,000 workbooks of which 5% are hostile.

    python3 bench/hostile.py [--n 1000] [--hostile 0.05] [--workers W]

Writes N outputs for one golden (``Sheet1!A1`` = 42): the hostile ones are the kinds of
tests/hostile_corpus.py (the slow ones included: a million filled rows, 10,000 sheets),
repeated as needed (the slow ones may end in a typed ``timeout`` instead, as the machine's
speed decides); the rest are small ordinary workbooks whose A1 is a SUM with its
cached value, half of them right (42) and half wrong (41). Runs ``regrade rescore``
with its default engines and a cold cache, then checks every case's outcome against
what its kind must give, and prints the wall time, the peak memory of the largest
process, the counts per verdict and reason, and every case that came out otherwise.
The last line is one JSON object with these figures.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rescore import run_measured  # noqa: E402
from tests.hostile_corpus import HEAVY, build, cell_rows, formula_cell, package, worksheet  # noqa: E402


def ordinary(value: int, rng: random.Random) -> bytes:
    first = rng.randint(0, value)
    second = rng.randint(0, value - first)
    parts = (first, second, value - first - second)
    cells = formula_cell("A1", "SUM(B1:D1)", str(value)) + "".join(f'<c r="{c}1"><v>{v}</v></c>' for c, v in zip("BCD", parts))
    return package([("Sheet1", worksheet(cell_rows(cells)))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--hostile", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="regrade-hostile-") as tmp:
        folder = Path(tmp)
        golden, made = build(folder / "hostile")
        wanted = round(args.n * args.hostile)
        cases = [(kind.name, kind.expected, path) for kind, path in (made * (wanted // len(made) + 1))[:wanted]]
        for index in range(args.n - wanted):
            right = index % 2 == 0
            path = folder / "ordinary" / f"{index:04d}.xlsx"
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(ordinary(42 if right else 41, rng))
            cases.append(("ordinary-right" if right else "ordinary-wrong", "confirmed-pass" if right else "confirmed-fail", path))
        manifest = folder / "manifest.jsonl"
        with manifest.open("w", encoding="utf-8") as handle:
            for number, (name, _, path) in enumerate(cases):
                handle.write(json.dumps({"stack": "bench", "benchmark": "hostile", "condition": name,
                                         "task_id": str(number), "case": 1, "output_path": str(path),
                                         "answer_path": str(golden), "answer_position": "A1"}) + "\n")
        results = folder / "results.jsonl"
        command = [sys.executable, "-m", "regrade.cli", "rescore", "--manifest", str(manifest), "-o", str(results),
                   "--workers", str(args.workers), "--cache-dir", str(folder / "cache")]
        seconds, peak_kb, done = run_measured(command, folder, ROOT)
        if done.returncode != 0:
            sys.exit(f"regrade rescore failed: {done.stderr[-2000:]}")
        records = {r["task_id"]: r for r in map(json.loads, results.read_text().splitlines()[1:])}

    verdicts = collections.Counter(r["verdict"] for r in records.values())
    reasons = collections.Counter(reason for r in records.values() for reason in r["reasons"])
    otherwise = []
    for number, (name, expected, _) in enumerate(cases):
        record = records.get(str(number))
        ok = record is not None and (record["verdict"] == expected or (record["verdict"] == "confirmed-fail"
                                                                        and expected in record["reasons"]))
        if record is not None and name in HEAVY and record["verdict"] == "unevaluable":
            ok = bool({"timeout", "memory-limit"} & set(record["reasons"]))  # a limit tripped: as good, and typed
        if not ok:
            otherwise.append({"kind": name, "expected": expected,
                              "got": None if record is None else [record["verdict"], record["reasons"], record["message"][:160]]})
    print(f"{args.n} workbooks ({wanted} hostile, {len(made)} kinds), {args.workers} workers: "
          f"{seconds:.1f} s, peak {peak_kb / 1024:.0f} MB in the largest process")
    print("verdicts:", dict(verdicts.most_common()))
    print("reasons:", dict(reasons.most_common()))
    for case in otherwise:
        print("otherwise:", case)
    print(json.dumps({"workbooks": args.n, "hostile": wanted, "kinds": len(made), "workers": args.workers,
                      "wall_s": round(seconds, 1), "peak_rss_mb": round(peak_kb / 1024), "records": len(records),
                      "as_expected": args.n - len(otherwise), "otherwise": len(otherwise),
                      "verdicts": dict(verdicts), "reasons": dict(reasons)}))


if __name__ == "__main__":
    main()
