"""Sweeps: a scenario's parameter lists expanded into points, run in parallel or emitted as a Slurm array.

A scenario declares its sweep in the reserved top-level `sweep:` mapping (stripped before the engine sees
the config).  Each key is a template variable or a dotted field of the rendered scenario, exactly as for
`--set`; each value is a list.  The points are the cartesian product, in the order the keys are written
(the last key varies fastest).  `--vary key=v1,v2` on the command line replaces or adds a list.

With a command (`cxisim sweep SCENARIO ... -- CMD`), each point runs CMD under `cxisim exec` with the
point's scenario (the emulation daemon, e.g. a real server against replay clients), one point at a time;
`{key}` in CMD's arguments is replaced by the point's (or --set) value of that variable.  The run directory
gets the daemon's outputs, scenario.json and command.out (CMD's output).
"""
import concurrent.futures
import itertools
import json
import os
import shlex
import shutil
import string
import subprocess
import sys
import time

from . import InputError, REPO, Terminated
from . import inputs
from . import run as runmod
from . import scenario as scn


def parse_vary(items):
    """['clients=104,208', 'strategy=[a, b]'] -> {'clients': [104, 208], 'strategy': ['a', 'b']}."""
    out = {}
    for item in items or []:
        if "=" not in item:
            raise InputError(f"--vary '{item}': expected key=v1,v2,...")
        key, raw = item.split("=", 1)
        key = key.strip()
        if not key or any(not p for p in key.split(".")):
            raise InputError(f"--vary '{item}': empty field name")
        raw = raw.strip()
        if raw.startswith("["):
            values = scn.parse_value(item, raw, "--vary")
        else:
            values = [scn.parse_value(item, v, "--vary") for v in raw.split(",")]
        if not isinstance(values, list) or not values:
            raise InputError(f"--vary '{item}': expected a non-empty list")
        out[key] = values
    return out


def sweep_lists(path, doc, vary):
    """The sweep's {key: [values]} from the rendered doc's `sweep:` and the --vary overrides."""
    lists = {}
    raw = doc.get("sweep")
    if raw is not None:
        if not isinstance(raw, dict):
            raise InputError(f"{path}: field 'sweep': expected a mapping of parameter lists")
        for key, values in raw.items():
            if not isinstance(values, list) or not values:
                raise InputError(f"{path}: field 'sweep.{key}': expected a non-empty list")
            for v in values:
                if isinstance(v, (dict, list)):
                    raise InputError(f"{path}: field 'sweep.{key}': values must be scalars")
            lists[str(key)] = values
    lists.update(vary)
    return lists


def expand(lists):
    """Cartesian product as a list of ordered dicts."""
    keys = list(lists)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(lists[k] for k in keys))]


def point_name(point):
    if not point:
        return "base"
    return inputs.dir_name("_".join(f"{k.split('.')[-1]}={v}" for k, v in point.items()), 200)


