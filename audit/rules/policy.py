"""A competition's audit policy as the rules engine sees it: allowed URLs and named term lists.

The policy is data in ``competitions/<id>/config.yaml`` (section ``audit:``, parsed by
:mod:`mleaudit.grading.spec`), never in the audited run: the run cannot allowlist itself (no in-file
ignore comments; DESIGN §3.7). Two uses:

- ``allow_urls``: findings of the URL-bearing categories (:data:`URL_ALLOWLIST_CATEGORIES`) whose
  matched text names only allowed URLs are dropped from the findings and listed separately
  (``report.meta.allowlisted``), so a reviewer still sees them. An entry is a host
  (``download.pytorch.org``: that host and its subdomains), or a host with a path prefix
  (``github.com/someone/weights/releases/``), optionally with a scheme, which is ignored.
- term lists such as ``label_leak_columns``: a rule's ``terms`` filter reads them, so one generic
  rule covers every competition whose config names its leaky columns.

Naming: an *entry* is one string of ``allow_urls``; a URL is *allowed* when some entry covers
its host and path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping
from urllib.parse import urlsplit

__all__ = ["RulePolicy", "URL_ALLOWLIST_CATEGORIES", "find_urls", "parse_allow_entry"]

#: Rule categories whose findings ``allow_urls`` can drop: fetching something from an allowed
#: mirror is not a violation. Findings of other categories are never allowlisted.
URL_ALLOWLIST_CATEGORIES = frozenset({"external-resource", "llm-api"})

# A URL with a scheme, or a bare host with a dot and an optional path. Both scan each token once.
_URL = re.compile(r"(?i)\b(?:https?|ftp|git|ssh)://[^\s'\"`<>(){}\[\]\\,;|]++|(?<![\w.@/-])git@[\w.-]+:[^\s'\"`]++")
_HOST = re.compile(r"(?i)(?<![\w.@/:-])(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,24}(?::\d{1,5})?(?:/[^\s'\"`<>(){}\[\]\\,;|]*+)?")


def find_urls(text: str) -> list[str]:
    """URLs in ``text``: those with a scheme, else bare ``host.tld/path`` mentions.

    Examples
    --------
    >>> find_urls('wget -q "https://download.pytorch.org/models/r50.pth" -O r50.pth')
    ['https://download.pytorch.org/models/r50.pth']
    >>> find_urls("api.openai.com")
    ['api.openai.com']
    """
    found = _URL.findall(text)
    return found if found else _HOST.findall(text)


def _host_and_path(url: str) -> tuple[str, str] | None:
    url = url.strip()
    if url.lower().startswith("git@"):  # git@github.com:owner/repo.git
        host, _, path = url[4:].partition(":")
        return host.lower().rstrip("."), "/" + path
    if "://" not in url:
        url = "//" + url
    try:
        parts = urlsplit(url)
        host = parts.hostname  # without user info and port: "a.org@evil.com" is evil.com
    except ValueError:
        return None
    if not host:
        return None
    return host.lower().rstrip("."), parts.path or "/"


def parse_allow_entry(entry: str) -> tuple[str, str] | None:
    """``(host, path prefix)`` of an ``allow_urls`` entry, or ``None`` when it names no host.

    Examples
    --------
    >>> parse_allow_entry("https://github.com/someone/weights/releases/")
    ('github.com', '/someone/weights/releases/')
    >>> parse_allow_entry("download.pytorch.org")
    ('download.pytorch.org', '/')
    """
    parsed = _host_and_path(entry)
    if parsed is None or "." not in parsed[0]:
        return None
    return parsed


def _covers(entry: tuple[str, str], url: tuple[str, str]) -> bool:
    host, prefix = entry
    url_host, path = url
    if url_host != host and not url_host.endswith("." + host):
        return False
    if prefix in ("", "/"):
        return True
    if prefix.endswith("/"):
        return path.startswith(prefix)
    # "github.com/someone/weights" covers ".../weights" and ".../weights/x", not ".../weights-evil"
    return path == prefix or path.startswith(prefix + "/")


@dataclass(frozen=True, slots=True, kw_only=True)
class RulePolicy:
    """The audit policy of one competition.

    Parameters
    ----------
    competition_id : str or None
        Whose policy this is (for messages).
    lists : Mapping[str, tuple of str]
        Every list of the ``audit:`` section by key (``allow_urls``, ``label_leak_columns``, ...).
    """

    competition_id: str | None = None
    lists: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, audit: Mapping[str, Iterable[str]] | None, *, competition_id: str | None = None) -> "RulePolicy":
        """Build a policy from a competition's ``audit`` mapping (``CompetitionSpec.audit``).

        Parameters
        ----------
        audit : Mapping[str, iterable of str] or None
            Lists of strings by key; ``None`` gives the empty policy.
        competition_id : str, optional

        Returns
        -------
        RulePolicy
        """
        lists = {str(key): tuple(str(v) for v in values) for key, values in (audit or {}).items()}
        return cls(competition_id=competition_id, lists=lists)

    def terms(self, key: str) -> tuple[str, ...]:
        """The list ``key`` (empty when the policy does not set it)."""
        return tuple(self.lists.get(key, ()))

    def allowed_by(self, text: str) -> str | None:
        """The ``allow_urls`` entry that covers the URLs named in ``text``, or ``None``.

        ``text`` is allowlisted only when it names at least one URL and every URL it names is
        covered by an entry (a command that fetches an allowed mirror and something else is
        not). When several entries are involved, the first one is returned.

        Examples
        --------
        >>> policy = RulePolicy.from_mapping({"allow_urls": ["download.pytorch.org"]})
        >>> policy.allowed_by("wget https://download.pytorch.org/models/r50.pth")
        'download.pytorch.org'
        >>> policy.allowed_by("wget https://download.pytorch.org@evil.example/labels.csv") is None
        True
        """
        entries = [(entry, parsed) for entry in self.terms("allow_urls")
                   if (parsed := parse_allow_entry(entry)) is not None]
        if not entries:
            return None
        urls = [parsed for url in find_urls(text) if (parsed := _host_and_path(url)) is not None]
        if not urls:
            return None
        used = []
        for url in urls:
            entry = next((name for name, parsed in entries if _covers(parsed, url)), None)
            if entry is None:
                return None
            used.append(entry)
        return used[0]
