"""Shared pytest fixtures: run the front end and the engine the way users do."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD = os.environ.get("CXISIM_BUILD", "build")
ENGINE = os.path.join(REPO, BUILD, "bin", "cxisim-engine")
CXISIM = os.path.join(REPO, "cxisim")

sys.path.insert(0, os.path.join(REPO, "analysis"))

# Counters as the engine writes them, for every test: an absent counter reads as 0, and metrics.json
# summarises per-entity counters by family (their values are in telemetry.csv).  Tests import these from
# cxisim.counters, the reader the analysis front end uses, rather than indexing metrics.json directly.
from cxisim.counters import counters, telemetry_counters  # noqa: E402,F401


def _run_cli(args, cwd, check=False):
    env = dict(os.environ, CXISIM_BUILD=BUILD)
    proc = subprocess.run([sys.executable, CXISIM, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"cxisim {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


@pytest.fixture
def cxisim(tmp_path):
    """cxisim(*args, check=False) -> CompletedProcess, run in a scratch directory (outputs go there)."""
    def run(*args, check=False):
        return _run_cli([str(a) for a in args], cwd=tmp_path, check=check)
    return run


@pytest.fixture
def run_scenario(tmp_path):
    """run_scenario(template, sets={}, seed=None, run=None) -> (rundir, metrics dict).

    `template` is a path (relative paths are taken from the repository) or YAML/Jinja2 text containing a
    newline, which is written to a scratch file first."""
    counter = [0]

    def run(template, sets=None, seed=None, run=None):
        if "\n" in template:
            counter[0] += 1
            path = tmp_path / f"inline{counter[0]}.yaml.j2"
            path.write_text(template)
        else:
            path = template if os.path.isabs(template) else os.path.join(REPO, template)
        args = ["run", str(path), "--out", str(tmp_path / "out")]
        for k, v in (sets or {}).items():
            args += ["--set", f"{k}={v}"]
        if seed is not None:
            args += ["--seed", str(seed)]
        if run is not None:
            args += ["--run", run]
        proc = _run_cli(args, cwd=tmp_path, check=True)
        rundir = proc.stdout.strip().splitlines()[-1]
        with open(os.path.join(rundir, "metrics.json"), encoding="utf-8") as f:
            return rundir, json.load(f)
    return run


@pytest.fixture
def engine():
    """Path of the engine binary under test."""
    assert os.access(ENGINE, os.X_OK), f"{ENGINE} missing: run make"
    return ENGINE
