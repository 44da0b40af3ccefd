"""The `skulk` CLI against a real running node."""

import subprocess
import sys

import httpx

from tests.node_process import NodeProcess


def skulk(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "skulk.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_status_place_and_chat(serving_node: NodeProcess) -> None:
    status = skulk("status", "--url", serving_node.url)
    assert status.returncode == 0, status.stderr
    assert "smollm2-135m on llama_cpp" in status.stdout and "ready" in status.stdout
    placed = skulk("place", "smollm2-135m", "--url", serving_node.url)
    assert placed.returncode == 0 and "placed smollm2-135m as instance" in placed.stdout
    # It waited for the instance to load: the last line says it is ready.
    assert placed.stdout.splitlines()[-1].startswith("ready: smollm2-135m as instance ")
    extra = placed.stdout.split()[-1]
    assert httpx.delete(f"{serving_node.url}/instance/{extra}", timeout=30).status_code == 200
    chat = skulk("chat", "smollm2-135m", "--url", serving_node.url, "--max-tokens", "12",
                 stdin="Say hello.\n\n")
    assert chat.returncode == 0, chat.stderr
    assert len(chat.stdout.splitlines()) >= 2  # the banner, then the streamed reply
    cut = skulk("chat", "smollm2-135m", "--url", serving_node.url, "--max-tokens", "2",
                "--temperature", "0", stdin="Tell me a long story.\n\n")
    assert cut.returncode == 0 and "[cut at --max-tokens 2;" in cut.stdout, cut.stdout
    refused = skulk("place", "no-such-model", "--url", serving_node.url)
    assert refused.returncode == 1 and "does not exist" in refused.stderr


def test_models_list_and_an_unreachable_node() -> None:
    listed = skulk("models", "list")
    assert listed.returncode == 0 and "SmolLM2-135M-Instruct.Q4_1.gguf" in listed.stdout
    unreachable = skulk("status", "--url", "http://127.0.0.1:9")
    assert unreachable.returncode == 2 and "skulk run" in unreachable.stderr
