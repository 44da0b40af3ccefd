"""`GET /v1/prometheus/targets`: every live node's `/metrics` as a Prometheus HTTP service
discovery answer, so a Prometheus pointed at any node scrapes them all as the cluster
grows and shrinks (deployment/prometheus/prometheus.yml). A node advertises its API only
when it listens beyond loopback (`--api-host`), so a loopback one is not listed."""

from urllib.parse import urlsplit

from fastapi import APIRouter

from skulk.api.context import Cluster

router = APIRouter(tags=["operations"])


@router.get("/v1/prometheus/targets", summary="Every live node's metrics endpoint, in "
            "Prometheus's HTTP service discovery format")
async def prometheus_targets(cluster: Cluster) -> list[dict[str, object]]:
    live = set(cluster.live_nodes()) or {cluster.node_id}
    groups: list[dict[str, object]] = []
    for node_id, reading in sorted(cluster.telemetry.live().items()):
        if node_id not in live or not reading.api_url:
            continue  # a node gone, or one that serves no API
        url = urlsplit(reading.api_url)
        if not url.hostname or url.port is None:
            continue
        host = f"[{url.hostname}]" if ":" in url.hostname else url.hostname
        groups.append({"targets": [f"{host}:{url.port}"],
                       "labels": {"__scheme__": url.scheme or "http",
                                  "skulk_node_id": node_id,
                                  "skulk_hostname": reading.hostname}})
    return groups
