from skulk.api.history.totals import difference, read_totals
from skulk.api.metrics import LATENCY_BUCKETS, ApiMetrics


def test_totals_read_tokens_first_tokens_refusals_and_instances() -> None:
    metrics = ApiMetrics()
    before = read_totals(metrics)
    metrics.count_tokens("inst-1", 12)
    metrics.count_tokens("inst-2", 3)
    metrics.observe_first_token("inst-1", 0.2)
    metrics.observe_first_token("inst-1", 40.0)
    metrics.requests.labels("openai", "/v1/chat/completions", "429").inc()
    metrics.requests.labels("openai", "/v1/chat/completions", "503").inc(2)
    metrics.requests.labels("openai", "/v1/chat/completions", "200").inc(5)
    after = read_totals(metrics)

    grown = difference(after.requests, before.requests)
    assert grown.tokens == 15 and grown.generations == 2
    assert grown.first_token_buckets[LATENCY_BUCKETS.index(0.25)] == 1
    assert grown.first_token_buckets[-1] == 1  # 40 s: past the last bound
    assert after.refused - before.refused == 3
    assert after.instances["inst-1"].tokens == 12 and after.instances["inst-1"].generations == 2
    assert after.instances["inst-2"].tokens == 3 and after.instances["inst-2"].generations == 0
