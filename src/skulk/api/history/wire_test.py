import pytest

from skulk.api.history.recorder import InstanceQueue, MetricsHistory, NodeGauges
from skulk.api.history.samples import RequestCounts
from skulk.api.history.samples_test import counts_in
from skulk.api.history.totals import CounterTotals
from skulk.api.history.wire import read_samples


def busy_history() -> MetricsHistory:
    history = MetricsHistory()
    for i in range(4):
        history.record(5.0 * i, CounterTotals(
            requests=RequestCounts(10.0 * i, i, counts_in((2, i))), refused=i,
            instances={"i-1": RequestCounts(4.0 * i, i, counts_in((3, i))),
                       "i-2": RequestCounts(1.0 * i, 0)}),
            NodeGauges(queue_depth=i, cpu_percent=12.5, memory_used_bytes=7,
                       memory_total_bytes=9, vram_used_bytes=1, vram_total_bytes=2,
                       runner_failures=i, instances={"i-1": InstanceQueue("m", i)}))
    return history


def test_samples_cross_as_columns_and_come_back_the_same() -> None:
    history = busy_history()
    nodes, instances = read_samples(history.answer())
    assert nodes == list(history.nodes)
    assert sorted(instances, key=lambda s: (s.instance_id, s.at)) == [
        *history.instances["i-1"], *history.instances["i-2"]]
    assert [s.at for s in instances] == sorted(s.at for s in instances)


@pytest.mark.parametrize("broken", [
    "not an object",
    {"nodes": None, "instances": None},
    {"nodes": {"at": [1.0]}},  # columns missing
])
def test_what_is_not_an_answer_is_refused(broken: object) -> None:
    with pytest.raises(ValueError):
        read_samples(broken)


def test_columns_of_different_lengths_or_bucket_counts_are_refused() -> None:
    answer = busy_history().answer()
    nodes = answer["nodes"]
    assert isinstance(nodes, dict)
    with pytest.raises(ValueError, match="different lengths"):
        read_samples({**answer, "nodes": {**nodes, "cpu_percent": [1.0]}})
    with pytest.raises(ValueError, match="counts"):
        read_samples({**answer, "nodes": {**nodes, "first_token_buckets": [
            [1, 2]] * len(nodes["at"])}})
