"""`cxisim demo`: the main job (`make demo`): seed 000 Fig 5 at laptop scale."""
import os
import sys
import time

from . import REPO
from . import plots
from . import seed000
from .summary import load_run
from .sweep import Sweep

HELP = "run the main job: seed 000 Fig 5 at laptop scale (both receive strategies), plot and tabulate it"
DESCRIPTION = ("Run scenarios/demo.yaml.j2 (seed 000 Fig 5: one single-threaded server against 104 to 6,656 "
               "client processes on the Aurora dragonfly, standard receives versus multi-recv), every point in "
               "parallel on the local cores; write OUT/demo/rpc-rate.png and .svg with the seed's published "
               "values overlaid, and print the RPC rates with the seed's validation targets.")


def add_arguments(p):
    p.add_argument("--out", default="out", metavar="DIR", help="output root (default: out)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="points run at once (default: the number of local cores)")
    p.add_argument("--max-clients", type=int, default=None, metavar="N",
                   help="only the points with at most N client processes")


def _check(ok):
    return "yes" if ok else "NO"


def main(args):
    t0 = time.monotonic()
    scen = os.path.join(REPO, "scenarios", "demo.yaml.j2")
    sw = Sweep(scen, out=args.out)
    if args.max_clients:
        keep = [i for i, p in enumerate(sw.points) if p["clients"] <= args.max_clients]
        sw.points = [sw.points[i] for i in keep]
        sw.docs = [sw.docs[i] for i in keep]
        sw.run_names = [sw.run_names[i] for i in keep]
    print(f"cxisim demo: seed 000 Fig 5 at laptop scale, {len(sw.points)} runs "
          f"(clients x {{standard, multi_recv}}) on the aurora dragonfly", flush=True)
    dirs = sw.run(jobs=args.jobs, log=sys.stderr)
    runs = [load_run(d) for d in dirs]
    figs = plots.plot(runs, "rpc-rate", os.path.join(sw.dir, "rpc-rate"),
                      title="seed 000 Fig 5 (laptop scale): single-threaded server, RPC rate")
    rate = {}
    for p, r in zip(sw.points, runs):
        rate[(p["clients"], p["strategy"])] = r.get("rpc_server.rpc_rate")
    clients = sorted({p["clients"] for p in sw.points})
    print()
    print(f"{'clients':>8} {'standard':>10} {'multi-recv':>11} {'ratio':>6}   (M RPC/s)")
    for c in clients:
        s, m = rate.get((c, "standard")), rate.get((c, "multi_recv"))
        ratio = f"{m / s:6.2f}" if s and m else "     -"
        print(f"{c:8d} {s / 1e6 if s else float('nan'):10.3f} {m / 1e6 if m else float('nan'):11.3f} {ratio}")
    print()
    lo = seed000.BANDS["fig5_multi_recv_min"][0]
    mr = [rate[(c, "multi_recv")] for c in clients if (c, "multi_recv") in rate]
    if mr:
        print(f"seed 000: multi-recv >= {lo / 1e6:.1f} M ops/s up to 6,656 clients: min {min(mr) / 1e6:.3f} M "
              f"-> {_check(min(mr) >= lo)}")
    if (6656, "standard") in rate:
        a, b = seed000.BANDS["fig5_standard_at_6656"]
        v = rate[(6656, "standard")]
        print(f"seed 000: standard ~0.6 M ops/s at 6,656 clients (band {a / 1e6:.2f}-{b / 1e6:.2f}): "
              f"{v / 1e6:.3f} M -> {_check(a <= v <= b)}")
    print(f"calibration: multi-recv single-thread rate 1.3 M ops/s (seed 000 3.2.2) sets rpc_server.service_ns")
    print()
    for f in figs:
        print(f)
    print(f"wall time {time.monotonic() - t0:.1f} s")
    return 0
