"""Named errors of the audit package; the CLI maps each to a clear message and exit code 2."""

from __future__ import annotations

__all__ = ["AuditError", "ConfigError", "RuleError", "RunLayoutError"]


class AuditError(Exception):
    """Base class of every error the audit raises on bad input."""


class ConfigError(AuditError):
    """A configuration file or option is missing or malformed; the message names the file or option."""


class RuleError(AuditError):
    """A rule file is invalid; the message names the rule id, file and cause (all errors at once)."""


class RunLayoutError(AuditError):
    """A run directory cannot be read (missing, not a directory, a path that leaves the run)."""
