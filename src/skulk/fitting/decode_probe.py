"""This machine's decode constants, measured with MLX's own kernels in a runner's
environment: how fast a one-row matrix product reads weights of a given width, and what
one transformer layer costs beyond its weights (kernel launches, Python per layer).

A decode step's time is not its bytes over one read rate: MLX's one-row products read
rows whose length is a multiple of a large power of two far slower (on the bench
machine's core 5.2 GB/s at width 1024 against 9.4 at 960 and 8.7 at 896: such rows
collide in the caches), so the rate is measured at the residual widths models have, and
placement reads it at the model's. The per-layer cost is the difference between two
tiny models that differ only in their layer count. Times are the process's CPU time,
each the best of a few tries: placement predicts for an idle machine, and a node may be
busy when it measures.

Run as `python -m skulk.fitting.decode_probe` under the MLX runner's environment (OpenBLAS
preloaded, one thread); it prints the DecodeCalibration as JSON. Importing it loads mlx.
"""

import sys
import time

from skulk.shared.types.telemetry import DecodeCalibration, WidthReadRate

PROBE_WIDTHS = (576, 768, 896, 960, 1024, 1152, 1536, 2048, 2304, 2560, 3072, 3584, 4096,
                5120)
"""Residual widths measured: those of common models, SmolLM2-135M's to a 13B's."""
MATRIX_BYTES = 16 * 2**20
"""Each weight matrix the probe reads: an MLP's, near enough."""
PROBE_BYTES = 96 * 2**20
"""Weights read per pass at each width: several times the caches of a desktop CPU."""
PASSES = 5
SHORT_LAYERS, LONG_LAYERS = 2, 10
STEPS = 6


def matvec_bytes_per_second(width: int, probe_bytes: int = PROBE_BYTES) -> float:
    """Bytes/s one-row products read through weight matrices with rows `width` long,
    enough of them to miss every cache: each product's best of a few passes."""
    import mlx.core as mx

    rows = max(1, MATRIX_BYTES // (4 * width))
    count = max(2, -(-probe_bytes // (4 * rows * width)))
    weights = [mx.ones((rows, width)) for _ in range(count)]
    row = mx.ones((1, 1, width))
    mx.eval(weights, row)
    best = [float("inf")] * count
    for _ in range(PASSES):
        for index, weight in enumerate(weights):
            started = time.process_time()
            mx.eval(row @ weight.T)
            best[index] = min(best[index], time.process_time() - started)
    return count * 4 * rows * width / sum(best)


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
        started = time.process_time()
        mx.eval(model(token, cache=cache))
        best = min(best, time.process_time() - started)
    return best


def measure(widths: tuple[int, ...] = PROBE_WIDTHS,
            probe_bytes: int = PROBE_BYTES) -> DecodeCalibration:
    """Every constant, measured now (a few seconds)."""
    return DecodeCalibration(
        read_rates=[WidthReadRate(width=w, bytes_per_second=matvec_bytes_per_second(
            w, probe_bytes)) for w in widths],
        layer_seconds=layer_seconds())


if __name__ == "__main__":
    sys.stdout.write(measure().model_dump_json() + "\n")
