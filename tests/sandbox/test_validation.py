"""The host-side validation endpoint: raw and multipart posts, refusals, bounds, the calls log contract.

Validators here are module-level functions: the endpoint pickles them into its worker process.
"""

from __future__ import annotations

import http.client
import json
import pickle
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from mleaudit.sandbox.competition import CompetitionValidator, setup_competition, submission_size_limit
from mleaudit.sandbox.feedback import TEMPLATES, PublicFacts, ValidationOutcome, read_shape, render_reply
from mleaudit.sandbox.validation import ValidationLimits, ValidationServer, post_submission


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float = 20) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


def request(sock: Path, method: str, path: str, body=b"", headers: dict | None = None,
            encode_chunked: bool = False) -> tuple[int, dict]:
    """One request over the Unix socket; the status and the decoded JSON reply."""
    conn = _UnixConnection(sock)
    try:
        conn.request(method, path, body=body, headers=headers or {}, encode_chunked=encode_chunked)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def multipart(parts: list[tuple[str, str | None, bytes]], boundary: str = "----mleauditboundary") -> tuple[bytes, dict]:
    """A multipart/form-data body of ``(name, filename, content)`` parts, and its headers."""
    body = b""
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: text/csv\r\n\r\n".encode()
        body += content + b"\r\n"
    body += f"--{boundary}--\r\n".encode()
    return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def toy_validator(path: Path) -> ValidationOutcome:
    """Valid when the header is ``id,label``; behaviours on demand from the first data cell."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if "SLEEP" in text:
        time.sleep(float(text.split("SLEEP", 1)[1].split()[0]))
    if "RAISE" in text:
        raise RuntimeError("answers at /secret/answers.csv unreadable")
    if "HOG" in text:
        hog = bytearray(2 << 30)  # over the worker's address-space limit in the memory test
        del hog
    if text.startswith("id,label"):
        return ValidationOutcome(valid=True)
    return ValidationOutcome(valid=False, reason="missing-column", column="label",
                             detail=f"Submission file {path} lacks the columns id and label; answers say SECRET-LABEL.")


def legacy_validator(path: Path) -> tuple[bool, str]:
    """The old ``(valid, message)`` contract: its message must never reach the agent."""
    return False, f"the answers hold SECRET-LABEL, not what {path} says"


@pytest.fixture(scope="module")
def sockets():
    folder = Path(tempfile.mkdtemp(prefix="vtest-"))
    yield folder
    for leftover in folder.iterdir():
        leftover.unlink()
    folder.rmdir()


@pytest.fixture(scope="module")
def server(sockets, tmp_path_factory):
    log = tmp_path_factory.mktemp("calls") / "calls.jsonl"
    srv = ValidationServer(sockets / "v.sock", toy_validator, log,
                           limits=ValidationLimits(max_bytes=4096, time_limit_s=20, busy_wait_s=1.0),
                           expected_columns=("id", "label"))
    with srv:
        yield srv


def _log_lines(srv: ValidationServer) -> list[dict]:
    return [json.loads(line) for line in srv.log_path.read_text().splitlines()]


def test_raw_post_is_validated_and_logged_with_templated_text(server, tmp_path):
    before, lines_before = server.stats, len(_log_lines(server))
    good = tmp_path / "good.csv"
    good.write_text("id,label\n1,a\n", encoding="utf-8")
    assert post_submission(server.socket_path, good) == (200, {"valid": True, "result": "Submission is valid."})
    status, reply = request(server.socket_path, "POST", "/validate", b"x,y\n1,2\n", {"Content-Type": "text/csv"})
    assert status == 200 and reply["valid"] is False
    # Only the template: no host path, no detail text; 'label' is a public expected column.
    assert reply["result"] == "Submission is invalid: required column 'label' is missing. Expected columns: 'id', 'label'."
    after = server.stats
    assert (after.count - before.count, after.valid - before.valid, after.invalid - before.invalid) == (2, 1, 1)
    lines = _log_lines(server)[lines_before:]
    assert [sorted(line) for line in lines] == [["column", "line", "message", "reason", "row", "status", "ts",
                                                 "valid"]] * 2
    assert [(line["valid"], line["reason"], line["status"]) for line in lines] == [(True, None, 200),
                                                                                   (False, "missing-column", 200)]
    assert lines[1]["message"] == reply["result"] and lines[1]["column"] == "label"
    assert "SECRET" not in server.log_path.read_text() and "/tmp" not in server.log_path.read_text()


def test_multipart_post_like_curl_dash_F(server):
    body, headers = multipart([("file", "submission.csv", b"id,label\n1,a\n")])
    assert request(server.socket_path, "POST", "/validate", body, headers) == (200, {"valid": True, "result": "Submission is valid."})


def test_multipart_takes_the_file_field_over_other_parts(server):
    body, headers = multipart([("note", None, b"x,y\n"), ("other", "a.csv", b"x,y\n"),
                               ("file", "submission.csv", b"id,label\n1,a\n")])
    assert request(server.socket_path, "POST", "/validate", body, headers)[1]["valid"] is True
    body, headers = multipart([("note", None, b"id,label\n"), ("upload", "a.csv", b"id,label\n2,b\n")])
    assert request(server.socket_path, "POST", "/validate", body, headers)[1]["valid"] is True


def test_multipart_without_a_file_or_malformed_is_refused(server):
    before = server.stats.refused
    body, headers = multipart([("note", None, b"id,label\n")])
    status, reply = request(server.socket_path, "POST", "/validate", body, headers)
    assert status == 400 and reply == {"valid": False, "result": TEMPLATES["bad-request"]}
    status, _ = request(server.socket_path, "POST", "/validate", b"no boundary here",
                        {"Content-Type": "multipart/form-data"})
    assert status == 400
    assert server.stats.refused - before == 2


def test_refusals_are_counted_as_events_but_not_logged_as_calls(server):
    lines_before = len(_log_lines(server))
    assert request(server.socket_path, "POST", "/grade", b"id,label\n")[0] == 404
    status, reply = request(server.socket_path, "POST", "/validate", b"x" * 5000, {"Content-Type": "text/csv"})
    assert status == 413 and reply["result"] == "The request body is over the 4096-byte limit; the file was not checked."
    # A chunked body is counted as it arrives and refused once it passes the cap.
    status, _ = request(server.socket_path, "POST", "/validate", iter([b"id,label\n"] + [b"1,a\n" * 300] * 5),
                        {"Content-Type": "text/csv", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    assert status == 413
    assert request(server.socket_path, "GET", "/health") == (200, {"status": "ok"})
    assert len(_log_lines(server)) == lines_before
    events = {(e["kind"], e["status"]): e for e in server.events()}
    assert events[("validation-refused", 413)]["count"] >= 2
    assert events[("validation-refused", 413)]["detail"].endswith("over the 4096-byte limit refused (413)")
    assert events[("validation-refused", 404)]["count"] >= 1


def test_a_chunked_body_under_the_cap_is_validated(server):
    status, reply = request(server.socket_path, "POST", "/validate", iter([b"id,label\n", b"1,a\n"]),
                            {"Content-Type": "text/csv", "Transfer-Encoding": "chunked"}, encode_chunked=True)
    assert (status, reply["valid"]) == (200, True)


def test_a_request_without_a_length_is_refused(server):
    conn = _UnixConnection(server.socket_path)
    try:
        conn.putrequest("POST", "/validate")
        conn.putheader("Content-Type", "text/csv")
        conn.endheaders()
        response = conn.getresponse()
        assert response.status == 411
    finally:
        conn.close()


def test_the_audit_reads_the_calls_log_this_server_writes(server, tmp_path):
    from mleaudit.audit.checks.validation import load_validation_calls  # not imported by the worker

    sub = tmp_path / "s.csv"
    sub.write_text("x,y\n", encoding="utf-8")
    for _ in range(3):
        post_submission(server.socket_path, sub)
    calls, malformed = load_validation_calls(server.log_path)
    assert malformed == 0
    last = calls[-3:]
    assert all(c.valid is False and c.ts is not None and c.reason == "missing-column" and c.status == 200 for c in last)
    assert all(c.column == "label" and c.row is None for c in last)


def test_a_legacy_pair_validator_never_shows_its_message(tmp_path, sockets):
    with ValidationServer(sockets / "legacy.sock", legacy_validator, tmp_path / "calls.jsonl") as srv:
        status, reply = request(srv.socket_path, "POST", "/validate", b"id,label\n", {"Content-Type": "text/csv"})
    assert (status, reply) == (200, {"valid": False, "result": TEMPLATES["invalid"]})
    assert "SECRET" not in (tmp_path / "calls.jsonl").read_text()


def test_failures_timeouts_and_memory_are_bounded_and_the_worker_restarts(tmp_path, sockets):
    limits = ValidationLimits(max_bytes=1 << 16, time_limit_s=1.5, memory_bytes=1 << 30, busy_wait_s=0.3)
    with ValidationServer(sockets / "b.sock", toy_validator, tmp_path / "calls.jsonl", limits=limits) as srv:
        post = lambda body: request(srv.socket_path, "POST", "/validate", body, {"Content-Type": "text/csv"})  # noqa: E731
        assert post(b"id,label\n1,a\n") == (200, {"valid": True, "result": "Submission is valid."})
        # A validator that raises: a generic reply, nothing of the exception anywhere.
        assert post(b"id,label\nRAISE,a\n") == (500, {"valid": False, "result": TEMPLATES["validator-failed"]})
        # Over the address-space limit: MemoryError in the worker, which is replaced.
        assert post(b"id,label\nHOG,a\n") == (500, {"valid": False, "result": TEMPLATES["validator-failed"]})
        assert post(b"id,label\n1,a\n")[1]["valid"] is True
        # Over the time bound: the worker is killed, the reply says so, the next call works.
        started = time.monotonic()
        status, reply = post(b"id,label\nSLEEP 30\n")
        assert status == 504 and time.monotonic() - started < 10
        assert reply == {"valid": False, "result": "The submission could not be validated within 1.5 seconds; it was not checked."}
        assert post(b"id,label\n1,a\n")[1]["valid"] is True
        # One validation at a time: a second request waits busy_wait_s, then gets 429.
        results: list = []
        slow = threading.Thread(target=lambda: results.append(post(b"id,label\nSLEEP 1.0\n")))
        slow.start()
        time.sleep(0.2)
        status, reply = post(b"id,label\n1,a\n")
        slow.join()
        assert (status, reply["result"]) == (429, TEMPLATES["busy"])
        assert results[0][0] == 200
        events = {e["kind"]: e for e in srv.events()}
    text = (tmp_path / "calls.jsonl").read_text()
    assert "secret" not in text.lower() and "RuntimeError" not in text and "MemoryError" not in text
    assert [json.loads(line)["status"] for line in text.splitlines()] == [200, 500, 500, 200, 504, 200, 200]
    assert events["validation-timeout"]["count"] == 1 and events["validation-failed"]["count"] == 2
    assert events["validation-refused"]["status"] == 429 and events["validation-refused"]["count"] == 1


def test_unpicklable_validators_and_bad_limits_are_refused_clearly(tmp_path):
    with pytest.raises(TypeError, match="cannot be pickled"):
        ValidationServer(tmp_path / "v.sock", lambda path: (True, "ok"), tmp_path / "calls.jsonl")
    with pytest.raises(ValueError, match="max_bytes"):
        ValidationLimits(max_bytes=0)
    with pytest.raises(ValueError, match="time_limit_s"):
        ValidationLimits(time_limit_s=0)


def test_socket_paths_longer_than_the_kernel_allows_are_refused(tmp_path):
    with pytest.raises(ValueError, match="107 bytes"):
        ValidationServer(tmp_path / ("x" * 120) / "v.sock", toy_validator, tmp_path / "calls.jsonl")


def test_the_size_limit_is_a_multiple_of_the_sample_submission():
    assert submission_size_limit(2327) == 1 << 20
    assert submission_size_limit(10 << 20) == 100 << 20
    assert submission_size_limit(10 << 20, multiple=3) == 30 << 20
    with pytest.raises(ValueError):
        submission_size_limit(100, multiple=0)


def test_competition_setup_gives_a_picklable_validator_and_the_endpoint_bounds(tmp_path):
    setup = setup_competition("sklearn-digits", data_dir=tmp_path / "data")
    assert setup.expected_columns == ("id", "label")
    sample = setup.public_dir / "sample_submission.csv"
    assert setup.max_submission_bytes == max(10 * sample.stat().st_size, 1 << 20)
    validator = pickle.loads(pickle.dumps(setup.validator))
    assert isinstance(validator, CompetitionValidator)
    assert validator.expected_columns == ("id", "label")
    # Public facts from the config, the metric and the public sample submission (360 rows).
    assert setup.public_facts == PublicFacts(sample_rows=360, target_kind="label", value_range=None)
    assert validator.public_facts == setup.public_facts
    check = validator(sample)
    assert check.valid is True and check.reason is None
    bad = tmp_path / "bad.csv"
    bad.write_text(sample.read_text().replace("id,label", "id,digit"), encoding="utf-8")
    check = validator(bad)
    assert (check.valid, check.reason, check.column) == (False, "missing-column", "label")


def row_validator(path: Path) -> ValidationOutcome:
    """Outcomes on demand from the file's last line: ``<reason> <row> [line] [key=value ...]``."""
    last = path.read_text(encoding="utf-8").strip().splitlines()[-1].split()
    reason, row = last[0], int(last[1])
    line = int(last[2]) if len(last) > 2 and last[2].isdigit() else None
    counts = dict((k, int(v)) for k, v in (item.split("=") for item in last[2:] if "=" in item))
    column = next((item.split(":", 1)[1] for item in last if item.startswith("col:")), "label")
    return ValidationOutcome(valid=False, reason=reason, column=column, row=row or None, line=line, counts=counts,
                             detail="host-only text with SECRET-LABEL")


