"""The per-run uid of a root caller's sandbox: drawn, held for one run, released."""

from __future__ import annotations

import os
import subprocess
import threading

import pytest

import mleaudit.sandbox.run_user as run_user
from mleaudit.sandbox.errors import SandboxUnavailable
from mleaudit.sandbox.run_user import RUN_UID_RANGE, RunUsers, choose_run_user, parse_user, release_run_user, reserved_uids
from mleaudit.sandbox.spec import SandboxSpec


def test_the_per_run_uid_avoids_accounts_processes_and_reserved_ids():
    busy = None
    draws = [0, 65534]  # root, and an id with an account (nobody)
    if os.geteuid() == 0:
        busy = subprocess.Popen(["sleep", "30"], user=2_400_000, group=2_400_000, extra_groups=[])
        draws.append(2_400_000)
    held = choose_run_user(range(2_500_000, 2_500_001))
    try:
        draws += [held[0], 2_500_002]
        picks = iter(draws)
        chosen = choose_run_user(range(0, 3_000_000), choice=lambda _: next(picks))
        assert chosen == (2_500_002, 2_500_002)
        release_run_user(chosen[0])
        with pytest.raises(SandboxUnavailable, match="no free uid"):
            choose_run_user(range(0, 1))
    finally:
        release_run_user(held[0])
        if busy is not None:
            busy.kill()
            busy.wait()


def test_ids_in_a_subordinate_range_or_owning_keys_are_not_drawn(tmp_path, monkeypatch):
    subuid = tmp_path / "subuid"
    subuid.write_text("someone:2600000:65536\nbroken line\n")
    ranges = run_user._subordinate_ranges(str(subuid))
    assert ranges == [range(2_600_000, 2_665_536)]
    monkeypatch.setattr(run_user, "_subordinate_ranges", lambda path: ranges)
    monkeypatch.setattr(run_user, "key_owners", lambda: {2_700_000})
    picks = iter([2_600_001, 2_700_000, 2_800_000])
    chosen = choose_run_user(choice=lambda _: next(picks))
    try:
        assert chosen == (2_800_000, 2_800_000)
    finally:
        release_run_user(chosen[0])


def test_parse_user():
    assert parse_user("2000:3000") == (2000, 3000)
    assert parse_user("2000") == (2000, 2000)
    assert parse_user(None) is None and parse_user("") is None


def test_run_users_hold_one_uid_per_spec_object_until_the_end(monkeypatch):
    monkeypatch.setattr(run_user.os, "geteuid", lambda: 0)
    users = RunUsers()
    first, second = SandboxSpec(command=("true",)), SandboxSpec(command=("true",))
    owner = users.owner(first)
    assert owner[0] == owner[1] and owner[0] in RUN_UID_RANGE and owner[0] in reserved_uids()
    assert users.owner(first) == owner and users.drawn(first)
    assert users.owner(second) != owner
    users.end(first)
    assert owner[0] not in reserved_uids() and not users.drawn(first)
    users.end(first)  # a second end is harmless
    again = users.owner(first)  # a call after the end draws anew
    assert again[0] in RUN_UID_RANGE
    users.end(first)
    users.end(second)
    # A given user is the spec's, never drawn nor held.
    given = SandboxSpec(command=("true",), user="2000:3000")
    assert users.owner(given) == (2000, 3000) and not users.drawn(given)
    users.end(given)


def test_run_users_of_a_non_root_caller_are_the_caller(monkeypatch):
    monkeypatch.setattr(run_user.os, "geteuid", lambda: 1234)
    monkeypatch.setattr(run_user.os, "getegid", lambda: 4321)
    users = RunUsers()
    spec = SandboxSpec(command=("true",))
    assert users.owner(spec) == (1234, 4321) and not users.drawn(spec)


def test_concurrent_runs_get_distinct_uids(monkeypatch):
    monkeypatch.setattr(run_user.os, "geteuid", lambda: 0)
    users = RunUsers()
    specs = [SandboxSpec(command=("true",)) for _ in range(16)]
    owners: list[tuple[int, int]] = []
    threads = [threading.Thread(target=lambda s=s: owners.append(users.owner(s))) for s in specs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len({uid for uid, _ in owners}) == len(specs)
    finally:
        for spec in specs:
            users.end(spec)
    assert not {uid for uid, _ in owners} & reserved_uids()


def test_clearing_a_uid_without_keys_starts_nothing(monkeypatch):
    monkeypatch.setattr(run_user, "key_owners", set)
    monkeypatch.setattr(run_user.subprocess, "run", lambda *a, **k: pytest.fail("nothing to clear"))
    assert run_user.clear_user_keys(2_900_000, 2_900_000)


def test_the_session_keyring_part_is_callable():
    assert callable(run_user.session_keyring_preexec())
