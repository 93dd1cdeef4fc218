""":class:`WriteSite`: one place in a code unit that writes a file, with the written path as text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteSite:
    """One place in a code unit that writes (or copies, downloads, edits) a file.

    Attributes
    ----------
    start, end : int
        0-based, half-open character offsets of the writing call or command in the unit's text.
    kind : str
        ``to_csv`` (any DataFrame/array writer), ``open``, ``write_text``, ``copy``, ``move``,
        ``shell`` (a command string run from Python), ``redirect``, ``tee``, ``download``,
        ``edit`` (in-place), ``extract``, ``script-argument`` (a path passed to a script),
        ``inline`` (``python -c`` code that writes).
    target : str
        The destination as written (a path, an expression, a folder).
    resolved : str
        ``target`` followed by what the unit assigns to the names in it (for Python), so a
        pattern can be tested against both the expression and its values.
    literal : bool
        Whether ``resolved`` contains a string literal, i.e. the path is known at least in
        part; ``False`` for a bare parameter or a value computed elsewhere.
    sources : tuple of str
        For copies and moves: the source paths.
    """

    start: int
    end: int
    kind: str
    target: str
    resolved: str
    literal: bool
    sources: tuple[str, ...] = ()
