"""The control plane at a few dozen nodes, on the in-memory bus (bench/scale.py runs the
curve to 200). Counts are asserted, not times: the machine running the tests is shared."""

import gc

import anyio
import pytest
from bench.scale import run_sizes
from bench.scale_modelling import (
    freeze_formed_cluster,
    harness_election_timeout,
    release_frozen,
    seconds_to_open_a_vote,
)
from loguru import logger

NODES = 40


@pytest.fixture
def quiet_nodes() -> object:
    logger.disable("skulk")
    yield None
    logger.enable("skulk")


def test_forty_nodes_elect_fail_over_and_index_without_duplicates(quiet_nodes: object) -> None:
    [row] = anyio.run(lambda: run_sizes([NODES], events=30, rate=6.0, idle_seconds=2.0,
                                        election_timeout=1.0, burst=5))
    assert "error" not in row, row
    assert row["indexed_events"] == 30
    # One delivery to the master and one to each other node; replays and resends add few.
    assert NODES <= row["event_deliveries_per_event"] <= 1.5 * NODES
    assert row["indexed_received_twice_per_event"] <= 0.1
    assert row["local_events_resent_per_event"] <= 0.25
    # Five proposals from five followers at once go out indexed under one signature (the
    # master takes what is ready together): far fewer than one per event, and each node
    # still applies every event once.
    assert row["indexed_events_bursts"] == 30
    assert row["master_signatures_per_event"] >= 0.9
    assert row["master_signatures_per_event_bursts"] <= 0.5
    assert row["indexed_received_twice_per_event_bursts"] <= 0.1
    # One follower's five ready together leave as one signed message: one check at the
    # master per five (one at a time: one per event).
    assert row["indexed_events_one_node_bursts"] == 30
    assert row["proposal_messages_per_event"] >= 0.9
    assert row["proposal_messages_per_event_one_node_bursts"] <= 0.25
    assert row["master_signatures_per_event_one_node_bursts"] <= 0.25
    assert row["local_events_resent_per_event_one_node_bursts"] <= 0.25
    # Unchanged readings are not sent every 2 s: an idle node hears far less than the
    # N readings of ~1.4 kB every 2 s it used to.
    assert row["idle_bytes_per_node_second"] <= 20_000
    # Bully: every member votes to every member in a round, a round or two per failover.
    assert row["election_deliveries_failover"] <= 3 * NODES * NODES
    # The accounting holds together: the master's CPU is what it spent less the bus's
    # fan-out (a collector's pause in a fan-out once made it negative); each round waits
    # the election timeout in the one process too, so the own-cores model (rounds times
    # the timers, plus the busiest node's CPU) never exceeds the wall time.
    assert row["master_cpu_ms_per_event"] > 0
    assert row["election_rounds_formation"] >= 1 and row["election_rounds_failover"] >= 1
    assert row["formation_seconds_own_cores_model"] <= row["formation_seconds"]
    assert row["failover_seconds_own_cores_model"] <= row["failover_seconds"]
    # The harness's nodes wait the product's timeout plus this core's share of the votes.
    assert row["harness_election_timeout_seconds"] > 1.0
    assert gc.get_freeze_count() == 0, "what the cluster froze was let go"


def test_the_harness_waits_out_what_one_core_takes_to_check_a_round_of_votes() -> None:
    vote = seconds_to_open_a_vote()
    assert 0 < vote < 0.05  # one Ed25519 check and a decode
    assert harness_election_timeout(1, 1.0, vote) == 1.0, "one node: the product's timeout"
    at_200 = harness_election_timeout(200, 1.0, vote) - 1.0
    assert at_200 >= 200 * 199 * vote, "at least a round's votes, checked on one core"
    assert at_200 == pytest.approx(4 * (harness_election_timeout(100, 1.0, vote) - 1.0),
                                   rel=0.02), "it grows as N squared"


def test_a_formed_cluster_is_frozen_out_of_collections_until_released() -> None:
    kept = [[n] for n in range(1000)]
    freeze_formed_cluster()
    try:
        assert gc.get_freeze_count() >= len(kept)
    finally:
        release_frozen()
    assert gc.get_freeze_count() == 0
