"""deployment/prometheus and deployment/grafana: Prometheus accepts the configuration and
the rules, the alerts fire on the series that should raise them (`promtool test rules`),
and every metric a rule, a panel or an annotation names is one Skulk exports."""

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # from MkDocs (test extras); no stubs
from prometheus_client.parser import text_string_to_metric_families

from skulk.api.metrics import ApiMetrics, MachineUse, NodeCounters, QueueFill
from skulk.shared.types.state import State

DEPLOYMENT = Path(__file__).resolve().parent.parent / "deployment"
PROMETHEUS = DEPLOYMENT / "prometheus"
RULES = PROMETHEUS / "rules" / "skulk.rules.yml"
BOARD = DEPLOYMENT / "grafana" / "dashboards" / "skulk-cluster.json"
SERIES_SUFFIXES = {"counter": ("_total", "_created"), "histogram": (
    "_bucket", "_count", "_sum", "_created"), "gauge": ("",), "summary": ("_count", "_sum")}
# What Prometheus itself adds to every target.
PROMETHEUS_SERIES = {"up"}
# Labels every scraped series gets: Prometheus's, and prometheus.yml's relabelling.
TARGET_LABELS = {"instance", "job", "node_id", "hostname", "le"}


def load_yaml(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict), path
    return loaded


def promtool(*args: str) -> str:
    """Run Debian's promtool (`make test` installs the prometheus package when root)."""
    program = shutil.which("promtool")
    assert program is not None, (
        "promtool is missing: install Debian's prometheus package (apt install prometheus), "
        "as `make test` does when run as root")
    done = subprocess.run([program, *args], cwd=PROMETHEUS, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def exported_labels() -> dict[str, set[str]]:
    """Every series name a node's /metrics can hold (each family with its type's suffixes)
    and the labels it carries, from a registry where every labelled family has a sample."""
    metrics = ApiMetrics()
    metrics.watch_node(lambda: NodeCounters(
        dropped_messages={("events", "unsigned"): 1}, certificate_expiry={"node": 1.0},
        instance_queues={"i": QueueFill(1, 2)}, machine=MachineUse()), State)
    metrics.failovers.labels("timeout").inc()
    metrics.requests.labels("openai", "/v1/models", "200").inc()
    metrics.count_tokens("i", 1)
    metrics.observe_first_token("i", 0.1)
    metrics.drafted_tokens.labels("i", "ngram").inc()
    metrics.accepted_tokens.labels("i", "ngram").inc()
    text = metrics.exposition().decode()
    labels: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        names = {name for sample in family.samples for name in sample.labels}
        for suffix in SERIES_SUFFIXES[family.type]:
            labels[family.name + suffix] = names - ({"le"} if suffix != "_bucket" else set())
    return labels


def exported_series() -> set[str]:
    return set(exported_labels())


def rule_expressions() -> Iterator[tuple[str, str]]:
    for group in load_yaml(RULES)["groups"]:
        for rule in group["rules"]:
            yield rule["alert"], rule["expr"]


def board_expressions() -> Iterator[tuple[str, str]]:
    board = json.loads(BOARD.read_text())
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]
    for annotation in board["annotations"]["list"]:
        yield annotation["name"], annotation["expr"]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":  # label_values(SERIES, LABEL): the series
            series = re.fullmatch(r"label_values\((.+),\s*\w+\)", variable["definition"])
            assert series is not None, variable["definition"]
            yield variable["name"], series.group(1)


def named_series(expression: str) -> set[str]:
    """The series an expression selects: identifiers that are neither functions (followed
    by a parenthesis), label names (inside braces or after by/without), keywords, nor
    durations."""
    without_strings = re.sub(r'"[^"]*"', '""', expression)
    without_labels = re.sub(r"\{[^}]*\}", "", without_strings)
    without_groupings = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)",
                               "", without_labels)
    without_ranges = re.sub(r"\[[^\]]*\]", "", without_groupings)
    names = set(re.findall(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(?!\s*\()", without_ranges))
    keywords = {"and", "or", "unless", "bool", "offset", "le", "inf", "nan"}
    return {n for n in names if n not in keywords and not n.startswith("__")}


def used_labels(expression: str) -> set[str]:
    """Labels an expression groups by, matches on or selects with."""
    without_strings = re.sub(r'"[^"]*"', '""', expression)
    groupings = re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", without_strings)
    matchers = re.findall(r"\{([^}]*)\}", without_strings)
    names = {name.strip() for group in groupings for name in group.split(",") if name.strip()}
    names |= {m.group(1) for selector in matchers
              for m in re.finditer(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", selector)}
    return names


def unknown_labels(expression: str, exported: dict[str, set[str]]) -> set[str]:
    """Labels an expression uses that none of its series carries and no target has."""
    carried = set().union(*(exported.get(name, set()) for name in named_series(expression)))
    return used_labels(expression) - carried - TARGET_LABELS


def test_prometheus_accepts_the_configuration_and_the_rules() -> None:
    assert "SUCCESS: 1 rule files found" in promtool("check", "config", "prometheus.yml")
    assert "SUCCESS: 10 rules found" in promtool("check", "rules", str(RULES))


def test_each_alert_fires_on_what_should_raise_it() -> None:
    tested = {case["alertname"] for test in load_yaml(
        PROMETHEUS / "rules" / "skulk.rules.test.yml")["tests"]
        for case in test["alert_rule_test"]}
    assert tested == {alert for alert, _ in rule_expressions()}
    assert "SUCCESS" in promtool("test", "rules", "rules/skulk.rules.test.yml")


@pytest.mark.parametrize("source", ["rules", "board"])
def test_every_metric_named_is_one_skulk_exports(source: str) -> None:
    exported = exported_series() | PROMETHEUS_SERIES
    expressions = list(rule_expressions() if source == "rules" else board_expressions())
    assert expressions
    unknown = {(where, name) for where, expression in expressions
               for name in named_series(expression) if name not in exported}
    assert unknown == set()


@pytest.mark.parametrize("source", ["rules", "board"])
def test_every_label_grouped_or_matched_is_one_its_metrics_carry(source: str) -> None:
    exported = exported_labels()
    expressions = list(rule_expressions() if source == "rules" else board_expressions())
    unknown = {(where, label) for where, expression in expressions
               for label in unknown_labels(expression, exported)}
    assert unknown == set()


def test_the_checks_catch_a_misspelt_metric_and_a_wrong_label() -> None:
    names = named_series('sum by (instance) (rate(skulk_tokens_generatd_total{a="b"}[5m])) '
                         '/ on (instance) skulk_machine_cpus > 0')
    assert names == {"skulk_tokens_generatd_total", "skulk_machine_cpus"}
    assert "skulk_tokens_generatd_total" not in exported_series()
    # The model instance is `instance_id`; `instance` is the scrape target.
    assert unknown_labels('max by (instance_name) (skulk_instance_queue_depth{reason="x"})',
                          exported_labels()) == {"instance_name", "reason"}
    assert unknown_labels('sum by (reason) (skulk_failovers_total)', exported_labels()) == set()


def test_the_board_is_provisioned_with_one_datasource_and_distinct_panels() -> None:
    board = json.loads(BOARD.read_text())
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
            assert panel["targets"], panel["title"]
    datasources = load_yaml(DEPLOYMENT / "grafana" / "provisioning" / "datasources" /
                            "skulk-prometheus.yml")["datasources"]
    [variable] = [v for v in board["templating"]["list"] if v["type"] == "datasource"]
    assert variable["current"]["value"] == datasources[0]["uid"]
