"""Size of the reports of an audit of the shared partial-copy cases, and the time to write them.

Builds a run whose folder holds the first ``--cases`` (all 153 by default) scripts of
``partial-copies/`` (copied to a temporary folder: a run is read from its own folder), audits it
against the shared golden corpus (``similarity-golden/``, the 204 notebooks as plain ``.py``), as
``mleaudit audit RUN --corpus similarity-golden/`` does, and writes the report in every format.
Prints, per format, the bytes, the bytes per case and per flagged pair, and the time to render;
the audit's own time apart. The whole audit takes about three minutes on one core.

``--check`` exits 1 when the HTML page is larger than ``--max-html`` bytes (5 MB by default, the
size a reviewer's browser opens at once) scaled to the number of cases (5 MB for all 153).

Usage: ``python benchmarks/report_size.py [--data ../shared/data] [--cases 153] [--check]``
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The HTML size asked of the audit of all 153 partial-copy cases.
MAX_HTML_BYTES = 5_000_000
ALL_CASES = 153


def audit_cases(data: Path, cases: int, workdir: Path):
    """Audit the first ``cases`` partial-copy scripts against the golden corpus; returns the report."""
    from mleaudit.audit.pipeline import AuditOptions, audit_run
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
    from mleaudit.audit.run import load_run

    run = workdir / "partial-copies"
    run.mkdir()
    for path in sorted((data / "partial-copies").glob("case*.py"))[:cases]:
        shutil.copyfile(path, run / path.name)
    return audit_run(load_run(run), ruleset=load_ruleset([find_rules_root(None)]),
                     options=AuditOptions(corpus_dir=data / "similarity-golden"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--cases", type=int, default=ALL_CASES)
    parser.add_argument("--max-html", type=int, default=MAX_HTML_BYTES)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    if not (args.data / "partial-copies").is_dir():
        print(f"no partial-copy cases under {args.data}", file=sys.stderr)
        return 2
    from mleaudit.audit.formatters import FORMATTERS

    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        report = audit_cases(args.data, args.cases, Path(tmp))
        audited = time.perf_counter() - start
    data = report.to_dict()
    flagged = sum(1 for p in (data["similarity"] or {}).get("pairs", []) if p.get("flagged"))
    print(f"{args.cases} cases audited in {audited:.1f} s: {len(report.findings)} findings, {flagged} flagged pairs")
    share = (data["similarity"] or {}).get("copied_share") or {}
    if share.get("share") is not None:
        print(f"copied share: {100 * share['share']:.1f} % ({share['copied_lines']} of {share['agent_lines']} lines)")
    sizes = {}
    for name, write in sorted(FORMATTERS.items()):
        stream = io.StringIO()
        start = time.perf_counter()
        write(report, stream)
        took = time.perf_counter() - start
        sizes[name] = len(stream.getvalue().encode("utf-8"))
        print(f"{name:9} {sizes[name]:>12,} bytes  {sizes[name] / args.cases:>10,.0f} per case  "
              f"{sizes[name] / max(flagged, 1):>9,.0f} per flagged pair  {took:6.1f} s")
    bound = args.max_html * args.cases / ALL_CASES
    print(json.dumps({"cases": args.cases, "flagged_pairs": flagged, "bytes": sizes, "html_bound": round(bound)}))
    if args.check and sizes["html"] > bound:
        print(f"HTML page of {sizes['html']:,} bytes is over {bound:,.0f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
