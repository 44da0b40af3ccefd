"""The metrics page has every family the node's registry exposes."""

from skulk_site.metrics_ref import metric_rows, metrics_markdown, sample_metrics


def test_every_family_of_a_scrape_is_on_the_page() -> None:
    metrics = sample_metrics()
    page = metrics_markdown(metrics)
    scraped = {line.split()[2] for line in metrics.exposition().decode().splitlines()
               if line.startswith("# TYPE")}
    for name in scraped:
        family = name.removesuffix("_created")  # prometheus_client's creation stamps
        assert f"`{family}`" in page or f"`{family}_total`" in page
    rows = {row[0]: row for row in metric_rows(metrics)}
    assert rows["`skulk_requests_total`"][1:3] == ["counter", "`dialect`, `route`, `status`"]
    assert rows["`skulk_time_to_first_token_seconds`"][1] == "histogram"
