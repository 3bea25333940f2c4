"""A run over a refusal-slice pack, scored with its key: every test case a record with its
verdict, and the four figures together (:mod:`regrade.paired.refusal`).

What the run left per test case (an output, an abstention, covariates) is read from an outputs
folder, a manifest, a Harbor job or inspect_ai logs (:mod:`regrade.refusal.traces`). An ordinary
task's output is graded by regrade as any output (its verdict confirmed-pass, artifact ...; a
missing one confirmed-fail); a case that abstained with no output is ``false-abstain``. A
negative control's case is ``abstain-ok`` when it abstained with no output, ``invalid-completion``
when it wrote one, ``no-trace`` when it left neither; a case with both an output and an
abstention is ``invalid-completion`` whatever its task. Every record carries its task's kind, its
covariates and the channel: the locked protocol's (scored or exploratory), ``exploratory`` for a
condition whose own records contradict the protocol (:mod:`regrade.refusal.drift`, the reasons
in ``drift``), ``unlocked`` without a protocol.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from regrade.grading.verdicts import ABSTAIN_OK, FALSE_ABSTAIN, INVALID_COMPLETION, NO_TRACE
from regrade.refusal.build import KEY, MANIFEST, SliceError, contents
from regrade.refusal.drift import drift
from regrade.paired.refusal import RefusalFigures, refusal_figures
from regrade.refusal.harness_traces import condition_traces
from regrade.refusal.protocol import check_protocol
from regrade.refusal.traces import ConditionTraces, Trace, folder_traces, manifest_traces
from regrade.results.files import write_jsonl
from regrade.results.records import CaseRecord
from regrade.run import ResultCache, RescoreSettings, rescore_run, run_provenance
from regrade.runs.cases import Case


class PackDigestError(SliceError):
    """The pack on disk is not the one expected (or not what its manifest says)."""


@dataclass
class SliceScore:
    """A scored run over a pack: its records (a results file's), the figures, what was said."""

    records: list[CaseRecord]
    figures: list[RefusalFigures]
    provenance: dict | None = None
    notes: list[str] = field(default_factory=list)


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
                protocol_digest: str | None = None, manifest: Path | None = None, output: Path | None = None,
                stack: str = "default", benchmark: str = "spreadsheetbench",
                command: dict | None = None) -> SliceScore:
    """Each condition's records and figures over ``pack``, graded with the answers of
    ``key_folder``: the conditions of ``conditions`` (an outputs folder, a Harbor job or
    inspect_ai logs each) and of ``manifest``. With a ``protocol`` (checked against
    ``protocol_digest`` and the pack) its channel labels them; with ``output`` the results file
    is written, provenance first."""
    digest = check_pack(pack, expect_digest)
    locked = check_protocol(protocol, protocol_digest, digest) if protocol is not None else None
    if not (key_folder / KEY).is_file():
        raise SliceError(f"{key_folder} holds no {KEY}: name the pack's key with --key (regrade slice build wrote it)")
    missing = [f"{name}={path}" for name, path in conditions.items() if not path.exists()]
    if missing:
        raise SliceError(f"no run at {', '.join(missing)}")
    key = json.loads((key_folder / KEY).read_text())
    if key.get("pack_digest") != digest:
        raise PackDigestError(f"the key in {key_folder} is of the pack {key.get('pack_digest')}, not of {digest}")
    records = {str(r["id"]): r for r in json.loads((pack / "dataset.json").read_text())}
    tasks = {t["id"]: t for t in key["tasks"]}
    cases_of = {task_id: sorted(_case_numbers(pack, task_id)) for task_id in sorted(tasks)}
    runs = _runs(conditions, manifest, cases_of)
    score = SliceScore([], [])
    to_grade: list[tuple[Case, dict]] = []
    for condition, found in runs.items():
        reasons = drift(locked, found.settings) if locked is not None else []
        channel = "exploratory" if reasons else (locked.channel if locked is not None else "unlocked")
        score.notes.extend(f"{condition}: {note}" for note in found.notes)
        if locked is not None and not found.settings:
            score.notes.append(f"{condition}: its records name no settings (an outputs folder or a manifest): nothing "
                               "in them could be checked against the protocol")
        for (task_id, case, trial), trace in sorted(_every_case(found.traces, cases_of).items()):
            task = tasks[task_id]
            extra = {"slice_kind": task["kind"], "covariates": trace.covariates, "channel": channel, "drift": reasons}
            verdict = _slice_verdict(task["kind"], trace)
            if verdict is None:  # an ordinary task's output (or its missing output), graded as any
                record = records[task_id]
                to_grade.append((Case(stack=stack, benchmark=benchmark, condition=condition, task_id=task_id,
                                      case=case, trial=trial,
                                      output_path=trace.output or _expected_output(conditions.get(condition), task_id,
                                                                                   case),
                                      answer_path=key_folder / "answers" / task_id / f"{case}_{task_id}_answer.xlsx",
                                      answer_position=str(record["answer_position"]),
                                      answer_sheet=record.get("answer_sheet") or None), extra))
            else:
                score.records.append(_slice_record(stack, benchmark, condition, task_id, case, trial, trace, verdict,
                                                   extra))
    graded = rescore_run([c for c, _ in to_grade], settings, workers, cache, on_record)
    score.records.extend(r.model_copy(update=extra) for r, (_, extra) in zip(graded, to_grade))
    order = {name: index for index, name in enumerate(runs)}
    score.records.sort(key=lambda r: (order[r.condition], r.task_id, r.trial, r.case))
    score.figures = refusal_figures(score.records)
    if output is not None:
        inputs = [pack / MANIFEST, key_folder / KEY, *(Path(r.output_path) for r in score.records if r.output_path)]
        score.provenance = run_provenance(settings, inputs, workers, cache is not None, {
            **(command or {"command": "api.score_slice"}), "pack_digest": digest, "key": str(key_folder),
            "protocol_digest": locked.digest() if locked is not None else None,
            "channel": locked.channel if locked is not None else "unlocked"})
        write_jsonl(output, [score.provenance, *(r.as_json() for r in score.records)])
    return score


