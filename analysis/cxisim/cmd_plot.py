"""`cxisim plot`: figures from run directories, PNG and SVG."""
import os

from . import InputError
from . import plots
from .summary import find_runs

HELP = "draw figures (PNG and SVG) from run directories, with seed 000's published values overlaid"
DESCRIPTION = ("Read the run directories given (or found under the directories given, e.g. a sweep's "
               "OUT/NAME) and draw each requested figure as OUT/PREFIX<kind>.png and .svg.  Kinds: rpc-rate "
               "(RPC rate against client processes, log axis), bandwidth, latency, le-use (LE and posted "
               "receive use over virtual time), mr (MR register/deregister time by method), rank (policies ranked "
               "by server RPC rate per client count with 95% confidence intervals; also writes and prints a "
               "markdown table).  The values "
               "seed 000's text publishes for the scenario's figure are overlaid (dashed; dotted for the "
               "calibration point).")


def add_arguments(p):
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories, or directories containing them")
    p.add_argument("--kind", action="append", choices=plots.KINDS, default=None,
                   help="figure to draw (repeatable; default: the ones that apply to these runs)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output directory (default: the common parent of the runs)")
    p.add_argument("--prefix", default="", metavar="STR", help="file name prefix")
    p.add_argument("--title", default=None, help="figure title")
    p.add_argument("--column", default=None, metavar="REGEX",
                   help="le-use: timeseries columns to draw (default: LE / posted-receive columns)")
    p.add_argument("--no-published", action="store_true", help="do not overlay the seed's published values")


def main(args):
    runs = find_runs(args.runs)
    kinds = args.kind or plots.default_kinds(runs)
    if not kinds:
        raise InputError(f"{', '.join(args.runs)}: these runs have no RPC metrics to plot")
    out = args.out or os.path.commonpath([os.path.dirname(os.path.abspath(r.dir)) for r in runs])
    for kind in kinds:
        base = os.path.join(out, f"{args.prefix}{kind}")
        for f in plots.plot(runs, kind, base, title=args.title, published=not args.no_published,
                            column=args.column):
            print(f)
            if f.endswith(".md"):
                with open(f, encoding="utf-8") as t:
                    print(t.read(), end="")
    return 0
