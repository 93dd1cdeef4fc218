"""Whole-run audits of generated run folders: the fail-closed contract.

A run folder is built in a temporary directory from generated names and bytes: names with
control characters, spaces, backslashes, brackets and bytes that are not UTF-8; files that are
code, notebooks, logs of every format, JSON nested deep or carrying lone surrogate escapes, NUL
bytes, UTF-16, long single lines; symbolic links (inside and out of the run) and FIFOs. Then:

- ``mleaudit.audit.run.load_run`` + ``mleaudit.audit.pipeline.audit_run`` raise nothing (the run exists), the report
  serialises and every output format renders text that encodes as UTF-8 (the terminal text with
  no control character but newlines);
- a ``clean`` verdict (DESIGN §11: every file read, every rule ran, nothing found) has no gaps,
  at least one code unit or log event, and every regular file of the folder was loaded and read:
  code files gave a unit, notebooks a unit (or hold no code cell), logs events (or hold nothing
  a log reader reads). Files under the folders the README documents are not entered
  (``__pycache__``, ``.ipynb_checkpoints``, ``.git``, ``.hg``, ``.svn``, ``node_modules``) are left
  out; hidden folders are read like any other;
- a run whose ``code/solve.py`` calls a hosted LLM is never ``clean`` nor ``review``, whatever
  junk lies beside it: ``flagged``, or ``incomplete``;
- ``mleaudit audit RUN --no-similarity --no-grade --format json -o FILE`` through click's
  ``CliRunner`` never fails internally (exit code 4) and its exit code agrees with the report.

Each property runs in a forked process (:func:`tests.property.support.isolated`): the audit parses
the run's code with tree-sitter in C, and a crash there must fail the property, not end the run.
"""

from __future__ import annotations

import io
import json
import os
import stat
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from mleaudit.audit.cli import main
from mleaudit.audit.errors import AuditError
from mleaudit.audit.expand import expand_run
from mleaudit.audit.formatters import FORMATTERS
from mleaudit.audit.logs import parse_log
from mleaudit.audit.pipeline import AuditOptions, audit_run
from mleaudit.audit.report import VerdictKind
from mleaudit.audit.run import ArtifactKind, load_run
from tests.property import strategies as S
from tests.property.support import RUN_LIMIT, budget, call, encodes_utf8, isolated, record_context

LLM_CALL = 'import openai\nopenai.OpenAI().chat.completions.create(model="x", messages=[])\n'
#: Folders the README ("Hostile run folders") documents are not entered (listed, not gaps): caches,
#: notebook autosaves, version-control stores, installed packages. Hidden folders are read.
NOT_ENTERED = (b"__pycache__", b".ipynb_checkpoints", b".git", b".hg", b".svn", b"node_modules")
FOLDERS = (b"code", b"logs", b"submission", b"working", b"pre_eda", b"data_cleaning", b".hidden", b".x", b"__pycache__",
           b"node_modules", b".git", b".ipynb_checkpoints", b"a b", b"\xff", b"[x]")


# ------------------------------------------------------------------ generating a run folder

@dataclass(frozen=True)
class Entry:
    """One thing to create in the run folder (``parts`` are path components as bytes)."""

    kind: str  # "file", "link", "fifo", "dir"
    parts: tuple[bytes, ...]
    data: bytes = b""

    def __repr__(self) -> str:  # short: contents can be long
        shown = self.data if len(self.data) <= 120 else self.data[:60] + b"..." + self.data[-40:]
        return f"Entry({self.kind!r}, {self.parts!r}, {shown!r}{f' ({len(self.data)} bytes)' if len(self.data) > 120 else ''})"


