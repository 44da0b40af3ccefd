"""The parts of the test-host tool that run nothing: names, sweeps, command lines."""

import pytest

from skulk.testing import netns_commands as commands
from skulk.testing.netns import Hosts
from skulk.testing.netns_cli import parse
from skulk.testing.netns_commands import Step


def test_owned_runs_carry_their_process_and_human_runs_a_name() -> None:
    run = commands.owned_run_id(4242, "a1b2c3")
    assert run == "4242-a1b2c3"
    assert commands.owner_pid(run) == 4242
    assert commands.owner_pid(commands.check_human_run_id("cli")) is None
    for bad in ("7up", "Cli", "a-b", "abcdefghijklm", ""):
        with pytest.raises(ValueError):
            commands.check_human_run_id(bad)
    with pytest.raises(ValueError):
        commands.owned_run_id(1, "xyz")


def test_names_parse_back_to_their_run_and_leave_others_alone() -> None:
    run = "4242-a1b2c3"
    assert commands.host_namespace(run, 7) == "skulk-4242-a1b2c3-h7"
    assert commands.segment_namespace(run) == "skulk-4242-a1b2c3-seg"
    assert commands.run_of("skulk-4242-a1b2c3-h7") == run
    assert commands.run_of("skulk-4242-a1b2c3-seg") == run
    assert commands.run_of("skulk-cli-h0") == "cli"
    for foreign in ("sk1234-n0", "sk1234-br", "skulk-", "skulk-4242-h", "netns-x", "skulk"):
        assert commands.run_of(foreign) is None, foreign


def test_interface_names_fit_the_kernels_limit() -> None:
    longest = commands.MAX_HOSTS - 1
    assert len(commands.segment_port(longest)) <= 15
    assert commands.address(0) == "10.77.0.1"
    assert commands.address(longest) == "10.77.0.250"


def test_a_sweep_takes_only_runs_whose_process_ended() -> None:
    listed = commands.parse_netns_list(
        "skulk-100-aa-h0 (id: 3)\nskulk-100-aa-seg (id: 2)\nskulk-200-bb-h0\n"
        "skulk-cli-h0\nsk300-n0\nskulk-100-aa-h1\n\n")
    assert listed[0] == "skulk-100-aa-h0"
    alive = {200, 300}
    assert commands.leftovers(listed, lambda pid: pid in alive) == [
        "skulk-100-aa-h0", "skulk-100-aa-h1", "skulk-100-aa-seg"]
    assert commands.leftovers(listed, lambda pid: True) == []
    assert commands.host_count("100-aa", listed) == 2
    assert commands.namespaces_of("cli", listed) == ["skulk-cli-h0"]


def test_up_plugs_every_host_into_one_bridge_at_its_address() -> None:
    steps = commands.up_steps("1-ab", 2)
    argvs = [" ".join(step.argv) for step in steps]
    assert argvs[0] == "ip netns add skulk-1-ab-seg"
    assert "ip -n skulk-1-ab-h1 addr add 10.77.0.2/24 dev eth0" in argvs
    assert "ip -n skulk-1-ab-seg link set h1 master br0" in argvs
    assert not any(step.may_fail for step in steps)
    # The local table moves behind the cut rules before its old place is removed.
    moved = argvs.index("ip -n skulk-1-ab-h0 rule add pref 1000 lookup local")
    assert argvs.index("ip -n skulk-1-ab-h0 rule del pref 0") > moved
    for count in (0, commands.MAX_HOSTS + 1):
        with pytest.raises(ValueError):
            commands.up_steps("1-ab", count)


def test_a_cut_drops_each_peer_on_arrival_and_can_be_repeated() -> None:
    steps = commands.cut_steps("1-ab", 0, 2)
    assert steps[:2] == commands.heal_steps("1-ab", 0, 2)
    assert all(step.may_fail for step in steps[:2])
    assert [" ".join(step.argv) for step in steps[2:]] == [
        "ip -n skulk-1-ab-h0 rule add from 10.77.0.3 iif eth0 blackhole pref 102",
        "ip -n skulk-1-ab-h2 rule add from 10.77.0.1 iif eth0 blackhole pref 100"]
    with pytest.raises(ValueError):
        commands.cut_steps("1-ab", 1, 1)


def test_a_partition_moves_one_side_onto_a_bridge_of_its_own() -> None:
    steps = commands.partition_steps("1-ab", 4, [3, 0])
    assert [" ".join(step.argv) for step in steps] == [
        "ip -n skulk-1-ab-seg link add br1 type bridge",
        "ip -n skulk-1-ab-seg link set br1 up",
        "ip -n skulk-1-ab-seg link set h0 master br1",
        "ip -n skulk-1-ab-seg link set h3 master br1"]
    assert steps[0].may_fail
    for group in ([], [0, 1, 2, 3], [4]):
        with pytest.raises(ValueError):
            commands.partition_steps("1-ab", 4, group)


def test_heal_all_plugs_everyone_in_and_removes_every_cut() -> None:
    steps = commands.heal_all_steps("1-ab", 3)
    moved = [step.argv[-3] for step in steps if step.argv[-2:-1] == ("master",)]
    assert moved == ["h0", "h1", "h2"] and all(
        step.argv[-1] == "br0" for step in steps if "master" in step.argv)
    ups = [step for step in steps if step.argv[-1] == "up"]
    assert [step.argv[-2] for step in ups] == ["h0", "h1", "h2"]
    removals = [step for step in steps if "del" in step.argv]
    assert len(removals) == 7 and all(step.may_fail for step in removals)


def test_rate_caps_with_tbf_and_off_removes_it() -> None:
    [cap] = commands.rate_steps("1-ab", 1, "200mbit")
    assert cap.argv[:3] == ("tc", "-n", "skulk-1-ab-h1")
    assert cap.argv[cap.argv.index("tbf") + 1:cap.argv.index("tbf") + 3] == (
        "rate", "200mbit")
    [off] = commands.rate_steps("1-ab", 1, None)
    assert off.may_fail and "del" in off.argv


def test_commands_run_inside_a_host_optionally_pinned() -> None:
    assert commands.exec_argv("1-ab", 0, ["curl", "-s"]) == [
        "ip", "netns", "exec", "skulk-1-ab-h0", "curl", "-s"]
    assert commands.exec_argv("1-ab", 1, ["python"], core=1) == [
        "ip", "netns", "exec", "skulk-1-ab-h1", "taskset", "-c", "1", "python"]


def test_hosts_turn_calls_into_steps_and_refuse_unknown_hosts() -> None:
    done: list[Step] = []
    hosts = Hosts(3, execute_step=done.append)
    assert commands.owner_pid(hosts.run_id) is not None
    hosts.cut(0, 1)
    hosts.isolate(2)
    assert done == [*commands.cut_steps(hosts.run_id, 0, 1),
                    *commands.port_steps(hosts.run_id, 2, up=False)]
    assert hosts.address(2) == "10.77.0.3"
    for call in (lambda: hosts.cut(0, 3), lambda: hosts.isolate(-1),
                 lambda: hosts.command(5, ["true"])):
        with pytest.raises(ValueError):
            call()
    assert Hosts(1).run_id != Hosts(1).run_id


def test_the_command_line_reads_a_command_after_the_separator() -> None:
    args = parse(["--run", "lab", "exec", "1", "--core", "0", "--", "ls", "-l"])
    assert (args.run, args.host, args.core, args.command) == ("lab", 1, 0, ["ls", "-l"])
    assert parse(["exec", "0", "--", "ls", "--", "--core", "3"]).command == [
        "ls", "--", "--core", "3"]
    assert parse(["heal"]).hosts == []
