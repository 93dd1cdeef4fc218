"""Commands and code typed at a prompt: shell, zsh, PowerShell, cmd.exe, Python and IPython prompts.

Must-read: every prompt form gives a COMMAND (shell, PowerShell) or CODE (Python, IPython) event
whose text is what was typed, continuation prompts removed, here-documents and here-strings
included. Must-not-misread: output lines that merely start with a prompt character (``$5.00``,
``% done``, a Markdown heading, ``> quoted``) stay text. The line-oriented readers (``pylogging``,
``runlog``, ``steplog``) find typed commands inside their records too, with texts that are the
file's slices.
"""

from __future__ import annotations

import time

import pytest

from mleaudit.audit.logs import parse_log, read_log_events
from mleaudit.audit.logs.prompts import find_prompts, match_prompt
from mleaudit.audit.units import Actor
from mleaudit.audit.units import LogEventKind as K


def _typed(text: str, path: str = "logs/session.txt"):
    return [(e.kind, e.text) for e in read_log_events(path, text) if e.kind in (K.COMMAND, K.CODE)]


@pytest.mark.parametrize(
    ("line", "kind", "typed"),
    [
        ("$ ls -la /home/data", K.COMMAND, "ls -la /home/data"),
        ("user@host:~/dir$ python train.py", K.COMMAND, "python train.py"),
        ("root@3f2a9c:/# cat /private/answers.csv", K.COMMAND, "cat /private/answers.csv"),
        ("root@3f2a9c:/home/code# ./run.sh", K.COMMAND, "./run.sh"),
        ("(venv) $ pip install lightgbm", K.COMMAND, "pip install lightgbm"),
        ("(base) agent@box:~$ nvidia-smi", K.COMMAND, "nvidia-smi"),
        ("bash-5.1$ wget https://example.org/x.csv", K.COMMAND, "wget https://example.org/x.csv"),
        ("sh-4.2# id -u", K.COMMAND, "id -u"),
        ("[agent@box work]$ rm -rf /tmp/x", K.COMMAND, "rm -rf /tmp/x"),
        ("% python train.py --epochs 3", K.COMMAND, "python train.py --epochs 3"),
        ("alice@MacBook-Pro ~ % curl -s https://example.org", K.COMMAND, "curl -s https://example.org"),
        ("~/work$ head -3 train.csv", K.COMMAND, "head -3 train.csv"),
        ("# kaggle competitions download -c titanic", K.COMMAND, "kaggle competitions download -c titanic"),
        ("PS C:\\work\\seedlings> Get-ChildItem data", K.COMMAND, "Get-ChildItem data"),
        ("PS> python .\\train.py", K.COMMAND, "python .\\train.py"),
        ("C:\\work>dir /s", K.COMMAND, "dir /s"),
        ("!pip install -q timm", K.COMMAND, "pip install -q timm"),
        ("!python train.py", K.COMMAND, "python train.py"),
        (">>> import os", K.CODE, "import os"),
        ("In [3]: df = pd.read_csv('train.csv')", K.CODE, "df = pd.read_csv('train.csv')"),
        ("In [12]: !ls /home/data", K.CODE, "!ls /home/data"),
        ("\x1b[?2004h\x1b]0;agent@box: ~\x07\x1b[01;32magent@box\x1b[00m:\x1b[01;34m~/code\x1b[00m$ ls -la",
         K.COMMAND, "ls -la"),
        ("\x1b[01;31mroot@box\x1b[00m:/# cat /etc/shadow", K.COMMAND, "cat /etc/shadow"),
        ("\u276f kaggle competitions list", K.COMMAND, "kaggle competitions list"),
        ("\u279c  seedlings git:(main) \u2717 cat /private/x.csv", K.COMMAND, "cat /private/x.csv"),
        ("\u00bb ls /home", K.COMMAND, "ls /home"),
    ],
)
def test_prompt_forms_are_read(line, kind, typed):
    text = f"Session start\n{line}\nsome output\n"
    events = read_log_events("logs/session.txt", text)
    hits = [e for e in events if e.kind in (K.COMMAND, K.CODE)]
    assert [(e.kind, e.text) for e in hits] == [(kind, typed)]
    assert hits[0].span.start_line == 2
    assert text[hits[0].span.start_byte:hits[0].span.end_byte] == typed
    # The output after the command stays text.
    assert events[-1].kind is K.OUTPUT and events[-1].text == "some output"


