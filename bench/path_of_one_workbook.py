"""How many of regrade's files one workbook passes through, from ``regrade rescore`` to a row of
``regrade table``, and how often the path climbs back up the layers (issue 47's measure).

    python3 bench/path_of_one_workbook.py            # the code on sys.path
    PYTHONPATH=/path/to/other/checkout python3 bench/path_of_one_workbook.py   # another revision

One demo case (task 32293, condition none), rescored in this process with IronCalc and no
cache, then tabled: every call into a module of the ``regrade`` package is traced
(``sys.setprofile``), in order. Printed: the distinct files entered, and the *climbs*: the distinct
(caller, callee) pairs of files where a module calls into one of a layer above it (the layers of docs/architecture.md, by package
folder), which a reader following the path has to climb back up to. The engine's own work
runs in its worker process and is not traced: this is the path a reader follows in the code.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the layers of docs/architecture.md, bottom first; the second name of a pair is where the module
# lived before the run and results layers had folders (b0f9509), so older revisions measure too
LAYERS = [("values", "messages", "xml_parser", "processes", "limits", "cpu_time"), ("workbook",), ("engines",),
          ("runs", "grading"), ("results", "records", "provenance"), ("run", "runner", "case_workers", "cluster"),
          ("paired",), ("audit",), ("render", "reporting"), ("api", "demo"), ("cli",)]


def layer(path: str, package: Path) -> int:
    parts = Path(path).relative_to(package).with_suffix("").parts
    name = parts[0]
    for index, names in enumerate(LAYERS):
        if name in names:
            return index
    return len(LAYERS)


def main() -> None:
    import regrade
    from regrade.cli import main as cli

    package = Path(regrade.__file__).parent
    demo = ROOT / "fixtures" / "demo-run"
    with tempfile.TemporaryDirectory() as scratch:
        outputs = Path(scratch) / "none"
        outputs.mkdir()
        for output in (demo / "outputs" / "none").glob("*_32293_output.xlsx"):
            (outputs / output.name).write_bytes(output.read_bytes())
        data = Path(scratch) / "dataset"
        (data / "spreadsheet").mkdir(parents=True)
        task = next(t for t in json.loads((demo / "dataset" / "dataset.json").read_text()) if str(t["id"]) == "32293")
        (data / "dataset.json").write_text(json.dumps([task]))
        os.symlink(demo / "dataset" / "spreadsheet" / "32293", data / "spreadsheet" / "32293")
        results = Path(scratch) / "results.jsonl"
        entered: set[str] = set()
        climbs: set[tuple[str, str]] = set()

        def profile(frame, event, arg):  # noqa: ANN001
            if event != "call" or not frame.f_code.co_filename.startswith(str(package)):
                return
            callee = frame.f_code.co_filename
            entered.add(callee)
            caller = frame.f_back.f_code.co_filename if frame.f_back is not None else ""
            if caller.startswith(str(package)) and caller != callee and layer(callee, package) > layer(caller, package):
                climbs.add((caller, callee))

        sys.setprofile(profile)
        try:
            for argv in (["rescore", "--dataset", str(data), "--condition", f"none={outputs}", "--engines", "ironcalc",
                          "--workers", "1", "--no-cache", "-o", str(results)], ["table", str(results)]):
                try:
                    cli.main(argv, standalone_mode=False)
                except SystemExit:
                    pass
        finally:
            sys.setprofile(None)
    files = sorted(str(Path(f).relative_to(package)) for f in entered)
    size = {f: len((package / f).read_text().splitlines()) for f in files}
    print(f"files entered: {len(files)} ({sum(size.values())} lines, the largest {max(size, key=size.__getitem__)}); "
          f"calls that climb back up a layer, by (caller, callee): {len(climbs)}", file=sys.stderr)
    print("\n".join(files), file=sys.stderr)
    for caller, callee in sorted(climbs):
        print(f"  climb: {Path(caller).relative_to(package)} -> {Path(callee).relative_to(package)}", file=sys.stderr)


if __name__ == "__main__":
    main()
