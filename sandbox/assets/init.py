"""The first process of every sandboxed run: starts the network forwarder, runs the agent, and
on a stop lets the agent's processes finish within the grace period.

    python3 init.py [--forward PORT SOCKET [--required]] -- AGENT ARGV...

Why it exists. When the host stops a run (time limit, disk limit) it sends SIGTERM to every
process of the sandbox and SIGKILL at the end of the grace period. The agent command is usually
a shell (``/bin/sh -c "python3 solve.py"``) whose default reaction to SIGTERM is to die at once;
the sandbox would then end with it and kill the Python process still writing its submission.
This process stays: it is a child subreaper (orphans become its children), notes the stop and,
once the agent's command has ended, waits while any process of the agent is still running, so
each gets the whole grace period. Without a stop it ends as soon as the agent's command does.

Exit status: the agent command's own (128 + n when a signal n ended it, as a shell reports it),
also when other processes of the agent went on to finish their work in the grace period.
Runs with the sandbox's Python and the standard library only.
"""

import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def status_of(wait_status: int) -> int:
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def start_forwarder(args: list) -> int | None:
    """Start the forwarder; its daemon's pid, or None when it did not start."""
    port, socket_path = args[0], args[1]
    forwarder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forward.py")
    try:
        done = subprocess.run([sys.executable, forwarder, port, socket_path], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE)
    except OSError:
        return None
    text = done.stdout.decode("ascii", errors="replace").strip()
    return int(text) if done.returncode == 0 and text.isdigit() else None


def others_running(spared: set) -> bool:
    """Whether a process of the agent is alive: not this one, the first one, or the forwarder."""
    mine = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, mine) or int(name) in spared:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            return True
    return False


def main() -> int:
    argv = sys.argv[1:]
    forward, required = None, False
    if argv[:1] == ["--forward"]:
        forward, argv = argv[1:3], argv[3:]
        if argv[:1] == ["--required"]:
            required, argv = True, argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("init.py: no agent command", file=sys.stderr)
        return 2
    spared = set()
    if forward is not None:
        forwarder = start_forwarder(forward)
        if forwarder is not None:
            spared.add(forwarder)
        elif required:
            print("the network forwarder did not start: the allow-list cannot be reached", file=sys.stderr)
            return 126
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    stopping = []
    for signum in STOP_SIGNALS:
        # The host signals every process itself; here a stop only means: wait for the others.
        signal.signal(signum, lambda s, f: stopping.append(s))
    try:
        agent = subprocess.Popen(argv, restore_signals=True)
    except OSError as exc:
        print(f"{argv[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    status = None
    while True:
        try:
            pid, wait_status = os.wait()
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == agent.pid:
            status = status_of(wait_status)
        if status is not None and (not stopping or not others_running(spared)):
            break
    while stopping and others_running(spared):
        time.sleep(0.1)
    return 1 if status is None else status


if __name__ == "__main__":
    sys.exit(main())
