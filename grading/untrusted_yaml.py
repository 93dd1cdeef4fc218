"""YAML loading for files that may have been written to break the reader (rules, configs, specs).

``yaml.safe_load`` builds plain data only, but PyYAML's composer recurses once per nesting level
(a few thousand ``[`` raise ``RecursionError``), aliases let a few lines stand for billions of
values (the "billion laughs" attack), a key written twice is resolved silently to the last one,
and its constructors fail in many ways on hostile scalars (an integer of 5,000 digits,
``!!timestamp nope``). :func:`safe_load` walks the event stream first (PyYAML's parser keeps an
explicit stack, so any depth is safe to walk), refuses what is too deep, too large or ambiguous,
and raises only :class:`UntrustedYAMLError`, a :class:`yaml.YAMLError`, which callers already
handle as "not valid YAML". It lives in ``grading``, the lowest layer, so that rules, competition
configs and sandbox specs share it.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_YAML_DEPTH", "MAX_YAML_NODES", "UntrustedYAMLError", "check_yaml_shape", "safe_load"]

#: Deepest nesting of mappings and sequences accepted by default (rules nest fewer than 20).
MAX_YAML_DEPTH = 64
#: Most values (scalars and collections) accepted by default once every alias is expanded.
MAX_YAML_NODES = 200_000


class UntrustedYAMLError(yaml.YAMLError):
    """A YAML text that is not valid, or too deep, too large or ambiguous to load."""


def _shown(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_yaml_shape(text: str, *, max_depth: int = MAX_YAML_DEPTH, max_nodes: int = MAX_YAML_NODES) -> str | None:
    """Why ``text`` is too deep, too large or ambiguous to load, else ``None``.

    Parameters
    ----------
    text : str
        The YAML text.
    max_depth : int
        Deepest nesting of collections accepted.
    max_nodes : int
        Most values accepted once every alias is expanded.

    Returns
    -------
    str or None
        The reason, for a message ("YAML with <reason>").

    Raises
    ------
    yaml.YAMLError
        The text is not YAML (from PyYAML's parser).

    Examples
    --------
    >>> check_yaml_shape("a: [1, [2, [3]]]", max_depth=2)
    'collections nested deeper than 2 levels'
    >>> check_yaml_shape("a: 1\\na: 2")
    "the key 'a' written twice in one mapping"
    """
    sizes: dict[str, int] = {}
    stack: list[list] = []  # per open collection: [anchor, expanded nodes, keys seen (mappings), children]
    total = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if stack:
                stack[-1][3] += 1
            stack.append([event.anchor, 1, set() if isinstance(event, yaml.MappingStartEvent) else None, 0])
            if len(stack) > max_depth:
                return f"collections nested deeper than {max_depth} levels"
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, size, _, _ = stack.pop()
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            if stack:
                parent = stack[-1]
                if parent[2] is not None and parent[3] % 2 == 0 and isinstance(event, yaml.ScalarEvent):
                    if event.value in parent[2]:
                        return f"the key {_shown(event.value)} written twice in one mapping"
                    parent[2].add(event.value)
                parent[3] += 1
            if isinstance(event, yaml.ScalarEvent):
                anchor, size = event.anchor, 1
            else:
                anchor, size = None, sizes.get(event.anchor, 1)
        else:
            continue
        size = min(size, max_nodes + 1)
        if anchor is not None:
            sizes[anchor] = size
        if stack:
            stack[-1][1] += size
            if stack[-1][1] > max_nodes:
                return f"more than {max_nodes:,} values once its aliases are expanded"
        else:
            total += size
        if total > max_nodes:
            return f"more than {max_nodes:,} values once its aliases are expanded"
    return None


def safe_load(text: str, *, max_depth: int = MAX_YAML_DEPTH, max_nodes: int = MAX_YAML_NODES) -> Any:
    """``yaml.safe_load`` of untrusted text, within bounds.

    Parameters
    ----------
    text : str
        The YAML text.
    max_depth, max_nodes : int
        See :func:`check_yaml_shape`.

    Returns
    -------
    Any
        Plain data (``None`` for an empty document).

    Raises
    ------
    UntrustedYAMLError
        Not valid YAML, outside the bounds, a key written twice, or a scalar PyYAML's
        constructors refuse; the message says which.
    """
    try:
        problem = check_yaml_shape(text, max_depth=max_depth, max_nodes=max_nodes)
        if problem is not None:
            raise UntrustedYAMLError(f"YAML with {problem}")
        return yaml.safe_load(text)
    except UntrustedYAMLError:
        raise
    except yaml.YAMLError as exc:
        raise UntrustedYAMLError(str(exc)[:500]) from None
    except Exception as exc:  # noqa: BLE001 - PyYAML's constructors fail in many ways on hostile scalars
        raise UntrustedYAMLError(f"a value YAML cannot build: {type(exc).__name__}: {str(exc)[:200]}") from None
