"""Running one scenario: render, write scenario.json, run the engine, collect outputs atomically.

Outputs go to a hidden temporary directory beside the final one and are renamed into place only when the
engine succeeded, so a failed run never leaves a half-written run directory behind.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

from . import InputError, engine_path
from . import scenario as scn


def default_run_name(seed, sets):
    name = f"seed{seed}"
    if sets:
        tail = "_".join(f"{k}={v}" for k, v in sorted(sets.items()))
        tail = re.sub(r"[^A-Za-z0-9_.=+-]", "-", tail)
        if len(tail) > 80:
            tail = hashlib.sha1(tail.encode()).hexdigest()[:12]
        name += "-" + tail
    return name


def _missing_dirs(path):
    """Directories of `path` that do not exist yet, deepest first."""
    out = []
    path = os.path.abspath(path)
    while path and not os.path.isdir(path):
        out.append(path)
        path = os.path.dirname(path)
    return out


def run_scenario(path, sets=None, seed=None, out="out", run_name=None, quiet=False, doc=None):
    """Render and run; returns the run directory.  Raises InputError (exit 2) or RuntimeError."""
    sets = dict(sets or {})
    if doc is None:
        doc = scn.render(path, sets)
    cfg = scn.resolved(doc, seed)
    if "seed" in cfg and (not isinstance(cfg["seed"], int) or isinstance(cfg["seed"], bool) or cfg["seed"] < 0):
        raise InputError(f"{path}: field 'seed': expected a non-negative integer, got {cfg['seed']!r}")
    eff_seed = cfg.get("seed", 1)
    name = scn.scenario_name(path, doc)
    parent = os.path.join(out, name)
    final = os.path.join(parent, run_name or default_run_name(eff_seed, sets))
    engine = engine_path()
    if not os.access(engine, os.X_OK):
        raise RuntimeError(f"engine binary {engine} not found: run `make` first")
    created = _missing_dirs(parent)
    os.makedirs(parent, exist_ok=True)
    tmp = os.path.join(parent, f".{os.path.basename(final)}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        with open(os.path.join(tmp, "scenario.json"), "w", encoding="utf-8") as f:
            scn.dump_json(cfg, f)
        cmd = [engine, "--config", os.path.join(tmp, "scenario.json"), "--out", tmp, "--source", path]
        if quiet:
            cmd.append("--quiet")
        # The engine's stderr is ours: its progress line needs the terminal, and its config errors are
        # already the one-line message the user should see.
        sys.stderr.flush()
        proc = subprocess.run(cmd)
        if proc.returncode == 2:
            raise InputError("")
        if proc.returncode != 0:
            raise RuntimeError(f"engine failed (status {proc.returncode}) on {path}")
        if os.path.exists(final):
            old = f"{final}.old-{os.getpid()}"
            os.rename(final, old)
            shutil.rmtree(old)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in created:  # deepest first; only the ones this run made, and only if still empty
            try:
                os.rmdir(d)
            except OSError:
                break
        raise
    return final


def load_metrics(rundir):
    with open(os.path.join(rundir, "metrics.json"), encoding="utf-8") as f:
        return json.load(f)
