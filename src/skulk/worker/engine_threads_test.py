from skulk.worker.engine_threads import default_engine_threads


def test_a_node_that_serves_leaves_one_physical_core_to_serving() -> None:
    assert default_engine_threads(8, 16, serves_api=True) == 7, "physical, not logical, cores"
    assert default_engine_threads(8, 16, serves_api=False) == 8


def test_never_fewer_than_one_thread() -> None:
    assert default_engine_threads(1, 2, serves_api=True) == 1
    assert default_engine_threads(None, None, serves_api=True) == 1


def test_logical_cores_stand_in_when_physical_ones_are_unknown() -> None:
    assert default_engine_threads(None, 4, serves_api=True) == 3
