"""`cxisim sweep`: run a scenario's parameter lists, in parallel locally or as a Slurm job array."""
import os
import re

from . import InputError
from . import inputs
from . import scenario as scn
from . import summary
from .sweep import Sweep, parse_vary

TRAILING_COMMAND = True  # cxisim sweep SCENARIO [options] -- CMD (cli.py splits it off)

HELP = "run a scenario's parameter lists (its `sweep:` mapping), points in parallel"
DESCRIPTION = ("Expand SCENARIO's `sweep:` mapping (a list of values per template variable or dotted field; "
               "the points are their cartesian product) and run every point, --jobs at a time, into "
               "OUT/NAME/<point>/.  Writes OUT/NAME/sweep.json (the points and their run directories) and "
               "prints a summary table.  With --slurm FILE, writes a Slurm job-array script (one array task "
               "per point) instead of running anything; once the array has run, --collect writes the same "
               "sweep.json and table from the points' run directories.  With `-- CMD`, each point runs CMD "
               "under `cxisim exec` (the emulation daemon with the point's scenario, e.g. a real server against "
               "replay clients), one point at a time; `{key}` in CMD is replaced by the point's value of that "
               "variable.")


def add_arguments(p):
    p.add_argument("scenario", metavar="SCENARIO", help="scenario template with a `sweep:` mapping")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="fix a template variable or dotted field for every point (repeatable)")
    p.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="sweep KEY over these values (replaces the scenario's list for KEY; repeatable)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="points run at once (default: the number of local cores)")
    p.add_argument("--seed", default=None, metavar="N", help="random seed for every point (0 to 2^64-1)")
    p.add_argument("--out", default="out", metavar="DIR", help="output root (default: out)")
    p.add_argument("--slurm", metavar="FILE", default=None,
                   help="write a Slurm job-array script to FILE instead of running the points")
    p.add_argument("--slurm-max-parallel", type=int, default=None, metavar="N",
                   help="with --slurm: at most N array tasks at once (%%N)")
    p.add_argument("--slurm-time", default="00:30:00", metavar="HH:MM:SS",
                   help="with --slurm: time limit per task (default 00:30:00)")
    p.add_argument("--slurm-option", action="append", default=[], metavar="OPT",
                   help="with --slurm: an extra #SBATCH line, e.g. --slurm-option=--partition=debug")
    p.add_argument("--collect", action="store_true",
                   help="run nothing: index and tabulate the points' existing run directories (a Slurm array's)")
    p.add_argument("--list", action="store_true", help="print the points and exit")
    p.set_defaults(command=[])
    p.epilog = ("-- CMD...: run each point's scenario in the emulation daemon with CMD ({key} replaced by the "
                "point's values)")


# sbatch --time: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
# days-hours:minutes:seconds
SLURM_TIME = re.compile(r"\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2}")


def main(args):
    seed = inputs.seed_option(args.seed)
    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}: expected a positive integer")
    sw = Sweep(args.scenario, scn.parse_sets(args.sets), parse_vary(args.vary), seed=seed, out=args.out,
               command=args.command)
    if args.command and args.slurm:
        raise InputError("--slurm runs points with the engine; a sweep with a command runs them locally")
    if args.slurm_max_parallel is not None and args.slurm_max_parallel < 1:
        raise InputError(f"--slurm-max-parallel {args.slurm_max_parallel}: expected a positive integer")
    if not SLURM_TIME.fullmatch(args.slurm_time):
        raise InputError(f"--slurm-time {args.slurm_time!r}: expected a Slurm time limit (MM, MM:SS, HH:MM:SS, "
                         "D-HH, D-HH:MM or D-HH:MM:SS)")
    for opt in args.slurm_option:
        # Each becomes one "#SBATCH" line of a shell script: a line break would start a command of its own.
        if not opt.startswith("-") or inputs.has_control(opt):
            raise InputError(f"--slurm-option {opt!r}: expected one sbatch option (starting with '-', "
                             "no line breaks or control characters)")
    if args.list:
        for name in sw.run_names:
            print(name)
        return 0
    if args.slurm:
        path = sw.slurm_script(args.slurm, max_parallel=args.slurm_max_parallel, time_limit=args.slurm_time,
                               extra=args.slurm_option)
        print(f"{path}: {len(sw.points)} array tasks; submit with `sbatch {path}`")
        return 0
    dirs = sw.collect() if args.collect else sw.run(jobs=args.jobs)
    print(summary.table([summary.load_run(d) for d in dirs], keys=list(sw.lists), points=sw.points))
    print(os.path.join(sw.dir, "sweep.json"))
    return 0
