"""Graders an audit can run: the built-in ones, a command, or a Python callable.

A grader says pass or fail for one output against one answer file and its
``answer_position``. Each carries its identity and settings, which every audit
report records, so that reports made with different graders are never mixed up.

Built-in graders (``GRADERS``):

=========================  ==============================================================
spreadsheetbench-official  the official ``evaluation.py``: cached values (openpyxl
                           ``data_only=True``), its own position parsing, bug for bug
spreadsheetbench           the same value rules, with regrade's repaired positions
gnumeric-recalc            ``ssconvert --recalc`` first, then the official rules
libreoffice-recalc         a LibreOffice recalculation first, then the official rules
                           (regrade's LibreOffice engine abstains on functions LibreOffice
                           lacks; an abstention fails, as ``#NAME?`` would)
regrade                    regrade's own full grade: the consensus of its default full
                           engines; a case without a decision (unevaluable, engines
                           disagree) is not a pass
=========================  ==============================================================
"""

from __future__ import annotations

import importlib
import inspect
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from regrade.engines.cached import CachedEngine
from regrade.engines.base import DEFAULT_TIMEOUT_S
from regrade.engines.registry import default_full_engines, open_engine
from regrade.grading.policies import get_policy
from regrade.grading.grade import grade_case
from regrade.grading.consensus import default_quorum
from regrade.grading.rescore import rescore_case
from regrade.runs.cases import Case

COMMAND_TIMEOUT_S = 120.0


class GraderError(ValueError):
    """A grader that cannot be set up (unknown name, a callable that does not import ...)."""


class GraderFailure(Exception):
    """A grader that could not judge one output: a command that did not start, timed out, or
    exited other than 0 (pass) or 1 (fail). It is an error of that case, never a fail."""


@dataclass(frozen=True)
class TaskContext:
    """What a benchmark's grader may need beyond output, answer and position: the task's input
    workbook (SpreadsheetBench 2's grader splits the answer range into the cells the task changes
    and those it must leave as they were) and its instruction type (cell- or sheet-level)."""

    input: Path | None = None
    instruction_type: str | None = None


class Grader(Protocol):
    name: str

    def settings(self) -> dict[str, Any]: ...

    def passes(self, output: Path, answer: Path, position: str, answer_sheet: str | None = None,
               task: TaskContext | None = None) -> bool: ...


def _case(output: Path, answer: Path, position: str, answer_sheet: str | None) -> Case:
    return Case(condition="audit", task_id="audit", case=1, output_path=output, answer_path=answer,
                answer_position=position, answer_sheet=answer_sheet)


@dataclass
class ValueGrader:
    """Compare values read by one engine (the file's cache, or a recalculation) under a policy."""

    name: str
    policy: str
    values: str  # the engine that supplies the values: cached, gnumeric, libreoffice
    timeout_s: float = DEFAULT_TIMEOUT_S
    _engine: Any = field(default=None, repr=False)

    def settings(self) -> dict[str, Any]:
        return {"policy": self.policy, "values": self.values, "timeout_s": self.timeout_s}

    def passes(self, output: Path, answer: Path, position: str, answer_sheet: str | None = None,
               task: TaskContext | None = None) -> bool:
        if self._engine is None:
            self._engine = (CachedEngine(read_formulas=False) if self.values == "cached"
                            else open_engine(self.values, self.timeout_s, as_grader=True))
        stored = CachedEngine(read_formulas=False)
        graded = grade_case(_case(output, answer, position, answer_sheet), get_policy(self.policy), self._engine, stored)
        if self._engine.full and graded.passed is None:
            return False  # the recalculation could not give a value: the grader sees none
        return bool(graded.passed)


@dataclass
class RegradeGrader:
    """regrade's full grade: the consensus of the full engines."""

    name: str = "regrade"
    engines: list[str] = field(default_factory=list)
    policy: str = "spreadsheetbench"
    timeout_s: float = DEFAULT_TIMEOUT_S
    _opened: list[Any] = field(default_factory=list, repr=False)

    def settings(self) -> dict[str, Any]:
        return {"policy": self.policy, "engines": self.engine_names(), "timeout_s": self.timeout_s,
                "quorum": default_quorum(len(self.engine_names()))}

    def engine_names(self) -> list[str]:
        return self.engines or default_full_engines()

    def passes(self, output: Path, answer: Path, position: str, answer_sheet: str | None = None,
               task: TaskContext | None = None) -> bool:
        if not self._opened:
            self._opened = [open_engine(name, self.timeout_s) for name in self.engine_names()]
        result = rescore_case(_case(output, answer, position, answer_sheet), get_policy(self.policy),
                              CachedEngine(), self._opened, default_quorum(len(self._opened)))
        return result.full_pass is True


