"""Ranking flow-control policies: `cxisim plot RUNS --kind rank`.

A policy is what tells runs apart besides the client count (e.g. match mode x receive strategy x protocol of
scenarios/policy-matrix.yaml.j2).  For each client count the policies are ranked by the server's RPC rate,
with its 95% confidence interval (batch means, metrics.json `rpc_rate_steady`); a run whose rate is not
stationary is marked (hatched, "NO"): its number may describe a phase rather than the policy.
Writes PREFIX.png/.svg (one panel of horizontal bars per client count) and PREFIX.md (the table), and
returns the table text too.
"""
from . import InputError
from .summary import varying

RATE = "rpc_server.rpc_rate"
STEADY = "rpc_server.rpc_rate_steady"
XPATH = "rpc_client.processes"

# Per-run figures printed next to the rate: what each policy paid for, in its own terms.
DETAIL = [
    ("FC episodes", "rpc_server.fc_transitions", lambda v: str(v)),
    ("SW moves", "rpc_server.sw_transitions", lambda v: str(v)),
    ("drops", "rpc_server.fc_drops_replayed", lambda v: str(v)),
    ("server FC ms", "rpc_server.fc_host_ns", lambda v: f"{v / 1e6:.2f}"),
    ("RNR NACKs", "rpc_client.rnr_nacks", lambda v: str(v)),
    ("client RNR ms", "rpc_client.rnr_host_ns", lambda v: f"{v / 1e6:.2f}"),
    ("client FC ms", "rpc_client.fc_host_ns", lambda v: f"{v / 1e6:.2f}"),
    ("unexpected", "rpc_server.unexpected_posts", lambda v: str(v)),
    ("sw matched", "rpc_server.software_matched", lambda v: str(v)),
]


def _numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _determined(runs, f, by):
    """Whether field f takes one value for each combination of the client count and the fields `by`."""
    seen = {}
    for r in runs:
        key = (repr(r.get(XPATH)),) + tuple(repr(r.params.get(b)) for b in by)
        if seen.setdefault(key, repr(r.params.get(f))) != repr(r.params.get(f)):
            return False
    return True


def policy_fields(runs):
    """Scenario fields that vary between runs, other than the client count and what it determines.  A numeric
    field that the client count and the non-numeric policy fields determine (a measurement window the scenario
    scales to each policy, e.g. policy-matrix's warmup_us / measure_us / start_spread_us) is left out too: it
    describes how the policy was measured, not the policy."""
    fields = []
    for f in varying(runs):
        by_x = {}
        for r in runs:
            by_x.setdefault(r.get(XPATH), set()).add(repr(r.params.get(f)))
        # a field that never differs between runs of the same client count is derived from it
        if any(len(v) > 1 for v in by_x.values()):
            fields.append(f)
    words = [f for f in fields if not any(_numeric(r.params.get(f)) for r in runs)]
    if not words:
        return fields
    return [f for f in fields if f in words or not _determined(runs, f, words)]


def label(run, fields):
    return " / ".join(str(run.params.get(f)) for f in fields) or run.name


def rank(runs):
    """{clients: [(run, label), ...] best first}; runs without a rate are left out."""
    runs = [r for r in runs if r.get(RATE) is not None and r.get(XPATH) is not None]
    if not runs:
        raise InputError(f"no run has {RATE}: nothing to rank")
    fields = policy_fields(runs)
    out = {}
    for r in runs:
        out.setdefault(r.get(XPATH), []).append(r)
    for x, lst in out.items():
        lst.sort(key=lambda r: (-r.get(RATE), label(r, fields)))
        out[x] = [(r, label(r, fields)) for r in lst]
    return dict(sorted(out.items())), fields


def _steady(r):
    return r.get(f"{STEADY}.stationary", True) is not False


def _ci(r):
    return r.get(f"{STEADY}.ci95") or 0.0


def table(ranked, fields):
    cols = [c for c in DETAIL if any(r.get(c[1]) for lst in ranked.values() for r, _ in lst)]
    head = ["clients", "rank", " / ".join(f.split(".")[-1] for f in fields) or "run", "M RPC/s", "95% CI",
            "steady"] + [c[0] for c in cols]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for x, lst in ranked.items():
        for i, (r, lab) in enumerate(lst, 1):
            row = [str(x), str(i), lab, f"{r.get(RATE) / 1e6:.3f}", f"±{_ci(r) / 1e6:.3f}",
                   "yes" if _steady(r) else "NO"]
            row += [c[2](r.get(c[1]) or 0) for c in cols]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def plot_rank(runs, base, title=None):
    import matplotlib.pyplot as plt

    from .plots import _save

    ranked, fields = rank(runs)
    n = len(ranked)
    height = max(2.5, 0.32 * max(len(v) for v in ranked.values()) + 1.2)
    # each panel carries its own policy labels: constrained layout keeps them clear of the panel to the left
    fig, axes = plt.subplots(1, n, figsize=(4.6 * n, height), squeeze=False, constrained_layout=True)
    for ax, (x, lst) in zip(axes[0], ranked.items()):
        labels = [lab for _, lab in lst][::-1]
        rates = [r.get(RATE) / 1e6 for r, _ in lst][::-1]
        cis = [_ci(r) / 1e6 for r, _ in lst][::-1]
        steady = [_steady(r) for r, _ in lst][::-1]
        bars = ax.barh(range(len(lst)), rates, xerr=cis, capsize=2, color="tab:blue", alpha=0.8)
        for b, ok in zip(bars, steady):
            if not ok:
                b.set_hatch("//")
                b.set_alpha(0.4)
        ax.set_yticks(range(len(lst)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.set_xlabel("server RPC rate (M/s), 95% CI")
        ax.set_title(f"{x} clients", fontsize=9)
        ax.grid(True, axis="x", alpha=0.3)
    fig.suptitle(title or f"{runs[0].name}: policies ranked ({' / '.join(f.split('.')[-1] for f in fields)}; "
                 "hatched: not stationary)", fontsize=9)
    files = _save(fig, base)
    md = base + ".md"
    text = table(ranked, fields)
    with open(md, "w", encoding="utf-8") as f:
        f.write(text)
    return files + [md], text


def main_table(runs):
    ranked, fields = rank(runs)
    return table(ranked, fields)
