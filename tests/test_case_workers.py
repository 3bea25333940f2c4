"""The order in which case workers are sent cases (the processes themselves: tests/test_runner.py)."""

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
