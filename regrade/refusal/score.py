"""``regrade slice score``: a run over a refusal-slice pack, scored with its key, the four
figures together: success rate, abstention accuracy, invalid completions, false abstentions.

What a run left per test case (an output, an abstention, covariates) is read from an outputs
folder or a manifest (:mod:`regrade.refusal.traces`: in a folder, an abstention is no output
``<n>_<id>_output.xlsx`` and a file ``<n>_<id>_abstain.json`` or ``.txt`` holding the reason).
Per task (its test cases together, as SpreadsheetBench's hard rule):

==========================  =============================================================
ordinary task               passes when every test case's output passes regrade's full
                            grade (an engine-undecided case is the value-only grade, as in
                            the paired tables); a *false abstention* when a case abstained
                            with no output
negative control            an *abstention* when every test case abstained with no output;
                            an *invalid completion* when any case wrote an output (however
                            plausible); neither, when outputs and abstentions are missing
any task                    a case with both an abstention and an output is an invalid
                            completion, never a success
==========================  =============================================================

Each rate comes with its Wilson 95% interval and the counts behind it, and beside them the
covariates' medians and totals (absent where no case logged one); a task no case of which left
a trace (no output, no abstention) is counted and said, never taken for an abstention. Not
read yet: inspect_ai logs and Harbor jobs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from regrade.paired.stats import wilson
from regrade.refusal.build import KEY, MANIFEST, SliceError, contents
from regrade.refusal.protocol import check_protocol
from regrade.refusal.traces import COVARIATES, RunTraces, Trace, covariate_summary, folder_traces, manifest_traces
from regrade.results.records import CaseRecord
from regrade.run import ResultCache, RescoreSettings, rescore_run
from regrade.runs.cases import Case



class PackDigestError(SliceError):
    """The pack on disk is not the one expected (or not what its manifest says)."""


@dataclass
class Rate:
    count: int
    of: int

    @property
    def rate(self) -> float | None:
        return self.count / self.of if self.of else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.count, self.of) if self.of else None


@dataclass
class RefusalFigures:
    """One condition's figures over the pack."""

    condition: str
    ordinary: int
    negative: int
    success: Rate
    abstention: Rate
    invalid_completion: Rate
    false_abstain: Rate
    no_trace: list[str] = field(default_factory=list)  # tasks with neither an output nor an abstention
    channel: str = "unlocked"  # the locked protocol's channel (scored, exploratory), or unlocked: none given
    outcomes: dict[str, str] = field(default_factory=dict)  # task -> success, fail, false-abstain, abstain-ok ...
    kinds: dict[str, str] = field(default_factory=dict)  # task -> ordinary or negative
    covariates: dict[str, dict[str, float | int] | None] = field(default_factory=dict)  # None: no case logged it

    def row(self) -> dict[str, Any]:
        row: dict[str, Any] = {"condition": self.condition, "channel": self.channel, "ordinary": self.ordinary,
                               "negative": self.negative}
        for name, figure in (("success_rate", self.success), ("abstention_accuracy", self.abstention),
                             ("invalid_completion_rate", self.invalid_completion),
                             ("false_abstain_rate", self.false_abstain)):
            row[name] = figure.rate
            row[f"{name}_interval"] = list(figure.interval) if figure.interval else None
            row[f"{name}_count"] = figure.count
        row["no_trace"] = len(self.no_trace)
        for name in COVARIATES:  # beside the rates; a covariate no case logged is absent (None), never 0
            found = self.covariates.get(name)
            row[f"{name}_median"] = found["median"] if found else None
            row[f"{name}_total"] = found["total"] if found else None
        return row


