"""The README's commands run as printed (issue 46): every command line of its code
blocks, from a folder holding what the README's install makes (``.venv``) and the
checkout's ``examples/`` and ``patches/``, with the exit code its ``# exit N`` says."""

import os
import re
import shlex
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")


def readme_blocks() -> list:
    """Per shell code block of the README, its commands in order: (command,
    expected exit code or None); an install line keeps what follows its last ``&&``."""
    blocks, fenced, language = [], [], None
    for line in open(README).read().splitlines():  # fences paired in order: a block opens, the next closes
        if line.startswith("```"):
            if language is None:
                language, fenced = line[3:].strip() or "shell", []
            else:
                if language == "shell":
                    blocks.append(fenced)
                language = None
        elif language is not None:
            fenced.append(line)
    out = []
    for block in blocks:
        commands = []
        for line in block:
            line = line.strip()
            if not line.startswith((".venv/bin/", "python3 -m venv")):
                continue
            command, _, note = line.partition("#")
            expected = re.search(r"exit (\d+)", note)
            command = command.split("&&")[-1].strip()
            commands.append((command, int(expected.group(1)) if expected else None))
        if commands:
            out.append(commands)
    return out


def readme_commands() -> list:
    return [command for block in readme_blocks() for command in block]


def test_the_readme_is_short_and_gives_its_two_commands_first():
    lines = open(README).read().splitlines()
    assert len(lines) <= 200
    first_block = "\n".join(lines[:6])
    assert "pip install -e" in first_block and 'pytest -m "not slow" -n 2' in first_block
    assert all(expected is not None or "pytest -m" in command for command, expected in readme_commands())


@pytest.mark.slow
@pytest.mark.parametrize("block", readme_blocks(), ids=lambda block: block[0][0].split()[1])
def test_every_readme_command_runs_as_printed(tmp_path, block):
    """A block's commands in order, in one folder (a replay reads the report its bisect wrote)."""
    for name in (".venv", "examples", "patches"):
        os.symlink(os.path.join(ROOT, name), tmp_path / name)
    for command, expected in block:
        words = shlex.split(command)
        if expected is None:  # the test command: the tests collect (running them here would run them twice)
            words += ["--collect-only", "-q", "--rootdir", ROOT, os.path.join(ROOT, "tests")]
            expected = 0
        done = subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert done.returncode == expected, (command, done.stdout[-2000:], done.stderr[-2000:])
