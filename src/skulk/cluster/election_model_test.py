"""The election tested as a model: hypothesis drives 3-7 real `Election`s on a simulated
network (virtual time, one seed) through joins, kills, restarts, partitions and heals, with
messages delayed and duplicated, and checks what must hold once the network is quiet.

- One master per side: every live node of a connected side follows the same master, a
  member of that side, once nothing has happened for an election timeout; and each heard
  every member of its side in its last round (what a side counts toward its majority).
- The forced master wins its side. (Two forced nodes would each pick themselves; that is a
  configuration error `--force-master`'s help warns about, so the model forces at most one.)
- Nothing an honest cluster sends is refused: no election drops a vote as implausible.
- A sitting master stays: a follower leaving or a node joining does not unseat it (so its
  session, and every runner, carries on).
- When a partition heals, the master of the side that had more members goes on.

Hypothesis shrinks a failing run to its shortest sequence of steps; the runs it found
become plain tests at the end of this file.
"""

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from skulk.shared.types.ids import NodeId
from skulk.testing.election_network import ElectionNetwork, Faults

MAX_NODES = 7
NAMES = [NodeId(f"n{index}") for index in range(1, MAX_NODES + 1)]

faults = st.builds(
    Faults,
    max_message_delay=st.sampled_from([0.0, 0.01, 0.1, 0.4]),
    max_membership_delay=st.sampled_from([0.0, 0.05, 0.5, 2.0]),
    duplicate_probability=st.sampled_from([0.0, 0.2]),
)


class ClusterModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.network: ElectionNetwork | None = None
        self.forced: NodeId | None = None
        self.started: list[NodeId] = []

    @property
    def net(self) -> ElectionNetwork:
        assert self.network is not None
        return self.network

    @initialize(seed=st.integers(0, 2**32 - 1), count=st.integers(3, MAX_NODES),
                force=st.booleans(), faults=faults)
    def form(self, seed: int, count: int, force: bool, faults: Faults) -> None:
        self.network = ElectionNetwork(seed=seed, faults=faults)
        # The lowest id is forced, so forcing (not the id) is what makes it win.
        self.forced = NAMES[0] if force else None
        for node in NAMES[:count]:
            self.net.start(node, force=node == self.forced)
        self.started = NAMES[:count]

    def teardown(self) -> None:
        if self.network is not None:
            self.network.close()

    # -- faults --------------------------------------------------------------------------

    @precondition(lambda self: len(self.net.live) > 1)
    @rule(data=st.data())
    def kill(self, data: st.DataObject) -> None:
        self.net.kill(data.draw(st.sampled_from(sorted(self.net.live)), label="killed"))

    @precondition(lambda self: len(self.net.live) < len(self.started))
    @rule(data=st.data())
    def restart(self, data: st.DataObject) -> None:
        dead = sorted(set(self.started) - set(self.net.live))
        node = data.draw(st.sampled_from(dead), label="restarted")
        self.net.start(node, force=node == self.forced)

    @precondition(lambda self: len(self.started) < MAX_NODES)
    @rule()
    def join(self) -> None:
        node = NAMES[len(self.started)]
        self.started.append(node)
        self.net.start(node)

    @rule(data=st.data())
    def partition(self, data: st.DataObject) -> None:
        side = data.draw(st.sets(st.sampled_from(self.started), min_size=1,
                                 max_size=len(self.started) - 1), label="cut off")
        self.net.partition([side])

    @rule()
    def heal(self) -> None:
        self.net.heal()

    @rule(seconds=st.sampled_from([0.05, 0.3, 1.0, 3.0]))
    def wait(self, seconds: float) -> None:
        self.net.run_for(seconds)

    # -- checks --------------------------------------------------------------------------

    @rule()
    def settle_and_check(self) -> None:
        self.net.settle()
        self.check_one_master_per_side()

    @precondition(lambda self: len(self.net.live) > 2)
    @rule(data=st.data())
    def a_follower_leaves(self, data: st.DataObject) -> None:
        self.net.heal()
        self.net.settle()
        master = self.check_one_master_per_side()[0]
        followers = sorted(set(self.net.live) - {master})
        self.net.kill(data.draw(st.sampled_from(followers), label="follower killed"))
        self.net.settle()
        assert self.check_one_master_per_side() == [master], self.net.describe()

    @precondition(lambda self: len(self.net.live) < len(self.started)
                  or len(self.started) < MAX_NODES)
    @rule()
    def a_node_joins(self) -> None:
        self.net.heal()
        self.net.settle()
        master = self.check_one_master_per_side()[0]
        dead = sorted(set(self.started) - set(self.net.live) - {self.forced})
        if dead:
            self.net.start(dead[0])
        elif len(self.started) < MAX_NODES:
            self.join()
        self.net.settle()
        assert self.check_one_master_per_side() == [master], self.net.describe()

    @precondition(lambda self: len(self.net.live) >= 3 and self.forced is None)
    @rule(data=st.data())
    def a_partition_heals(self, data: st.DataObject) -> None:
        live = sorted(self.net.live)
        minority = data.draw(st.sets(st.sampled_from(live), min_size=1,
                                     max_size=(len(live) - 1) // 2), label="minority")
        self.net.heal()
        self.net.settle()
        self.net.partition([minority])
        self.net.settle()
        masters = self.check_one_master_per_side()
        majority_master = next(m for m in masters if m not in minority)
        self.net.heal()
        self.net.settle()
        assert self.check_one_master_per_side() == [majority_master], self.net.describe()

    @invariant()
    def nothing_honest_is_refused(self) -> None:
        if self.network is None:
            return
        for node, sim in self.net.live.items():
            assert not sim.election.rejected, f"{node} refused {dict(sim.election.rejected)}"

    def check_one_master_per_side(self) -> list[NodeId]:
        """The master of each side, in side order, once every side agrees."""
        masters = []
        for side in self.net.components():
            followed = {self.net.live[node].election.master for node in side}
            assert len(followed) == 1, f"two masters on one side: {self.net.describe()}"
            master = followed.pop()
            assert master in side, f"a side follows {master}, not one of its own: " \
                                   f"{self.net.describe()}"
            if self.forced in side:
                assert master == self.forced, f"the forced master lost: {self.net.describe()}"
            for node in side:  # what a side counts toward its majority
                heard = self.net.live[node].election.heard
                assert heard == side, f"{node} heard {sorted(heard)}: {self.net.describe()}"
            masters.append(master)
        return masters


def run_model(examples: int, steps: int) -> None:
    run_state_machine_as_test(ClusterModel, settings=settings(
        max_examples=examples, stateful_step_count=steps, deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.too_slow]))


def test_one_master_per_side_whatever_happens() -> None:
    # ~10 s here; SKULK_MODEL_EXAMPLES=5000 explores further (derandomized: same runs).
    run_model(examples=int(os.environ.get("SKULK_MODEL_EXAMPLES", "150")), steps=30)


# Runs the model found against the election that judged votes by the receiver's view of
# membership, kept as plain examples.

def test_a_follower_killed_leaves_the_master_in_its_seat() -> None:
    network = ElectionNetwork(seed=0)
    try:
        for node in NAMES[:3]:
            network.start(node)
        network.settle()
        network.kill(NAMES[0])
        network.settle()
        assert {sim.election.master for sim in network.live.values()} == {NAMES[2]}
        assert all(not sim.election.rejected for sim in network.live.values())
    finally:
        network.close()


def test_a_joiner_whose_token_is_seen_late_does_not_unseat_the_master() -> None:
    network = ElectionNetwork(seed=0, faults=Faults(max_message_delay=0.0,
                                                    max_membership_delay=2.0))
    try:
        for node in NAMES[:3]:
            network.start(node)
        network.settle()
        master = network.live[NAMES[0]].election.master
        network.start(NAMES[3])
        network.settle()
        assert {sim.election.master for sim in network.live.values()} == {master}
        assert all(not sim.election.rejected for sim in network.live.values())
    finally:
        network.close()


@pytest.fixture(autouse=True)
def _quiet_logs() -> Iterator[None]:
    """Thousands of rounds log at info; only their outcome matters here."""
    from loguru import logger
    logger.disable("skulk.cluster.election")
    yield
    logger.enable("skulk.cluster.election")
