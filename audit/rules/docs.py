"""Describe rules for people: one-line summaries, a full text view, and a markdown catalogue.

The catalogue (``mleaudit rules docs``) is generated from the YAML rules and their self-test files,
the way bandit builds its plugin pages from docstrings, so it cannot drift from what runs: each
rule's id, title, category, severity and confidence, targets, message, rationale, references and
the must-fire / must-not-fire examples of its ``<id>.test.yaml``. Output is deterministic (rules
sorted by category then id, no timestamps), so the file can be committed and diffed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping

from mleaudit.audit.errors import RuleError
from mleaudit.audit.rules.loader import CompiledRule, Ruleset
from mleaudit.audit.rules.spec import Target
from mleaudit.audit.rules.testing import load_rule_tests, rule_test_path

__all__ = ["rule_summary", "render_rule_text", "render_rules_markdown", "MAX_DOC_EXAMPLES"]

#: The catalogue shows this many must-fire and must-not-fire examples per rule, plus every case
#: that runs under a competition policy.
MAX_DOC_EXAMPLES = 4
_CASE_KINDS = ("code", "log", "file", "run")


def rule_summary(rule: CompiledRule) -> dict[str, Any]:
    """The reviewer-facing fields of a rule as plain data (``rules list --format json``).

    Returns
    -------
    dict
        ``id``, ``title``, ``category``, ``severity``, ``confidence``, ``targets``, ``languages``,
        ``events``, ``status``, ``message``, ``rationale``, ``references``, ``since``, ``source``.
    """
    spec = rule.spec
    return {
        "id": spec.id,
        "title": spec.title,
        "category": spec.category,
        "severity": spec.severity.label,
        "confidence": spec.confidence.label,
        "targets": [t.value for t in spec.targets],
        "languages": list(spec.languages),
        "events": [e.value for e in spec.events] if Target.LOG in spec.targets else [],
        "status": spec.status.value,
        "message": spec.message,
        "rationale": spec.metadata.rationale,
        "references": list(spec.metadata.references),
        "since": spec.metadata.since,
        "source": spec.source_path.as_posix() if spec.source_path else None,
    }


def _match_yaml(rule: CompiledRule) -> str:
    """The ``match``/``when``/``focus`` blocks exactly as written in the rule file, or ``""``.

    The file's own text (comments and block scalars included) reads better than a re-dump.
    """
    path = rule.spec.source_path
    if path is None or not path.is_file():
        return ""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    kept: list[str] = []
    keeping = False
    for line in lines:
        if line and not line[0].isspace() and not line.startswith("#"):
            keeping = line.split(":", 1)[0].strip() in ("match", "when", "focus")
        if keeping:
            kept.append(line)
    return "\n".join(kept).rstrip() + "\n" if kept else ""


def render_rule_text(rule: CompiledRule) -> str:
    """A full plain-text description of one rule (``mleaudit rules show ID``)."""
    info = rule_summary(rule)
    lines = [
        f"{info['id']}: {info['title']}",
        f"  category    {info['category']}",
        f"  severity    {info['severity']}",
        f"  confidence  {info['confidence']}",
        f"  targets     {', '.join(info['targets'])}",
    ]
    if info["languages"]:
        lines.append(f"  languages   {', '.join(info['languages'])}")
    if info["events"]:
        lines.append(f"  events      {', '.join(info['events'])}")
    lines.append(f"  status      {info['status']}")
    if info["source"]:
        lines.append(f"  file        {info['source']}")
    lines += ["", "Message:", f"  {info['message']}", "", "Rationale:"]
    lines += [f"  {line}" if line else "" for line in info["rationale"].rstrip().splitlines()]
    if info["references"]:
        lines += ["", "References:"] + [f"  - {ref}" for ref in info["references"]]
    matcher = _match_yaml(rule)
    if matcher:
        lines += ["", "Matcher:"] + [f"  {line}" for line in matcher.rstrip().splitlines()]
    return "\n".join(lines) + "\n"


def _fence(text: str, language: str = "") -> list[str]:
    """A fenced code block (longer fence when the text holds backticks), one list item per line."""
    body = text.rstrip("\n").splitlines() or [""]
    fence = "```"
    while any(fence in line for line in body):
        fence += "`"
    return [f"{fence}{language}", *body, fence]


def _inline(text: str) -> str:
    """``text`` as inline code that may itself contain backticks (CommonMark double-backtick span)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _case_markdown(rule: CompiledRule, case: Any) -> list[str]:
    spec = rule.spec
    if spec.target is Target.SIMILARITY and isinstance(case, Mapping):
        return ["- pair report: " + ", ".join(f"`{k}` = {v}" for k, v in case.items())]
    if isinstance(case, str):
        kind, body, language = spec.target.value, case, None
        policy = None
    elif isinstance(case, Mapping):
        kind = next((k for k in _CASE_KINDS if k in case), "code")
        body, language, policy = case.get(kind, ""), case.get("language"), case.get("policy")
    else:
        return [f"- `{case!r}`"]
    if kind == "run":
        head = f"- fixture run `{body}`"
        return [head + (f" under the policy `{dict(policy)}`" if policy else "")]
    if kind == "code":
        language = language or (spec.languages[0] if spec.languages else "")
        label = f"{language} code"
    elif kind == "log":
        language, label = "text", "transcript"
    else:
        language, label = "text", f"file `{case.get('path', '')}`" if isinstance(case, Mapping) else "file"
    head = f"- {label}" + (f", under the competition policy `{dict(policy)}`" if policy else "") + ":"
    return [head, "", *("  " + line if line else "" for line in _fence(str(body), language)), ""]


