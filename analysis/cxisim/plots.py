"""Figures from run directories (PNG and SVG), with seed 000's published values overlaid.

Kinds:
  rpc-rate   aggregate RPC rate against client processes (log x), one line per series
  bandwidth  aggregate bulk bandwidth against client processes
  latency    RPC latency (p50 solid, p99 dashed) against client processes or request size
  le-use     LE / posted-receive use over virtual time (timeseries.csv), one line per run and column
  mr         MR registration and deregistration time per MR method (bars)
  rank       policies ranked by RPC rate per client count, with confidence intervals (ranking.py)

A series is the set of scenario fields that vary between runs and are not a function of the x value (so a
sweep over clients x strategy gives one line per strategy, whatever fields the clients count drives).
"""
import csv
import json
import math
import os
import re

from . import InputError
from . import seed000
from .summary import varying


class _Pyplot:
    """matplotlib.pyplot, imported on first use: it costs more than a second, which every command
    (`cxisim run` too) would otherwise pay at start, since the CLI imports every command module."""

    def __getattr__(self, name):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot
        return getattr(matplotlib.pyplot, name)


plt = _Pyplot()

KINDS = ("rpc-rate", "bandwidth", "latency", "le-use", "mr", "rank")

Y = {
    "rpc-rate": ("rpc_server.rpc_rate|replay.rpc_rate", 1e-6, "aggregate RPC rate (M ops/s)", "ops/s"),
    "bandwidth": ("rpc_client.bulk.bandwidth_gbs", 1.0, "aggregate bulk bandwidth (GB/s)", "GB/s"),
}
X_CANDIDATES = [("rpc_client.processes|replay.processes", "client processes"),
                ("rpc_client.request_bytes", "request size (bytes)")]


def tags(run):
    """Values published series are matched on."""
    return {
        "strategy": run.get("rpc_server.strategy"),
        "nodes": run.get("rpc_server.nodes"),
        "op": run.get("rpc_client.bulk.op"),
        "mr_method": run.get("rpc_client.bulk.mr_method"),
    }


def _key(v):
    return json.dumps(v, sort_keys=True)


def pick_x(runs):
    for path, label in X_CANDIDATES:
        vals = {_key(r.get(path)) for r in runs if r.get(path) is not None}
        if len(vals) > 1:
            return path, label
    return X_CANDIDATES[0]


def _determined(runs, f, by):
    """Whether field f's value is a function of the values of `by` (the x path and other fields)."""
    seen = {}
    for r in runs:
        key = (_key(r.get(by[0])),) + tuple(_key(r.params.get(b)) for b in by[1:])
        v = _key(r.params.get(f))
        if seen.setdefault(key, v) != v:
            return False
    return True


def series_fields(runs, xpath):
    """The scenario fields that tell series apart: those that vary and are not a function of x and of the
    other such fields (so values derived from the swept parameters, e.g. a measurement window computed from
    the client count and the strategy, do not split the lines).  Fields with many values go first."""
    fields = [f for f in varying(runs) if not _determined(runs, f, [xpath])]
    for f in sorted(fields, key=lambda f: -len({_key(r.params.get(f)) for r in runs})):
        others = [g for g in fields if g != f]
        if _determined(runs, f, [xpath] + others):
            fields.remove(f)
    return fields


def series_label(run, fields):
    if not fields:
        return run.name
    parts = []
    for f in fields:
        v = run.params.get(f)
        parts.append(str(v) if f == "description" else f"{f.split('.')[-1]}={v}")
    return ", ".join(parts)


def group(runs, xpath):
    """Series by the fields that vary within a scenario; runs of several scenarios (a real server's replay
    runs next to the modelled server's) get their scenario's name in front."""
    names = list(dict.fromkeys(r.name for r in runs))
    groups = {}
    for name in names:
        mine = [r for r in runs if r.name == name]
        fields = series_fields(mine, xpath)
        for r in mine:
            label = series_label(r, fields)
            if len(names) > 1:
                label = name if label == name else f"{name}: {label}"
            groups.setdefault(label, []).append(r)
    for lst in groups.values():
        lst.sort(key=lambda r: (r.get(xpath) is None, r.get(xpath) or 0))
    return groups


def _save(fig, base):
    os.makedirs(os.path.dirname(os.path.abspath(base)), exist_ok=True)
    fig.savefig(base + ".png", dpi=120, bbox_inches="tight")
    fig.savefig(base + ".svg", bbox_inches="tight")
    plt.close(fig)
    return [base + ".png", base + ".svg"]


def _matches(pub, run_tags):
    return all(run_tags.get(k) == v for k, v in pub["series"].items())


