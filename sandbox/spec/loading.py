"""Reading a spec file: untrusted YAML, bounded in size, depth and nodes before it is parsed."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from mleaudit.sandbox.errors import SpecError
from mleaudit.sandbox.spec.model import SandboxSpec

#: Largest spec file read, in bytes: a spec is a few lines.
MAX_SPEC_BYTES = 1 << 20
#: Deepest nesting of YAML collections in a spec (a real spec nests three levels).
MAX_SPEC_DEPTH = 32
#: Most YAML nodes a spec may hold once aliases are expanded: bounds the work of reading,
#: checking and quoting it (an alias of an alias of ... is the "billion laughs" attack).
MAX_SPEC_NODES = 10_000


def load_sandbox_spec(path: str | os.PathLike[str]) -> SandboxSpec:
    """Read a spec from a YAML file (``yaml.safe_load``); relative paths are resolved against its folder.

    The file is untrusted input: at most :data:`MAX_SPEC_BYTES` bytes of UTF-8 text, YAML
    nested at most :data:`MAX_SPEC_DEPTH` deep and holding at most :data:`MAX_SPEC_NODES`
    values once aliases are expanded. An empty file is a spec without a command.

    Raises
    ------
    SpecError
        If the file cannot be read, is not UTF-8 text or YAML within those bounds, or the spec
        is invalid; the message names the file and, for a bad value, the key.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the sandbox spec: {exc.strerror or exc}") from None
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: not a sandbox spec: larger than {MAX_SPEC_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    from mleaudit.grading.untrusted_yaml import check_yaml_shape

    try:
        # Depth, alias expansion and repeated keys first (PyYAML's own recursion and "billion laughs").
        problem = check_yaml_shape(text, max_depth=MAX_SPEC_DEPTH, max_nodes=MAX_SPEC_NODES)
        data = yaml.safe_load(text) if problem is None else None
    except yaml.YAMLError as exc:
        raise SpecError(f"{path}: not valid YAML: {str(exc)[:500]}") from None
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors fail in many ways on hostile
        # scalars (an integer of 5,000 digits, `!!timestamp nope`); all are a spec that cannot be read.
        raise SpecError(f"{path}: not a usable sandbox spec: {type(exc).__name__}: {str(exc)[:200]}") from None
    if problem is not None:
        raise SpecError(f"{path}: not a usable sandbox spec: YAML with {problem}")
    return SandboxSpec.from_dict(data if data is not None else {}, source=str(path), base_dir=path.parent.absolute())
