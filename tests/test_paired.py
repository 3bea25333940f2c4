"""Paired transitions, counted by hand on small tables."""

import pytest

from regrade.paired import PairingError, case_grade, paired_table


def rec(condition, task, shallow, full, case=1, original=None, stack="s"):
    return {"stack": stack, "benchmark": "b", "condition": condition, "task_id": task, "case": case,
            "shallow_pass": shallow, "full_pass": full, "original_pass": original}


def test_transitions_before_and_after_regrading():
    records = [
        rec("none", "t1", True, True), rec("skill", "t1", False, True),   # artifact: regression -> retained
        rec("none", "t2", False, False), rec("skill", "t2", True, True),  # gain in both
        rec("none", "t3", True, True), rec("skill", "t3", True, False),   # false pass: retained -> regression
        rec("none", "t4", False, None), rec("skill", "t4", False, None),  # unevaluable: original kept
        rec("skill", "t5", True, True),                                   # unpaired
    ]
    original, regraded = paired_table(records, "none")
    assert (original.grading, original.n, original.gains, original.regressions, original.retained, original.residual) == (
        "original", 4, 1, 1, 1, 1)
    assert (regraded.gains, regraded.regressions, regraded.retained, regraded.residual, regraded.net) == (1, 1, 1, 1, 0)
    assert original.unpaired == 1
    assert original.pass_rate_baseline == pytest.approx(2 / 4)
    assert regraded.pass_rate_treatment == pytest.approx(2 / 4)


def test_task_passes_only_when_all_cases_pass():
    records = [rec("none", "t", True, True, case=1), rec("none", "t", True, True, case=2),
               rec("skill", "t", True, True, case=1), rec("skill", "t", False, False, case=2)]
    (original, _) = paired_table(records, "none")
    assert (original.regressions, original.retained) == (1, 0)


def test_original_pass_overrides_the_shallow_grade():
    assert case_grade(rec("x", "t", True, False, original=False), "original") is False
    assert case_grade(rec("x", "t", True, None, original=False), "regraded") is False
    assert case_grade(rec("x", "t", False, True, original=False), "regraded") is True


def test_missing_baseline_is_a_clear_error():
    with pytest.raises(PairingError, match="no baseline condition 'none'"):
        paired_table([rec("skill", "t", True, True)], "none")


def test_several_trials_are_refused_until_supported():
    records = [rec("none", "t", True, True) | {"trial": 1}, rec("none", "t", True, True) | {"trial": 2}]
    with pytest.raises(PairingError, match="2 trials"):
        paired_table(records, "none")