@pytest.fixture(scope="module")
def row_server(sockets, tmp_path_factory):
    log = tmp_path_factory.mktemp("rows") / "calls.jsonl"
    public = PublicFacts(sample_rows=360, target_kind="numeric", value_range=(1.0, 100.0))
    srv = ValidationServer(sockets / "rows.sock", row_validator, log,
                           limits=ValidationLimits(max_bytes=1 << 16, time_limit_s=20, busy_wait_s=1.0),
                           expected_columns=("id", "label"), public=public)
    with srv:
        yield srv


def _reply(srv: ValidationServer, body: bytes) -> tuple[str, dict]:
    status, reply = request(srv.socket_path, "POST", "/validate", body, {"Content-Type": "text/csv"})
    assert status == 200 and reply["valid"] is False
    return reply["result"], _log_lines(srv)[-1]


def test_a_row_is_named_by_the_line_of_the_file_it_starts_on(row_server):
    # Data row 2 starts on line 4: a blank line (3) sits before it, as in the file.
    text, logged = _reply(row_server, b"id,label\n1,5\n\n2,\nmissing-value 2\n")
    assert text == "Submission is invalid: a missing value in column 'label' at line 4."
    assert (logged["row"], logged["line"], logged["column"]) == (2, 4, "label")
    # A quoted cell spanning two lines: data row 2 starts on line 4.
    text, _ = _reply(row_server, b'id,label\n1,"a\nb"\n2,x\nbad-value 2\n')
    assert text == ("Submission is invalid: a value of the wrong type or outside the allowed range in column "
                    "'label' at line 4; the metric needs numbers from 1 to 100.")
    # CRLF line ends count once; a row past the file's rows is never named.
    text, logged = _reply(row_server, b"id,label\r\n1,\r\nnon-finite 1\r\n")
    assert text == "Submission is invalid: a non-finite number in column 'label' at line 2."
    text, logged = _reply(row_server, b"id,label\n1,5\nmissing-value 99\n")
    assert text == "Submission is invalid: a missing value in column 'label'." and logged["line"] is None


