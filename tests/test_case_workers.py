"""The order in which case workers are sent cases, a pool of them kept warm between runs, and the
engines' own work a run records (the processes themselves: tests/test_runner.py)."""

import pytest

from regrade.run.pool import _Queue


def test_without_affinity_cases_go_out_in_the_order_given():
    queue = _Queue(["a", "b", "c"], [2, 0, 1], None)
    taken = []
    while queue:
        taken.append(queue.take(None, set())[0])
    assert taken == [2, 0, 1]


def test_a_worker_gets_the_rest_of_its_group_and_an_idle_one_passes_over_a_busy_ones_group():
    goldens = ["g1", "g1", "g1", "g2", "g2", "g3"]  # case i's golden
    queue = _Queue(goldens, range(6), lambda golden: golden)
    first, first_kept = queue.take(None, set())  # worker A, fresh
    second, second_kept = queue.take(None, {first_kept})  # worker B, fresh, while A is on g1
    assert (first, first_kept, second, second_kept) == (0, "g1", 3, "g2")
    assert queue.take("g1", {"g2"}) == (1, "g1")  # A again: its own group
    assert queue.take("g1", {"g2"}) == (2, "g1")
    assert queue.take("g1", {"g2"}) == (5, "g3")  # g1 done; g2 is B's
    assert queue.take("g2", {"g3"}) == (4, "g2")
    assert not queue


def test_when_every_group_left_is_busy_an_idle_worker_takes_the_first():
    queue = _Queue(["g1", "g1"], [0, 1], lambda golden: golden)
    assert queue.take(None, set()) == (0, "g1")
    assert queue.take(None, {"g1"}) == (1, "g1")


def test_a_warm_worker_takes_first_the_groups_it_had_before_then_those_no_other_worker_had():
    goldens = ["g1", "g2", "g3", "g4", "g4"]
    queue = _Queue(goldens, range(5), lambda golden: golden)
    a_had, b_had = {"g3": None, "g4": None}, {"g1": None}  # in a run before
    assert queue.take(None, set(), a_had, lambda g: g in b_had) == (2, "g3")  # A: its own, though g1 comes first
    assert queue.take(None, {"g3"}, b_had, lambda g: g in a_had) == (0, "g1")  # B: its own
    assert queue.take("g1", {"g3"}, b_had, lambda g: g in a_had) == (1, "g2")  # B again: no one had g2
    assert queue.take("g2", {"g3"}, b_had, lambda g: g in a_had) == (3, "g4")  # then A's, rather than idle
    assert queue.take("g3", {"g4"}, a_had, lambda g: g in b_had) == (4, "g4")  # A: all that is left, B's group


def test_a_group_had_before_is_looked_for_only_among_the_next_few():
    from regrade.run.pool import AFFINITY_LOOKAHEAD

    goldens = [f"g{i}" for i in range(AFFINITY_LOOKAHEAD + 1)]
    queue = _Queue(goldens, range(len(goldens)), lambda golden: golden)
    assert queue.take(None, set(), {goldens[-1]: None}, lambda g: True) == (0, "g0")  # too far: the first free one


@pytest.mark.slow
def test_a_warm_pool_keeps_its_case_workers_between_runs_and_the_verdicts_do_not_change(tmp_path):
    # regrade serve's case workers: the second run is graded by the very processes of the first
    # (their engines open), a run of other settings gets new ones, and every record is the one a
    # run without a warm pool gives
    from regrade import api
    from regrade.run.pool import WarmPool
    from tests.conftest import DEMO, require_engines

    require_engines("ironcalc")
    conditions = {c: DEMO / "outputs" / c for c in ("none", "community", "anthropic")}

    def records(**options) -> list[dict]:
        made = api.rescore(DEMO / "dataset", conditions, engines=["ironcalc"], workers=2, cache=False, **options)
        return [r.model_dump(exclude={"output_path", "answer_path"}) for r in made.cases]

    warm = WarmPool()
    try:
        first = records(warm=warm)
        pids = sorted(w.process.pid for w in warm.workers)
        assert len(pids) == 2
        assert records(warm=warm) == first and sorted(w.process.pid for w in warm.workers) == pids
        assert records() == first  # no warm pool: the same records
        records(warm=warm, timeout_s=30)  # other settings: other workers
        assert sorted(w.process.pid for w in warm.workers) != pids
    finally:
        warm.close()
    assert not warm.workers


def test_every_run_records_the_engines_own_work_and_its_floor_and_no_record_carries_it(tmp_path):
    # issue 50, item 4: the provenance says what the engines' own CPU was (on workbooks, and
    # starting), the floor it sets on the workers, and the wall time; a second run from the
    # results cache asks the engines nothing, and its floor is 0
    from regrade import api
    from tests.conftest import DEMO, require_engines

    require_engines("ironcalc")
    conditions = {c: DEMO / "outputs" / c for c in ("none", "community")}
    cold = api.rescore(DEMO / "dataset", conditions, engines=["ironcalc"], workers=2, output=tmp_path / "cold.jsonl",
                       cache_dir=tmp_path / "cache")
    work = cold.provenance.model_extra["engine_work"]
    assert work["engine_cpu_s"]["ironcalc"] > 0 and work["workers"] == 2 and work["wall_s"] > 0
    assert work["golden_reading_cpu_s"] > 0  # the goldens' values, which any grader reads, are in the floor too
    spent = sum(work["engine_cpu_s"].values()) + sum(work["engine_start_cpu_s"].values()) + work["golden_reading_cpu_s"]
    assert work["floor_s"] == pytest.approx(spent / 2, abs=0.002)
    assert all("_engine_work" not in line for line in (tmp_path / "cold.jsonl").read_text().splitlines())
    again = api.rescore(DEMO / "dataset", conditions, engines=["ironcalc"], workers=2, output=tmp_path / "warm.jsonl",
                        cache_dir=tmp_path / "cache")
    assert again.provenance.model_extra["engine_work"]["floor_s"] == 0
    assert [r.model_dump() for r in again.cases] == [r.model_dump() for r in cold.cases]
