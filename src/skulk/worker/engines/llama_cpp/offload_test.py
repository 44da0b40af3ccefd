"""The offload a split head asks llama.cpp for gives each rank exactly its layers."""

import bisect

import pytest

from skulk.worker.engines.llama_cpp.llama_lib import Offload, offload_for


def devices_by_layer(offload: Offload, n_layer: int) -> list[int]:
    """Which device llama.cpp (llama-model.cpp, load_tensors) puts each layer on, the
    output layer last: -1 is the CPU, i the i-th remote device. Its float arithmetic, as
    it does it."""
    cumulative, total = [], 0.0
    for share in offload.split:
        total += share
        cumulative.append(total)
    cumulative = [value / total for value in cumulative]
    gpu_start = max(n_layer + 1 - offload.layers, 0)
    active = min(offload.layers, n_layer + 1)
    placed = []
    for layer in range(n_layer + 1):
        if layer < gpu_start or layer - gpu_start >= active:
            placed.append(-1)
        else:
            placed.append(bisect.bisect_right(cumulative, (layer - gpu_start) / active))
    return placed


@pytest.mark.parametrize("counts", [[15, 15], [10, 10, 10], [1, 29], [29, 1], [7, 11, 12],
                                    [3, 9, 9, 9]])
def test_each_rank_gets_exactly_its_layers_and_the_last_the_output(counts: list[int]) -> None:
    n_layer = sum(counts)
    placed = devices_by_layer(offload_for(counts), n_layer)
    expected = [-1] * counts[0]
    for device, count in enumerate(counts[1:]):
        expected += [device] * count
    assert placed[:n_layer] == expected
    assert placed[n_layer] == len(counts) - 2  # the output layer, with the last rank


def test_a_split_needs_layers_on_every_rank() -> None:
    with pytest.raises(ValueError):
        offload_for([30])
    with pytest.raises(ValueError):
        offload_for([30, 0])


def test_a_whole_model_offloads_what_the_master_gave_its_gpu() -> None:
    from skulk.worker.engines.llama_cpp.llama_lib import gpu_offload

    assert gpu_offload(0, 30) is None
    assert gpu_offload(9, 30) == Offload(layers=9, split=())
    assert gpu_offload(30, 30) == Offload(layers=-1, split=()), "all layers: the output too"