def overlay_published(ax, runs, groups, colors, unit, scale, fig_name):
    """Draw the seed's published values for this figure; returns how many were drawn."""
    n = 0
    xs = [r.get(X_CANDIDATES[0][0]) for r in runs if r.get(X_CANDIDATES[0][0])]
    xmin = min(xs) if xs else 1
    for pub in seed000.for_figure(fig_name):
        if pub["unit"] != unit:
            continue
        color = "0.4"
        for label, lst in groups.items():
            if any(_matches(pub, tags(r)) for r in lst):
                color = colors.get(label, color)
                break
        else:
            # A published series with no simulated counterpart in these runs is not drawn.
            if any(tags(r).get(k) is not None for r in runs for k in pub["series"]):
                continue
        y = pub["y"] * scale
        cal = pub["role"] == "calibration"
        style = dict(color=color, alpha=0.8, linewidth=1.2, linestyle=":" if cal else "--")
        what = "seed 000 (calibration)" if cal else "seed 000"
        rel = {"~": "≈", ">=": "≥"}.get(pub["rel"], pub["rel"])
        text = f"{what}: {rel}{pub['y'] * scale:g}"
        if pub["x"] is None:
            ax.axhline(y, **style)
            ax.annotate(text, xy=(xmin, y), xytext=(2, 2), textcoords="offset points", fontsize=7, color=color)
        else:
            x0, x1 = pub["x"]
            if x0 == x1:
                ax.plot([x0], [y], marker="*", markersize=13, color=color, linestyle="none", alpha=0.9)
            else:
                ax.plot([x0, x1], [y, y], **style)
                if pub["rel"] == ">=":
                    ax.plot([x0, x1], [y, y], marker="^", markersize=7, color=color, linestyle="none")
            ax.annotate(text, xy=(x1, y), xytext=(4, -10), textcoords="offset points", fontsize=7, color=color)
        n += 1
    return n


def plot_xy(runs, kind, base, title=None, published=True):
    ypath, yscale, ylabel, unit = Y[kind]
    xpath, xlabel = pick_x(runs)
    runs = [r for r in runs if r.get(ypath) is not None and r.get(xpath) is not None]
    if not runs:
        raise InputError(f"no run has both {xpath} and {ypath}: nothing to plot for '{kind}'")
    groups = group(runs, xpath)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = {}
    for label, lst in groups.items():
        line, = ax.plot([r.get(xpath) for r in lst], [r.get(ypath) * yscale for r in lst], marker="o",
                        markersize=4, label=label)
        colors[label] = line.get_color()
    fig_name = next((seed000.figure_of(r.name) for r in runs if seed000.figure_of(r.name)), None)
    if published and fig_name:
        if overlay_published(ax, runs, groups, colors, unit, yscale, fig_name):
            ax.plot([], [], "k--", linewidth=1, label="seed 000 published (text)")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    if len(groups) > 4:
        # Many series (a real server's matrix next to the modelled curves): the legend beside the axes,
        # where it hides no point.
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize=8)
    names = " vs ".join(dict.fromkeys(r.name for r in runs))
    ax.set_title(title or f"{names}: {ylabel}")
    return _save(fig, base)


