"""The validation endpoint leaks nothing of the answers, and its cost on the host is bounded.

The real ``sklearn-digits`` competition is prepared into a temporary data dir, and its answers
are seeded with values no public file holds: numeric labels 4242 and 31337 in one copy, unique
``TOKEN-<uuid>`` labels in another. Submissions (fuzzed, and hand-made hostile ones) go through
the real endpoint; no reply and no calls-log line may hold a seeded value the submission itself
does not hold. Without the templates they would: grading's own message for number labels against
text labels quotes scikit-learn, which lists every distinct answer label (checked below, so the
test can fail).

A subprocess server then takes two 150 MB bodies and one just under its cap, and its peak
resident memory (``VmHWM``) is read from ``/proc``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mleaudit.grading import find_competitions_root
from mleaudit.grading.grade import check_submission
from mleaudit.sandbox.competition import CompetitionValidator, setup_competition
from mleaudit.sandbox.feedback import TEMPLATES
from mleaudit.sandbox.validation import ValidationLimits, ValidationServer
from tests.sandbox.test_validation import multipart, request

COMPETITION = "sklearn-digits"
NUMERIC_SECRETS = ("4242", "31337")
#: Seeded rows of the answers (0-based, in the answers file).
SEEDED_ROWS = range(12)


class Variant:
    """A copy of the prepared competition with seeded answers, served by its own endpoint."""

    def __init__(self, name: str, data: Path, secrets: tuple[str, ...], server: ValidationServer, spec) -> None:
        self.name, self.data, self.secrets, self.server, self.spec = name, data, secrets, server, spec

    def post(self, body: bytes, headers: dict | None = None) -> tuple[int, dict, list[str]]:
        """Post a body; the status, reply and the calls-log lines it added."""
        before = self.server.log_path.read_text().splitlines()
        status, reply = request(self.server.socket_path, "POST", "/validate", body,
                                headers or {"Content-Type": "text/csv"})
        after = self.server.log_path.read_text().splitlines()
        return status, reply, after[len(before):]

    def assert_no_leak(self, submitted: bytes, body: bytes | None = None) -> tuple[int, dict]:
        """Post ``body`` (default: ``submitted`` raw) and check nothing seeded comes back."""
        status, reply, lines = self.post(body if body is not None else submitted,
                                         None if body is None else _MULTIPART_HEADERS)
        # Every field but the timestamp (whose digits may spell anything).
        logged = [{k: v for k, v in json.loads(line).items() if k != "ts"} for line in lines]
        assert len(logged) <= 1
        text = json.dumps(reply) + json.dumps(logged)
        for secret in self.secrets:
            if secret.encode() not in submitted:
                assert secret not in text, f"{self.name}: {secret!r} leaked in {text!r}"
        assert "y_true" not in text and "Got " not in text and "Traceback" not in text
        return status, reply


_BOUNDARY = "----leakboundary7"
_MULTIPART_HEADERS = {"Content-Type": f"multipart/form-data; boundary={_BOUNDARY}"}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> tuple[Path, object]:
    data = tmp_path_factory.mktemp("digits-data")
    setup = setup_competition(COMPETITION, data_dir=data)
    return data, setup


def _seed(data: Path, spec, target: Path, labels: list[str]) -> None:
    shutil.copytree(data, target)
    answers = spec.answers_path(target)
    rows = list(csv.reader(io.StringIO(answers.read_text(encoding="utf-8"))))
    header, body = rows[0], rows[1:]
    label = header.index("label")
    for row, value in zip(SEEDED_ROWS, labels):
        body[row][label] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *body])
    answers.write_text(out.getvalue(), encoding="utf-8")


@pytest.fixture(scope="module")
def variants(prepared, tmp_path_factory):
    data, setup = prepared
    from mleaudit.grading import CompetitionRegistry

    root = find_competitions_root(None)
    spec = CompetitionRegistry(root, data).get(COMPETITION)
    tokens = tuple(f"TOKEN-{uuid.uuid4().hex}" for _ in SEEDED_ROWS)
    plans = {
        "numeric": (NUMERIC_SECRETS, [NUMERIC_SECRETS[i % 2] for i in SEEDED_ROWS]),
        "token": (tokens, list(tokens)),
    }
    sockets = Path(tempfile.mkdtemp(prefix="vleak-"))
    made = {}
    for name, (secrets, labels) in plans.items():
        target = tmp_path_factory.mktemp(f"seeded-{name}") / "data"
        _seed(data, spec, target, labels)
        validator = CompetitionValidator(COMPETITION, root, target, expected_columns=setup.expected_columns,
                                         max_submission_bytes=1 << 20, public_facts=setup.public_facts)
        server = ValidationServer(sockets / f"{name}.sock", validator,
                                  tmp_path_factory.mktemp(f"log-{name}") / "calls.jsonl",
                                  limits=ValidationLimits(max_bytes=1 << 20, time_limit_s=60, busy_wait_s=30))
        server.start()
        made[name] = Variant(name, target, secrets, server, spec)
    yield made
    for variant in made.values():
        variant.server.stop()
    shutil.rmtree(sockets, ignore_errors=True)


@pytest.fixture(scope="module")
def sample(prepared) -> list[list[str]]:
    _, setup = prepared
    text = (setup.public_dir / "sample_submission.csv").read_text(encoding="utf-8")
    return list(csv.reader(io.StringIO(text)))


def _csv(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


def test_the_seeded_answers_would_leak_through_grading_messages(variants, sample):
    """Grading's own host-side message can list the answers' labels: the endpoint must not forward it.

    Number labels against the text labels of the token copy fail in scikit-learn, whose message
    lists every distinct label of both sides; text among number labels (the numeric copy) is named
    by grading itself, without any answer label.
    """
    token = variants["token"]
    numbers = token.data / "probe-numbers.csv"
    numbers.write_bytes(_csv(sample))
    check = check_submission(numbers, token.spec, token.data)
    assert check.reason == "incomparable" and check.column == "label"
    assert any(secret in check.message for secret in token.secrets)
    status, reply = token.assert_no_leak(_csv(sample))
    assert status == 200 and reply["result"] == TEMPLATES["incomparable"].format(
        where=" in column 'label'", needs="; the metric needs labels of the same kind as the sample submission's")
    numeric = variants["numeric"]
    rows = [list(r) for r in sample]
    rows[3][1] = "cat"
    path = numeric.data / "probe.csv"
    path.write_bytes(_csv(rows))
    check = check_submission(path, numeric.spec, numeric.data)
    assert check.reason == "incomparable" and check.column == "label" and check.row == 3
    assert "4242" not in check.message and "31337" not in check.message
    numeric.assert_no_leak(_csv(rows))


def _hostile_cases(sample: list[list[str]]) -> list[tuple[str, bytes]]:
    header, rows = sample[0], [list(r) for r in sample[1:]]

    def with_labels(values: dict[int, str]) -> bytes:
        changed = [list(r) for r in rows]
        for i, value in values.items():
            changed[i][1] = value
        return _csv([header, *changed])

    ids = [r[0] for r in rows]
    return [
        ("valid", _csv(sample)),
        ("text-label", with_labels({0: "foo"})),
        ("token-like-label", with_labels({5: "TOKEN-0000"})),
        ("big-int-label", with_labels({1: "4243"})),
        ("negative-label", with_labels({2: "-1"})),
        ("float-label", with_labels({3: "2.5"})),
        ("nan-label", with_labels({4: "nan"})),
        ("inf-label", with_labels({4: "inf"})),
        ("empty-label", with_labels({7: ""})),
        ("bool-label", with_labels({8: "True"})),
        ("overflow-label", with_labels({9: "1e309"})),
        ("all-text", _csv([header, *[[i, "x"] for i in ids]])),
        ("huge-cell", with_labels({0: "9" * 600_000})),
        ("latin1", with_labels({0: "caf\u00e9"}).replace("café".encode(), b"caf\xe9")),
        ("utf16", "\n".join(",".join(r) for r in sample).encode("utf-16")),
        ("nul-bytes", _csv(sample).replace(b"\n1", b"\n\x001", 1)),
        ("header-only", b"id,label\n"),
        ("empty", b""),
        ("blank-lines", b"\n\n\n"),
        ("missing-column", _csv([["id"], *[[i] for i in ids]])),
        ("extra-column", _csv([["id", "label", "proba"], *[[i, "0", "0.1"] for i in ids]])),
        ("duplicate-column", _csv([["id", "label", "label"], *[[i, "0", "1"] for i in ids]])),
        ("renamed-column", _csv([["id", "Label"], *[[i, "0"] for i in ids]])),
        ("swapped-columns", _csv([["label", "id"], *[["0", i] for i in ids]])),
        ("duplicate-id", _csv([header, *rows, rows[0]])),
        ("unknown-id", _csv([header, *rows[:-1], ["99999", "0"]])),
        ("empty-id", _csv([header, ["", "0"], *rows[1:]])),
        ("missing-ids", _csv([header, *rows[:10]])),
        ("shuffled-text-labels", _csv([header, *[[i, f"L{n}"] for n, i in enumerate(reversed(ids))]])),
        ("semicolons", "\n".join(";".join(r) for r in sample).encode()),
        ("quotes", b'id,label\n"1,"2\n'),
        ("long-header", ("x" * 5000 + ",label\n").encode()),
        ("control-header", b"id,la\x1bbel\n1,0\n"),
        ("index-column", _csv([["", *header], *[[str(n), *r] for n, r in enumerate(rows)]])),
        ("extra-field", _csv([header, *rows[:5]]) + b"99,1,2\n" + _csv(rows[5:])),
        ("quoted-extra-field", _csv([header, rows[0]]) + b'1,"a\nb"\n\n9,1,2\n'),
        ("wide-line", _csv([header, *rows[:2]]) + b"," * 2000 + b"\n"),
    ]


def test_hand_made_hostile_submissions_get_templates_only(variants, sample):
    reasons = {}
    for name, body in _hostile_cases(sample):
        for variant in variants.values():
            status, reply = variant.assert_no_leak(body)
            assert status in (200, 413), (name, status, reply)
            reasons[(variant.name, name)] = reply["result"]
    assert reasons[("numeric", "valid")] == "Submission is valid."
    assert reasons[("numeric", "text-label")].startswith("Submission is invalid: predictions")
    assert reasons[("token", "valid")].startswith("Submission is invalid: predictions")  # ints vs the text labels
    assert reasons[("numeric", "duplicate-id")].endswith("in column 'id' at line 362.")
    assert reasons[("numeric", "missing-column")].startswith("Submission is invalid: required column 'label'")
    # A header cell that is neither printable nor expected is never echoed.
    assert "\x1b" not in reasons[("numeric", "control-header")]
    # Where and what, from the file's own structure and public facts only.
    assert reasons[("numeric", "empty-label")] == "Submission is invalid: a missing value in column 'label' at line 9."
    assert reasons[("numeric", "missing-ids")] == (
        "Submission is invalid: the number of rows differs from the test set: the submission has 10 rows; "
        "the sample submission has 360 (one row per test id is expected).")
    assert reasons[("numeric", "index-column")] == (
        "Submission is invalid: an unnamed first column (an index written by to_csv? use index=False). "
        "Expected columns: 'id', 'label'.")
    assert reasons[("numeric", "extra-field")] == "Submission is invalid: line 7 has 3 fields; the header has 2."
    assert reasons[("numeric", "quoted-extra-field")] == "Submission is invalid: line 6 has 3 fields; the header has 2."
    assert reasons[("numeric", "wide-line")] == (
        "Submission is invalid: line 4 has more than 1,024 fields (the most a submission may have).")
    assert reasons[("numeric", "latin1")] == (
        "Submission is invalid: the file is not a readable CSV at line 2 (check quoting, delimiters and UTF-8 encoding).")


def test_multipart_tricks_get_templates_only(variants, sample):
    good = _csv(sample)
    text = good.replace(b",0\n", b",foo\n", 1)
    cases = [
        [("file", "../../private/test.csv", text)],
        [("file", "a.csv", text), ("file", "b.csv", good)],
        [("note", None, b"TOKEN-x"), ("upload", "s.csv", text)],
        [("file", "s.csv", _BOUNDARY.encode() + b"\n" + text)],
    ]
    for parts in cases:
        body, _ = multipart(parts, boundary=_BOUNDARY)
        for variant in variants.values():
            status, reply = variant.assert_no_leak(body, body)
            assert status == 200 and (reply["valid"] is False or variant.name == "token")
    # Malformed multipart: refused before any validation, with the template.
    for body in (b"--" + _BOUNDARY.encode() + b"\r\nContent-Disposition: form-data; name=file\r\n" + b"X" * 20000,
                 b"not multipart at all", b"--" + _BOUNDARY.encode() + b"--\r\n"):
        status, reply = variants["token"].assert_no_leak(body, body)
        assert status == 400 and reply["result"] == TEMPLATES["bad-request"]


_LABELS = st.one_of(
    st.integers(min_value=-20, max_value=40000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.sampled_from(["", "nan", "inf", "-inf", "NaN", "True", "None", "1e309", "0x10", "4242.0", "TOKEN-"]),
)


@st.composite
def _submissions(draw, sample: list[list[str]]) -> bytes:
    header, rows = list(sample[0]), [list(r) for r in sample[1:]]
    for _ in range(draw(st.integers(0, 4))):
        rows[draw(st.integers(0, len(rows) - 1))][1] = draw(_LABELS)
    shape = draw(st.sampled_from(["as-is", "shuffle", "drop", "repeat", "unknown", "header", "extra", "raw"]))
    if shape == "shuffle":
        rows = draw(st.permutations(rows))
    elif shape == "drop":
        del rows[draw(st.integers(0, len(rows) - 1))]
    elif shape == "repeat":
        rows.append(list(rows[draw(st.integers(0, len(rows) - 1))]))
    elif shape == "unknown":
        rows[draw(st.integers(0, len(rows) - 1))][0] = draw(st.sampled_from(["99999", "-1", "abc", "1.5", ""]))
    elif shape == "header":
        header = draw(st.sampled_from([["id", "Label"], ["label", "id"], ["id"], ["id", "label", "label"], ["", ""]]))
    elif shape == "extra":
        header = header + ["extra"]
        rows = [r + [draw(_LABELS)] for r in rows[:5]] + [r + ["0"] for r in rows[5:]]
    if shape == "raw":  # cells joined without quoting: commas, quotes and newlines break rows
        return ("\n".join(",".join(r) for r in [header, *rows]) + "\n").encode("utf-8", errors="surrogatepass")
    return _csv([header, *rows])


@pytest.mark.parametrize("variant_name", ["numeric", "token"])
def test_fuzzed_submissions_never_leak_seeded_answers(variants, sample, variant_name):
    variant = variants[variant_name]

    @settings(max_examples=80, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(body=_submissions(sample))
    def check(body: bytes) -> None:
        status, reply = variant.assert_no_leak(body)
        assert status in (200, 413)
        assert reply["result"] in _possible_replies(reply["result"])

    check()


def _possible_replies(text: str) -> set[str]:
    """The reply itself when it is a filled template, else nothing (so the assertion fails)."""
    import re
    import string

    number = r"\d{1,3}(?:,\d{3})*"
    fills = {
        "where": r"(?: in column '[^'\n]{1,100}')?(?: at line \d+)?",
        "col": r"(?: '[^'\n]{1,100}')?",
        "expected": r"(?: Expected columns: [^\n]*\.)?",
        "at": r"(?: at line \d+)?",
        "subject": r"(?:line \d+|a line)",
        "line": r"\d+",
        "position": r"\d+",
        "fields": number,
        "header_fields": number,
        "expected_fields": number,
        "cap": number,
        "counts": r"(?:: the submission has " + number + r" rows?(?:; the sample submission has 360|, as many as the sample submission)?)?",
        "needs": r"(?:; the metric needs labels of the same kind as the sample submission's)?",
        "max_bytes": r"\d+",
        "time_limit_s": r"[\d.]+",
    }
    for template in TEMPLATES.values():
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
        assert names <= set(fills), f"a placeholder of {template!r} has no pattern here"
        pattern = re.escape(template)
        for name, fill in fills.items():
            pattern = pattern.replace(re.escape("{" + name + "}"), fill)
        if re.fullmatch(pattern, text):
            return {text}
    return set()


# ---------------------------------------------------------------------------------------------
# Host memory: a server in its own process takes two 150 MB bodies and one just under its cap.

CAP = 64 << 20
BIG = 150 << 20
_SERVER_SCRIPT = textwrap.dedent('''
    import sys
    from pathlib import Path

    from mleaudit.sandbox.validation import ValidationLimits, ValidationServer


    def count_rows(path):
        with open(path, "rb") as handle:
            rows = sum(1 for _ in handle)
        return {"valid": rows > 1, "reason": None if rows > 1 else "empty"}


    if __name__ == "__main__":
        sock, log, cap = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
        with ValidationServer(sock, count_rows, log, limits=ValidationLimits(max_bytes=cap, time_limit_s=60)) as server:
            print("ready", flush=True)
            sys.stdin.readline()
            print(repr(server.events()), flush=True)
''')


def _stream(sock: Path, head: bytes, pieces, *, total: int) -> tuple[int, int, bytes]:
    """Send a request head and body pieces until the server stops reading; status, bytes sent, reply body."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(60)
    client.connect(str(sock))
    client.sendall(head)
    sent = 0
    try:
        for piece in pieces:
            client.sendall(piece)
            sent += len(piece)
    except (BrokenPipeError, ConnectionResetError):
        pass
    reply = b""
    try:
        while chunk := client.recv(65536):
            reply += chunk
    except ConnectionResetError:
        pass
    client.close()
    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0
    return status, sent, reply.split(b"\r\n\r\n", 1)[-1]


