"""Running one scenario: render, write scenario.json, run the engine, collect outputs atomically.

Outputs go to a hidden temporary directory beside the final one and are renamed into place only when the
engine succeeded, so a failed or interrupted run (Ctrl-C, SIGTERM) never leaves a half-written run
directory behind.  The run directory is OUT/NAME/RUN, where NAME (the scenario's `name`) and RUN (--run)
are single path components (inputs.check_name), so a run never writes outside its output root.
"""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

from . import InputError, engine_path
from . import inputs
from . import scenario as scn

_engines = set()   # engine processes running now (a sweep runs several, from worker threads)
_engines_lock = threading.Lock()
_stopping = False


def stop_engines():
    """Kill every engine this process runs, and start no other (Ctrl-C or SIGTERM during a sweep)."""
    global _stopping
    with _engines_lock:
        _stopping = True
        for p in _engines:
            p.kill()


@contextlib.contextmanager
def interrupts_held(signals=(signal.SIGINT, signal.SIGTERM)):
    """SIGNALS that arrive while the block runs take effect right after it, through the handlers in place
    before it.  An interrupt that landed inside subprocess.Popen -- after the fork, before Popen returns --
    would raise there and orphan the process it had just started (nothing holds its Popen yet).  Python
    runs signal handlers in the main thread only, so other threads need no holding."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got = []
    old = {}
    try:
        for s in signals:
            old[s] = signal.signal(s, lambda n, f: got.append(n))
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    for s in got:
        signal.raise_signal(s)  # the restored handler raises here, in the caller's try


def _run_engine(cmd):
    proc = None
    try:
        with interrupts_held(), _engines_lock:
            if _stopping:
                raise RuntimeError("stopped")
            proc = subprocess.Popen(cmd)
            _engines.add(proc)
        return proc.wait()
    except BaseException:
        if proc is not None:
            proc.kill()
            proc.wait()
        raise
    finally:
        if proc is not None:
            with _engines_lock:
                _engines.discard(proc)


def default_run_name(seed, sets):
    name = f"seed{seed}"
    if sets:
        name += "-" + inputs.dir_name("_".join(f"{k}={v}" for k, v in sorted(sets.items())))
    return name


def staging_path(final):
    """Where FINAL is written before it is renamed into place: a hidden sibling named after it and this
    process, so that an interrupted or failed write never leaves a half-written FINAL."""
    return os.path.join(os.path.dirname(final), f".{os.path.basename(final)}.tmp-{os.getpid()}")


def missing_dirs(path):
    """Directories of `path` that do not exist yet, deepest first."""
    out = []
    path = os.path.abspath(path)
    while path and not os.path.isdir(path):
        out.append(path)
        path = os.path.dirname(path)
    return out


def remove_created(created):
    for d in created:  # deepest first; only the ones this run made, and only if still empty
        try:
            os.rmdir(d)
        except FileNotFoundError:
            continue  # a parallel point that made it too removed it first: its parent may still be empty
        except OSError:
            break


def run_scenario(path, sets=None, seed=None, out="out", run_name=None, quiet=False, doc=None):
    """Render and run; returns the run directory.  Raises InputError (exit 2) or RuntimeError."""
    sets = dict(sets or {})
    if doc is None:
        doc = scn.render(path, sets)
    cfg = scn.resolved(doc, seed)
    eff_seed = cfg.get("seed", 1)
    name = scn.scenario_name(path, doc)
    if run_name is not None:
        inputs.check_name(run_name, "--run")
    parent = os.path.join(out, name)
    final = os.path.join(parent, run_name or default_run_name(eff_seed, sets))
    engine = engine_path()
    if not os.access(engine, os.X_OK):
        raise RuntimeError(f"engine binary {engine} not found: run `make` first")
    created = missing_dirs(parent)
    tmp = staging_path(final)
    try:
        os.makedirs(parent, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    except OSError as e:
        remove_created(created)
        raise InputError(f"--out {out}: cannot create {e.filename or parent}: {e.strerror}") from None
    try:
        with open(os.path.join(tmp, "scenario.json"), "w", encoding="utf-8") as f:
            scn.dump_json(cfg, f)
        cmd = [engine, "--config", os.path.join(tmp, "scenario.json"), "--out", tmp, "--source", path]
        if quiet:
            cmd.append("--quiet")
        # The engine's stderr is ours: its progress line needs the terminal, and its config errors are
        # already the one-line message the user should see.
        sys.stderr.flush()
        rc = _run_engine(cmd)
        if rc == 2:
            raise InputError("")
        if rc != 0:
            raise RuntimeError(f"engine failed (status {rc}) on {path}")
        if os.path.exists(final):
            old = f"{tmp}.old"
            os.rename(final, old)
            shutil.rmtree(old)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        remove_created(created)
        raise
    return final


def load_metrics(rundir):
    with open(os.path.join(rundir, "metrics.json"), encoding="utf-8") as f:
        return json.load(f)
