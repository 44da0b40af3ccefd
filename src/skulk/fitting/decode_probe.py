"""This machine's decode constants, measured with MLX's own kernels in a runner's
environment: how fast a one-row matrix product reads weights of a given width, and what
one transformer layer costs beyond its weights (kernel launches, Python per layer).

A decode step's time is not its bytes over one read rate: MLX's one-row products run at
a rate that depends on the matrices' width (OpenBLAS's gemm packs its operand), so the
rate is measured at a few widths and placement reads it at the model's. The per-layer
cost is the difference between two tiny models that differ only in their layer count.

Run as `python -m skulk.fitting.decode_probe` under the MLX runner's environment (OpenBLAS
preloaded, one thread); it prints the DecodeCalibration as JSON. Importing it loads mlx.
"""

import sys
import time

from skulk.shared.types.telemetry import DecodeCalibration, WidthReadRate

PROBE_WIDTHS = (1024, 2048, 4096)
"""Residual widths measured: Qwen2.5-0.5B's 896 to a 7B's 4096 read at the nearest."""
PROBE_BYTES = 128 * 2**20
"""Weights read per pass at each width: several times the caches of a desktop CPU."""
PASSES = 3
SHORT_LAYERS, LONG_LAYERS = 2, 10
STEPS = 6


def matvec_bytes_per_second(width: int, probe_bytes: int = PROBE_BYTES) -> float:
    """Bytes/s one-row products read through MLP-shaped weights (width x 4 width, and
    back), enough of them to miss every cache: each product's best of a few passes (a
    product takes milliseconds, so on a busy machine most passes run it unpreempted)."""
    import mlx.core as mx

    pair_bytes = 2 * 4 * width * 4 * width
    pairs = max(1, -(-probe_bytes // pair_bytes))
    weights = [mx.ones((4 * width, width)) if i % 2 == 0 else mx.ones((width, 4 * width))
               for i in range(2 * pairs)]
    rows = {width: mx.ones((1, 1, width)), 4 * width: mx.ones((1, 1, 4 * width))}
    mx.eval(weights, list(rows.values()))
    best = [float("inf")] * len(weights)
    for _ in range(PASSES):
        for index, weight in enumerate(weights):
            started = time.perf_counter()
            mx.eval(rows[weight.shape[1]] @ weight.T)
            best[index] = min(best[index], time.perf_counter() - started)
    return pairs * pair_bytes / sum(best)


def layer_seconds() -> float:
    """What one layer of a decode step costs beyond reading its weights: the per-token
    time of a tiny Llama of LONG_LAYERS layers less one of SHORT_LAYERS, per layer."""
    short, long = _tiny_step_seconds(SHORT_LAYERS), _tiny_step_seconds(LONG_LAYERS)
    return max(0.0, (long - short) / (LONG_LAYERS - SHORT_LAYERS))


def _tiny_step_seconds(n_layers: int) -> float:
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache
    from mlx_lm.models.llama import Model, ModelArgs

    model = Model(ModelArgs(model_type="llama", hidden_size=64, num_hidden_layers=n_layers,
                            intermediate_size=128, num_attention_heads=4,
                            num_key_value_heads=2, rms_norm_eps=1e-5, vocab_size=256,
                            tie_word_embeddings=True))
    mx.eval(model.parameters())
    cache = make_prompt_cache(model)
    mx.eval(model(mx.array([[1, 2, 3]]), cache=cache))
    token = mx.array([[4]])
    best = float("inf")
    for _ in range(STEPS):
        started = time.perf_counter()
        mx.eval(model(token, cache=cache))
        best = min(best, time.perf_counter() - started)
    return best


def measure(widths: tuple[int, ...] = PROBE_WIDTHS,
            probe_bytes: int = PROBE_BYTES) -> DecodeCalibration:
    """Every constant, measured now (about a second)."""
    return DecodeCalibration(
        read_rates=[WidthReadRate(width=w, bytes_per_second=matvec_bytes_per_second(
            w, probe_bytes)) for w in widths],
        layer_seconds=layer_seconds())


if __name__ == "__main__":
    sys.stdout.write(measure().model_dump_json() + "\n")
