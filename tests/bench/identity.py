#!/usr/bin/python3
"""Same scenario + seed => byte-identical outputs, across two engine builds.

Runs every shipped scenario (scenarios/*.yaml.j2 and scenarios/fabric/*.yaml.j2) at a reduced size with a
reference engine and with the engine under test, and compares metrics.json, telemetry.csv and
timeseries.csv byte for byte.  Use it for changes that must not move any result (data layout, memory, hot
paths):

    git archive main | tar -x -C /tmp/base && make -C /tmp/base -j2 build/bin/cxisim-engine
    tests/bench/identity.py --base /tmp/base/build/bin/cxisim-engine [--engine build/bin/cxisim-engine]

Prints one line per point and exits 1 when any output differs.
"""
import argparse
import concurrent.futures
import filecmp
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

# (scenario, [--set values]) at sizes that run in seconds but reach each scenario's mechanisms (hybrid
# switch to software matching, overflow buffers, rendezvous, RNR, bulk RMA, MR methods, congestion).
POINTS = [
    ("demo", ["clients=416", "strategy=standard"]),
    ("demo", ["clients=416", "strategy=multi_recv"]),
    ("fig4-multithread", ["clients=416", "nodes=1", "strategy=standard"]),
    ("fig4-multithread", ["clients=1664", "nodes=2", "strategy=multi_recv"]),
    ("fig5-rpc-rate", ["clients=6656", "strategy=standard"]),
    ("fig5-rpc-rate", ["clients=1664", "strategy=multi_recv"]),
    ("fig5-rpc-rate", ["clients=3328", "strategy=standard", "rpc_server.post_init=64",
                       "rpc_server.cxi.rx_match_mode=hardware", "rpc_client.cxi.rx_match_mode=hardware",
                       "rpc_client.drain=true"]),
    ("fig6-rnr-latency", ["request_bytes=65536", "protocol=cxi", "measure_us=200"]),
    ("fig6-rnr-latency", ["request_bytes=65536", "protocol=cxi_rnr", "measure_us=200"]),
    ("fig9-mr-methods", ["mr_method=optimized", "measure_us=300"]),
    ("fig9-mr-methods", ["mr_method=standard", "measure_us=300"]),
    ("fig9-mr-methods", ["mr_method=prov_key_cache", "measure_us=300"]),
    ("fig9-mr-methods", ["mr_method=match_events", "measure_us=300"]),
    ("fig10-bulk-bw", ["clients=104", "op=write", "nodes=1"]),
    ("fig10-bulk-bw", ["clients=104", "op=read", "nodes=2"]),
    # a saturated server holding bulk requests in its completion backlog (cq_backlog_max ~1,600: the bulk
    # descriptors' side ring grows with it)
    ("fig10-bulk-bw", ["clients=6656", "in_flight=8", "bytes=64", "nodes=1", "warmup_us=20", "measure_us=60"]),
    ("rpc-storm", ["clients=2000", "groups=4", "measure_us=1000"]),
    ("aurora-full", ["groups=1", "nodes=8", "time_us=60", "strategy=standard"]),
    ("aurora-full", ["groups=1", "nodes=8", "time_us=60", "strategy=multi_recv"]),
    ("aurora-full", ["groups=1", "nodes=2", "time_us=40", "strategy=standard", "drain=true"]),
    ("fabric/aurora_uniform", ["groups=4", "duration_us=10"]),
    ("fabric/bulk_modes", []),
    ("fabric/fair_share", ["end_us=200"]),
    ("fabric/incast", ["senders=8"]),
    ("fabric/long_flow", ["bytes=8388608"]),
    ("fabric/ordering", []),
    ("fabric/pattern", ["duration_us=30"]),
]
OUTPUTS = ["metrics.json", "telemetry.csv", "timeseries.csv"]


def run(engine, scenario, sets, out):
    env = dict(os.environ, CXISIM_ENGINE=engine)
    cmd = [os.path.join(REPO, "cxisim"), "run", os.path.join(REPO, "scenarios", scenario + ".yaml.j2"),
           "--out", out, "--run", "r", "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode:
        return None, p.stderr.strip().splitlines()[-1:]
    name = os.listdir(out)[0]
    return os.path.join(out, name, "r"), None


def compare(base, engine, scenario, sets, tmp):
    label = scenario + " " + " ".join(sets)
    dirs = []
    for i, e in enumerate((base, engine)):
        d = tempfile.mkdtemp(dir=tmp, prefix="%d-" % i)
        rd, err = run(e, scenario, sets, d)
        if rd is None:
            return label, "FAILED (%s): %s" % (("base", "engine")[i], err)
        dirs.append(rd)
    diff = [o for o in OUTPUTS if os.path.exists(os.path.join(dirs[0], o)) and
            not filecmp.cmp(os.path.join(dirs[0], o), os.path.join(dirs[1], o), shallow=False)]
    return label, ("DIFFERS: " + ", ".join(diff)) if diff else "identical"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="reference cxisim-engine binary")
    ap.add_argument("--engine", default=os.path.join(REPO, "build", "bin", "cxisim-engine"))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("-k", default="", help="only points whose label contains this")
    a = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="cxisim-identity-") as tmp:
        pts = [p for p in POINTS if a.k in p[0] + " " + " ".join(p[1])]
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            for label, verdict in ex.map(lambda p: compare(a.base, a.engine, p[0], p[1], tmp), pts):
                print("%-100s %s" % (label, verdict), flush=True)
                bad += verdict != "identical"
    print("%d of %d points identical" % (len(pts) - bad, len(pts)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
