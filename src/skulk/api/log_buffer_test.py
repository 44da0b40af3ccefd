from loguru import logger

from skulk.api.log_buffer import LogBuffer, is_component


def test_lines_are_bounded_numbered_and_filtered() -> None:
    buffer = LogBuffer(capacity=3)
    sink = logger.add(buffer.sink, level="DEBUG")
    try:
        logger.debug("one")
        logger.info("two")
        logger.warning("three")
        logger.error("four")
    finally:
        logger.remove(sink)
    assert [line.message for line in buffer.lines()] == ["two", "three", "four"]
    assert [line.seq for line in buffer.lines(after=3)] == [4]
    assert [line.message for line in buffer.lines(level="warning")] == ["three", "four"]
    assert [line.message for line in buffer.lines(limit=1)] == ["four"]
    assert buffer.lines(component="worker") == []
    assert buffer.lines(component="skulk.api.log_buffer_test")[0].level == "INFO"
    assert buffer.last_seq == 4


def test_a_component_is_a_module_prefix() -> None:
    assert is_component("skulk.worker.worker", "worker")
    assert is_component("skulk.worker.worker", "skulk.worker")
    assert not is_component("skulk.workers", "worker")
