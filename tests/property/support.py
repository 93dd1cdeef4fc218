"""Settings, time limits and checks shared by the property tests."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import tempfile
import time
import traceback
from typing import Any, Callable, Iterator

from hypothesis import HealthCheck, Phase, settings

#: Set by ``conftest.pytest_configure`` when ``--run-slow`` is given: 1000 random examples per
#: property instead of the modest, derandomised default.
DEEP = False
#: Examples per property in the deep run.
DEEP_EXAMPLES = 1000

#: Seconds one parser call may take on the generated inputs (a few tens of kB at most); linear
#: readers need milliseconds, so only a hang or a super-linear blow-up gets near it.
CALL_LIMIT = 5.0
#: Seconds one whole-run audit of a small generated run may take.
RUN_LIMIT = 20.0


#: No "explain" phase: it traces every line executed, which makes the time limits unreliable.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)


def budget(examples: int, *, deep: int = DEEP_EXAMPLES, health: tuple[HealthCheck, ...] = (),
           shrink: bool = True) -> settings:
    """Hypothesis settings for one property: ``examples`` by default, ``deep`` (1000 unless a
    property costs seconds an example) with ``--run-slow``.

    The default run is derandomised (the same examples on every run, no example database),
    so CI is deterministic. There is no per-example deadline: hangs are caught by
    :func:`time_limit` with a wall-clock bound instead, so a slow CI machine does not make
    ordinary examples flaky. ``shrink=False`` for properties whose failing examples each cost
    the whole time limit.
    """
    return settings(
        max_examples=deep if DEEP else examples,
        deadline=None,
        derandomize=not DEEP,
        database=None,
        print_blob=True,
        suppress_health_check=(HealthCheck.too_slow, HealthCheck.data_too_large, *health),
        phases=PHASES if shrink else PHASES[:-1],
    )


class _Overrun(BaseException):
    """Raised by the alarm inside the code under test; a BaseException so that no
    ``except Exception`` of the code under test swallows it."""


@contextlib.contextmanager
def time_limit(seconds: float = CALL_LIMIT, what: str = "call") -> Iterator[None]:
    """Fail (AssertionError) when the block runs longer than ``seconds`` of wall-clock time.

    A SIGALRM interrupts Python code at the limit; code that holds the interpreter in C until
    it returns is caught by the elapsed-time check afterwards.
    """

    def alarm(signum, frame):  # noqa: ARG001 - signal handler signature
        raise _Overrun()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    except _Overrun:
        raise AssertionError(f"{what} did not finish within {seconds:g} s (hang or super-linear time)") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.monotonic() - start
    assert elapsed <= seconds, f"{what} took {elapsed:.1f} s, over the {seconds:g} s limit"


def encodes_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def strings_in(value: Any) -> Iterator[str]:
    """Every string of a decoded JSON value, dict keys included (iteratively: values may nest deep)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str):
                    yield key
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def unexpected(exc: BaseException, allowed: tuple[type[BaseException], ...]) -> str:
    """A failure message for an exception outside the documented ones."""
    names = ", ".join(t.__module__ + "." + t.__qualname__ for t in allowed) or "none"
    return f"undocumented {type(exc).__module__}.{type(exc).__qualname__} escaped: {exc!r:.300} (documented: {names})"


def call(fn, *args, allowed: tuple[type[BaseException], ...] = (), what: str = "call",
         limit: float = CALL_LIMIT, **kwargs):
    """``fn(*args, **kwargs)`` within ``limit`` seconds: ``(result, None)``, or ``(None, exc)``
    for an exception of the ``allowed`` (documented) types.

    Any other exception fails the test with :func:`unexpected` (chained, so that Hypothesis
    tells distinct bugs apart); running past the limit fails it as a hang.
    """
    _record_call(what, args, kwargs)
    try:
        with time_limit(limit, what):
            return fn(*args, **kwargs), None
    except AssertionError:
        raise
    except allowed as exc:
        return None, exc
    except Exception as exc:  # noqa: BLE001 - the property is about which errors escape
        raise AssertionError(unexpected(exc, allowed)) from exc


# ------------------------------------------------------------------ crashes of native code

#: Set in a child of :func:`isolated`: :func:`call` records each call's arguments there first, so
#: that a call that kills the process can still be named.
_LAST_CALL_FILE: str | None = None


_CONTEXT = ""


def record_context(text: str) -> None:
    """Describe the example being run (in a child of :func:`isolated`), for the report of a crash."""
    global _CONTEXT
    _CONTEXT = text[:20000]


def _record_call(what: str, args: tuple, kwargs: dict) -> None:
    if _LAST_CALL_FILE is None:
        return
    shown = ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    with open(_LAST_CALL_FILE, "w", encoding="utf-8", errors="backslashreplace") as stream:
        stream.write(f"{what}({shown[:4000]})" + (f"\non {_CONTEXT}" if _CONTEXT else ""))


def isolated(test: Callable) -> Callable:
    """Run a test in a forked child process, so that native code that crashes the process
    (tree-sitter parses untrusted code in C) fails this test instead of ending the session.

    A failure in the child is re-raised in the parent with the child's report (Hypothesis's
    falsifying example included); a child killed by a signal fails the test naming the signal
    and the last :func:`call` it made.
    """

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        global _LAST_CALL_FILE
        handle, last = tempfile.mkstemp(prefix="property-last-call-")
        os.close(handle)
        report = tempfile.TemporaryFile()
        pid = os.fork()
        if pid == 0:  # the child: run the test, report, and leave without any cleanup of the parent's
            status = 0
            try:
                _LAST_CALL_FILE = last
                test(*args, **kwargs)
            except BaseException:  # noqa: BLE001 - everything goes back to the parent
                report.write(traceback.format_exc().encode("utf-8", "backslashreplace"))
                report.flush()
                status = 1
            os._exit(status)
        try:
            _, status = os.waitpid(pid, 0)
            report.seek(0)
            text = report.read().decode("utf-8", "replace")
            with open(last, encoding="utf-8", errors="replace") as stream:
                last_call = stream.read()
        finally:
            report.close()
            os.unlink(last)
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            raise AssertionError(f"the process crashed with {name} (native code); the last call was:\n{last_call}")
        if os.WEXITSTATUS(status):
            raise AssertionError(f"failed in the isolated process:\n{text}")

    return wrapper
