"""SimGrid cross-check of the dragonfly fabric: the same bulk flows on the same small dragonfly, in cxisim
(packets through credited Rosetta switches) and in SimGrid 3.32 (fluid max-min sharing).

The platform is rendered from cxisim's own topology export (cxisim-fabric-topo) with the Jinja2 template
platform.xml.j2 next to this file, so SimGrid gets exactly the fabric's links and zero-load routes.
Used by tests/py/test_fabric_simgrid.py and tests/bench/bench_fabric.py; runnable on its own:
    python3 sim/fabric/simgrid/xcheck.py [--flows 20] [--seed 1] [--bytes 4194304]
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

import jinja2

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def binaries(build=None):
    build = build or os.environ.get("CXISIM_BUILD", "build")
    b = os.path.join(REPO, build, "bin")
    return {"engine": os.path.join(b, "cxisim-engine"), "topo": os.path.join(b, "cxisim-fabric-topo"),
            "sg": os.path.join(b, "sg-flows")}


def scenario(flows, preset="tiny", routing="minimal", bulk_mode="packet", extra=None):
    """A resolved scenario (dict) running `flows` [(src, dst, bytes)] as bulk messages from t=0."""
    fab = {"topology": "dragonfly", "preset": preset, "routing": routing, "bulk_mode": bulk_mode}
    fab.update(extra or {})
    return {"name": "fabric-xcheck", "seed": 1, "fabric": fab,
            "fabric_traffic": {"flows": [{"src": s, "dst": d, "bytes": b, "message_bytes": min(b, 1 << 20),
                                          "bulk": True} for s, d, b in flows]}}


def random_flows(n, endpoints, nbytes, seed):
    """n flows between random endpoint pairs, no pair twice (a NIC sends the messages of one pair in order,
    where SimGrid would share between them); a source or destination may have several flows."""
    rng = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        s, d = rng.sample(range(endpoints), 2)
        if (s, d) not in seen:
            seen.add((s, d))
            out.append((s, d, nbytes))
    return out


def topology(bins, scenario_path):
    proc = subprocess.run([bins["topo"], "--config", scenario_path], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def render_platform(topo, zero_latency=True):
    """SimGrid platform XML.  zero_latency: links without latency, so that SimGrid's CM02 model (which
    weights a flow's share by its route latency, like TCP) shares by plain max-min."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE), undefined=jinja2.StrictUndefined)
    return env.get_template("platform.xml.j2").render(topo=topo, zero_latency=zero_latency)


def run_cxisim(bins, scen, workdir):
    """Returns ([(throughput Gb/s, end s)] per flow, wall seconds, metrics)."""
    path = os.path.join(workdir, f"scenario-{scen['fabric']['bulk_mode']}.json")
    with open(path, "w") as f:
        json.dump(scen, f)
    out = tempfile.mkdtemp(dir=workdir)
    subprocess.run([bins["engine"], "--config", path, "--out", out, "--quiet"], check=True)
    with open(os.path.join(out, "metrics.json")) as f:
        m = json.load(f)
    with open(os.path.join(out, "run.json")) as f:
        wall = json.load(f)["wall_time_s"]
    res = [(fl["gbps"], fl["end_ps"] * 1e-12) for fl in m["fabric_traffic"]["flows"]]
    return res, wall, m


def run_simgrid(bins, platform_xml, flows, workdir):
    """Returns ([(throughput Gb/s, end s)] per flow, wall seconds of simgrid_run)."""
    plat = os.path.join(workdir, "platform.xml")
    with open(plat, "w") as f:
        f.write(platform_xml)
    fl = os.path.join(workdir, "flows.txt")
    with open(fl, "w") as f:
        for s, d, b in flows:
            f.write(f"{s} {d} {b} 0\n")
    # CM02: plain max-min without LV08's latency and bandwidth factors; no cross-traffic correction.
    proc = subprocess.run([bins["sg"], plat, fl, "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                           "--log=root.thresh:critical"], capture_output=True, text=True, check=True)
    res, wall = [], None
    for line in proc.stdout.splitlines():
        w = line.split()
        if w[0] == "flow":
            nbytes, end = float(w[4]), float(w[6])
            res.append((nbytes * 8 / end * 1e-9, end))
        elif w[0] == "wall_s":
            wall = float(w[1])
    return res, wall


def compare(flows, workdir, bins=None, extra=None):
    """Runs both engines; returns a dict with per-flow throughputs and relative differences."""
    bins = bins or binaries()
    scen = scenario(flows, extra=extra)
    spath = os.path.join(workdir, "scenario.json")
    with open(spath, "w") as f:
        json.dump(scen, f)
    topo = topology(bins, spath)
    ours, wall_ours, _ = run_cxisim(bins, scen, workdir)
    t0 = time.time()
    sg, wall_sg = run_simgrid(bins, render_platform(topo), flows, workdir)
    wall_sg_total = time.time() - t0
    diffs = [o[0] / s[0] - 1 for o, s in zip(ours, sg)]
    return {"flows": flows, "cxisim_gbps": [o[0] for o in ours], "simgrid_gbps": [s[0] for s in sg],
            "rel_diff": diffs, "max_abs_diff": max(abs(x) for x in diffs), "wall_cxisim": wall_ours,
            "wall_simgrid": wall_sg, "wall_simgrid_process": wall_sg_total}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bytes", type=int, default=4 << 20)
    a = ap.parse_args()
    flows = random_flows(a.flows, 24, a.bytes, a.seed)
    with tempfile.TemporaryDirectory() as wd:
        r = compare(flows, wd)
    for (s, d, _), o, g, x in zip(r["flows"], r["cxisim_gbps"], r["simgrid_gbps"], r["rel_diff"]):
        print(f"{s:3d} -> {d:3d}  cxisim {o:8.2f} Gb/s  simgrid {g:8.2f} Gb/s  {100 * x:+6.2f}%")
    print(f"max |difference| {100 * r['max_abs_diff']:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
