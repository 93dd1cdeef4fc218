"""Where code writes files: write sites in Python and shell code, and the scripts commands run.

Run-level checks ask "which code wrote this file?". This module answers the first half for one
code unit at a time: every place that writes a file (a *write site*) with the written path as
text, resolved as far as the unit itself allows.

Python (tree-sitter): ``df.to_csv(p)``, polars ``write_csv``, ``np.savetxt(p)``,
``open(p, "w"/"a"/"x")``, ``Path(p).write_text``/``write_bytes``, ``shutil.copy*``/``move``
(destination), ``os.rename``/``os.replace``, and shell command strings passed to
``subprocess``/``os.system``. A path held in a variable is resolved through the unit's
assignments, keyword arguments, parameter defaults, dictionary keys and ``argparse`` defaults
(``SUB = os.path.join(OUT, "submission.csv")`` ... ``sub.to_csv(SUB)``), at most three levels.

Shell (a small quote-aware lexer, no execution): redirects (``>``, ``>>``, ``&>``), ``tee``,
``cp``/``mv``/``install``/``rsync``/``ln`` destinations (``-t DIR`` too), ``curl -o``/``wget -O``
downloads, ``sed -i``/``perl -i`` in-place edits, ``unzip -d``/``tar -C`` extraction folders,
``dd of=``, and interpreter commands (``python x.py --out PATH``, ``python -c CODE``) whose
arguments name a path. Here-document bodies are not read as commands; the expansion step turns
the Python ones into units of their own.

Audited code is only parsed, never run; resolution is textual.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

import tree_sitter

from mleaudit.audit.parsing import PathologicalTree, get_language, parse
from mleaudit.audit.textcache import TextCache
from mleaudit.audit.units import CodeUnit

__all__ = [
    "Bindings",
    "WriteSite",
    "ShellCommand",
    "python_calls",
    "find_write_sites",
    "find_python_write_sites",
    "find_shell_write_sites",
    "split_shell_commands",
    "scripts_run",
]

#: Shell text longer than this is cut before lexing (a command is never this long).
MAX_SHELL_CHARS = 2_000_000
#: Resolved path text is cut at this many characters.
MAX_RESOLVED_CHARS = 4000

_PY_CALLS = """
(call function: (identifier) @name arguments: (argument_list) @args) @call
(call function: (attribute object: (_) @obj attribute: (identifier) @name) arguments: (argument_list) @args) @call
"""
_PY_BINDINGS = """
(assignment left: (identifier) @name right: (_) @value)
(assignment left: (attribute attribute: (identifier) @name) right: (_) @value)
(assignment left: (subscript subscript: (string) @key) right: (_) @value)
(pair key: (string) @key value: (_) @value)
(default_parameter name: (identifier) @name value: (_) @value)
(typed_default_parameter name: (identifier) @name value: (_) @value)
(keyword_argument name: (identifier) @name value: (_) @value)
"""

_FRAME_WRITERS = frozenset({"to_csv", "write_csv", "sink_csv", "savetxt"})
_PATH_WRITERS = frozenset({"write_text", "write_bytes"})
_COPIERS = frozenset({"copy", "copyfile", "copy2", "move", "copytree"})
_RENAMERS = frozenset({"rename", "replace"})
_SHELL_RUNNERS = frozenset({"system", "run", "call", "check_call", "check_output", "Popen", "getoutput",
                            "getstatusoutput", "popen"})
_STRING_PREFIX = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|'''|\"|')")
_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)(\s*\()?")
_QUOTED = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'")
_FIELD = re.compile(r"\{([^{}]*)\}")
_MODULES = frozenset({"os", "sys", "np", "numpy", "pd", "pandas", "pl", "polars", "shutil", "pathlib", "Path",
                      "math", "re", "json", "io", "glob", "datetime", "time", "str", "f"})
_KEY = re.compile(r"\[\s*[rbuRBU]?(['\"])(\w+)\1\s*\]")

_WRAPPERS = frozenset({"sudo", "env", "timeout", "nice", "nohup", "time", "stdbuf", "command", "exec", "xargs",
                       "ionice", "taskset", "setsid", "unbuffer"})
_WRAPPER_VALUE_OPTIONS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "timeout": {"-k", "-s", "--kill-after", "--signal"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "xargs": {"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"},
    "env": {"-u", "-C", "-S"},
    "stdbuf": {"-i", "-o", "-e"},
}
_KEYWORDS = frozenset({"do", "then", "else", "elif", "if", "while", "until", "!", "exec"})
_COPY_COMMANDS = frozenset({"cp", "mv", "install", "rsync", "ln", "scp"})
_INTERPRETERS = re.compile(r"^(?:python[\d.]*|ipython[\d.]*|pypy[\d.]*|Rscript|R|julia|node|bash|sh|zsh|dash|"
                           r"jupyter|papermill|perl|ruby)$")
_SCRIPT_SUFFIX = re.compile(r"\.(?:py|pyw|ipynb|sh|bash|R|r|jl|js)$")
_INLINE_WRITE = re.compile(r"to_csv|write_csv|savetxt|write_text|write_bytes|\bopen\s*\(|copy|move|rename|\.write\(")
_VALIDATION_HELPER = re.compile(r"validat", re.IGNORECASE)


#: Write sites by (sha256 of the text, language), bounded by the characters of the texts.
_SITES = TextCache(max_chars=48 * 1024 * 1024, max_entries=20_000)


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


@functools.lru_cache(maxsize=None)
def _query(source: str) -> tree_sitter.Query:
    return tree_sitter.Query(get_language("python"), source)


def _matches(source: str, root: tree_sitter.Node) -> list[dict[str, list[tree_sitter.Node]]]:
    return [caps for _, caps in tree_sitter.QueryCursor(_query(source)).matches(root)]


def _unquote(text: str) -> str:
    match = _STRING_PREFIX.match(text)
    if not match:
        return text
    quote = match.group(1)
    body = text[match.end():]
    return body[: -len(quote)] if body.endswith(quote) else body


def python_calls(parsed) -> list[tuple[str, tree_sitter.Node | None, tree_sitter.Node, tree_sitter.Node]]:
    """Every call of a parsed Python text as ``(name, object or None, argument list, call node)``.

    ``name`` is the called identifier (``post`` for ``requests.post(...)``), in source order.
    """
    out = []
    for caps in _matches(_PY_CALLS, parsed.root):
        out.append((parsed.node_text(caps["name"][0]), caps.get("obj", [None])[0], caps["args"][0], caps["call"][0]))
    out.sort(key=lambda item: item[3].start_byte)
    return out


def _arguments(args: tree_sitter.Node) -> tuple[list[tree_sitter.Node], dict[str, tree_sitter.Node]]:
    positional: list[tree_sitter.Node] = []
    keywords: dict[str, tree_sitter.Node] = {}
    for child in args.named_children:
        if child.type == "keyword_argument":
            name, value = child.child_by_field_name("name"), child.child_by_field_name("value")
            if name is not None and value is not None:
                keywords[name.text.decode("utf-8", errors="replace")] = value
        elif child.type != "comment":
            positional.append(child)
    return positional, keywords


def _pick(positional: list, keywords: dict, index: int, *names: str):
    for name in names:
        if name in keywords:
            return keywords[name]
    return positional[index] if len(positional) > index else None


class Bindings:
    """What a Python unit assigns to names, for resolving expressions textually: ``NAME = value``, ``obj.NAME = value``, ``{"NAME": value}``,
    ``f(NAME=value)``, ``def f(NAME=value)`` and ``add_argument("--name", default=value)``."""

    def __init__(self, parsed) -> None:
        """Collect the bindings of ``parsed`` (a :class:`mleaudit.audit.parsing.ParsedFile` of Python)."""
        self.values: dict[str, list[str]] = {}
        for caps in _matches(_PY_BINDINGS, parsed.root):
            value = caps.get("value", [None])[0]
            if value is None:
                continue
            if "name" in caps:
                name = parsed.node_text(caps["name"][0])
            else:
                name = _unquote(parsed.node_text(caps["key"][0]))
            self._add(name, parsed.node_text(value))
        for caps in _matches(_PY_CALLS, parsed.root):
            if parsed.node_text(caps["name"][0]) != "add_argument":
                continue
            positional, keywords = _arguments(caps["args"][0])
            flags = [_unquote(parsed.node_text(n)) for n in positional if n.type == "string"]
            dest = keywords.get("dest")
            name = _unquote(parsed.node_text(dest)) if dest is not None else (
                max(flags, key=len).lstrip("-").replace("-", "_") if flags else "")
            if name and "default" in keywords:
                self._add(name, parsed.node_text(keywords["default"]))

    def _add(self, name: str, value: str) -> None:
        values = self.values.setdefault(name, [])
        if value not in values and len(values) < 8:
            values.append(value)

    def resolve(self, text: str, depth: int = 3) -> str:
        """``text`` followed by the values bound to the names it uses, recursively."""
        seen: set[str] = set()
        parts = [text]
        frontier = [text]
        for _ in range(depth):
            names = []
            for piece in frontier:
                names.extend(_names(piece))
                names.extend(m.group(2) for m in _KEY.finditer(piece))
            frontier = []
            for name in names:
                if name in seen or name not in self.values:
                    continue
                seen.add(name)
                frontier.extend(self.values[name])
            if not frontier:
                break
            parts.extend(frontier)
            if sum(len(p) for p in parts) > MAX_RESOLVED_CHARS:
                break
        return " ".join(parts)[:MAX_RESOLVED_CHARS]


def _names(text: str) -> list[str]:
    """Names worth resolving in an expression: variables and attribute names, not module
    functions (``os.path.join``) or called names (``Path(...)``)."""
    # Words inside string literals are not names, except f-string fields ({OUT}).
    text = _QUOTED.sub(lambda m: " " + " ".join(_FIELD.findall(m.group(0))) + " ", text)
    names = []
    for match in _CHAIN.finditer(text):
        parts = [p.strip() for p in match.group(1).split(".")]
        if parts[0] in _MODULES:
            continue
        if match.group(2):  # a call: its arguments are matched separately, its name is not a value
            parts = parts[:-1]
        names.extend(parts)
    return names


def _has_literal(text: str) -> bool:
    return "'" in text or '"' in text


def find_python_write_sites(unit: CodeUnit) -> list[WriteSite]:
    """Write sites of a Python unit (see the module docstring for what counts).

    Parameters
    ----------
    unit : CodeUnit
        A unit with ``language == "python"``.

    Returns
    -------
    list of WriteSite
        In source order.

    Raises
    ------
    mleaudit.audit.parsing.PathologicalTree
        The syntax tree is too deep or too wide to walk: the checks built on the write sites
        cannot judge this unit, which the engine reports as an evaluation error (never as
        "no write").
    """
    parsed = parse(unit.text, "python")
    shape = parsed.pathological()
    if shape is not None:
        raise PathologicalTree(f"{unit.path}: write sites not found: the syntax tree has {shape}")
    bindings = Bindings(parsed)
    sites: list[WriteSite] = []

    def site(call, kind: str, target_node, sources=()) -> None:
        target = parsed.node_text(target_node) if target_node is not None else ""
        resolved = bindings.resolve(target)
        sites.append(WriteSite(
            start=parsed.char_offset(call.start_byte), end=parsed.char_offset(call.end_byte), kind=kind,
            target=target, resolved=resolved, literal=_has_literal(resolved),
            sources=tuple(bindings.resolve(parsed.node_text(s)) for s in sources),
        ))

    for caps in _matches(_PY_CALLS, parsed.root):
        name = parsed.node_text(caps["name"][0])
        call = caps["call"][0]
        obj = caps.get("obj", [None])[0]
        obj_text = parsed.node_text(obj) if obj is not None else ""
        positional, keywords = _arguments(caps["args"][0])
        if name in _FRAME_WRITERS:
            target = _pick(positional, keywords, 0, "path_or_buf", "file", "path", "fname")
            if target is not None:
                site(call, "to_csv", target)
        elif name == "open" and obj_text in ("", "io", "codecs", "gzip", "bz2", "lzma"):
            mode = _pick(positional, keywords, 1, "mode")
            if mode is not None and mode.type == "string" and re.search(r"[wax+]", _unquote(parsed.node_text(mode))):
                site(call, "open", _pick(positional, keywords, 0, "file", "filename"))
        elif name == "open" and obj is not None:
            # Path(...).open("w")
            mode = _pick(positional, keywords, 0, "mode")
            if mode is not None and mode.type == "string" and re.search(r"[wax+]", _unquote(parsed.node_text(mode))):
                site(call, "open", obj)
        elif name in _PATH_WRITERS and obj is not None:
            site(call, "write_text", obj)
        elif name in _COPIERS and obj_text in ("shutil", ""):
            site(call, "move" if name == "move" else "copy", _pick(positional, keywords, 1, "dst"),
                 sources=[n for n in positional[:1]])
        elif name in _RENAMERS and (obj_text == "os" or obj_text.startswith(("Path(", "pathlib."))):
            if obj_text == "os":
                site(call, "move", _pick(positional, keywords, 1, "dst"), sources=positional[:1])
            else:
                site(call, "move", _pick(positional, keywords, 0, "target"), sources=[obj])
        elif name in _SHELL_RUNNERS and obj_text in ("os", "subprocess", "sp", "commands", ""):
            command = _pick(positional, keywords, 0, "args", "cmd", "command")
            if command is None:
                continue
            if command.type == "list":
                text = " ".join(_unquote(parsed.node_text(n)) for n in command.named_children if n.type == "string")
            elif command.type == "string":
                text = _unquote(parsed.node_text(command))
            else:
                text = bindings.resolve(parsed.node_text(command))
            start = parsed.char_offset(call.start_byte)
            end = parsed.char_offset(call.end_byte)
            for inner in find_shell_write_sites(CodeUnit(path=unit.path, language="bash", text=text)):
                sites.append(WriteSite(start=start, end=end, kind="shell", target=inner.target,
                                       resolved=inner.resolved, literal=True, sources=inner.sources))
    sites.sort(key=lambda s: (s.start, s.end))
    return sites


# --- shell ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class ShellCommand:
    """One simple shell command: its words (quotes removed) and its redirects.

    Attributes
    ----------
    words : tuple of (str, int, int)
        Each word with its 0-based, half-open character offsets in the shell text.
    redirects : tuple of (str, str, int, int)
        ``(operator, target, start, end)``: ``>``, ``>>``, ``&>``, ``<`` ... and the word after it.
    """

    words: tuple[tuple[str, int, int], ...]
    redirects: tuple[tuple[str, str, int, int], ...] = ()

    @property
    def start(self) -> int:
        offsets = [w[1] for w in self.words] + [r[2] for r in self.redirects]
        return min(offsets) if offsets else 0

    @property
    def end(self) -> int:
        offsets = [w[2] for w in self.words] + [r[3] for r in self.redirects]
        return max(offsets) if offsets else 0


_HEREDOC = re.compile(r"<<(-?)[ \t]*(['\"]?)([A-Za-z_]\w*)\2")


def _blank_heredocs(text: str) -> str:
    """``text`` with here-document bodies replaced by spaces (offsets kept)."""
    out = list(text)
    pos = 0
    while True:
        match = _HEREDOC.search(text, pos)
        if match is None:
            return "".join(out)
        line_end = text.find("\n", match.end())
        if line_end == -1:
            return "".join(out)
        delimiter, strip_tabs = match.group(3), match.group(1) == "-"
        scan = line_end + 1
        end = len(text)
        while scan < len(text):
            nxt = text.find("\n", scan)
            nxt = len(text) if nxt == -1 else nxt
            line = text[scan:nxt]
            if (line.lstrip("\t") if strip_tabs else line).rstrip("\r") == delimiter:
                end = nxt
                break
            scan = nxt + 1
        for i in range(line_end + 1, end):
            if out[i] != "\n":
                out[i] = " "
        pos = max(end, match.end())


def split_shell_commands(text: str) -> list[ShellCommand]:
    """Split shell text into simple commands (quote-aware; ``;``, ``&&``, ``||``, ``|``, ``&``,
    newlines, parentheses, braces and ``$(``/backticks separate commands).

    Parameters
    ----------
    text : str
        Shell source (untrusted; only lexed). Here-document bodies are skipped.

    Returns
    -------
    list of ShellCommand
        In text order; comments are dropped.
    """
    text = _blank_heredocs(text[:MAX_SHELL_CHARS])
    commands: list[ShellCommand] = []
    words: list[tuple[str, int, int]] = []
    redirects: list[tuple[str, str, int, int]] = []
    pending: list = []  # [operator, start] waiting for its target word
    buf: list[str] = []
    word_start = -1
    n = len(text)
    i = 0

    def end_word(at: int) -> None:
        nonlocal buf, word_start
        if word_start < 0:
            return
        word = "".join(buf)
        if pending:
            op, op_start = pending.pop()
            if op != "skip":
                redirects.append((op, word, op_start, at))
        else:
            words.append((word, word_start, at))
        buf, word_start = [], -1

    def end_command() -> None:
        nonlocal words, redirects
        if words or redirects:
            commands.append(ShellCommand(words=tuple(words), redirects=tuple(redirects)))
        words, redirects = [], []
        pending.clear()

    while i < n:
        c = text[i]
        if c in " \t\r":
            end_word(i)
            i += 1
        elif c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                end_word(i)
                i += 2
                continue
            if word_start < 0:
                word_start = i
            if i + 1 < n:
                buf.append(text[i + 1])
            i += 2
        elif c in "'\"":
            if word_start < 0:
                word_start = i
            close = i + 1
            while close < n and text[close] != c:
                close += 2 if (c == '"' and text[close] == "\\") else 1
            buf.append(text[i + 1 : min(close, n)])
            i = close + 1
        elif c == "#" and word_start < 0:
            nl = text.find("\n", i)
            i = n if nl == -1 else nl
        elif c == "$" and i + 1 < n and text[i + 1] in "({":
            if text[i + 1] == "(":
                end_word(i)
                end_command()
                i += 2
            else:
                close = text.find("}", i)
                close = n - 1 if close == -1 else close
                if word_start < 0:
                    word_start = i
                buf.append(text[i : close + 1])
                i = close + 1
        elif c in ";&|\n()`{}":
            if c == "&" and i + 1 < n and text[i + 1] == ">":
                end_word(i)
                op = "&>>" if text[i + 2 : i + 3] == ">" else "&>"
                pending[:] = [[op, i]]
                i += len(op)
                continue
            end_word(i)
            end_command()
            i += 1
        elif c in "<>":
            fd_only = word_start >= 0 and "".join(buf).isdigit() and word_start + len(buf) == i
            if fd_only:
                buf, word_start = [], -1
            else:
                end_word(i)
            j = i
            while j < n and text[j] in "<>&|":
                j += 1
            op = text[i:j]
            if op.startswith("<<") or op in ("<&", ">&") or op.endswith("&"):
                # Here-document delimiters and fd duplications have no file target.
                pending[:] = [["skip", i]]
            else:
                pending[:] = [[op, i]]
            i = j
        else:
            if word_start < 0:
                word_start = i
            buf.append(c)
            i += 1
    end_word(n)
    end_command()
    return commands


def _strip_wrappers(words: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    i = 0
    while i < len(words):
        word = words[i][0]
        if re.match(r"^[A-Za-z_]\w*=", word):
            i += 1
            continue
        if word in _KEYWORDS:
            i += 1
            continue
        name = word.rsplit("/", 1)[-1]
        if name not in _WRAPPERS:
            break
        i += 1
        value_options = _WRAPPER_VALUE_OPTIONS.get(name, set())
        while i < len(words) and (words[i][0].startswith("-") or re.match(r"^[A-Za-z_]\w*=", words[i][0])):
            i += 2 if words[i][0] in value_options else 1
        if name == "timeout" and i < len(words) and re.match(r"^\d+(?:\.\d+)?[smhd]?$", words[i][0]):
            i += 1
    return words[i:]


def _positional(words: list[tuple[str, int, int]], value_options: set[str]) -> tuple[list[str], dict[str, str]]:
    positional: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(words):
        word = words[i][0]
        if word == "--":
            positional.extend(w[0] for w in words[i + 1:])
            break
        if word.startswith("--") and "=" in word:
            key, value = word.split("=", 1)
            options[key] = value
        elif word in value_options and i + 1 < len(words):
            options[word] = words[i + 1][0]
            i += 1
        elif word.startswith("-") and len(word) > 1:
            # -ofile / -Ppath glued forms
            for opt in value_options:
                if len(opt) == 2 and word.startswith(opt) and len(word) > 2:
                    options[opt] = word[2:]
        else:
            positional.append(word)
        i += 1
    return positional, options


def _command_sites(command: ShellCommand) -> list[WriteSite]:
    sites: list[WriteSite] = []

    def add(kind: str, target: str, sources: tuple[str, ...] = ()) -> None:
        sites.append(WriteSite(start=command.start, end=command.end, kind=kind, target=target, resolved=target,
                               literal=True, sources=sources))

    for op, target, _, _ in command.redirects:
        if ">" in op:
            add("redirect", target)
    words = _strip_wrappers(list(command.words))
    if not words:
        return sites
    name = words[0][0].rsplit("/", 1)[-1]
    args = words[1:]
    if name in _COPY_COMMANDS:
        positional, options = _positional(args, {"-t", "--target-directory", "-S", "--suffix", "-m", "--mode",
                                                 "-o", "-g", "--owner", "--group", "-e"})
        target = options.get("-t") or options.get("--target-directory")
        if target is None and len(positional) >= 2:
            target, positional = positional[-1], positional[:-1]
        if target is not None:
            add("move" if name == "mv" else "copy", target, tuple(positional))
    elif name == "tee":
        positional, _ = _positional(args, set())
        for target in positional:
            add("tee", target)
    elif name == "curl":
        _, options = _positional(args, {"-o", "--output", "-d", "--data", "-F", "--form", "-H", "--header", "-X",
                                        "--request", "-u", "--user", "-A", "-e", "-w", "-T", "--upload-file"})
        target = options.get("-o") or options.get("--output")
        if target:
            add("download", target)
    elif name == "wget":
        _, options = _positional(args, {"-O", "--output-document", "-P", "--directory-prefix"})
        target = next((options[k] for k in ("-O", "--output-document", "-P", "--directory-prefix") if k in options), None)
        if target:
            add("download", target)
    elif name in ("sed", "perl") and any(w[0].startswith("-i") or (w[0].startswith("-") and "i" in w[0][1:]
                                                                  and not w[0].startswith("--")) for w in args):
        positional, options = _positional(args, {"-e", "--expression", "-f", "--file"})
        files = positional if ("-e" in options or "--expression" in options or "-f" in options) else positional[1:]
        for target in files:
            add("edit", target)
    elif name in ("unzip", "tar", "7z", "bsdtar"):
        _, options = _positional(args, {"-d", "-C", "--directory", "-o", "-f", "-x"})
        target = options.get("-d") or options.get("-C") or options.get("--directory")
        if target:
            add("extract", target)
    elif name == "dd":
        for word, _, _ in args:
            if word.startswith("of="):
                add("redirect", word[3:])
    elif _INTERPRETERS.match(name):
        positional, options = _positional(args, {"-c", "-m", "-e", "--to", "--output", "-p", "--ExecutePreprocessor.timeout"})
        inline = options.get("-c") or options.get("-e")
        if inline and _INLINE_WRITE.search(inline):
            add("inline", inline)
        script = next((p for p in positional if _SCRIPT_SUFFIX.search(p)), None)
        if script is not None and _VALIDATION_HELPER.search(script.rsplit("/", 1)[-1]):
            return sites
        for value in [p for p in positional if p != script] + [v for k, v in options.items() if k not in ("-c", "-e")]:
            add("script-argument", value)
    return sites


def find_shell_write_sites(unit: CodeUnit) -> list[WriteSite]:
    """Write sites of a shell unit (see the module docstring for what counts).

    Parameters
    ----------
    unit : CodeUnit
        A unit with ``language == "bash"`` (or any shell text).

    Returns
    -------
    list of WriteSite
        In text order; offsets are those of the whole simple command.
    """
    sites: list[WriteSite] = []
    for command in split_shell_commands(unit.text):
        sites.extend(_command_sites(command))
    return sites


def find_write_sites(unit: CodeUnit) -> list[WriteSite]:
    """Write sites of a Python or shell unit; other languages give none.

    Parameters
    ----------
    unit : CodeUnit

    Returns
    -------
    list of WriteSite
        In text order.
    """
    if unit.language not in ("python", "bash"):
        return []
    # Several checks ask for the same unit's sites, and a log shows the same script at many
    # steps: the sites depend on the text alone (offsets are the text's), so they are kept by
    # content. A tree too deep to walk raises each time, naming each unit.
    key = (hashlib.sha256(unit.text.encode("utf-8", errors="surrogatepass")).digest(), unit.language)
    finder = find_python_write_sites if unit.language == "python" else find_shell_write_sites
    return list(_SITES.get_or_compute(key, len(unit.text), lambda: tuple(finder(unit))))


def scripts_run(unit: CodeUnit) -> list[str]:
    """Base names of the script files a shell unit runs (``python x.py``, ``bash run.sh``,
    ``jupyter nbconvert --execute nb.ipynb``, ``./train.py``).

    Parameters
    ----------
    unit : CodeUnit
        A shell unit; other languages give an empty list.

    Returns
    -------
    list of str
        In text order, without duplicates.
    """
    if unit.language != "bash":
        return []
    names: list[str] = []
    for command in split_shell_commands(unit.text):
        words = _strip_wrappers(list(command.words))
        if not words:
            continue
        first = words[0][0]
        candidates: list[str] = []
        if _INTERPRETERS.match(first.rsplit("/", 1)[-1]):
            positional, options = _positional(words[1:], {"-c", "-m", "-e", "--to", "--output", "-p"})
            if "-c" not in options and "-m" not in options:
                candidates = [p for p in positional if _SCRIPT_SUFFIX.search(p)][:1]
        elif _SCRIPT_SUFFIX.search(first) and ("/" in first):
            candidates = [first]
        for candidate in candidates:
            base = candidate.rsplit("/", 1)[-1]
            if base and base not in names:
                names.append(base)
    return names
