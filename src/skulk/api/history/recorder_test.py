from skulk.api.history.recorder import InstanceQueue, MetricsHistory, NodeGauges
from skulk.api.history.samples import RequestCounts
from skulk.api.history.totals import CounterTotals


def totals(tokens: float, refused: int = 0,
           instances: dict[str, float] | None = None) -> CounterTotals:
    return CounterTotals(requests=RequestCounts(tokens=tokens), refused=refused,
                         instances={i: RequestCounts(tokens=t)
                                    for i, t in (instances or {}).items()})


def test_the_first_reading_is_a_baseline_and_samples_are_differences() -> None:
    history = MetricsHistory()
    history.record(100.0, totals(50, refused=1), NodeGauges(runner_failures=2))
    assert list(history.nodes) == []
    history.record(105.0, totals(80, refused=4),
                   NodeGauges(queue_depth=3, cpu_percent=40.0, runner_failures=3,
                              memory_used_bytes=7, memory_total_bytes=10))
    [sample] = history.nodes
    assert (sample.at, sample.seconds, sample.requests.tokens) == (105.0, 5.0, 30)
    assert (sample.refused, sample.runner_restarts, sample.queue_depth) == (3, 1, 3)
    assert (sample.cpu_percent, sample.memory_used_bytes) == (40.0, 7)


def test_instance_samples_follow_the_state_and_what_was_served() -> None:
    history = MetricsHistory()
    queues = {"inst-1": InstanceQueue("m", depth=2)}
    history.record(0.0, totals(0), NodeGauges(instances=queues))
    history.record(5.0, totals(10, instances={"inst-1": 10.0}), NodeGauges(instances=queues))
    # The instance is gone from the State but served its last tokens in this interval.
    history.record(10.0, totals(14, instances={"inst-1": 14.0}), NodeGauges())
    history.record(15.0, totals(14, instances={"inst-1": 14.0}), NodeGauges())
    ring = history.instances["inst-1"]
    assert [(s.at, s.requests.tokens, s.queue_depth, s.model_id) for s in ring] == [
        (5.0, 10, 2, "m"), (10.0, 4, 0, "m")]


def test_rings_are_bounded_and_old_instances_are_dropped() -> None:
    history = MetricsHistory(capacity=3)
    history.record(0.0, totals(0), NodeGauges(instances={"old": InstanceQueue("m", 0)}))
    history.record(5.0, totals(0), NodeGauges(instances={"old": InstanceQueue("m", 0)}))
    for at in (10.0, 15.0, 20.0, 25.0):
        history.record(at, totals(0), NodeGauges())
    assert [s.at for s in history.nodes] == [15.0, 20.0, 25.0]
    assert "old" not in history.instances


def test_answer_is_what_came_after_since() -> None:
    history = MetricsHistory()
    for at in (0.0, 5.0, 10.0):
        history.record(at, totals(at), NodeGauges())
    answer = history.answer(since=5.0)
    assert answer["nodes"]["at"] == [10.0]  # type: ignore[index]
