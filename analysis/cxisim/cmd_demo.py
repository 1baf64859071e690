"""`cxisim demo`: the main job (`make demo`)."""
import json
import os

from . import REPO
from . import run as runmod

HELP = "run the main job (scenarios/demo.yaml.j2) and print its figures"


def add_arguments(p):
    p.add_argument("--out", default="out", metavar="DIR", help="output root (default: out)")


def main(args):
    scen = os.path.join(REPO, "scenarios", "demo.yaml.j2")
    rundir = runmod.run_scenario(scen, out=args.out, run_name="hold", quiet=False)
    m = runmod.load_metrics(rundir)
    with open(os.path.join(rundir, "run.json"), encoding="utf-8") as f:
        r = json.load(f)
    print(f"{'run directory':<24}{rundir}")
    print(f"{'pending events':<24}{m['hold']['pending']:,}")
    print(f"{'events processed':<24}{m['engine']['events_processed']:,}")
    print(f"{'virtual time':<24}{m['engine']['virtual_time_ps'] / 1e12:.6f} s")
    print(f"{'wall time':<24}{r['wall_time_s']:.3f} s")
    print(f"{'events per wall second':<24}{r['events_per_s'] / 1e6:.2f} M")
    return 0
