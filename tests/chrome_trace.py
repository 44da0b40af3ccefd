"""Checking Chrome's trace-event format, as Chrome's trace viewer reads it."""

from typing import Any


def validate_chrome_trace(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """Structural check of Chrome's trace-event format; returns the complete events."""
    events = trace["traceEvents"]
    assert isinstance(events, list) and events
    named = set()
    for event in events:
        assert event["ph"] in ("X", "M") and isinstance(event["pid"], int)
        assert isinstance(event["tid"], int) and isinstance(event["name"], str)
        if event["ph"] == "M":
            assert event["name"] in ("process_name", "thread_name") and event["args"]["name"]
            if event["name"] == "process_name":
                named.add(event["pid"])
        else:
            assert isinstance(event["ts"], int) and isinstance(event["dur"], int)
            assert event["dur"] >= 0 and event["pid"] in named
    return [e for e in events if e["ph"] == "X"]