def plot_latency(runs, base, title=None):
    xpath, xlabel = pick_x(runs)
    lat = "rpc_client.latency_ns.{0}|replay.latency_ns.{0}"
    runs = [r for r in runs if r.get(lat.format("p50")) is not None and r.get(xpath) is not None]
    if not runs:
        raise InputError("no run has rpc_client.latency_ns: nothing to plot for 'latency'")
    groups = group(runs, xpath)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, lst in groups.items():
        x = [r.get(xpath) for r in lst]
        line, = ax.plot(x, [r.get(lat.format("p50")) / 1e3 for r in lst], marker="o", markersize=4,
                        label=f"{label} p50")
        ax.plot(x, [r.get(lat.format("p99")) / 1e3 for r in lst], marker="x", markersize=4,
                linestyle="--", color=line.get_color(), label=f"{label} p99")
    ax.set_xscale("log", base=2 if "bytes" in xpath else 10)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("RPC latency (us)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or f"{runs[0].name}: RPC latency")
    return _save(fig, base)


def read_timeseries(path):
    """timeseries.csv: (header, {column: values}); a malformed file is input error naming its line."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: not a timeseries file ({e})") from None
    if not rows:
        return [], {}
    head = rows[0]
    cols = {h: [] for h in head}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(head):
            raise InputError(f"{path}: line {line}: {len(row)} fields, the header has {len(head)}")
        for h, v in zip(head, row):
            try:
                x = float(v)
            except ValueError:
                x = math.nan
            if not math.isfinite(x):
                raise InputError(f"{path}: line {line}: column '{h}': expected a finite number, got {v[:40]!r}")
            cols[h].append(x)
    return head, cols


def plot_le_use(runs, base, column=r"le_used|posted|le_high|in_use", title=None):
    rx = re.compile(column)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = 0
    for r in runs:
        path = os.path.join(r.dir, "timeseries.csv")
        if not os.path.isfile(path):
            continue
        head, cols = read_timeseries(path)
        if not head:
            continue
        t = [v / 1e6 for v in cols[head[0]]]
        for h in head[1:]:
            if rx.search(h):
                ax.plot(t, cols[h], label=f"{os.path.basename(r.dir)}: {h}", linewidth=1)
                drawn += 1
    if not drawn:
        plt.close(fig)
        raise InputError(f"no timeseries column matching /{column}/ in these runs (set "
                         "stats.timeseries_interval_ns in the scenario)")
    ax.set_xlabel("virtual time (us)")
    ax.set_ylabel("entries in use")
    ax.grid(True, alpha=0.3)
    if drawn <= 12:
        ax.legend(fontsize=7)
    ax.set_title(title or f"{runs[0].name}: LE use over time")
    return _save(fig, base)


MR_ORDER = ["optimized", "standard", "prov_key_cache", "match_events"]


def plot_mr(runs, base, title=None, published=True):
    rows = []
    for r in runs:
        m = r.get("rpc_client.bulk.mr_method")
        reg, dereg = r.get("rpc_client.bulk.mr_reg_ns.p50"), r.get("rpc_client.bulk.mr_dereg_ns.p50")
        if m is not None and reg is not None:
            rows.append((m, reg / 1e3, dereg / 1e3))
    if not rows:
        raise InputError("no run has rpc_client.bulk.mr_reg_ns: nothing to plot for 'mr'")
    rows.sort(key=lambda t: MR_ORDER.index(t[0]) if t[0] in MR_ORDER else len(MR_ORDER))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    idx = range(len(rows))
    ax.bar([i - 0.2 for i in idx], [t[1] for t in rows], width=0.4, label="register (p50)")
    ax.bar([i + 0.2 for i in idx], [t[2] for t in rows], width=0.4, label="deregister (p50)")
    ax.set_xticks(list(idx))
    ax.set_xticklabels([t[0] for t in rows])
    ax.set_yscale("log")
    ax.set_ylabel("time per call (us)")
    if published:
        for pub in seed000.for_figure("fig9"):
            for i, t in enumerate(rows):
                if t[0] == pub["series"]["mr_method"]:
                    ax.plot([i - 0.4, i + 0.4], [pub["y"] / 1e3] * 2, "k--", linewidth=1.2)
                    ax.annotate("seed 000: reg+dereg ≈2 us", xy=(i - 0.4, pub["y"] / 1e3), xytext=(0, 3),
                                textcoords="offset points", fontsize=7)
                    ax.plot([i], [t[1] + t[2]], marker="D", color="k", markersize=5, linestyle="none",
                            label="simulated reg+dereg")
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    ax.legend(uniq.values(), uniq.keys(), fontsize=8)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.set_title(title or f"{runs[0].name}: MR register / deregister time by method")
    return _save(fig, base)


def plot(runs, kind, base, title=None, published=True, column=None):
    if kind in Y:
        return plot_xy(runs, kind, base, title, published)
    if kind == "latency":
        return plot_latency(runs, base, title)
    if kind == "le-use":
        return plot_le_use(runs, base, column or r"le_used|posted|le_high|in_use", title)
    if kind == "mr":
        return plot_mr(runs, base, title, published)
    if kind == "rank":
        from . import ranking
        return ranking.plot_rank(runs, base, title)[0]
    raise InputError(f"--kind {kind}: expected one of {', '.join(KINDS)}")


def default_kinds(runs):
    """The figures that make sense for these runs."""
    kinds = []
    if any(r.get("rpc_client.bulk.mr_method") for r in runs) and len({r.get("rpc_client.bulk.mr_method")
                                                                        for r in runs}) > 1:
        kinds.append("mr")
    if any(r.get("rpc_client.bulk.bandwidth_gbs") for r in runs):
        kinds.append("bandwidth")
    elif any(r.get(Y["rpc-rate"][0]) is not None for r in runs):
        kinds.append("rpc-rate")
    if any(r.get("rpc_client.latency_ns.p50|replay.latency_ns.p50") is not None for r in runs):
        kinds.append("latency")
    return kinds