@pytest.mark.parametrize(
    "line",
    [
        "$5.00 charged to the account",
        "$ 5 per hour",
        "% done",
        "50% done",
        "% of rows with missing Age: 20",
        "# Plan",
        "# find the best threshold later",  # a comment that reads like a sentence starts with no path
        "!Important: use the validation split",
        "PS: the model overfits",
        "In other words, the split leaks.",
        "... and the loss kept falling",
        "> quoted reply from the user",
        "C:\\work> ",
        "2025-03-04 12:00:01 loss 0.31",
        "\x1b[32mepoch 3\x1b[0m loss 0.2",
        "the total \u00bb is 5",
    ],
)
def test_output_lines_that_look_like_prompts_stay_text(line):
    text = f"Results\n{line}\nend\n"
    typed = _typed(text)
    if line.startswith("# find"):
        # ``find`` is a command word: a bare root prompt before it is read as a command (fail closed).
        assert typed == [(K.COMMAND, "find the best threshold later")]
        return
    assert typed == []


def test_continuation_prompts_are_removed_and_blocks_end_where_they_end():
    text = (
        "$ cat > make_sub.py << 'EOF'\n"
        "> import pandas as pd\n"
        "> pd.DataFrame({'id': [1, 2]}).to_csv('/home/submission/submission.csv')\n"
        "> EOF\n"
        "$ python make_sub.py\n"
        "> quoted output line, not a continuation\n"
        ">>> for i in range(2):\n"
        "...     print(i)\n"
        "0\n"
        "In [4]: def f(x):\n"
        "   ...:     return x + 1\n"
        "Out[4]: None\n"
        "$ echo \"a\n"
        "> b\" | tee notes.txt\n"
        "done\n"
    )
    assert _typed(text) == [
        (K.COMMAND, "cat > make_sub.py << 'EOF'\nimport pandas as pd\n"
                    "pd.DataFrame({'id': [1, 2]}).to_csv('/home/submission/submission.csv')\nEOF"),
        (K.COMMAND, "python make_sub.py"),
        (K.CODE, "for i in range(2):\n    print(i)"),
        (K.CODE, "def f(x):\n    return x + 1"),
        (K.COMMAND, 'echo "a\nb" | tee notes.txt'),
    ]


def test_a_heredoc_typed_without_continuation_prompts_is_read_to_its_delimiter():
    text = "$ cat > a.py <<EOF\nimport os\nprint(os.getcwd())\nEOF\nafter\n$ python a.py\n"
    assert _typed(text) == [(K.COMMAND, "cat > a.py <<EOF\nimport os\nprint(os.getcwd())\nEOF"),
                            (K.COMMAND, "python a.py")]


def test_powershell_here_string_into_the_submission_is_one_command_with_its_body():
    text = (
        "PS C:\\work> Get-ChildItem\n"
        "Name\n----\ndata\n"
        "PS C:\\work> @\"\n"
        ">> id,label\n"
        ">> a1,cat\n"
        ">> a2,dog\n"
        ">> \"@ | Set-Content -Encoding ascii C:\\work\\submission\\submission.csv\n"
        "PS C:\\work> @'\n"
        "id,label\n"
        "b1,cat\n"
        "'@ | Out-File submission.csv\n"
        "PS C:\\work> Write-Output `\n"
        "  done > log.txt\n"
        "PS C:\\work>\n"
    )
    assert _typed(text) == [
        (K.COMMAND, "Get-ChildItem"),
        (K.COMMAND, '@"\nid,label\na1,cat\na2,dog\n"@ | Set-Content -Encoding ascii '
                    "C:\\work\\submission\\submission.csv"),
        (K.COMMAND, "@'\nid,label\nb1,cat\n'@ | Out-File submission.csv"),
        (K.COMMAND, "Write-Output `\n  done > log.txt"),
    ]


def test_verbatim_hits_keep_continuation_prompts_in_the_slice():
    text = ">>> x = 1\n... y = 2\n"
    [hit] = find_prompts(text, 0, len(text), verbatim=True)
    assert hit.text is None and text[hit.start:hit.end] == "x = 1\n... y = 2"
    plain = match_prompt(text, 0, len(text))
    assert plain is not None and plain.text == "x = 1\ny = 2"