def _rows(total: int):
    piece = b"1,2\n" * (1 << 18)  # 1 MiB
    sent = 0
    while sent < total:
        chunk = piece[: min(len(piece), total - sent)]
        sent += len(chunk)
        yield chunk


def _chunked(pieces):
    for piece in pieces:
        yield b"%x\r\n" % len(piece) + piece + b"\r\n"
    yield b"0\r\n\r\n"


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_host_memory_stays_bounded_under_large_bodies(tmp_path):
    script = tmp_path / "serve.py"
    script.write_text(_SERVER_SCRIPT, encoding="utf-8")
    folder = Path(tempfile.mkdtemp(prefix="vmem-"))
    sock = folder / "v.sock"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(script), str(sock), str(tmp_path / "calls.jsonl"), str(CAP)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        baseline = _peak_rss_kib(proc.pid)
        # 1. A raw 150 MB body with its Content-Length: 413 before the body is read.
        head = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nContent-Length: %d\r\n\r\n" % BIG
        status, sent, _ = _stream(sock, head, _rows(BIG), total=BIG)
        assert status == 413 and sent < 32 << 20
        # 2. A 150 MB multipart body, chunked (no length): 413 once it passes the cap.
        part = (f"--{_BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"s.csv\"\r\n\r\n"
                "id,label\n").encode()
        head = (b"POST /validate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                b"Content-Type: multipart/form-data; boundary=" + _BOUNDARY.encode() + b"\r\n\r\n")
        status, sent, _ = _stream(sock, head, _chunked(iter([part, *_rows(BIG)])), total=BIG)
        assert status == 413 and sent < CAP + (16 << 20)
        # 3. Just under the cap: streamed to disk and validated in the worker.
        size = CAP - 4096
        head = b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: text/csv\r\nContent-Length: %d\r\n\r\n" % size
        status, sent, body = _stream(sock, head, iter([b"id,label\n", *_rows(size - 9)]), total=size)
        assert (status, sent) == (200, size) and json.loads(body)["valid"] is True
        peak = _peak_rss_kib(proc.pid)
        proc.stdin.write("stop\n")
        proc.stdin.flush()
        events = proc.stdout.readline()
    finally:
        proc.kill() if proc.poll() is None else None
        proc.wait(timeout=30)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"validation server peak RSS: baseline {baseline // 1024} MiB, after 2 x 150 MB + {CAP >> 20} MiB: "
          f"{peak // 1024} MiB")
    assert peak < 400 * 1024, f"peak RSS {peak} KiB"
    assert peak - baseline < 64 * 1024, f"peak RSS grew by {(peak - baseline) // 1024} MiB"
    assert "'status': 413, 'count': 2" in events and f"over the {CAP}-byte limit" in events
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["status"] == 200
