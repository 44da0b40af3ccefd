"""The metrics page, written from the registry `GET /metrics` exposes."""

from skulk.api.metrics import ApiMetrics, NodeCounters
from skulk.shared.types.state import State
from skulk_site.markdown import table


def metric_rows(metrics: ApiMetrics) -> list[list[str]]:
    """Every metric family the registry exposes: name, type, labels, help."""
    rows = []
    for family in metrics.registry.collect():
        labels = sorted({name for sample in family.samples for name in sample.labels
                         if name not in ("le", "quantile")})
        declared = getattr(family, "_labelnames", ())
        name = family.name + ("_total" if family.type == "counter" else "")
        rows.append([f"`{name}`", family.type, ", ".join(f"`{label}`" for label in
                                                         labels or declared),
                     family.documentation])
    return rows


def sample_metrics() -> ApiMetrics:
    """A registry as a node builds it, with the node's own collector watching an empty
    State, so every family (labelled ones too) shows up once."""
    metrics = ApiMetrics()
    metrics.watch_node(NodeCounters, State)
    # Labelled families only list themselves once a label set exists.
    metrics.requests.labels("openai", "/v1/chat/completions", "200")
    metrics.drafted_tokens.labels("instance", "ngram")
    metrics.accepted_tokens.labels("instance", "ngram")
    metrics.instance_tokens_generated.labels("instance")
    metrics.instance_time_to_first_token.labels("instance")
    return metrics


def metrics_markdown(metrics: ApiMetrics) -> str:
    lines = ["# Metrics", "",
             "Every node serves Prometheus metrics at `GET /metrics`. This table is read "
             "from the node's metrics registry when this site was built. Request "
             "measures are counted as requests pass; node and cluster measures are read "
             "when scraped. Counters carry Prometheus' `_total` suffix; histograms add "
             "`_bucket`, `_sum` and `_count`; both also export a `_created` timestamp.", ""]
    lines += table(["metric", "type", "labels", "what"], metric_rows(metrics))
    lines += ["", "A scrape configuration for every node of a cluster (the repository's "
              "`deployment/prometheus/` has a fuller one that finds the nodes through "
              "`GET /v1/prometheus/targets`, with alerting rules and a Grafana board; "
              "see [Operations](../operations.md)):", "", "```yaml",
              "scrape_configs:", "  - job_name: skulk", "    static_configs:",
              "      - targets: ['node-a:52415', 'node-b:52415']", "```"]
    return "\n".join(lines) + "\n"