def test_pylogging_records_with_typed_commands():
    text = (
        "2025-01-08 14:02:11,208 - runner - INFO - start\n"
        "2025-01-08 14:02:12,208 - runner - INFO - $ python train.py --fold 0\n"
        "2025-01-08 14:02:13,208 - runner - INFO - executing:\n"
        "root@box:/home/code# cp preds.csv /home/submission/submission.csv\n"
        "copied\n"
        "2025-01-08 14:02:14,208 - runner - INFO - >>> import os\n"
        "... print(os.listdir('.'))\n"
    )
    reading = parse_log("logs/run.log", text)
    assert reading.log_format == "pylogging"
    assert [(e.kind, e.role, e.text) for e in reading.events] == [
        (K.OUTPUT, "runner", "start"),
        (K.COMMAND, "runner", "python train.py --fold 0"),
        (K.OUTPUT, "runner", "executing:"),
        (K.COMMAND, "runner", "cp preds.csv /home/submission/submission.csv"),
        (K.OUTPUT, "runner", "copied"),
        (K.CODE, "runner", "import os\n... print(os.listdir('.'))"),
    ]
    for event in reading.events:
        assert text[event.span.start_byte:event.span.end_byte] == event.text


def test_runlog_lines_with_typed_commands_keep_their_actor():
    text = (
        "[2024-05-01 12:00:00,123] [run.py:10] Run started\n"
        "[2024-05-01 12:00:01,123] [run.py:11] [Container] + cd /home/agent\n"
        "[2024-05-01 12:00:02,123] [run.py:12] [Container] agent@box:~$ cat /private/data/answers.csv\n"
        "[2024-05-01 12:00:03,123] [run.py:13] $ docker cp run:/home/submission .\n"
    )
    reading = parse_log("logs/host.log", text)
    assert reading.log_format == "runlog"
    assert [(e.kind, e.role, e.actor, e.text) for e in reading.events] == [
        (K.OUTPUT, "host", Actor.OPERATOR, "Run started"),
        (K.OUTPUT, "container", Actor.UNKNOWN, "+ cd /home/agent"),
        (K.COMMAND, "container", Actor.UNKNOWN, "cat /private/data/answers.csv"),
        (K.COMMAND, "host", Actor.OPERATOR, "docker cp run:/home/submission ."),
    ]


def test_steplog_observations_with_typed_commands():
    text = (
        "2025-03-04 09:12:11 ACTION shell\n"
        "bash session.sh\n"
        "2025-03-04 09:12:12 OBSERVATION\n"
        "$ wget -q https://example.org/labels.csv\n"
        "saved labels.csv\n"
        "2025-03-04 09:12:20 THOUGHT\n"
        "Next I could run $ rm -rf /home/data but will not.\n"
    )
    reading = parse_log("logs/agent.log", text)
    assert reading.log_format == "steplog"
    assert [(e.kind, e.actor, e.text) for e in reading.events] == [
        (K.COMMAND, Actor.AGENT, "bash session.sh"),
        (K.COMMAND, Actor.AGENT, "wget -q https://example.org/labels.csv"),
        (K.OUTPUT, Actor.AGENT, "saved labels.csv"),
        (K.MESSAGE, Actor.AGENT, "Next I could run $ rm -rf /home/data but will not."),
    ]


@pytest.mark.parametrize(
    "line",
    ["PS " + "a" * 200_000, "a@" * 100_000, "$ " + "'" * 200_000, "bash-" + "5." * 100_000,
     "In [" + "1" * 200_000, "% " + "a" * 200_000, "(" + "x" * 200_000, "[a@b " + "c" * 200_000,
     "$ cat <<EOF " * 20_000, "PS C:\\> @\"" + " `" * 100_000, "\x1b[0m" * 100_000,
     "a@b" + "\x1b[0m" * 100_000 + "x", "\u279c " + "a" * 200_000, "a@b:" + "\x1b]" * 100_000],
)
def test_prompt_matching_is_linear_on_long_lines(line):
    started = time.perf_counter()
    read_log_events("logs/session.txt", (line + "\n") * 3)
    assert time.perf_counter() - started < 5
