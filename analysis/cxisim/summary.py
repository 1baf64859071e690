"""Reading run directories: metrics, resolved scenario, wall time; and the summary table."""
import json
import math
import os

from . import InputError


class Run:
    def __init__(self, path, scenario, metrics, runinfo):
        self.dir = path
        self.scenario = scenario
        self.metrics = metrics
        self.runinfo = runinfo
        self.params = flatten(scenario)

    @property
    def name(self):
        return self.metrics.get("scenario") or self.scenario.get("name") or os.path.basename(os.path.dirname(self.dir))

    def get(self, dotted, default=None):
        """A metrics value by dotted path; "a.b|c.d" takes the first path present (the same quantity in
        different models, e.g. the modelled server's rate and the replay clients' rate).  A run directory is
        input like any other: a value of the wrong type (a hand-edited or foreign metrics.json) is refused
        with the file and the field named, not met later as a TypeError."""
        for path in dotted.split("|"):
            v = lookup(self.metrics, path)
            if v is not None:
                return _checked(self.dir, path, v)
        return default

    @property
    def wall(self):
        """run.json's wall time in seconds, None when absent."""
        return self.runinfo.get("wall_time_s")


# Metrics leaves the analysis reads that are not numbers (by their last name); every other leaf it reads is
# a finite number.
LABELS = ("strategy", "op", "mr_method", "topology", "stop_reason", "scenario")
FLAGS = ("stationary",)


def _checked(rundir, path, v, what="metrics.json"):
    leaf = path.rsplit(".", 1)[-1]
    if isinstance(v, (dict, list)):
        return v
    if leaf in LABELS:
        ok, want = isinstance(v, str), "a string"
    elif leaf in FLAGS:
        ok, want = isinstance(v, bool), "true or false"
    else:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        want = "a finite number"
    if not ok:
        raise InputError(f"{os.path.join(rundir, what)}: field '{path}': expected {want}, got {json.dumps(v)[:40]}")
    return v


def flatten(d, prefix=""):
    out = {}
    for k, v in (d or {}).items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def lookup(d, dotted, default=None):
    node = d
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def _json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def is_run(path):
    return os.path.isfile(os.path.join(path, "metrics.json")) and os.path.isfile(os.path.join(path, "scenario.json"))


def load_run(path):
    docs = {}
    for name in ("metrics.json", "scenario.json", "run.json"):
        f = os.path.join(path, name)
        if name == "run.json" and not os.path.isfile(f):
            docs[name] = {}  # optional: wall time and host facts only
            continue
        try:
            docs[name] = _json(f)
        except (OSError, ValueError) as e:
            raise InputError(f"{f}: not a run directory's {name} ({e})") from None
        if not isinstance(docs[name], dict):
            raise InputError(f"{f}: not a run directory's {name} (a JSON object expected, got "
                             f"{type(docs[name]).__name__})")
    info = docs["run.json"]
    if "wall_time_s" in info:
        _checked(path, "wall_time_s", info["wall_time_s"], "run.json")
    return Run(path, docs["scenario.json"], docs["metrics.json"], info)


def find_runs(paths):
    """Run directories named directly, or found (recursively, skipping hidden entries) under directories."""
    found = []
    for p in paths:
        if not os.path.exists(p):
            raise InputError(f"{p}: No such file or directory")
        if is_run(p):
            found.append(p)
            continue
        for root, dirs, _files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            if is_run(root):
                found.append(root)
                dirs[:] = []
    if not found:
        raise InputError(f"{', '.join(paths)}: no run directories (metrics.json + scenario.json) found")
    return [load_run(d) for d in found]


def varying(runs, exclude=()):
    """Scenario fields whose value differs between runs (dotted keys, in first-seen order)."""
    keys = []
    for r in runs:
        for k in r.params:
            if k not in keys:
                keys.append(k)
    out = []
    for k in keys:
        if k in exclude:
            continue
        vals = {json.dumps(r.params.get(k), sort_keys=True) for r in runs}
        if len(vals) > 1:
            out.append(k)
    return out


def fmt_rate(v):
    return "-" if v is None else f"{v / 1e6:.3f}"


# Summary columns: (header, metrics path, formatter)
COLUMNS = [
    ("M RPC/s", "rpc_server.rpc_rate|replay.rpc_rate", fmt_rate),
    ("answered", "replay.answered", lambda v: "-" if v is None else str(v)),
    ("dup", "replay.duplicates", lambda v: "-" if v is None else str(v)),
    ("p50 us", "rpc_client.latency_ns.p50", lambda v: "-" if v is None else f"{v / 1e3:.2f}"),
    ("p99 us", "rpc_client.latency_ns.p99", lambda v: "-" if v is None else f"{v / 1e3:.2f}"),
    ("GB/s", "rpc_client.bulk.bandwidth_gbs", lambda v: "-" if v is None else f"{v:.2f}"),
    ("lost", "rpc_client.lost", lambda v: "-" if v is None else str(v)),
]


def table(runs, keys=None, points=None):
    """A plain-text table: the swept keys (values from `points`, else from each run's scenario), then the main
    metrics present in any run, then wall time."""
    keys = keys if keys is not None else varying(runs)
    cols = [c for c in COLUMNS if any(r.get(c[1]) is not None for r in runs)]
    head = [k.split(".")[-1] for k in keys] + [c[0] for c in cols] + ["wall s"]
    rows = []
    for i, r in enumerate(runs):
        src = points[i] if points else r.params
        row = [str(src.get(k, "")) for k in keys]
        row += [c[2](r.get(c[1])) for c in cols]
        w = r.wall
        row.append("-" if w is None else f"{w:.2f}")
        rows.append(row)
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows]
    return "\n".join(lines)
