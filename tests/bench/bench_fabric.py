"""Fabric benchmarks (run by `make bench`): figures only, no thresholds.

1. Aurora preset: build time and peak RSS, with a NIC attached to each of the 89,600 endpoints.
2. Packet level on an 8-group Aurora subset (4,096 endpoints) under uniform random load: engine events
   and packet hops (switch traversals) per wall second.
3. The same bulk traffic (20 flows x 32 MiB on the 3-group dragonfly of the SimGrid cross-check) in our
   packet mode, our coarse (chunk-train) mode and SimGrid 3.32: wall times and ratios.
"""
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD = os.environ.get("CXISIM_BUILD", "build")
sys.path.insert(0, os.path.join(REPO, "sim", "fabric", "simgrid"))
import xcheck  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "analysis"))
from cxisim.counters import counters  # noqa: E402


def run_template(template, sets, out):
    args = [sys.executable, os.path.join(REPO, "cxisim"), "run", template, "--out", out, "--quiet"]
    for k, v in sets.items():
        args += ["--set", f"{k}={v}"]
    proc = subprocess.run(args, capture_output=True, text=True, check=True, cwd=REPO,
                          env=dict(os.environ, CXISIM_BUILD=BUILD))
    rundir = proc.stdout.strip().splitlines()[-1]
    with open(os.path.join(rundir, "metrics.json")) as f:
        m = json.load(f)
    with open(os.path.join(rundir, "run.json")) as f:
        r = json.load(f)
    return m, r


def main():
    build = subprocess.run([os.path.join(REPO, BUILD, "bench", "bench_fabric_build"), "aurora"],
                           capture_output=True, text=True, check=True).stdout.strip()
    print(build)

    with tempfile.TemporaryDirectory() as out:
        for load in (0.5, 0.03):
            m, r = run_template("scenarios/fabric/aurora_uniform.yaml.j2",
                                {"groups": 8, "load": load, "duration_us": 20}, out)
            hops = counters(m)["fabric.switch_traversals"]
            p = m["fabric_traffic"]["pattern"]
            print(f"aurora 8-group subset, uniform load {load}: {p['endpoints']} endpoints, "
                  f"{m['engine']['events_processed']} events, {hops} packet hops in {r['wall_time_s']:.2f} s wall: "
                  f"{r['events_per_s'] / 1e6:.2f} M events/s, {hops / r['wall_time_s'] / 1e6:.2f} M packet hops/s "
                  f"(accepted load {p['accepted_load']:.3f}, peak RSS {r['peak_rss_kb'] / 1024:.0f} MB)")

    bins = xcheck.binaries(BUILD)
    flows = xcheck.random_flows(20, 24, 32 << 20, seed=1)
    with tempfile.TemporaryDirectory() as wd:
        extra = {"cc_scope": "fabric"}
        pk, wall_pk, mpk = xcheck.run_cxisim(bins, xcheck.scenario(flows, extra=extra), wd)
        ch, wall_ch, mch = xcheck.run_cxisim(bins, xcheck.scenario(flows, bulk_mode="chunk", extra=extra), wd)
        spath = os.path.join(wd, "scenario.json")
        with open(spath, "w") as f:
            json.dump(xcheck.scenario(flows), f)
        sg, wall_sg = xcheck.run_simgrid(bins, xcheck.render_platform(xcheck.topology(bins, spath)), flows, wd)
    diff = max(abs(a[0] / b[0] - 1) for a, b in zip(pk, sg))
    dch = max(abs(a[0] / b[0] - 1) for a, b in zip(ch, pk))
    print(f"bulk 20 flows x 32 MiB (3-group dragonfly): packet {wall_pk:.3f} s "
          f"({mpk['engine']['events_processed']} events), chunk {wall_ch:.3f} s "
          f"({mch['engine']['events_processed']} events), SimGrid {wall_sg:.3f} s")
    print(f"bulk wall-time ratios: packet/SimGrid {wall_pk / wall_sg:.2f}x, chunk/SimGrid {wall_ch / wall_sg:.2f}x, "
          f"packet/chunk {wall_pk / wall_ch:.1f}x; per-flow throughput: packet vs SimGrid within {100 * diff:.1f}%, "
          f"chunk vs packet within {100 * dch:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
