"""Three hosts in network namespaces: cut the master's link, then heal it.

Needs root (CI runs as root). It used to fail about one run in three: Zenoh's receive
runtime stalled on the dead link and held the survivors' votes back for ~9 s; see
`skulk.routing.zenoh_transport` for the fix. The cut-off master is a minority of one: by
default it accepts a placement and carries it over to the majority's master at heal, so
nothing it acknowledged is lost; under `--quorum majority` it refuses with a 503 and
indexes nothing.
"""

import json
import time
from pathlib import Path

import pytest

from skulk.master.event_log import LIVE_FILE
from skulk.master.event_log_records import decode_records
from tests.netns_hosts import NetnsCluster, needs_hosts

CUT_SECONDS = 15.0


@pytest.mark.netns
@pytest.mark.integration
@needs_hosts
@pytest.mark.parametrize("quorum", ["available", "majority"])
def test_a_partitioned_master_is_replaced_and_the_cluster_heals(tmp_path: Path,
                                                                 quorum: str) -> None:
    with NetnsCluster(3, tmp_path, extra_args=("--quorum", quorum)) as hosts:
        everyone = [0, 1, 2]
        hosts.wait(lambda: hosts.one_master(everyone) is not None, 60, "one master")
        master_id = hosts.one_master(everyone)
        ids = {h: hosts.request(h, "GET", "/node_id")["node_id"] for h in everyone}
        master = next(h for h, node_id in ids.items() if node_id == master_id)
        others = [h for h in everyone if h != master]
        status, text = hosts.place_once_readings_are_in(others[0], {
            "model_id": "smollm2-135m", "excluded_nodes": [master_id]})
        assert status == 201, (status, text)
        hosts.wait(lambda: hosts.chat_ok(others[0]), 120, "the model to serve")

        hosts.isolate(master)
        cut_at = time.monotonic()
        hosts.wait(lambda: hosts.one_master(others) not in (None, master_id), CUT_SECONDS,
                   "the two connected hosts to elect a new master")
        new_master = hosts.one_master(others)
        cut_view = hosts.request(master, "GET", "/state", timeout=5)
        status, text = hosts.request_status(master, "POST", "/place_instance",
                                            {"model_id": "smollm2-135m"})
        if quorum == "majority":
            assert status == 503 and "partition" in text, (status, text)
        else:
            assert status == 201, (status, text)
            accepted_on_the_minority = json.loads(text)["instance_id"]
        hosts.wait(lambda: all(hosts.chat_ok(h) for h in others),
                   max(1.0, CUT_SECONDS - (time.monotonic() - cut_at)),
                   "the two connected hosts to serve while the master is cut off")
        time.sleep(max(0.0, CUT_SECONDS - (time.monotonic() - cut_at)))
        if quorum == "majority":
            before_heal = hosts.request(master, "GET", "/state", timeout=5)
            assert (before_heal["session"], before_heal["last_event_applied_idx"]) == (
                cut_view["session"], cut_view["last_event_applied_idx"]), \
                "a minority under --quorum majority indexes nothing"

        hosts.rejoin(master)
        hosts.wait(lambda: hosts.one_master(everyone) == new_master, 60,
                   "one cluster again, led by the master of the bigger side")
        hosts.wait(lambda: len({hosts.request(h, "GET", "/state")["session"]
                                for h in everyone}) == 1, 30, "every replica in one session")
        assert all(hosts.chat_ok(h) for h in everyone)
        if quorum == "available":
            hosts.wait(lambda: all(accepted_on_the_minority in hosts.request(
                h, "GET", "/state")["instances"] for h in everyone), 30,
                "the placement the cut-off side acknowledged to be carried over")

        new_master_host = next(h for h, node_id in ids.items() if node_id == new_master)
        log = tmp_path / f"node{new_master_host}" / "event_log" / LIVE_FILE
        events = decode_records(log.read_bytes())
        assert [e.index for e in events] == list(range(len(events))), \
            "the surviving session's log has no gap and no duplicate"
        assert len({e.session for e in events}) == 1