class Sweep:
    """A rendered sweep: the template, the fixed --set values, and its points."""

    def __init__(self, template, sets=None, vary=None, seed=None, out="out", command=None):
        self.template = template
        self.command = list(command or [])
        self.sets = dict(sets or {})
        self.seed = seed
        self.out = out
        doc = scn.render(template, self.sets)
        self.name = scn.scenario_name(template, doc)
        self.lists = sweep_lists(template, doc, dict(vary or {}))
        for key in self.lists:
            if key in self.sets:
                raise InputError(f"{template}: '{key}' is both swept and fixed with --set")
        self.points = expand(self.lists)
        # Render every point now, so a bad value fails before anything runs (exit 2, nothing written).
        self.docs = [scn.render(template, {**self.sets, **p}) for p in self.points]
        names = [point_name(p) for p in self.points]
        if len(set(names)) != len(names):
            raise InputError(f"{template}: sweep points are not distinct: {names}")
        self.run_names = names
        # Check the command's {key} references now, too.
        for p in self.points:
            self.command_for(p)

    def command_for(self, point):
        """CMD with {key} replaced by the point's (or --set) values."""
        values = {**self.sets, **point}
        out = []
        for a in self.command:
            try:
                out.append(string.Formatter().vformat(a, (), values))
            except (KeyError, IndexError) as e:
                raise InputError(f"command argument '{a}': {e} is not a swept or --set variable") from None
            except ValueError as e:
                raise InputError(f"command argument '{a}': {e} (write {{{{ and }}}} for literal braces)") from None
        return out

    def run_exec(self, i):
        """One point under `cxisim exec`: returns its run directory."""
        point = self.points[i]
        parent = self.dir
        final = os.path.join(parent, self.run_names[i])
        os.makedirs(parent, exist_ok=True)
        tmp = runmod.staging_path(final)
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        try:
            with open(os.path.join(tmp, "scenario.json"), "w", encoding="utf-8") as f:
                scn.dump_json(scn.resolved(self.docs[i], self.seed), f)
            args = [sys.executable, os.path.join(REPO, "cxisim"), "exec", "--scenario", self.template,
                    "--out", tmp]
            for k, v in {**self.sets, **point}.items():
                args += ["--set", f"{k}={json.dumps(v) if not isinstance(v, str) else v}"]
            if self.seed is not None:
                args += ["--seed", str(self.seed)]
            args += ["--", *self.command_for(point)]
            with open(os.path.join(tmp, "command.out"), "w") as log:
                rc = subprocess.call(args, stdout=log, stderr=subprocess.STDOUT)
            if rc != 0:
                with open(os.path.join(tmp, "command.out")) as f:
                    tail = f.read()[-2000:]
                if rc == 2:
                    raise InputError(tail.strip())
                raise RuntimeError(f"point {self.run_names[i]}: status {rc}:\n{tail}")
            if os.path.exists(final):
                shutil.rmtree(final)
            os.rename(tmp, final)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return final

    @property
    def dir(self):
        return os.path.join(self.out, self.name)

    def index(self, results=None):
        pts = []
        for i, p in enumerate(self.points):
            e = {"params": p, "run": self.run_names[i]}
            if results and results[i] is not None:
                e["wall_time_s"] = round(results[i], 6)  # as run.json: a small point takes well under 1 ms
            pts.append(e)
        return {"scenario": self.name, "template": os.path.abspath(self.template), "sets": self.sets,
                "seed": self.seed, "sweep": self.lists, "points": pts}

    def write_index(self, results=None):
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, "sweep.json")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(self.index(results), f, indent=2)
            f.write("\n")
        os.replace(path + ".tmp", path)
        return path

    def run(self, jobs=None, log=sys.stderr):
        """Run every point, `jobs` at a time; returns the run directories in point order."""
        # Points with a real command compete for the cores with their own daemon: one at a time by default.
        jobs = max(1, jobs or (1 if self.command else os.cpu_count() or 1))
        n = len(self.points)
        dirs, walls = [None] * n, [None] * n

        def one(i):
            t0 = time.monotonic()
            if self.command:
                return i, self.run_exec(i), time.monotonic() - t0
            d = runmod.run_scenario(self.template, {**self.sets, **self.points[i]}, seed=self.seed, out=self.out,
                                    run_name=self.run_names[i], quiet=True, doc=self.docs[i])
            return i, d, time.monotonic() - t0

        created = runmod.missing_dirs(self.dir)
        try:
            self._run_points(one, n, jobs, dirs, walls, log)
        except BaseException:
            runmod.remove_created(created)  # a sweep that failed at once leaves no empty scenario directory
            raise
        self.write_index(walls)
        return dirs

    def _run_points(self, one, n, jobs, dirs, walls, log):
        done = 0
        futs = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
            # Submitting is inside the try: a worker starts its engine while the main thread is still
            # submitting the next point (on a loaded host it may not run again before that engine is up),
            # and a Ctrl-C or SIGTERM landing there must stop the running engines too -- outside the try,
            # the pool's exit waited for them to finish their whole run.
            try:
                for i in range(n):
                    futs.append(ex.submit(one, i))
                for fut in concurrent.futures.as_completed(futs):
                    i, d, wall = fut.result()
                    dirs[i], walls[i] = d, wall
                    done += 1
                    if log:
                        print(f"[{done}/{n}] {self.run_names[i]}  {wall:.1f} s", file=log, flush=True)
            except BaseException:
                for f in futs:
                    f.cancel()
                # Ctrl-C, SIGTERM, or a point's bad input (the sweep is bad input: exit 2, and the other
                # points would only run to completion for nothing): the running points go too, cleaned up.
                runmod.stop_engines()
                raise

    def collect(self):
        """The points' run directories as a finished run left them (a Slurm array's tasks): sweep.json with
        each point's wall time from its run.json, as run() writes it.  A missing point is bad input."""
        dirs, walls = [], []
        for name in self.run_names:
            d = os.path.join(self.dir, name)
            info = os.path.join(d, "run.json")
            if not os.path.isfile(os.path.join(d, "metrics.json")) or not os.path.isfile(info):
                raise InputError(f"{d}: point not run (no metrics.json or run.json)")
            with open(info, encoding="utf-8") as f:
                walls.append(json.load(f).get("wall_time_s"))
            dirs.append(d)
        self.write_index(walls)
        return dirs

    def slurm_script(self, path, python="/usr/bin/python3", max_parallel=None, time_limit="00:30:00",
                     extra=None):
        """Write a Slurm job-array script (one task per point) and the points file it reads.  The script
        first: a path that cannot be written is bad input, and leaves no points file behind."""
        idx = os.path.join(self.dir, "sweep.json")
        # The paths go into the script's lines (comments and #SBATCH --output): a line break in one of them
        # would make the rest of it a command of the job.
        for opt, value in (("--slurm", path), ("--out", self.out), ("SCENARIO", self.template),
                           ("repository", REPO)):
            if inputs.has_control(os.path.abspath(value)):
                raise InputError(f"{opt} {value!r}: a job script cannot name a path with line breaks or "
                                 "control characters")
        n = len(self.points)
        array = f"0-{n - 1}" + (f"%{max_parallel}" if max_parallel else "")
        cxisim = os.path.join(REPO, "cxisim")
        out = os.path.abspath(self.out)
        lines = [
            "#!/bin/bash",
            f"#SBATCH --job-name=cxisim-{self.name}",
            f"#SBATCH --array={array}",
            "#SBATCH --ntasks=1",
            "#SBATCH --cpus-per-task=1",
            f"#SBATCH --time={time_limit}",
            f"#SBATCH --output={out}/{self.name}/slurm-%A_%a.log",
        ]
        for e in extra or []:
            lines.append(f"#SBATCH {e}")
        lines += [
            f"# cxisim sweep of {os.path.abspath(self.template)}: {n} points, listed in",
            f"# {os.path.abspath(idx)}.  Submit with: sbatch {path}",
            "set -euo pipefail",
            f"cd {shlex.quote(REPO)}",
            f"mapfile -t ARGS < <({python} - \"$SLURM_ARRAY_TASK_ID\" <<'EOF'",
            "import json, sys",
            f"idx = json.load(open({json.dumps(os.path.abspath(idx))}))",
            "p = idx['points'][int(sys.argv[1])]",
            "print(idx['template'])",
            "for k, v in {**idx['sets'], **p['params']}.items():",
            "    print('--set'); print(f'{k}={json.dumps(v) if not isinstance(v, str) else v}')",
            "if idx['seed'] is not None:",
            "    print('--seed'); print(idx['seed'])",
            "print('--run'); print(p['run'])",
            "EOF",
            ")",
            f"exec {python} {shlex.quote(cxisim)} run \"${{ARGS[@]}}\" --out {shlex.quote(out)}",
        ]
        try:
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
        except OSError as e:
            raise InputError(f"--slurm {path}: {e.strerror}") from None
        try:
            self.write_index()
        except OSError as e:
            os.remove(path)
            raise InputError(f"--out {self.out}: cannot write {e.filename or self.dir}: {e.strerror}") from None
        os.chmod(path, 0o755)
        return path
