"""SARIF 2.1.0 output, for code-scanning viewers (GitHub code scanning, VS Code SARIF viewer).

Mapping (OASIS SARIF 2.1.0, sections in brackets):

- one audit report → one ``run`` object [3.14]; a list of reports (a batch) → one log with one run
  per audited run. Each audited run has its own root folder, verdict and invocation, which SARIF
  keeps per run (``originalUriBaseIds``, ``properties``, ``invocations``), and its own
  ``automationDetails.id`` ``mleaudit/<run id>/<time>`` so viewers that group by category keep runs
  apart;
- the report's ``rules`` (each rule with a finding) → ``tool.driver.rules`` reporting descriptors
  [3.49]: ``id``, a PascalCase ``name``, ``shortDescription`` (title), ``fullDescription`` and ``help``
  (the rule's rationale, markdown), ``helpUri`` (first reference), ``defaultConfiguration.level``,
  ``properties`` (category, severity, confidence, ``precision``, tags);
- each finding → a ``result`` [3.27]: ``ruleId``/``ruleIndex``, ``level`` from the severity
  (critical and high: ``error``, medium: ``warning``, low and info: ``note``), ``message``, the
  primary evidence as ``locations[0]`` and the rest as ``relatedLocations`` (a log finding points
  into the log file), ``partialFingerprints`` with the finding's line-independent fingerprint;
- paths are relative URIs against the ``RUNROOT`` base id (the run folder) or ``CORPUSROOT`` (the
  reference notebooks); regions carry 1-based lines and columns, end column exclusive, counted in
  Unicode code points (``columnKind``), the matched text as ``snippet`` and the evidence excerpt as
  ``contextRegion``;
- reviewer decisions (``finding.review``, from a baseline file, see :mod:`mleaudit.audit.review`) →
  ``suppressions`` [3.35]: a ``dismissed`` finding gets an external suppression whose
  justification is the reviewer's note, with no ``status`` (which defaults to ``accepted``; the
  OASIS Standard names that property ``status``, the 2.1.0 committee-specification schema
  ``state``, so leaving it out is valid under both). When the report carries decisions at all,
  every other result gets ``suppressions: []`` (reviewed or not, not suppressed). The decision
  itself is kept in the result's ``properties.review``;
- files the audit could not read → ``invocations[0].toolExecutionNotifications`` (level
  ``warning``); the gaps of an incomplete audit (``verdict.gaps``) → notifications of level
  ``error`` (``descriptor.id`` ``gap-<kind>``, ``associatedRule`` for rule errors) and the run's
  ``properties.verdict_gaps``.

Sample::

    {"$schema": "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
     "version": "2.1.0",
     "runs": [{"tool": {"driver": {"name": "mleaudit", "rules": [{"id": "llm-external-api-call", ...}]}},
               "results": [{"ruleId": "llm-external-api-call", "level": "error",
                            "locations": [{"physicalLocation": {"artifactLocation": {"uri": "code/refine.py",
                                           "uriBaseId": "RUNROOT"}, "region": {"startLine": 26, ...}}}],
                            "partialFingerprints": {"mleauditFinding/v1": "3f6d…"}}]}]}
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Iterable, Mapping, TextIO
from urllib.parse import quote

from mleaudit.audit.formatters.common import as_report_dicts, carries_reviews
from mleaudit.audit.formatters.json import to_json
from mleaudit.audit.report import AuditReport

__all__ = ["SARIF_VERSION", "SARIF_SCHEMA_URI", "RUN_BASE_ID", "CORPUS_BASE_ID", "build_sarif", "write_sarif"]

SARIF_VERSION = "2.1.0"
#: The OASIS 2.1.0 schema (errata 01), as ``$schema`` of the log.
SARIF_SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
#: ``uriBaseId`` of paths inside the audited run folder.
RUN_BASE_ID = "RUNROOT"
#: ``uriBaseId`` of paths inside the reference-notebook folder.
CORPUS_BASE_ID = "CORPUSROOT"
#: Key of ``partialFingerprints``: versioned, as SARIF asks [3.27.17], in case the hash changes.
FINGERPRINT_KEY = "mleauditFinding/v1"

_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}


def _rule_name(rule_id: str) -> str:
    """``plag-kernel-containment`` → ``PlagKernelContainment`` (SARIF's friendly-name style)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", rule_id) if part)


def _first_paragraph(markdown: str) -> str:
    paragraph = markdown.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def _descriptor(rule_id: str, info: Mapping[str, Any], fallback: Mapping[str, Any]) -> dict[str, Any]:
    title = str(info.get("title") or fallback.get("title") or rule_id)
    severity = str(info.get("severity") or fallback.get("severity") or "medium")
    confidence = str(info.get("confidence") or fallback.get("confidence") or "medium")
    category = str(info.get("category") or fallback.get("category") or "")
    rationale = str(info.get("rationale") or "").strip()
    references = [str(r) for r in info.get("references", []) if r]
    help_md = rationale or title
    if references:
        help_md += "\n\nReferences:\n" + "\n".join(f"- <{r}>" for r in references)
    descriptor: dict[str, Any] = {
        "id": rule_id,
        "name": _rule_name(rule_id),
        "shortDescription": {"text": title},
        "fullDescription": {"text": _first_paragraph(rationale) or title, "markdown": rationale or title},
        "help": {"text": help_md, "markdown": help_md},
        "defaultConfiguration": {"level": _LEVEL.get(severity, "warning")},
        "properties": {
            "category": category,
            "severity": severity,
            "confidence": confidence,
            "precision": confidence if confidence in ("low", "medium", "high") else "medium",
            "tags": sorted({t for t in ("mleaudit", category, *info.get("targets", [])) if t}),
        },
    }
    if references and references[0].startswith(("https://", "http://")):
        descriptor["helpUri"] = references[0]
    if info.get("since"):
        descriptor["properties"]["since"] = str(info["since"])
    return descriptor


def _root_uri(root: str) -> str | None:
    """An absolute ``file:`` URI ending in ``/`` for a recorded folder, or ``None`` if not absolute."""
    if not root:
        return None
    posix = PurePosixPath(root)
    if posix.is_absolute():
        uri = posix.as_uri()
    else:
        windows = PureWindowsPath(root)
        if not windows.is_absolute():
            return None  # a relative root means nothing once the report has left its machine
        uri = windows.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _relative_uri(path: str) -> str:
    return quote(path.replace("\\", "/").lstrip("/"), safe="/")


def _region(span: Mapping[str, Any], excerpt: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The SARIF region of an evidence span, and a context region holding the excerpt."""
    start_line, end_line = int(span["start_line"]), int(span["end_line"])
    start_col, end_col = int(span["start_col"]), int(span["end_col"])
    region: dict[str, Any] = {"startLine": start_line}
    whole_lines = span.get("start_byte") == span.get("end_byte") == 0 and start_col == end_col == 1
    if whole_lines or (end_line, end_col) < (start_line, start_col):
        region["endLine"] = max(start_line, end_line)
    else:
        region.update(startColumn=start_col, endLine=end_line, endColumn=end_col)
        snippet = _region_text(excerpt, start_line, end_line, start_col, end_col)
        if snippet:
            region["snippet"] = {"text": snippet}
    context = None
    if excerpt:
        # Excerpts are whole lines starting at the span's first line (model.make_excerpt).
        lines = excerpt.count("\n") + 1
        context = {"startLine": start_line, "endLine": start_line + lines - 1, "snippet": {"text": excerpt}}
        if whole_lines:
            region["snippet"] = {"text": excerpt}
    return region, context


def _region_text(excerpt: str, start_line: int, end_line: int, start_col: int, end_col: int) -> str | None:
    lines = excerpt.split("\n")
    count = end_line - start_line + 1
    if not excerpt or len(lines) != count or excerpt.endswith("…"):
        return None  # context lines or clipping: columns cannot be mapped into the excerpt safely
    start = start_col - 1
    end = sum(len(line) + 1 for line in lines[:-1]) + end_col - 1
    if not 0 <= start <= len(lines[0]) or not start <= end <= len(excerpt):
        return None
    return excerpt[start:end] or None


def _location(evidence: Mapping[str, Any], artifacts: dict[str, int], *, id_: int | None = None) -> dict[str, Any] | None:
    span = evidence.get("span") or {}
    path = str(evidence.get("path") or span.get("path") or "")
    if path in ("", "."):
        return None  # a run-level finding without a file: the result carries no location
    if path not in artifacts:
        artifacts[path] = len(artifacts)
    physical: dict[str, Any] = {
        "artifactLocation": {"uri": _relative_uri(path), "uriBaseId": RUN_BASE_ID, "index": artifacts[path]},
    }
    if span and int(span.get("start_line", 0)) >= 1:
        region, context = _region(span, str(evidence.get("excerpt") or ""))
        physical["region"] = region
        if context is not None:
            physical["contextRegion"] = context
    location: dict[str, Any] = {"physicalLocation": physical}
    if id_ is not None:
        location["id"] = id_
    if evidence.get("label"):
        location["message"] = {"text": str(evidence["label"])}
    return location


def _result(finding: Mapping[str, Any], rule_index: int, artifacts: dict[str, int], reviewed: bool) -> dict[str, Any]:
    evidence = list(finding.get("evidence", []))
    locations = []
    related = []
    for i, ev in enumerate(evidence):
        loc = _location(ev, artifacts, id_=i if i else None)
        if loc is None:
            continue
        (related if i else locations).append(loc)
    result: dict[str, Any] = {
        "ruleId": finding["rule_id"],
        "ruleIndex": rule_index,
        "kind": "fail",
        "level": _LEVEL.get(finding.get("severity", ""), "warning"),
        "message": {"text": str(finding.get("message") or finding.get("title") or finding["rule_id"])},
        "locations": locations,
        "properties": {
            "severity": finding.get("severity"),
            "confidence": finding.get("confidence"),
            "category": finding.get("category"),
            "actor": finding.get("actor", "unknown"),
        },
    }
    if related:
        result["relatedLocations"] = related
    if finding.get("fingerprint"):
        result["partialFingerprints"] = {FINGERPRINT_KEY: finding["fingerprint"]}
    review = finding.get("review")
    if reviewed:
        result["suppressions"] = []
    if isinstance(review, Mapping):
        result["properties"]["review"] = dict(review)
        if review.get("decision") == "dismissed":
            suppression: dict[str, Any] = {"kind": "external"}
            if review.get("note"):
                suppression["justification"] = str(review["note"])
            extra = {k: str(review[k]) for k in ("decided_by", "decided_at", "scope") if review.get(k)}
            if extra:
                suppression["properties"] = extra
            result["suppressions"] = [suppression]
    return result


def _utc(timestamp: str) -> str:
    return timestamp[:-6] + "Z" if timestamp.endswith("+00:00") else timestamp


def _gap_text(gap: Mapping[str, Any]) -> str:
    where = " ".join(str(x) for x in (gap.get("rule_id"), gap.get("path")) if x)
    return f"{gap.get('kind')}: {where + ': ' if where else ''}{gap.get('reason', '')}"


def _sarif_run(report: Mapping[str, Any]) -> dict[str, Any]:
    meta = report.get("meta", {})
    run = report["run"]
    findings = list(report.get("findings", []))
    infos = report.get("rules", {}) or {}
    first_by_rule: dict[str, Mapping[str, Any]] = {}
    for finding in findings:
        first_by_rule.setdefault(finding["rule_id"], finding)
    rule_ids = sorted(set(infos) | set(first_by_rule))
    rules = [_descriptor(rid, infos.get(rid, {}), first_by_rule.get(rid, {})) for rid in rule_ids]
    index = {rid: i for i, rid in enumerate(rule_ids)}
    artifacts: dict[str, int] = {}
    reviewed = carries_reviews(report)
    results = [_result(f, index[f["rule_id"]], artifacts, reviewed) for f in findings]

    bases: dict[str, Any] = {RUN_BASE_ID: {"description": {"text": "The audited run folder."}}}
    run_uri = _root_uri(str(run.get("root", "")))
    if run_uri:
        bases[RUN_BASE_ID]["uri"] = run_uri
    similarity = report.get("similarity")
    if similarity:
        bases[CORPUS_BASE_ID] = {"description": {"text": "The reference-notebook folder the run's code was compared with."}}
        corpus_uri = _root_uri(str(similarity.get("corpus", "")))
        if corpus_uri:
            bases[CORPUS_BASE_ID]["uri"] = corpus_uri

    invocation: dict[str, Any] = {"executionSuccessful": True}
    if meta.get("created_at"):
        invocation["endTimeUtc"] = _utc(str(meta["created_at"]))
    notifications = [
        {"level": "warning", "message": {"text": f"not audited: {item['path']}: {item['reason']}"},
         "descriptor": {"id": "skipped-file"}}
        for item in report.get("skipped", [])
    ]
    gaps = report["verdict"].get("gaps", [])
    # An incomplete audit is an error of the analysis itself (SARIF: a notification of level error).
    notifications += [
        {"level": "error", "message": {"text": f"not checked: {_gap_text(gap)}"}, "descriptor": {"id": f"gap-{gap['kind']}"},
         **({"associatedRule": {"id": gap["rule_id"]}} if gap.get("rule_id") else {})}
        for gap in gaps
    ]
    if notifications:
        invocation["toolExecutionNotifications"] = notifications

    version = str(meta.get("version") or "")
    driver: dict[str, Any] = {"name": str(meta.get("tool") or "mleaudit"), "rules": rules}
    if version:
        driver["version"] = version
        if re.fullmatch(r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?", version):
            driver["semanticVersion"] = version
    out: dict[str, Any] = {
        "tool": {"driver": driver},
        "automationDetails": {"id": f"mleaudit/{run['run_id']}/{meta.get('created_at', '')}"},
        "originalUriBaseIds": bases,
        "artifacts": [
            {"location": {"uri": _relative_uri(path), "uriBaseId": RUN_BASE_ID}}
            for path, _ in sorted(artifacts.items(), key=lambda kv: kv[1])
        ],
        "invocations": [invocation],
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {
            "run_id": run["run_id"],
            "competition_id": run.get("competition_id"),
            "agent_id": run.get("agent_id"),
            "verdict": report["verdict"]["kind"],
            "verdict_reasons": list(report["verdict"].get("reasons", [])),
            "verdict_gaps": list(gaps),
            "grade": report.get("grade"),
            "schema_version": report.get("schema_version"),
            "ruleset_digest": meta.get("ruleset_digest"),
        },
    }
    return out


def build_sarif(reports: AuditReport | Mapping[str, Any] | Iterable[AuditReport | Mapping[str, Any]]) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one or many audit reports.

    Parameters
    ----------
    reports : AuditReport, mapping, or iterable of them
        Reports or their JSON form; one report gives a log with one run.

    Returns
    -------
    dict
        ``{"$schema", "version": "2.1.0", "runs": [...]}`` with one run object per report, in the
        given order (valid against the OASIS 2.1.0 schema).
    """
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": SARIF_VERSION,
        "runs": [_sarif_run(r) for r in as_report_dicts(reports)],
    }


def write_sarif(report: AuditReport, stream: TextIO) -> None:
    """Write ``report`` as a SARIF 2.1.0 log (JSON, sorted keys) to ``stream``."""
    stream.write(to_json(build_sarif(report)))
