import pytest

from skulk.api.history.samples import InstanceSample, NodeSample, RequestCounts
from skulk.api.history.samples_test import counts_in
from skulk.api.history.series import cluster_series, instance_series, node_series, slot_of
from skulk.shared.types.ids import NodeId


def sample(at: float, tokens: float, *, cpu: float = 10.0, queue: int = 0,
           first_tokens: tuple[int, ...] = counts_in()) -> NodeSample:
    return NodeSample(at=at, seconds=5.0, requests=RequestCounts(
        tokens=tokens, generations=sum(first_tokens), first_token_buckets=first_tokens),
        refused=5, queue_depth=queue, cpu_percent=cpu, memory_used_bytes=100,
        memory_total_bytes=200, vram_used_bytes=0, vram_total_bytes=0, runner_restarts=1)


def test_one_node_series_are_rates_per_sample() -> None:
    series = node_series([sample(100.2, 50, first_tokens=counts_in((4, 2)))])
    assert series["t"] == [100.0]
    assert series["decode_tokens_per_second"] == [10.0]
    assert series["requests_per_second"] == [0.4]
    assert series["admissions_refused_per_second"] == [1.0]
    assert series["ttft_p50_seconds"][0] is not None
    assert node_series([sample(5.0, 0)])["ttft_p95_seconds"] == [None]


def test_nodes_out_of_phase_meet_in_one_slot_and_add_up() -> None:
    a = [sample(101.0, 50, cpu=20.0, queue=1, first_tokens=counts_in((1, 9)))]
    b = [sample(99.2, 25, cpu=60.0, queue=2, first_tokens=counts_in((10, 1))),
         sample(104.2, 5)]
    series = cluster_series({NodeId("a"): a, NodeId("b"): b})
    assert series["t"] == [100.0, 105.0] and slot_of(101.0) == 100.0
    assert series["decode_tokens_per_second"] == [15.0, 1.0]
    assert series["cpu_percent"] == [40.0, 10.0]
    assert series["queue_depth"] == [3.0, 0.0]
    assert series["nodes_reporting"] == [2.0, 1.0]
    # The p95 of all ten requests (one slow one), not an average of the nodes' p95s.
    p95 = series["ttft_p95_seconds"][0]
    assert p95 is not None and 5.0 < p95 <= 10.0
    assert series["ttft_p50_seconds"][0] == pytest.approx(0.005 + 0.005 * 5 / 9)


def test_an_instance_sums_what_every_node_took_for_it() -> None:
    def row(at: float, tokens: float, queue: int) -> InstanceSample:
        return InstanceSample(at=at, seconds=5.0, instance_id="inst-1", model_id="m",
                              requests=RequestCounts(tokens=tokens), queue_depth=queue)

    [(instance_id, (model, series))] = instance_series(
        [row(100.0, 10, 3), row(101.0, 20, 4)]).items()
    assert (instance_id, model) == ("inst-1", "m")
    assert series["decode_tokens_per_second"] == [6.0] and series["queue_depth"] == [4.0]