def _encode(text: str, how: str) -> bytes:
    if how == "utf-16":
        return text.encode("utf-16", "surrogatepass")
    data = text.encode("utf-8", "surrogatepass")
    if how == "bom":
        return b"\xef\xbb\xbf" + data
    if how == "nul":
        return data[: len(data) // 2] + b"\x00" + data[len(data) // 2:]
    if how == "latin":
        return data.replace(b"a", b"\xe9")
    return data


@st.composite
def content_for(draw, suffix: bytes) -> bytes:
    """Bytes for a file, mostly of the kind its suffix promises."""
    kind = draw(st.sampled_from(["fit", "fit", "fit", "fit", "fit", "other", "binary"]))
    if kind == "binary":
        return draw(st.binary(max_size=300))
    fit = suffix.lower().strip()
    if kind == "other":
        fit = draw(st.sampled_from([b".py", b".ipynb", b".log", b".json"]))
    if fit in (b".py", b".sh"):
        text = draw(S.code_body)
    elif fit == b".ipynb":
        text = draw(S.notebook_text)
    elif fit in (b".json", b".jsonl", b".log", b".txt", b".md", b".out", b""):
        text = draw(S.log_document())[2]
    elif fit == b".csv":
        text = "id,label\n" + "".join(f"{i},{draw(st.sampled_from(['1', 'x', '']))}\n" for i in range(draw(st.integers(0, 5))))
    else:
        text = draw(S.nasty_text)
    return _encode(text, draw(st.sampled_from(["utf-8"] * 6 + ["utf-16", "bom", "nul", "latin"])))


READABLE_SUFFIXES = (b".py", b".sh", b".ipynb", b".log", b".txt", b".json", b".jsonl", b".md", b".csv", b".out")


@st.composite
def entry(draw) -> Entry:
    folders = draw(st.lists(st.one_of(st.sampled_from(FOLDERS), S.file_name()), max_size=2))
    name = draw(S.file_name())
    if draw(st.integers(0, 4)):
        # Mostly a suffix the audit reads, so that runs can be clean and the clean property bites.
        name = name.rsplit(b".", 1)[0] + draw(st.sampled_from(READABLE_SUFFIXES))
    parts = (*folders, name)
    kind = draw(st.sampled_from(["file"] * 10 + ["link", "fifo", "dir"]))
    if kind == "link":
        target = draw(st.sampled_from([b"/etc/passwd", b"..", b"../outside", b"code", b"/", b"missing", b"."]))
        return Entry("link", parts, target)
    if kind in ("fifo", "dir"):
        return Entry(kind, parts)
    suffix = b"." + name.rsplit(b".", 1)[1] if b"." in name else b""
    return Entry("file", parts, draw(content_for(suffix)))


meta_file = st.builds(
    lambda name, text: Entry("file", (name,), text.encode("utf-8", "surrogatepass")),
    st.sampled_from([b"run.json", b"metadata.json"]),
    st.one_of(S.json_text(S._obj(run_id=S.json_leaf, agent_id=S.json_leaf, competition_id=st.just(None) | S.json_leaf)),
              S.json_text()),
)
#: A benign code file that most runs start from: without any agent code or log a run is
#: incomplete whatever else it holds, which would leave the clean property nothing to judge.
BENIGN = Entry("file", (b"code", b"train.py"), b"import numpy as np\nprint(np.zeros(3))\n")
run_entries = st.builds(
    lambda base, more: [*base, *more],
    st.sampled_from([[BENIGN], [BENIGN], [BENIGN], []]),
    st.lists(st.one_of(entry(), entry(), entry(), meta_file), max_size=5),
)


def _create(root: bytes, entries: list[Entry], outside: bytes) -> None:
    for item in entries:
        path = os.path.join(root, *item.parts)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if os.path.lexists(path):
                continue
            if item.kind == "file":
                with open(path, "xb") as stream:
                    stream.write(item.data)
            elif item.kind == "dir":
                os.makedirs(path)
            elif item.kind == "fifo":
                os.mkfifo(path)
            else:
                os.symlink(outside if item.data == b"../outside" else item.data, path)
        except OSError:
            continue  # a name clash with what an earlier entry made, a name the file system refuses


def _shown(parts: tuple[bytes, ...]) -> str:
    """The printable run path of a file (``mleaudit.audit.run.display_name``'s documented form)."""
    return "/".join(p.decode("utf-8", "backslashreplace") for p in parts)


def _regular_files(root: bytes) -> dict[str, bytes]:
    """Every regular file under ``root`` outside the folders ``load_run`` documents it skips:
    ``{printable run path: bytes}``."""
    found: dict[str, bytes] = {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d not in NOT_ENTERED and not os.path.islink(os.path.join(folder, d))]
        for name in files:
            path = os.path.join(folder, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                parts = tuple(Path(os.fsdecode(os.path.relpath(path, root))).parts)
                with open(path, "rb") as stream:
                    found[_shown(tuple(os.fsencode(p) for p in parts))] = stream.read()
    return found


# ------------------------------------------------------------------ what "read" means per file

_LABEL_KEYS = frozenset({"id", "type", "role"})


def _json_strings_a_reader_reads(value) -> bool:
    """Whether a JSON document holds text that ``mleaudit.audit.logs.jsondoc`` documents it reads: a
    non-blank string value under a key other than id/type/role."""
    stack = [("", value)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, str):
            if item.strip() and key.lower() not in _LABEL_KEYS:
                return True
        elif isinstance(item, dict):
            stack.extend((str(k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((key, v) for v in item)
    return False


def _has_code_cell(text: str) -> bool:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return True  # not JSON: it could not have been read as a notebook without a gap
    if not isinstance(data, dict):
        return True
    cells = data.get("cells") if isinstance(data.get("cells"), list) else [
        c for sheet in (data.get("worksheets") or []) if isinstance(sheet, dict) for c in (sheet.get("cells") or [])]
    return any(isinstance(c, dict) and c.get("cell_type") == "code" for c in cells)


#: Log formats whose readers document that they read only some of a document (the messages of
#: an Inspect log, the nodes of an AIDE journal, ...): no event from them is no sign of a file
#: left unread. The plain-text and line readers read every line; ``json`` every string value.
SELECTIVE_FORMATS = frozenset({"aide", "openhands", "inspect", "assistants", "jsonl"})


def _check_clean_run_was_read(run, expanded, files: dict[str, bytes]) -> None:
    artifacts = {a.path: a for a in run.artifacts}
    missing = sorted(set(files) - set(artifacts))
    assert not missing, f"clean verdict, but these files were not loaded and no gap says so: {missing}"
    unit_paths = {u.path for u in expanded.code_units}
    event_paths = {e.span.path.split("!/", 1)[0] for e in expanded.log_events}
    formats = dict(expanded.log_formats)
    for path, artifact in artifacts.items():
        text = artifact.read_text()
        if artifact.kind is ArtifactKind.CODE:
            assert path in unit_paths, f"clean verdict, but code file {path!r} gave no code unit"
        elif artifact.kind is ArtifactKind.NOTEBOOK:
            assert path in unit_paths or not _has_code_cell(text), (
                f"clean verdict, but notebook {path!r} has code cells and gave no code unit")
        elif artifact.kind is ArtifactKind.LOG and path not in event_paths and path not in unit_paths and text.strip():
            log_format = formats.get(path) or parse_log(path, text).log_format
            if log_format in SELECTIVE_FORMATS:
                continue
            if log_format == "json":
                try:
                    value = json.loads(text)
                except (ValueError, RecursionError):
                    raise AssertionError(f"clean verdict, but JSON document {path!r} does not decode whole "
                                         "and gave no event") from None
                assert not _json_strings_a_reader_reads(value), (
                    f"clean verdict, but JSON document {path!r} holds string values and gave no event")
                continue
            raise AssertionError(f"clean verdict, but {log_format} log {path!r} holds text and gave no event")


_TERMINAL_UNSAFE = ("Cc", "Cf", "Zl", "Zp", "Cs")


def _check_report_renders(report) -> None:
    data = report.to_dict()
    json.dumps(data, ensure_ascii=False).encode("utf-8")
    for name, write in FORMATTERS.items():
        stream = io.StringIO()
        write(report, stream)
        out = stream.getvalue()
        assert encodes_utf8(out), f"{name} output does not encode as UTF-8"
        if name == "text":
            bad = sorted({hex(ord(c)) for c in out if unicodedata.category(c) in _TERMINAL_UNSAFE and c not in "\n"})
            assert not bad, f"terminal text output holds control or format characters {bad}"


# ------------------------------------------------------------------ the properties

def _audit(root: Path, ruleset):
    run, error = call(load_run, root, allowed=(AuditError,), what="load_run", limit=RUN_LIMIT)
    assert error is None, f"load_run refused an existing run folder: {error}"
    report, _ = call(audit_run, run, ruleset=ruleset.rules, options=AuditOptions(), what="audit_run", limit=RUN_LIMIT)
    return run, report


@isolated
@budget(60)
@given(entries=run_entries)
def test_a_clean_verdict_means_every_file_was_read(ruleset, entries):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "run"
        root.mkdir()
        _create(os.fsencode(root), entries, os.fsencode(Path(folder) / "outside"))
        record_context(f"a run made of {entries!r}")
        files = _regular_files(os.fsencode(root))
        run, report = _audit(root, ruleset)
        _check_report_renders(report)
        if report.verdict.kind is VerdictKind.CLEAN:
            assert not report.verdict.gaps
            assert report.run.code_units + report.run.log_events > 0, "clean verdict on a run with no code and no log"
            _check_clean_run_was_read(run, expand_run(run), files)


@isolated
@budget(40)
@given(entries=run_entries)
def test_a_run_calling_an_llm_is_never_clean(ruleset, entries):
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "run"
        (root / "code").mkdir(parents=True)
        (root / "code" / "solve.py").write_text(LLM_CALL, encoding="utf-8")
        _create(os.fsencode(root), entries, os.fsencode(Path(folder) / "outside"))
        record_context(f"a run made of {entries!r}")
        _run, report = _audit(root, ruleset)
    assert report.verdict.kind in (VerdictKind.FLAGGED, VerdictKind.INCOMPLETE), (
        f"a run whose code/solve.py calls an LLM got verdict {report.verdict.kind.value}; "
        f"findings {[f.rule_id for f in report.findings]}")
    if report.verdict.kind is VerdictKind.INCOMPLETE:
        assert report.verdict.gaps


@isolated
@budget(6, deep=100)  # each example loads the ruleset anew (about a second)
@given(entries=run_entries)
def test_cli_audit_never_fails_internally(digits, entries):
    registry = digits.registry
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "run"
        root.mkdir()
        _create(os.fsencode(root), entries, os.fsencode(Path(folder) / "outside"))
        record_context(f"a run made of {entries!r}")
        out = Path(folder) / "report.json"
        result, _ = call(CliRunner().invoke, main, ["audit", str(root), "--no-similarity", "--no-grade", "--format", "json",
                                                    "-o", str(out), "--data-dir", str(registry.data_dir)],
                         what="mleaudit audit", limit=RUN_LIMIT)
        assert result.exit_code != 4, f"internal error: {result.output[-2000:]}"
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        if result.exit_code == 2:
            # Usage or input error: only a competition id in the run's metadata that names no
            # competition can cause one here.
            assert "competition" in result.output.lower(), result.output[-2000:]
            return
        assert result.exit_code in (0, 1, 3), result.output[-2000:]
        report = json.loads(out.read_text(encoding="utf-8"))
    kind, gaps = report["verdict"]["kind"], report["verdict"]["gaps"]
    if kind == "clean":
        assert result.exit_code == 0 and not gaps
    if result.exit_code == 0:
        assert kind in ("clean", "review") and not gaps
    if result.exit_code == 3:
        assert kind == "incomplete" or gaps
