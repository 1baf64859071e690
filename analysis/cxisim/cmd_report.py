"""`cxisim report`: one HTML page of every run under a directory."""
import html
import os

from . import plots
from . import seed000
from .summary import COLUMNS, find_runs, varying

HELP = "write one HTML page summarizing every run (tables and figures)"
DESCRIPTION = ("Find every run directory under ROOT (default: out), group them by scenario, and write "
               "ROOT/report.html: per scenario, its figures (drawn into ROOT/report/) and a table of the swept "
               "parameters and main metrics of each run, followed by seed 000's published values and the "
               "validation bands they give.")


def add_arguments(p):
    p.add_argument("root", nargs="?", default="out", metavar="ROOT", help="directory holding runs (default: out)")
    p.add_argument("--output", default=None, metavar="FILE", help="HTML file (default: ROOT/report.html)")


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.4g}"
    return html.escape(str(v))


def _scenario_section(name, runs, figdir, rel):
    parts = [f"<h2 id='{html.escape(name)}'>{html.escape(name)}</h2>"]
    parts.append(f"<p>{len(runs)} run(s).</p>")
    for kind in plots.default_kinds(runs):
        base = os.path.join(figdir, f"{name}-{kind}")
        try:
            plots.plot(runs, kind, base)
        except Exception as e:  # a figure that cannot be drawn is reported, not fatal
            parts.append(f"<p class='warn'>{kind}: {html.escape(str(e))}</p>")
            continue
        parts.append(f"<figure><img src='{rel}/{os.path.basename(base)}.svg' alt='{kind}'>"
                     f"<figcaption>{kind} (<a href='{rel}/{os.path.basename(base)}.png'>PNG</a>)</figcaption>"
                     "</figure>")
    keys = varying(runs)
    cols = [c for c in COLUMNS if any(r.get(c[1]) is not None for r in runs)]
    head = ["run"] + [k for k in keys] + [c[0] for c in cols] + ["events", "wall s"]
    rows = []
    for r in sorted(runs, key=lambda r: r.dir):
        cells = [html.escape(os.path.basename(r.dir))] + [_fmt(r.params.get(k, "")) for k in keys]
        cells += [html.escape(c[2](r.get(c[1]))) for c in cols]
        cells.append(_fmt(r.get("engine.events_processed", "")))
        w = r.wall
        cells.append("-" if w is None else f"{w:.2f}")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    parts.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
                 + "".join(rows) + "</table>")
    return "\n".join(parts)


def _published():
    rows = []
    for p in seed000.PUBLISHED:
        series = ", ".join(f"{k}={v}" for k, v in p["series"].items())
        xs = "-" if p["x"] is None else f"{p['x'][0]}..{p['x'][1]}"
        rows.append(f"<tr><td>{p['fig']}</td><td>{html.escape(series)}</td><td>{xs}</td>"
                    f"<td>{html.escape(p['rel'])} {p['y']:g} {p['unit']}</td><td>{p['role']}</td>"
                    f"<td>{html.escape(p['quote'])}</td></tr>")
    bands = "".join(f"<tr><td>{html.escape(k)}</td><td>{'' if lo is None else f'{lo:g}'}</td>"
                    f"<td>{'' if hi is None else f'{hi:g}'}</td></tr>" for k, (lo, hi) in seed000.BANDS.items())
    return ("<h2>Seed 000: published values</h2><table><tr><th>figure</th><th>series</th><th>clients</th>"
            "<th>value</th><th>role</th><th>text</th></tr>" + "".join(rows) + "</table>"
            "<h3>Validation bands (issue 5)</h3><table><tr><th>target</th><th>min</th><th>max</th></tr>"
            + bands + "</table>")


CSS = """body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:right}th{background:#eee}
figure{display:inline-block;margin:0 1em 1em 0}img{width:560px}.warn{color:#a60}"""


def main(args):
    runs = find_runs([args.root])
    output = args.output or os.path.join(args.root, "report.html")
    figdir = os.path.join(os.path.dirname(os.path.abspath(output)), "report")
    os.makedirs(figdir, exist_ok=True)
    rel = os.path.relpath(figdir, os.path.dirname(os.path.abspath(output)))
    by_scn = {}
    for r in runs:
        by_scn.setdefault(r.name, []).append(r)
    body = ["<h1>cxisim report</h1>", f"<p>{len(runs)} runs in {len(by_scn)} scenario(s) under "
            f"<code>{html.escape(os.path.abspath(args.root))}</code>.</p><ul>"]
    body += [f"<li><a href='#{html.escape(n)}'>{html.escape(n)}</a> ({len(v)})</li>" for n, v in sorted(by_scn.items())]
    body.append("</ul>")
    for name in sorted(by_scn):
        body.append(_scenario_section(name, by_scn[name], figdir, rel))
    body.append(_published())
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>cxisim report</title>"
            f"<style>{CSS}</style></head><body>" + "\n".join(body) + "</body></html>\n")
    with open(output + ".tmp", "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(output + ".tmp", output)
    print(output)
    return 0
