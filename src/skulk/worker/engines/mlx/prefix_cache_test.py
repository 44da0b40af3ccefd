"""The prefix cache: longest shared prefix, agreed use, LRU bounds by count and tokens."""

import mlx.core as mx

from skulk.worker.engines.mlx.mlx_api import RowKv
from skulk.worker.engines.mlx.prefix_cache import PrefixCache


def kv(length: int) -> RowKv:
    keys = mx.zeros((1, 2, length, 4))
    return RowKv(layers=((keys, keys),), length=length)


def test_the_longest_shared_prefix_is_found_leaving_the_last_prompt_token() -> None:
    cache = PrefixCache(max_entries=4, max_tokens=100)
    cache.insert([1, 2, 3, 4], kv(4))
    cache.insert([1, 2, 9], kv(3))
    assert cache.lookup([1, 2, 3, 4, 5, 6]).tokens == 4
    assert cache.lookup([1, 2, 3, 4]).tokens == 3  # the last token must still run
    assert cache.lookup([1, 2, 9, 9]).tokens == 3
    assert cache.lookup([7, 1, 2]).tokens == 0 and cache.lookup([7]).kv is None


def test_lookups_do_not_reorder_only_agreed_uses_do() -> None:
    cache = PrefixCache(max_entries=2, max_tokens=100)
    cache.insert([1, 1], kv(2))
    cache.insert([2, 2], kv(2))
    cache.lookup([1, 1, 5])  # a proposal that may never be agreed
    cache.insert([3, 3], kv(2))
    assert cache.lookup([1, 1, 5]).tokens == 0  # the oldest went, lookup or not
    cache.use(cache.lookup([2, 2, 5]), 2)
    cache.insert([4, 4], kv(2))
    assert cache.lookup([2, 2, 5]).tokens == 2 and cache.lookup([3, 3, 5]).tokens == 0
    assert (cache.hits, cache.reused_tokens) == (1, 2)


def test_the_token_budget_evicts_and_an_extension_replaces_its_prefix() -> None:
    cache = PrefixCache(max_entries=8, max_tokens=10)
    cache.insert([1, 2, 3], kv(3))
    cache.insert([1, 2, 3, 4, 5], kv(5))
    assert len(cache) == 1 and cache.held_tokens == 5
    cache.insert([6] * 6, kv(6))
    assert len(cache) == 1 and cache.lookup([1, 2, 3, 4, 5, 6]).tokens == 0
    cache.insert([7] * 11, kv(11))  # larger than the whole budget: not kept
    assert cache.lookup([7] * 12).tokens == 0


def test_a_zero_budget_turns_the_cache_off() -> None:
    cache = PrefixCache(max_entries=8, max_tokens=0)
    cache.insert([1, 2], kv(2))
    assert not cache.enabled and len(cache) == 0