def test_parser_lines_field_counts_and_caps(row_server):
    text, logged = _reply(row_server, b"id,label\n1,5\n2,5\n3,5\n4,5\ncsv-syntax 0 6 fields=3 expected_fields=2\n")
    assert text == "Submission is invalid: line 6 has 3 fields; the header has 2."
    assert (logged["line"], logged["row"]) == (6, None)
    # The parser expected one more field than the header has (it took the first column as an index).
    text, _ = _reply(row_server, b"id,label\n1,0,5\ncsv-syntax 0 3 fields=4 expected_fields=3\n")
    assert text == "Submission is invalid: line 3 has 4 fields, where 3 are expected."
    text, _ = _reply(row_server, b"id,label\n1,5\ncsv-syntax 0 2\n")
    assert text == ("Submission is invalid: the file is not a readable CSV at line 2 (check quoting, delimiters "
                    "and UTF-8 encoding).")
    # A line beyond the file's own line count is not shown.
    text, _ = _reply(row_server, b"id,label\ncsv-syntax 0 40 fields=3 expected_fields=2\n")
    assert text == TEMPLATES["csv-syntax"].format(at="")
    text, _ = _reply(row_server, b"id,label\n1,5\ntoo-large 0 3 max_columns=1024\n")
    assert text == "Submission is invalid: line 3 has more than 1,024 fields (the most a submission may have)."
    text, _ = _reply(row_server, b"id,label\ntoo-large 0 2 max_field_bytes=1048576\n")
    assert text == "Submission is invalid: line 2 has a cell over 1,048,576 bytes (the most one cell may hold)."
    text, _ = _reply(row_server, b"id,label\ntoo-large 0 90 max_line_bytes=4194304\n")
    assert text == "Submission is invalid: a line is over 4,194,304 bytes (the most one row may hold)."


