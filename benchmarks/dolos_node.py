"""Run Dolos 3.5.1 itself (``@dodona/dolos-lib`` on Node.js) on a set of texts, for parity checks.

An install of Dolos is a folder where ``npm install @dodona/dolos-lib@3.5.1`` and
``npm rebuild --nodedir=/usr`` ran (``python benchmarks/dolos_speed.py --dolos-dir DIR`` makes one).
:func:`find_dolos` looks for one; :func:`run_dolos` hands texts to it through a small Node.js runner
written to a temporary folder, and returns, for every text, Dolos's token stream and fingerprint
count, and every pair's figures (default options, language python).

The texts travel as JSON, so they reach Dolos exactly as given (``"\\r\\n"``, a byte-order mark and
a missing final newline included), as Dolos's own reader hands a UTF-8 file's decoded text to it.

Used by ``benchmarks/similarity_parity.py --dolos-dir`` and by the parity tests, which skip with the
reason :func:`find_dolos` gives when no install is found.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

__all__ = ["DOLOS_DIR_VARIABLE", "DolosRun", "DolosUnavailable", "find_dolos", "run_dolos"]

#: Environment variable naming a folder with an install of Dolos.
DOLOS_DIR_VARIABLE = "MLEAUDIT_DOLOS_DIR"
#: The package whose figures the similarity engine reproduces.
DOLOS_PACKAGE = "@dodona/dolos-lib@3.5.1"
_ENTRY = Path("node_modules") / "@dodona" / "dolos-lib" / "dist" / "index.js"

# Reads {"files": [[name, text], ...]} from the file named by argv[3], runs one Dolos analysis
# over all of them and writes JSON: per file its tokens and fingerprint count, then all pairs.
_RUNNER = """\
import fs from "fs/promises";
import { pathToFileURL } from "url";

const { Dolos, File } = await import(pathToFileURL(process.argv[2]).href);
const manifest = JSON.parse(await fs.readFile(process.argv[3], "utf8"));
const files = manifest.files.map(([name, text]) => new File(name, text));
const dolos = new Dolos({ language: "python" });
const report = await dolos.analyze(files);
const out = { files: {}, pairs: [] };
for (const entry of dolos.index.entries()) {
  out.files[entry.file.path] = { tokens: entry.file.tokens, fingerprints: entry.kgrams.length };
}
for (const pair of report.allPairs()) {
  out.pairs.push({ left: pair.leftFile.path, right: pair.rightFile.path, similarity: pair.similarity,
    totalOverlap: pair.overlap, longestFragment: pair.longest, leftCovered: pair.leftCovered,
    rightCovered: pair.rightCovered, leftTotal: pair.leftTotal, rightTotal: pair.rightTotal });
}
await fs.writeFile(process.argv[4], JSON.stringify(out));
"""


class DolosUnavailable(Exception):
    """No usable install of Dolos (or no Node.js): the message says what is missing."""


@dataclass(frozen=True)
class DolosRun:
    """Dolos's view of a set of texts.

    Attributes
    ----------
    tokens : dict of str to list of str
        Each text's token stream (``"("``, node type, ``")"``, in pre-order).
    fingerprints : dict of str to int
        Each text's number of winnowed fingerprints (Dolos's ``leftTotal``/``rightTotal``).
    pairs : dict of (str, str) to dict
        Every pair's figures, keyed by (left, right) as Dolos orients them: ``similarity``,
        ``totalOverlap``, ``longestFragment``, ``leftCovered``, ``rightCovered``, ``leftTotal``,
        ``rightTotal``.
    """

    tokens: dict[str, list[str]]
    fingerprints: dict[str, int]
    pairs: dict[tuple[str, str], dict[str, float]]


def find_dolos(directory: str | os.PathLike[str] | None = None) -> Path:
    """The folder of a usable Dolos install.

    Parameters
    ----------
    directory : path, optional
        Where Dolos was installed; by default the folder named by the ``MLEAUDIT_DOLOS_DIR``
        environment variable.

    Returns
    -------
    Path

    Raises
    ------
    DolosUnavailable
        If Node.js is not on ``PATH``, no folder is given, or the folder holds no ``@dodona/dolos-lib``.
    """
    if shutil.which("node") is None:
        raise DolosUnavailable("Node.js (node) is not on PATH")
    given = directory if directory is not None else os.environ.get(DOLOS_DIR_VARIABLE)
    if not given:
        raise DolosUnavailable(
            f"no Dolos install: set {DOLOS_DIR_VARIABLE} to a folder where `npm install {DOLOS_PACKAGE}` and "
            "`npm rebuild --nodedir=/usr` ran (`python benchmarks/dolos_speed.py --dolos-dir DIR` makes one)")
    folder = Path(given).expanduser().resolve()
    if not (folder / _ENTRY).is_file():
        raise DolosUnavailable(f"{folder}: no {_ENTRY} (install {DOLOS_PACKAGE} there with npm)")
    return folder


def run_dolos(texts: Mapping[str, str], directory: str | os.PathLike[str] | None = None, *,
              timeout: float = 600) -> DolosRun:
    """Analyse ``texts`` with Dolos (default options, language python), all in one analysis.

    Parameters
    ----------
    texts : mapping of str to str
        Name to text; at least two.
    directory : path, optional
        The Dolos install (:func:`find_dolos`).
    timeout : float
        Seconds Node.js may take.

    Returns
    -------
    DolosRun

    Raises
    ------
    ValueError
        If fewer than two texts are given.
    DolosUnavailable
        If no install is found, or Dolos fails on the texts (the message ends with Node's error output).
    """
    if len(texts) < 2:
        raise ValueError(f"Dolos compares at least two texts, got {len(texts)}")
    folder = find_dolos(directory)
    with tempfile.TemporaryDirectory(prefix="dolos-parity-") as work:
        runner, manifest, output = Path(work, "runner.mjs"), Path(work, "in.json"), Path(work, "out.json")
        runner.write_text(_RUNNER, encoding="utf-8")
        manifest.write_text(json.dumps({"files": [[name, text] for name, text in texts.items()]}), encoding="utf-8")
        try:
            result = subprocess.run(["node", str(runner), str(folder / _ENTRY), str(manifest), str(output)],
                                    capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise DolosUnavailable(f"Dolos did not run: {error}") from error
        if result.returncode != 0 or not output.is_file():
            raise DolosUnavailable(f"Dolos failed (exit {result.returncode}):\n{result.stderr[-2000:]}")
        data = json.loads(output.read_text(encoding="utf-8"))
    return DolosRun(
        tokens={name: entry["tokens"] for name, entry in data["files"].items()},
        fingerprints={name: entry["fingerprints"] for name, entry in data["files"].items()},
        pairs={(p["left"], p["right"]): {k: v for k, v in p.items() if k not in ("left", "right")}
               for p in data["pairs"]},
    )