def _examples(rule: CompiledRule) -> list[str]:
    try:
        cases = load_rule_tests(rule)
    except RuleError as exc:
        return [f"*No examples: {exc}*", ""]
    lines: list[str] = []
    for kind, heading in (("invalid", "Flagged"), ("valid", "Not flagged")):
        # The first few cases, and every case that shows a competition policy at work.
        shown = cases[kind][:MAX_DOC_EXAMPLES] + [
            c for c in cases[kind][MAX_DOC_EXAMPLES:] if isinstance(c, Mapping) and "policy" in c
        ]
        if not shown:
            continue
        lines += [f"**{heading}** ({len(cases[kind])} case{'s' if len(cases[kind]) != 1 else ''} in "
                  f"`{rule_test_path(rule).name}`):", ""]
        for case in shown:
            lines += _case_markdown(rule, case)
    return lines


def render_rules_markdown(ruleset: Ruleset | Iterable[CompiledRule], *, digest: str | None = None) -> str:
    """The rule catalogue as markdown.

    Parameters
    ----------
    ruleset : Ruleset or iterable of CompiledRule
    digest : str, optional
        Ruleset digest to print under the title (default: ``ruleset.digest`` when it has one).

    Returns
    -------
    str
        One section per category (alphabetical), one subsection per rule (by id), with a table
        of contents; ends with a newline.
    """
    rules = list(ruleset)
    digest = digest or getattr(ruleset, "digest", None)
    by_category: dict[str, list[CompiledRule]] = defaultdict(list)
    for rule in rules:
        by_category[rule.spec.category].append(rule)
    lines = [
        "# mleaudit rule reference",
        "",
        "Generated by `mleaudit rules docs` from the YAML rules and their self-test files; edit those, "
        "not this page. The rule format is described in `rules/README.md`.",
        "",
    ]
    lines.append(f"{len(rules)} rules in {len(by_category)} categories."
                 + (f" Ruleset digest `{digest}`." if digest else ""))
    lines += ["", "| rule | category | severity | confidence | title |", "|---|---|---|---|---|"]
    for category in sorted(by_category):
        for rule in sorted(by_category[category], key=lambda r: r.id):
            spec = rule.spec
            lines.append(f"| [`{spec.id}`](#{spec.id}) | {category} | {spec.severity.label} | "
                         f"{spec.confidence.label} | {spec.title} |")
    for category in sorted(by_category):
        while lines and lines[-1] == "":
            lines.pop()
        lines += ["", f"## {category}", ""]
        for rule in sorted(by_category[category], key=lambda r: r.id):
            info = rule_summary(rule)
            lines += [f"### {info['id']}", "", f"**{info['title']}**", ""]
            lines.append(f"- severity **{info['severity']}**, confidence **{info['confidence']}**"
                         + (" (experimental: only with `--include-experimental`)" if info["status"] != "stable" else ""))
            lines.append(f"- target: {', '.join(info['targets'])}"
                         + (f"; languages: {', '.join(info['languages'])}" if info["languages"] else "")
                         + (f"; log events: {', '.join(info['events'])}" if info["events"] else ""))
            lines.append(f"- message: {_inline(info['message'])}")
            lines += ["", info["rationale"].rstrip(), ""]
            if info["references"]:
                lines += ["References: " + ", ".join(f"<{ref}>" for ref in info["references"]), ""]
            lines += _examples(rule)
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"
