"""Every make target the README tells a user to run installs the Debian packages first (`make deps`).

On a fresh machine the first command must not fail for want of a header (issue 10 item 0: `make demo` died
on json-c/json.h).  `make -n TARGET` prints what TARGET would run, in order, recursing into sub-makes: the
first command must be the deps check, so nothing compiles before the packages are installed, even with -j.
"""
import os
import re
import subprocess

import pytest
from conftest import REPO

# `make`, `make demo`, `make SANITIZE=1 test`, ... in the README's code (fenced blocks and inline code).
_MAKE_RE = re.compile(r"(?:^|`)make((?:\s+[A-Z_]+=\S+)*)(?:\s+([a-z][\w-]*))?\s*(?:`|#|$)", re.M)


def documented_targets():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = f.read()
    found = {}
    for m in _MAKE_RE.finditer(text):
        target = m.group(2) or ""  # "" is the default goal: plain `make`
        if target not in ("deps", "clean"):
            found[" ".join(m.group(1).split() + [target]).strip()] = (m.group(1).split(), target)
    return found


def test_readme_documents_the_entry_targets():
    assert {"", "demo", "test", "bench"} <= {t for _, t in documented_targets().values()}


def _dry_run(target, variables):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    cmd = ["make", "-n", "--no-print-directory", *variables] + ([target] if target else [])
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    commands = re.sub(r"\\\n", " ", p.stdout)  # a recipe line continued with a backslash is one command
    return [line for line in commands.splitlines() if line.strip()]


@pytest.mark.parametrize("command", sorted(documented_targets()), ids=lambda c: c or "default")
def test_entry_target_installs_deps_first(command):
    variables, target = documented_targets()[command]
    lines = _dry_run(target, variables)
    assert lines, f"make -n {command} printed nothing"
    assert "dpkg-query" in lines[0] and "apt-get install" in lines[0], \
        f"`make {command}` runs {lines[0][:120]!r} before installing the Debian packages (make deps)"
