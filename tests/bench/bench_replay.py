#!/usr/bin/python3
"""`make bench-replay`: a real, unmodified RPC server against 6,656 replay clients, and the modelled server on
the same scenario, in the same run.

  real      tests/progs/rpc/ofi_rpc_server (multi-recv, 4 x 2 MiB) under `cxisim exec` with
            scenarios/replay-rpc-rate.yaml.j2 (Fig 5's machine, 6,656 clients x 1 in flight replaying a
            capture of ofi_rpc_client, 64-B requests, no think time), measured over 10 ms of virtual time
  modelled  scenarios/fig5-rpc-rate.yaml.j2 at 6,656 clients, multi-recv, the same 10 ms window

Prints, for each, the wall time and the simulated RPC rate (the real server's own printed rate too).
BENCH_REPLAY_TIME_MODE (virtual, the default, or realtime) selects the daemon's time mode.
"""
import json
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD = os.path.join(REPO, os.environ.get("CXISIM_BUILD", "build"))
CXISIM = [sys.executable, os.path.join(REPO, "cxisim")]
SERVER = os.path.join(BUILD, "tests", "rpc", "ofi_rpc_server")
CLIENT = os.path.join(BUILD, "tests", "rpc", "ofi_rpc_client")
OUT = os.path.join(REPO, "out", "bench", "replay")
CLIENTS = 6656
# The warmup covers the real server's start: in virtual time its CPU from its first receive post to its
# first CQ read (buffer setup at cpu_scale 1, tens of ms) is simulated time; a 1 ms warmup measured that.
WARMUP_US, MEASURE_US = 100000, 10000
MODE = os.environ.get("BENCH_REPLAY_TIME_MODE", "virtual")


def run(cmd, **kw):
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, **kw)
    if r.returncode:
        sys.exit(f"bench-replay: {' '.join(cmd[:4])}... failed ({r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r, time.monotonic() - t0


def capture():
    os.makedirs(OUT, exist_ok=True)
    cap, name = os.path.join(OUT, "rpc.cxcap"), os.path.join(OUT, "server.addr")
    if os.path.exists(name):
        os.unlink(name)
    script = (f"{SERVER} --requests 400 --name-file {name} & "
              f"{CLIENT} --server-file {name} --requests 200 --seed 1 & "
              f"{CLIENT} --server-file {name} --requests 200 --seed 2 & wait")
    run([*CXISIM, "capture", "--set", f"emulation.time_mode={MODE}", "-o", cap, "--", "sh", "-c", script])
    return cap


def real(cap):
    out = os.path.join(OUT, "real")
    seconds = (WARMUP_US + MEASURE_US) * 1.2e-6
    r, wall = run([*CXISIM, "exec", "--scenario", os.path.join(REPO, "scenarios", "replay-rpc-rate.yaml.j2"),
                   "--set", f"capture={cap}", "--set", f"clients={CLIENTS}", "--set", f"time_mode={MODE}",
                   "--set", f"warmup_us={WARMUP_US}", "--set", f"measure_us={MEASURE_US}", "--out", out, "--",
                   SERVER, "--seconds", f"{seconds:g}"])
    m = re.search(r"served (\d+) requests .* ([\d.]+) RPC/s", r.stdout + r.stderr)
    with open(os.path.join(out, "metrics.json")) as f:
        rp = json.load(f)["replay"]
    return wall, rp, float(m.group(2)) if m else None


def modelled():
    r, wall = run([*CXISIM, "run", os.path.join(REPO, "scenarios", "fig5-rpc-rate.yaml.j2"), "--set",
                   f"clients={CLIENTS}", "--set", "strategy=multi_recv", "--set",
                   f"rpc_client.warmup_us={WARMUP_US}", "--set", f"rpc_client.measure_us={MEASURE_US}",
                   "--out", OUT, "--quiet"])
    rundir = r.stdout.strip().splitlines()[-1]
    with open(os.path.join(rundir, "metrics.json")) as f:
        return wall, json.load(f)["rpc_server"]["rpc_rate"]


def main():
    cap = capture()
    wall_r, rp, printed = real(cap)
    wall_m, rate_m = modelled()
    print(f"bench replay ({MODE} time): real ofi_rpc_server vs {CLIENTS} replay clients, {MEASURE_US / 1000:g} ms "
          f"window: wall {wall_r:.1f} s, simulated {rp['rpc_rate'] / 1e6:.3f} M RPC/s (server printed "
          f"{(printed or 0) / 1e6:.3f} M over its run), {rp['answered']} answered, {rp['duplicates']} duplicates")
    print(f"bench replay: modelled server (fig5-rpc-rate, multi-recv, {CLIENTS} clients), same window: wall "
          f"{wall_m:.1f} s, simulated {rate_m / 1e6:.3f} M RPC/s")
    print(f"bench replay: real/modelled simulated rate {rp['rpc_rate'] / rate_m:.2f}x, wall {wall_r / wall_m:.1f}x")


if __name__ == "__main__":
    main()