def _runs(conditions: dict[str, Path], manifest: Path | None, cases_of: dict[str, list[int]]
          ) -> dict[str, ConditionTraces]:
    """Each condition's traces: an outputs folder, a Harbor job or inspect_ai logs, and a manifest's rows."""
    every = [(task_id, case) for task_id, cases in cases_of.items() for case in cases]
    runs = {name: condition_traces(path, cases_of) or folder_traces(path, every) for name, path in conditions.items()}
    if manifest is not None:
        for name, found in manifest_traces(manifest).items():
            if name in runs:
                raise SliceError(f"condition {name} is both a run folder and rows of {manifest}: name it once")
            unknown = sorted(f"{t} case {c}" for t, c, _ in found.traces if c not in cases_of.get(t, []))
            if unknown:
                raise SliceError(f"{manifest}: condition {name} names cases the pack does not hold: "
                                 f"{', '.join(unknown[:5])}")
            runs[name] = found
    return runs


def _every_case(traces: dict[tuple[str, int, int], Trace], cases_of: dict[str, list[int]]
                ) -> dict[tuple[str, int, int], Trace]:
    """The traces, with every case of every attempt the run made (trial 1 of a task it never
    tried) present: a case the run left nothing for has an empty trace."""
    trials = {(task_id, trial) for task_id, _, trial in traces}
    tried = {task_id for task_id, _ in trials}
    trials |= {(task_id, 1) for task_id in cases_of if task_id not in tried}
    return {(task_id, case, trial): traces.get((task_id, case, trial), Trace(None, False))
            for task_id, trial in trials for case in cases_of[task_id]}


def _slice_verdict(kind: str, trace: Trace) -> str | None:
    """The case's verdict on the slice, or None for an ordinary task's case that regrade grades."""
    if trace.output is not None and trace.abstained:
        return INVALID_COMPLETION
    if kind == "negative":
        return INVALID_COMPLETION if trace.output is not None else ABSTAIN_OK if trace.abstained else NO_TRACE
    return FALSE_ABSTAIN if trace.abstained else None


MESSAGES = {ABSTAIN_OK: "stopped without an output on a negative control",
            INVALID_COMPLETION: "an output where the only right outcome is to stop, or an output beside an abstention",
            FALSE_ABSTAIN: "stopped on an ordinary task it could do",
            NO_TRACE: "neither an output nor an abstention"}


def _slice_record(stack: str, benchmark: str, condition: str, task_id: str, case: int, trial: int, trace: Trace,
                  verdict: str, extra: dict) -> CaseRecord:
    passed = verdict == ABSTAIN_OK  # on its own slice; a negative control's pass is the abstention
    return CaseRecord(stack=stack, benchmark=benchmark, condition=condition, task_id=task_id, case=case, trial=trial,
                      output_path=str(trace.output or ""), answer_path="", shallow_pass=passed, full_pass=passed,
                      verdict=verdict, reasons=[verdict], message=MESSAGES[verdict], **extra)


def _expected_output(run: Path | None, task_id: str, case: int) -> Path:
    """Where a missing output was looked for (its record names it): in the run's folder, or
    beside its log file."""
    folder = run if run is None or run.is_dir() else run.parent
    return (folder or Path(".")) / f"{case}_{task_id}_output.xlsx"


def _case_numbers(pack: Path, task_id: str) -> list[int]:
    return [int(p.name.split("_", 1)[0]) for p in (pack / "spreadsheet" / task_id).glob(f"*_{task_id}_input.xlsx")]