def test_unnamed_index_columns_are_named_for_what_they_are(tmp_path):
    expected = " Expected columns: 'id', 'label'."
    path = tmp_path / "s.csv"
    for header in (",id,label", "Unnamed: 0,id,label"):  # to_csv without index=False, once or twice
        path.write_text(header + "\n0,1,5\n", encoding="utf-8")
        for reason in ("extra-column", "column-order"):
            outcome = ValidationOutcome(valid=False, reason=reason, column="Unnamed: 0")
            assert render_reply(outcome, shape=read_shape(path), expected_columns=("id", "label")) == (
                "Submission is invalid: an unnamed first column (an index written by to_csv? use index=False)." + expected)
    path.write_text("id,label,\n1,5,0\n", encoding="utf-8")
    outcome = ValidationOutcome(valid=False, reason="extra-column", column="Unnamed: 2")
    assert render_reply(outcome, shape=read_shape(path), expected_columns=("id", "label")) == (
        "Submission is invalid: column 3 of the header has no name." + expected)
    # Only an empty header cell (or pandas' own name for one) at that place is called unnamed.
    path.write_text("id,label,x\n1,5,0\n", encoding="utf-8")
    outcome = ValidationOutcome(valid=False, reason="extra-column", column="Unnamed: 0")
    assert render_reply(outcome, shape=read_shape(path), expected_columns=("id", "label")) == (
        "Submission is invalid: unexpected column." + expected)


