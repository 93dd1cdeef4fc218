"""Rule self-tests: every ``<id>.yaml`` has an ``<id>.test.yaml`` with cases that must or must not fire.

Format (ast-grep's ``valid``/``invalid`` lists plus semgrep's "todo" idea)::

    id: ext-kaggle-cli-download
    invalid:                 # each case must produce >= 1 finding
      - "$ kaggle competitions download -c spaceship-titanic"
    valid:                   # each case must produce none
      - "$ kaggle --help"
    todo_invalid: []         # known false negatives: reported, never failing
    todo_valid: []           # known false positives: reported, never failing

A case is a string read according to the rule's first target, or a mapping that says what it is:

- ``code``: source text (a string case, or ``{code: ..., language: bash, path: code/x.sh}``);
- ``log``: a small plain-text transcript read by the ``text`` log adapter (``$ cmd`` lines and
  shell-fenced blocks are commands, Python-fenced blocks and ``>>>`` lines are code, the rest is
  output or message), or ``{log: ..., path: logs/agent.log}``;
- ``file``: ``{file: ..., path: ...}``;
- ``run``: the name of a fixture run folder (``{run: name}`` or a plain string) under
  ``tests/fixtures/rule_runs/``, holding ``submission/submission.csv`` and a
  ``rule_context.yaml`` (``answers``, ``sample_submission``, ``id_column``, ``target_columns``);
  a folder with ``logs/`` or ``code/`` is expanded like a run, so checks see its code and events;
- ``similarity``: the pair report's field values, ``{agent_containment: 0.8, longest_fragment: 40}``.

A case mapping may add ``policy:``, the ``audit:`` section of a competition config the case is
audited under (``{label_leak_columns: [...], allow_urls: [...]}``), to test policy-driven rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping

import yaml

from mleaudit import audit
from mleaudit.audit.errors import RuleError
from mleaudit.audit.logs.text import read_events as read_text_log
from mleaudit.audit.model import Finding
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.engine import evaluate_rule
from mleaudit.audit.rules.loader import CompiledRule, Ruleset
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.rules.spec import PAIR_FIELDS, Target
from mleaudit.grading import untrusted_yaml
from mleaudit.audit.units import CodeUnit

__all__ = [
    "CASE_KINDS",
    "RuleTestResult",
    "default_run_fixtures",
    "load_rule_tests",
    "run_case",
    "run_rule_tests",
    "rule_test_path",
]

#: Case lists of a test file; the first two are required and must not be empty.
CASE_KINDS = ("invalid", "valid", "todo_invalid", "todo_valid")
_CASE_KEYS = {"code", "log", "file", "run", "language", "path", "policy"}


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleTestResult:
    """The outcome of one self-test case (or of checking the test file itself).

    Attributes
    ----------
    rule_id : str
    kind : str
        ``invalid``, ``valid``, ``todo_invalid``, ``todo_valid``, or ``file`` for a problem with
        the test file (missing, malformed, too few cases).
    index : int
        0-based position of the case in its list (-1 for ``file``).
    passed : bool
        ``invalid`` fired / ``valid`` stayed silent; always ``True`` for todo cases.
    findings : int
        How many findings the case produced.
    detail : str
        Why it failed, or a note (a todo case that now behaves, so it can be promoted).
    """

    rule_id: str
    kind: str
    index: int
    passed: bool
    findings: int = 0
    detail: str = ""

    @property
    def is_todo(self) -> bool:
        return self.kind.startswith("todo_")


def rule_test_path(rule: CompiledRule) -> Path:
    """``<id>.test.yaml`` next to the rule file.

    Raises
    ------
    RuleError
        If the rule was not loaded from a file.
    """
    if rule.spec.source_path is None:
        raise RuleError(f"{rule.id}: rule has no source file, so it has no test file")
    return rule.spec.source_path.with_name(f"{rule.id}.test.yaml")


def default_run_fixtures() -> Path:
    """``tests/fixtures/rule_runs`` of the checkout (fixture run folders for ``run`` rules)."""
    return Path(audit.__file__).resolve().parents[1] / "tests" / "fixtures" / "rule_runs"


def load_rule_tests(rule: CompiledRule) -> dict[str, list[Any]]:
    """Read and check a rule's test file.

    Returns
    -------
    dict
        ``{kind: [case, ...]}`` for every kind of :data:`CASE_KINDS` (missing lists are empty).

    Raises
    ------
    RuleError
        If the file is missing or malformed, names another rule, or lacks a valid or an
        invalid case; the message names the rule and the file.
    """
    path = rule_test_path(rule)
    if not path.is_file():
        raise RuleError(f"{rule.id} ({rule.spec.source_path}): test file {path.name} is missing")
    try:
        data = untrusted_yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RuleError(f"{rule.id} ({path}): cannot read test file: {exc}") from None
    if not isinstance(data, dict):
        raise RuleError(f"{rule.id} ({path}): test file must be a mapping")
    problems = []
    if data.get("id") != rule.id:
        problems.append(f"id {data.get('id')!r} differs from the rule id")
    unknown = sorted(set(data) - {"id", *CASE_KINDS})
    if unknown:
        problems.append(f"unknown keys {unknown} (allowed: id, {', '.join(CASE_KINDS)})")
    cases: dict[str, list[Any]] = {}
    for kind in CASE_KINDS:
        value = data.get(kind) or []
        if not isinstance(value, list):
            problems.append(f"{kind} must be a list")
            value = []
        cases[kind] = value
    for kind in ("invalid", "valid"):
        if not cases[kind]:
            problems.append(f"needs at least one {kind!r} case")
    if problems:
        raise RuleError(f"{rule.id} ({path}): " + "; ".join(problems))
    return cases


# --- cases ------------------------------------------------------------------------------------

def _default_path(language: str) -> str:
    extensions = LANGUAGES.get(language, ("", (".txt",)))[1]
    return f"code/snippet{extensions[0]}"


def _run_context(fixtures: Path, name: str) -> RunContext:
    root = fixtures / name
    if not root.is_dir():
        raise RuleError(f"run fixture {name!r} not found under {fixtures}")
    context_file = root / "rule_context.yaml"
    spec: Mapping[str, Any] = {}
    if context_file.is_file():
        try:
            spec = untrusted_yaml.safe_load(context_file.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise RuleError(f"run fixture {name!r}: cannot read {context_file.name}: {exc}") from None
        if not isinstance(spec, Mapping):
            raise RuleError(f"run fixture {name!r}: {context_file.name} must be a mapping")
    submission = root / "submission" / "submission.csv"

    def optional(key: str) -> Path | None:
        return root / spec[key] if spec.get(key) else None

    # A fixture with logs or code is expanded as a run, so checks that trace the submission
    # back to the agent's actions see what the pipeline would give them.
    units: tuple = ()
    events: tuple = ()
    if (root / "logs").is_dir() or (root / "code").is_dir():
        from mleaudit.audit.expand import expand_run
        from mleaudit.audit.run import load_run

        from mleaudit.audit.attribution import attribute_units

        run = load_run(root)
        expanded = expand_run(run)
        # Actors as the audit gives them, so that a rule's `actors` is tested as it runs.
        units, events = attribute_units(expanded.code_units, expanded.log_events, run.layout)

    return RunContext(
        root=root,
        submission_path=submission if submission.is_file() else None,
        answers_path=optional("answers"),
        sample_submission_path=optional("sample_submission"),
        id_column=spec.get("id_column"),
        target_columns=tuple(spec.get("target_columns") or ()),
        code_units=units,
        log_events=events,
        competition_id=str(spec["competition_id"]) if spec.get("competition_id") else None,
    )


def _case_policy(rule: CompiledRule, data: Any) -> RulePolicy | None:
    if data is None:
        return None
    if not isinstance(data, Mapping) or not all(
        isinstance(v, list) and all(isinstance(x, str) for x in v) for v in data.values()
    ):
        raise RuleError(f"{rule.id}: a case's policy is a mapping of string lists, got {data!r}")
    from mleaudit.grading.spec import AUDIT_POLICY_KEYS

    unknown = sorted(set(data) - set(AUDIT_POLICY_KEYS))
    if unknown:
        raise RuleError(f"{rule.id}: unknown policy keys {unknown} (known: {', '.join(AUDIT_POLICY_KEYS)})")
    return RulePolicy.from_mapping(data, competition_id="self-test")


def run_case(rule: CompiledRule, case: Any, *, run_fixtures: Path | None = None) -> list[Finding]:
    """Evaluate ``rule`` on one self-test case and return its findings.

    Parameters
    ----------
    rule : CompiledRule
        The rule under test.
    case : str or Mapping
        One entry of a test file's lists (see the module docstring for the forms).
    run_fixtures : Path, optional
        Folder of fixture runs for ``run`` cases (default :func:`default_run_fixtures`).

    Returns
    -------
    list of Finding
        What the rule found in the case (empty when it stayed silent).

    Raises
    ------
    RuleError
        If the case cannot be read for this rule (a mapping with unknown keys, a similarity
        case that is not a mapping, a missing run fixture).
    """
    spec = rule.spec
    if spec.target is Target.SIMILARITY:
        if not isinstance(case, Mapping):
            raise RuleError(f"{rule.id}: a similarity case is a mapping of pair fields, got {case!r}")
        unknown = sorted(set(case) - set(PAIR_FIELDS))
        if unknown:
            raise RuleError(f"{rule.id}: unknown pair fields {unknown} (known: {', '.join(PAIR_FIELDS)})")
        fields: dict[str, Any] = {name: None for name in PAIR_FIELDS}
        fields.update({"agent_path": "code/solution.py", "reference_path": "kernels/reference.py",
                       "reference_id": "author/reference-kernel"})
        fields.update(case)
        pair = SimpleNamespace(fragments=(), **fields)
        return evaluate_rule(rule, pairs=[pair])

    if isinstance(case, str):
        target = spec.target
        body: Mapping[str, Any] = {target.value: case}
    elif isinstance(case, Mapping):
        body = case
        unknown = sorted(set(body) - _CASE_KEYS)
        kinds = [k for k in ("code", "log", "file", "run") if k in body]
        if unknown or len(kinds) != 1:
            raise RuleError(f"{rule.id}: a case mapping needs exactly one of code/log/file/run "
                            f"(plus language, path, policy); got keys {sorted(body)}")
        target = Target(kinds[0])
    else:
        raise RuleError(f"{rule.id}: a case must be a string or a mapping, got {type(case).__name__}")
    policy = _case_policy(rule, body.get("policy"))

    if target not in spec.targets:
        raise RuleError(f"{rule.id}: a {target.value} case for a rule that targets "
                        f"{', '.join(t.value for t in spec.targets)}")
    if target is Target.CODE:
        language = body.get("language") or (spec.languages[0] if spec.languages else "python")
        unit = CodeUnit(path=body.get("path") or _default_path(language), language=language, text=body["code"])
        return evaluate_rule(rule, code_units=[unit], policy=policy)
    if target is Target.LOG:
        events = read_text_log(body.get("path") or "logs/transcript.txt", body["log"])
        return evaluate_rule(rule, log_events=events, policy=policy)
    if target is Target.FILE:
        return evaluate_rule(rule, files=[(body.get("path") or "logs/file.txt", body["file"])], policy=policy)
    context = _run_context(run_fixtures or default_run_fixtures(), str(body["run"]))
    return evaluate_rule(rule, run_context=context)


def run_rule_tests(
    ruleset: Ruleset | list[CompiledRule], *, run_fixtures: Path | None = None
) -> list[RuleTestResult]:
    """Run every rule's self-tests.

    Parameters
    ----------
    ruleset : Ruleset or list of CompiledRule
        Usually all rules; experimental rules are tested too.
    run_fixtures : Path, optional
        Folder of fixture runs for ``run`` rules (default :func:`default_run_fixtures`).

    Returns
    -------
    list of RuleTestResult
        One per case, plus one ``file`` result per rule whose test file is missing or malformed;
        a case that raises becomes a failed result with the error as ``detail``.
    """
    results: list[RuleTestResult] = []
    for rule in ruleset:
        try:
            cases = load_rule_tests(rule)
        except RuleError as exc:
            results.append(RuleTestResult(rule_id=rule.id, kind="file", index=-1, passed=False, detail=str(exc)))
            continue
        for kind in CASE_KINDS:
            should_fire = kind.endswith("invalid")
            for index, case in enumerate(cases[kind]):
                try:
                    findings = run_case(rule, case, run_fixtures=run_fixtures)
                except RuleError as exc:
                    results.append(RuleTestResult(rule_id=rule.id, kind=kind, index=index, passed=False,
                                                  detail=str(exc)))
                    continue
                fired = bool(findings)
                ok = fired == should_fire
                if kind.startswith("todo_"):
                    detail = "now behaves as wished: move it to " + kind[5:] if ok else ""
                    results.append(RuleTestResult(rule_id=rule.id, kind=kind, index=index, passed=True,
                                                  findings=len(findings), detail=detail))
                    continue
                detail = ""
                if not ok:
                    detail = ("expected a finding, got none" if should_fire else
                              "expected no finding, got: " + "; ".join(f.message for f in findings[:3]))
                results.append(RuleTestResult(rule_id=rule.id, kind=kind, index=index, passed=ok,
                                              findings=len(findings), detail=detail))
    return results
