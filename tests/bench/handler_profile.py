#!/usr/bin/python3
"""Where a run's events and handler time go: events per handler, per completed RPC, cycles per event.

Builds a profiling engine (EXTRA_CFLAGS=-DSIM_HANDLER_PROFILE: the run loop reads the TSC around each
handler; results are the same as any build's), runs it on resolved scenarios (scenario.json from a run
directory) and prints, per handler: events, events per completed RPC (rpc_client.completed), TSC cycles
per event (the handler alone: the queue and prefetch hooks not included) and its share of handler time.
Compare two scenarios side by side to see whether a slower one runs more events per RPC (the event mix)
or the same events at a higher cost each (records out of cache):

    ./cxisim run scenarios/aurora-full.yaml.j2 --set groups=1 --set time_us=100 --out /tmp/p --run g1
    ./cxisim run scenarios/fig4-multithread.yaml.j2 --set clients=6656 --set nodes=2 --out /tmp/p --run f4
    tests/bench/handler_profile.py /tmp/p/aurora-full/g1 /tmp/p/fig4-multithread/f4

Timing: run it under the machine's CPU lock like any measurement (cycles per event move with the load).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def build(build_dir):
    engine = os.path.join(build_dir, "bin", "cxisim-engine")
    subprocess.run(["make", "-C", REPO, "-j2", f"BUILD={build_dir}", "EXTRA_CFLAGS=-DSIM_HANDLER_PROFILE",
                    engine], check=True, stdout=subprocess.DEVNULL)
    return engine


def symbols(engine):
    out = subprocess.run(["nm", engine], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in "tT":
            syms[int(p[0], 16)] = p[2]
    base = next(a for a, n in syms.items() if n == "sim_create")
    return syms, base


def profile(engine, rundir):
    syms, base = symbols(engine)
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([engine, "--config", os.path.join(rundir, "scenario.json"), "--out", out, "--quiet"],
                              capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"{rundir}: engine exit {proc.returncode}: {proc.stderr.strip()[-500:]}")
        with open(os.path.join(out, "metrics.json")) as f:
            metrics = json.load(f)
    rows = {}
    for line in proc.stderr.splitlines():
        p = line.split()
        if len(p) == 4 and p[0] == "handler-profile":
            name = syms.get(base + int(p[1]), f"?{p[1]}")
            rows[name] = (int(p[2]), int(p[3]))
    rpcs = metrics.get("rpc_client", {}).get("completed") or 0
    return rows, rpcs, metrics["engine"]["events_processed"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rundirs", nargs="+", help="run directories (their scenario.json is run again)")
    ap.add_argument("--build", default=os.path.join(REPO, "build-hprof"), help="profiling build directory")
    a = ap.parse_args()
    engine = build(a.build)
    for rundir in a.rundirs:
        rows, rpcs, events = profile(engine, rundir)
        total = sum(c for _, c in rows.values()) or 1
        print(f"{rundir}: {events:,} events, {rpcs:,} RPCs completed"
              + (f", {events / rpcs:.1f} events per RPC" if rpcs else ""))
        print(f"  {'handler':28} {'events':>12} {'per RPC':>8} {'cycles/ev':>10} {'share':>6}")
        for name, (n, c) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
            per = f"{n / rpcs:.2f}" if rpcs else "-"
            print(f"  {name:28} {n:12,} {per:>8} {c / n:10.0f} {100 * c / total:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