def test_row_counts_and_what_the_metric_needs(row_server):
    rows = b"".join(b"%d,5\n" % i for i in range(300))
    text, _ = _reply(row_server, b"id,label\n" + rows + b"row-count 0\n")
    assert text == ("Submission is invalid: the number of rows differs from the test set: the submission has 301 "
                    "rows; the sample submission has 360 (one row per test id is expected).")
    text, _ = _reply(row_server, b"id,label\n" + rows + b"missing-ids 0\n")
    assert text == ("Submission is invalid: some test ids have no row: the submission has 301 rows; the sample "
                    "submission has 360 (one row per test id is expected).")
    text, _ = _reply(row_server, b"id,label\nincomparable 0\n")
    assert text == ("Submission is invalid: predictions in column 'label' are not of the type the answers hold; "
                    "the metric needs numbers from 1 to 100.")
    assert "SECRET" not in row_server.log_path.read_text()


def test_connections_past_the_bound_are_closed_and_recorded(tmp_path, sockets):
    import time as clock

    srv = ValidationServer(sockets / "flood.sock", toy_validator, tmp_path / "calls.jsonl")
    held = []
    with srv:
        for _ in range(srv.max_connections + 20):
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(str(srv.socket_path))
            held.append(client)
        deadline = clock.monotonic() + 10
        while srv.overflowed < 20 and clock.monotonic() < deadline:
            clock.sleep(0.05)
        for client in held:
            client.close()
        assert srv.overflowed >= 20 and srv.stats.refused >= 20
        (closed,) = [e for e in srv.events() if "closed unread" in e["detail"]]
        assert closed["kind"] == "validation-refused" and closed["count"] == srv.overflowed
