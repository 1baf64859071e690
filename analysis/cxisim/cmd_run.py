"""`cxisim run`: render one scenario template and run it."""
import sys

from . import inputs
from . import run as runmod
from . import scenario as scn

HELP = "render a scenario template and run it once"
DESCRIPTION = ("Render SCENARIO (a Jinja2 YAML template) with the given parameters, write the resolved config "
               "to OUT/NAME/RUN/scenario.json, run the engine, and write metrics.json, telemetry.csv, "
               "timeseries.csv and run.json (wall time, not deterministic) beside it.  Prints the run "
               "directory.  A failed run leaves no run directory.")


def add_arguments(p):
    p.add_argument("scenario", metavar="SCENARIO", help="scenario template, e.g. scenarios/demo.yaml.j2")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="set a template variable, or a dotted field of the rendered scenario "
                        "(e.g. --set clients=208 --set fabric.routing=minimal); repeatable; values are YAML "
                        "scalars")
    p.add_argument("--seed", default=None, metavar="N",
                   help="random seed, 0 to 2^64-1 (overrides the scenario's `seed`; default: the scenario's, "
                        "else 1)")
    p.add_argument("--out", default="out", metavar="DIR", help="output root (default: out)")
    p.add_argument("--run", dest="run_name", default=None, metavar="NAME",
                   help="run directory name (default: seed<N> plus the --set values)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress line (by default the engine draws one on stderr when stderr is a "
                        "terminal: virtual time, events/s, ETA)")


def main(args):
    seed = inputs.seed_option(args.seed)
    sets = scn.parse_sets(args.sets)
    rundir = runmod.run_scenario(args.scenario, sets, seed=seed, out=args.out, run_name=args.run_name,
                                 quiet=args.quiet)
    print(rundir)
    sys.stdout.flush()
    return 0
