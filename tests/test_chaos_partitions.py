"""The partition soak, bounded (bench/chaos_partitions.py runs the long one): three hosts,
a minority cut off right after the cluster forms and again later, a placement through the
minority each time, healed: one master and one log after every heal, and the minority's
placement kept (`available`) or refused and never indexed (`majority`).

The first cut comes before the master's first membership agreement can reach the
minority: it once took the empty agreement for a cluster of its own, counted itself a
majority, and the placement it acknowledged was lost at the heal.
"""

import random
from pathlib import Path

import pytest
from bench.chaos_partitions import SETTLE_SECONDS, partition_round

from tests.netns_hosts import NetnsCluster, needs_hosts


@pytest.mark.netns
@pytest.mark.integration
@needs_hosts
@pytest.mark.parametrize("quorum", ["available", "majority"])
def test_partitions_heal_into_one_master_and_one_log(tmp_path: Path, quorum: str) -> None:
    with NetnsCluster(3, tmp_path, extra_args=("--quorum", quorum, "--threads", "1")) \
            as cluster:
        cluster.wait(lambda: cluster.one_master([0, 1, 2]) is not None, SETTLE_SECONDS,
                     "one master")
        chooser = random.Random(5)
        outcomes = [partition_round(cluster, number, chooser, quorum).minority_write
                    for number in range(2)]
    assert outcomes == ["kept" if quorum == "available" else "refused"] * 2
