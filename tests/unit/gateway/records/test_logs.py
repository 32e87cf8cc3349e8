from __future__ import annotations

import json
import logging

from textgate.gateway.records import logs


def test_request_id_kept_when_sane_else_new() -> None:
    assert logs.request_id("abc-123") == "abc-123"
    assert len(logs.request_id("bad id with spaces")) == 32
    assert len(logs.request_id(None)) == 32


def test_traceparent_continued_or_started() -> None:
    parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    t = logs.trace(parent)
    assert t.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert t.span_id != "00f067aa0ba902b7" and t.traceparent.startswith("00-4bf9")
    fresh = logs.trace("garbage")
    assert len(fresh.trace_id) == 32 and fresh.trace_id != t.trace_id
    assert logs.trace("00-" + "0" * 32 + "-00f067aa0ba902b7-01").trace_id != "0" * 32


def test_json_lines_carry_the_request_id() -> None:
    token = logs.request_id_var.set("rid-9")
    try:
        record = logging.LogRecord("textgate.gateway", logging.INFO, __file__, 1, "hi", (), None)
        record.fields = {"task": "spam"}
        line = json.loads(logs.JsonFormatter().format(record))
    finally:
        logs.request_id_var.reset(token)
    assert line["request_id"] == "rid-9" and line["task"] == "spam" and line["msg"] == "hi"
