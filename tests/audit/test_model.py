"""Value types: span arithmetic, enum parsing, fingerprints, excerpts."""

import pytest

from mleaudit.audit.model import Confidence, Severity, Span, finding_fingerprint, make_excerpt


def test_span_from_offsets_is_one_based():
    text = "ab\ncd\nef"
    span = Span.from_offsets(text, "x.py", 3, 5)
    assert (span.start_line, span.start_col, span.end_line, span.end_col) == (2, 1, 2, 3)
    assert text[span.start_byte : span.end_byte] == "cd"


def test_span_within_maps_to_host_file():
    host = "line1\nprefix: x = 1\ny = 2\n"
    start = host.index("x = 1")
    parent = Span.from_offsets(host, "logs/a.log", start, len(host))
    embedded = "x = 1\ny = 2\n"
    inner = Span.from_offsets(embedded, "", embedded.index("y"), embedded.index("y") + 5)
    mapped = inner.within(parent)
    assert host[mapped.start_byte : mapped.end_byte] == "y = 2"
    assert (mapped.path, mapped.start_line, mapped.start_col) == ("logs/a.log", 3, 1)
    first = Span.from_offsets(embedded, "", 0, 1).within(parent)
    assert (first.start_line, first.start_col) == (2, 9)


def test_severity_parse_and_order():
    assert Severity.parse("HIGH") is Severity.HIGH
    assert Severity.CRITICAL > Severity.HIGH > Severity.MEDIUM
    assert Confidence.parse("low").label == "low"
    with pytest.raises(ValueError, match="unknown severity 'urgent'; expected one of: info, low, medium, high, critical"):
        Severity.parse("urgent")


def test_fingerprint_ignores_whitespace_not_content():
    a = finding_fingerprint("r", "code/a.py", "x  =\n 1")
    assert a == finding_fingerprint("r", "code/a.py", "x = 1")
    assert a != finding_fingerprint("r", "code/a.py", "x = 2")
    assert a != finding_fingerprint("other", "code/a.py", "x = 1")


def test_excerpt_takes_whole_lines_with_context():
    text = "a\nb\nc\nd\ne"
    start = text.index("c")
    assert make_excerpt(text, start, start + 1) == "c"
    assert make_excerpt(text, start, start + 1, context_lines=1) == "b\nc\nd"
    assert make_excerpt(text, 0, 1, context_lines=3) == "a\nb\nc\nd"


def test_spans_into_a_large_text_use_the_line_index_and_agree_with_counting():
    import random

    from mleaudit.audit.model import Span

    rng = random.Random(7)
    text = "".join(rng.choice(["a", "b", "\n", "é", "\r\n"]) for _ in range(100_000))
    for _ in range(300):
        start = rng.randrange(len(text) + 1)
        end = rng.randrange(start, len(text) + 1)
        span = Span.from_offsets(text, "f", start, end)
        assert span.start_line == text.count("\n", 0, start) + 1
        assert span.start_col == start - (text.rfind("\n", 0, start) + 1) + 1
        assert span.end_line == text.count("\n", 0, end) + 1
        assert span.end_col == end - (text.rfind("\n", 0, end) + 1) + 1