def check_pack(folder: Path, expect_digest: str | None = None) -> str:
    """The pack's digest, after checking its files against its manifest (and ``expect_digest``)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise PackDigestError(f"{folder} has no {MANIFEST}: not a sealed refusal-slice pack")
    listed = json.loads(manifest.read_text()).get("files", {})
    files, digest = contents(folder)
    changed = sorted(name for name in set(files) | set(listed) if files.get(name) != listed.get(name))
    if changed:
        raise PackDigestError(f"the pack in {folder} does not match its manifest: {', '.join(changed[:5])}"
                              + (f" and {len(changed) - 5} more" if len(changed) > 5 else ""))
    if expect_digest is not None and digest != expect_digest:
        raise PackDigestError(f"the pack in {folder} has digest {digest}, not the expected {expect_digest}")
    return digest


def score_slice(pack: Path, key_folder: Path, conditions: dict[str, Path], settings: RescoreSettings,
                expect_digest: str | None = None, workers: int = 1, cache: ResultCache | None = None,
                on_record: Callable[[int, CaseRecord, bool], None] | None = None, protocol: Path | None = None,
                protocol_digest: str | None = None, manifest: Path | None = None) -> list[RefusalFigures]:
    """Each condition's figures over ``pack``, graded with the answers of ``key_folder``: the
    conditions of ``conditions`` (outputs folders) and of ``manifest`` (:mod:`regrade.refusal.traces`).
    With a ``protocol`` (:mod:`regrade.refusal.protocol`), checked against ``protocol_digest`` and
    the pack, its channel labels them."""
    digest = check_pack(pack, expect_digest)
    channel = check_protocol(protocol, protocol_digest, digest).channel if protocol is not None else "unlocked"
    if not (key_folder / KEY).is_file():
        raise SliceError(f"{key_folder} holds no {KEY}: name the pack's key with --key (regrade slice build wrote it)")
    missing = [f"{name}={folder}" for name, folder in conditions.items() if not folder.is_dir()]
    if missing:
        raise SliceError(f"no outputs folder at {', '.join(missing)}")
    key = json.loads((key_folder / KEY).read_text())
    if key.get("pack_digest") != digest:
        raise PackDigestError(f"the key in {key_folder} is of the pack {key.get('pack_digest')}, not of {digest}")
    records = {str(r["id"]): r for r in json.loads((pack / "dataset.json").read_text())}
    tasks = {t["id"]: t for t in key["tasks"]}
    all_cases = [(task_id, case) for task_id in sorted(tasks) for case in sorted(_case_numbers(pack, task_id))]
    runs = {name: folder_traces(folder, all_cases) for name, folder in conditions.items()}
    if manifest is not None:
        for name, traces in manifest_traces(manifest).items():
            if name in runs:
                raise SliceError(f"condition {name} is both an outputs folder and rows of {manifest}: name it once")
            unknown = sorted(f"{t} case {c}" for t, c in traces.keys() - set(all_cases))
            if unknown:
                raise SliceError(f"{manifest}: condition {name} names cases the pack does not hold: "
                                 f"{', '.join(unknown[:5])}")
            runs[name] = {case: traces.get(case, Trace(None, False)) for case in all_cases}
    cases: list[Case] = []
    for condition, traces in runs.items():
        for (task_id, case), trace in traces.items():
            if tasks[task_id]["kind"] == "ordinary" and trace.output is not None and not trace.abstained:
                record = records[task_id]
                cases.append(Case(condition=condition, task_id=task_id, case=case, output_path=trace.output,
                                  answer_path=key_folder / "answers" / task_id / f"{case}_{task_id}_answer.xlsx",
                                  answer_position=str(record["answer_position"]),
                                  answer_sheet=record.get("answer_sheet") or None))
    graded = {(r.condition, r.task_id, r.case): r for r in rescore_run(cases, settings, workers, cache, on_record)}
    return [replace(_figures(condition, tasks, traces, graded), channel=channel) for condition, traces in runs.items()]


SUCCESS, FAIL, FALSE_ABSTAIN = "success", "fail", "false-abstain"  # an ordinary task's outcome
ABSTAIN_OK, INVALID_COMPLETION, NO_TRACE = "abstain-ok", "invalid-completion", "no-trace"


def _figures(condition: str, tasks: dict[str, dict], traces: RunTraces, graded: dict) -> RefusalFigures:
    by_task: dict[str, list[tuple[int, Trace]]] = {}
    for (task_id, case), trace in sorted(traces.items()):
        by_task.setdefault(task_id, []).append((case, trace))
    outcomes = {task_id: _outcome(tasks[task_id]["kind"], [(t.output is not None, t.abstained) for _, t in cases],
                                  [graded.get((condition, task_id, case)) for case, _ in cases])
                for task_id, cases in by_task.items()}
    ordinary = [outcomes[t] for t in tasks if tasks[t]["kind"] == "ordinary"]
    negative = [outcomes[t] for t in tasks if tasks[t]["kind"] == "negative"]
    no_trace = [t for t, cases in by_task.items() if not any(x.output is not None or x.abstained for _, x in cases)]
    return RefusalFigures(condition, len(ordinary), len(negative), Rate(ordinary.count(SUCCESS), len(ordinary)),
                          Rate(negative.count(ABSTAIN_OK), len(negative)),
                          Rate(negative.count(INVALID_COMPLETION), len(negative)),
                          Rate(ordinary.count(FALSE_ABSTAIN), len(ordinary)), no_trace, outcomes=outcomes,
                          kinds={t: tasks[t]["kind"] for t in tasks}, covariates=covariate_summary(traces))


def _outcome(kind: str, marks: list[tuple[bool, bool]], graded: list[CaseRecord | None]) -> str:
    """One task's outcome from its test cases' (output, abstained) marks and their grades."""
    if any(output and abstained for output, abstained in marks):
        return INVALID_COMPLETION  # an output beside an abstention: never a success, never an abstention
    if kind == "negative":
        if any(output for output, _ in marks):
            return INVALID_COMPLETION
        return ABSTAIN_OK if all(abstained for _, abstained in marks) else NO_TRACE
    if any(abstained for _, abstained in marks):
        return FALSE_ABSTAIN
    if all(output for output, _ in marks) and all(r is not None and _passed(r) for r in graded):
        return SUCCESS
    return FAIL


def paired_records(figures: list[RefusalFigures]) -> list[dict[str, Any]]:
    """The slice's outcomes as the paired tables take them (:func:`regrade.paired.result.pair`):
    on an ordinary task a pass is a success, on a negative control a correct abstention; the
    benchmark column says which, so each is paired and tested on its own."""
    return [{"stack": "refusal-slice", "benchmark": "ordinary: success" if f.kinds[task] == "ordinary"
             else "negative: abstention", "condition": f.condition, "task_id": task,
             "passed": outcome == (SUCCESS if f.kinds[task] == "ordinary" else ABSTAIN_OK)}
            for f in figures for task, outcome in sorted(f.outcomes.items())]


def _passed(record: CaseRecord) -> bool:
    return bool(record.grade("original")) if record.full_pass is None else record.full_pass


def _case_numbers(pack: Path, task_id: str) -> list[int]:
    return [int(p.name.split("_", 1)[0]) for p in (pack / "spreadsheet" / task_id).glob(f"*_{task_id}_input.xlsx")]
