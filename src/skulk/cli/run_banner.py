"""What `skulk run` prints once the node is up: where it listens (the API and the cluster
endpoint another machine's `--peer` names), how to try it, and its runners' threads."""

from skulk.cluster.node_endpoints import api_endpoint
from skulk.node_config import NodeConfig
from skulk.shared.endpoints import endpoint_host, endpoint_port


def cluster_line(endpoints: list[str]) -> str:
    """The cluster endpoints, and how another machine names them."""
    if not endpoints:
        return "  cluster: no TCP endpoint"
    shown = ", ".join(endpoints)
    if all(endpoint_host(e).startswith("127.") or endpoint_host(e) == "::1"
           for e in endpoints):
        return (f"  cluster: {shown}  (loopback: only nodes on this machine can join, with "
                f"--peer {endpoints[0]}; --listen tcp/0.0.0.0:{endpoint_port(endpoints[0])} "
                "lets other machines in)")
    return f"  cluster: {shown}  (other machines join with --peer one of these)"


def threads_line(config: NodeConfig, default_threads: str) -> str:
    if not config.run_worker:
        return "  runners: none (--no-worker)"
    if config.engine_threads:
        return f"  runners: {config.engine_threads} compute thread(s) each (--threads)"
    return f"  runners: {default_threads}; --threads N sets it"


def up_banner(config: NodeConfig, node_id: str, cluster_endpoints: list[str],
              default_threads: str) -> str:
    lines = [f"node {node_id} is up" + ("" if config.run_api else " (no API)")]
    if config.run_api:
        url = api_endpoint(config.api_host, config.api_port, None)
        model = config.serve[0] if config.serve else "smollm2-135m"
        lines += [f"Skulk is serving at {url}  (OpenAI API: {url}/v1)",
                  f"  try: curl {url}/v1/chat/completions -H 'Content-Type: application/json' "
                  f"-d '{{\"model\": \"{model}\", \"messages\": [{{\"role\": \"user\", "
                  f"\"content\": \"Hello!\"}}]}}'",
                  f"  or:  skulk chat {model}"]
    lines += [cluster_line(cluster_endpoints), threads_line(config, default_threads)]
    return "\n".join(lines)