@dataclass
class CommandGrader:
    """``CMD {output} {answer} {position}``: exit status 0 is a pass; with a threshold, the last
    number the command prints on stdout is its score, a pass when at least the threshold. Also
    ``{answer_sheet}``, ``{input}`` (the task's input workbook) and ``{instruction_type}``; a
    placeholder with nothing to fill it is an error of that control, not an empty word."""

    template: str
    threshold: float | None = None
    timeout_s: float = COMMAND_TIMEOUT_S
    name: str = "command"  # --name: what reports call it

    def __post_init__(self) -> None:
        if "{output}" not in self.template:
            raise GraderError("--command needs {output} in it (and usually {answer} and {position})")

    def settings(self) -> dict[str, Any]:
        return {"command": self.template, "threshold": self.threshold, "timeout_s": self.timeout_s}

    def passes(self, output: Path, answer: Path, position: str, answer_sheet: str | None = None,
               task: TaskContext | None = None) -> bool:
        task = task or TaskContext()
        filled = {"output": output, "answer": answer, "position": position, "answer_sheet": answer_sheet,
                  "input": task.input, "instruction_type": task.instruction_type}
        if wanted := [name for name, value in filled.items() if value is None and "{" + name + "}" in self.template]:
            raise GraderFailure(f"the command wants {', '.join('{' + n + '}' for n in wanted)}, which this control lacks")
        words = [w.format(**filled) for w in shlex.split(self.template)]
        try:
            run = subprocess.run(words, capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise GraderFailure(f"{words[0]!r} did not finish in {self.timeout_s:g} s") from None
        except OSError as exc:
            raise GraderFailure(f"cannot start {words[0]!r}: {exc}") from exc
        if run.returncode not in (0, 1):
            said = run.stderr.strip().splitlines()[-1:] or ["(nothing on stderr)"]
            raise GraderFailure(f"{words[0]!r} exited with status {run.returncode}, neither a pass (0) nor a fail (1): "
                                f"{said[0]}")
        if self.threshold is None:
            return run.returncode == 0
        return run.returncode == 0 and _score(run.stdout) >= self.threshold


@dataclass
class CallableGrader:
    """``module:function`` called as ``function(output, answer, position)``: a bool, or a score
    compared with the threshold. A function that names ``input``, ``answer_sheet`` or
    ``instruction_type`` among its parameters (or takes ``**kwargs``) gets them by keyword: the
    task's input workbook (a path, or None), the answer sheet and the instruction type."""

    target: str
    threshold: float | None = None
    name: str = "callable"  # --name: what reports call it
    _function: Callable[..., object] | None = field(default=None, repr=False)
    _keywords: frozenset[str] = field(default=frozenset(), repr=False)

    def __post_init__(self) -> None:
        module_name, _, function_name = self.target.partition(":")
        if not module_name or not function_name:
            raise GraderError(f"--callable wants module:function, not {self.target!r}")
        if str(Path.cwd()) not in sys.path:
            sys.path.insert(0, str(Path.cwd()))  # a grader module beside the user, as python -m would find it
        try:
            self._function = getattr(importlib.import_module(module_name), function_name)
        except (ImportError, AttributeError) as exc:
            raise GraderError(f"cannot import {self.target!r}: {exc}") from exc
        self._keywords = _keywords_taken(self._function)

    def settings(self) -> dict[str, Any]:
        return {"callable": self.target, "threshold": self.threshold}

    def passes(self, output: Path, answer: Path, position: str, answer_sheet: str | None = None,
               task: TaskContext | None = None) -> bool:
        assert self._function is not None
        task = task or TaskContext()
        offered = {"input": None if task.input is None else str(task.input), "answer_sheet": answer_sheet,
                   "instruction_type": task.instruction_type}
        keywords = {name: value for name, value in offered.items() if name in self._keywords}
        try:
            verdict = self._function(str(output), str(answer), position, **keywords)
        except Exception:  # the grader's own crash: the official loop counts a fail, so do we
            return False
        if self.threshold is None:
            return bool(verdict)
        return isinstance(verdict, (int, float)) and float(verdict) >= self.threshold


def _keywords_taken(function: Callable[..., object]) -> frozenset[str]:
    """The task keywords (input, answer_sheet, instruction_type) ``function`` accepts."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: the three positional arguments only
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return frozenset({"input", "answer_sheet", "instruction_type"})
    return frozenset(p.name for p in parameters if p.name in ("input", "answer_sheet", "instruction_type")
                     and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY))


def _score(stdout: str) -> float:
    for word in reversed(stdout.split()):
        try:
            return float(word)
        except ValueError:
            continue
    return float("-inf")


GRADERS: dict[str, Callable[[], Grader]] = {
    "spreadsheetbench-official": lambda: ValueGrader("spreadsheetbench-official", "spreadsheetbench-official", "cached"),
    "spreadsheetbench": lambda: ValueGrader("spreadsheetbench", "spreadsheetbench", "cached"),
    "gnumeric-recalc": lambda: ValueGrader("gnumeric-recalc", "spreadsheetbench-official", "gnumeric"),
    "libreoffice-recalc": lambda: ValueGrader("libreoffice-recalc", "spreadsheetbench-official", "libreoffice"),
    "regrade": RegradeGrader,
}


def make_grader(name: str | None, command: str | None = None, callable_target: str | None = None,
                threshold: float | None = None, label: str | None = None) -> Grader:
    """The grader a user named: exactly one of a built-in name, a command or a callable;
    ``label`` names a command or callable grader in reports (default ``command``, ``callable``)."""
    chosen = [x for x in (name, command, callable_target) if x]
    if len(chosen) != 1:
        raise GraderError("name one grader: a built-in name, --command or --callable")
    if command:
        return CommandGrader(command, threshold, name=label or "command")
    if callable_target:
        return CallableGrader(callable_target, threshold, name=label or "callable")
    if name not in GRADERS:
        raise GraderError(f"unknown grader {name!r}; built-in graders: {', '.join(GRADERS)}")
    return GRADERS[name]()
