#!/usr/bin/python3
"""`make bench` for virtual time (target bench-virtual):

1. fi_pingpong 8 B over cxi under virtual time: the wall time per simulated round trip, next to the realtime
   mode's wall time per round trip, measured in the same run (alternating, median of BENCH_TRIALS), idle and
   with two CPU hogs on the two cores.  Target: virtual within 2x of realtime.  The wall time per round trip
   is the difference of two runs (BENCH_ITERS and 5 x BENCH_ITERS iterations) divided by the difference of
   their round trips, so start-up and attach cancel out.
2. Host-load independence: fi_pingpong's 8-byte and NetPIPE's 8-byte and 4 MiB figures idle and with 2 CPU
   hogs (BENCH_LOAD_RUNS pairs, each loaded run right after its idle twin), their medians and ratio (target:
   within 2%), by default (cpu_scale 0: CPU time free), and with CPU time charged (cpu_scale 1): alone, with
   emulation.keep_cores_awake 1, and with the span clip at a low quantile (span_clip_ns 20000,
   span_clip_quantile 0.1: docs/provider.md "A per-call-site clip").
   `bench_virtual.py host-load` runs this part alone.
3. Open MPI, 8 ranks, an Allreduce loop (tests/progs/provider/mpi_allreduce_loop) under virtual time: the
   simulated time MPI_Wtime reports and the wall time of the loop; their ratio is the slowdown factor."""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD = os.environ.get("CXISIM_BUILD", "build")
CXISIM = os.path.join(REPO, "cxisim")
TRIALS = int(os.environ.get("BENCH_TRIALS", "3"))
ITERS = int(os.environ.get("BENCH_ITERS", "2000"))
sys.path.insert(0, os.path.join(REPO, "tests", "py"))
from provider_helpers import cpu_hogs  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
          "--mca", "mtl_ofi_provider_include", "cxi", "--mca", "btl", "self"]


def set_args(sets):
    return [a for kv in sets for a in ("--set", kv)]


def pingpong(mode, iters, sets=()):
    """(simulated or realtime usec per one-way transfer as printed, wall seconds of the client run)."""
    port = str(20000 + (os.getpid() + int(time.time() * 1000)) % 20000)
    args = f"fi_pingpong -p cxi -e rdm -S 8 -I {iters}"
    script = (f"{args} -B {port} > /dev/null 2>&1 &\nsrv=$!\nsleep 0.3\n"
              f"t0=$(date +%s%N)\n{args} -P {port} localhost\nrc=$?\nt1=$(date +%s%N)\n"
              f"echo wall_ns=$((t1 - t0))\nwait $srv\nexit $rc\n")
    r = subprocess.run([sys.executable, CXISIM, "exec", "--time", mode, *set_args(sets), "--", "bash", "-c", script],
                       capture_output=True, text=True, timeout=600, cwd=REPO)
    m = re.search(r"^\S+\s+\S+\s+=\S+\s+\S+\s+\S+s\s+\S+\s+(\S+)\s+(\S+)\s*$", r.stdout, re.M)
    w = re.search(r"wall_ns=(\d+)", r.stdout)
    if r.returncode or not m or not w:
        sys.exit(f"bench: fi_pingpong ({mode}) failed:\n{r.stdout}\n{r.stderr}")
    return float(m.group(1)), int(w.group(1)) / 1e9


def wall_per_rt(mode):
    """Wall microseconds per round trip (two iteration counts, start-up cancelled) and the printed
    one-way latency of the long run."""
    lat, w_short = pingpong(mode, ITERS)
    lat, w_long = pingpong(mode, 5 * ITERS)
    return (w_long - w_short) / (4 * ITERS) * 1e6, lat


def bench_pingpong():
    print(f"virtual-time bench: fi_pingpong -p cxi -e rdm -S 8, wall time per round trip from "
          f"{ITERS} and {5 * ITERS} iterations, median of {TRIALS} trials, virtual and realtime alternating")
    for load, n in (("idle", 0), ("2 CPU hogs", 2)):
        with cpu_hogs(n):
            v, r, vlat, rlat = [], [], [], []
            for _ in range(TRIALS):
                x, lat = wall_per_rt("virtual")
                v.append(x)
                vlat.append(lat)
                x, lat = wall_per_rt("realtime")
                r.append(x)
                rlat.append(lat)
        mv, mr = statistics.median(v), statistics.median(r)
        print(f"fi_pingpong 8 B, {load}: virtual {mv:.1f} us wall per round trip (simulated round trip "
              f"{2 * statistics.median(vlat):.2f} us, printed {min(vlat):.2f}..{max(vlat):.2f} us/xfer); "
              f"realtime {mr:.1f} us wall per round trip (printed {min(rlat):.2f}..{max(rlat):.2f} us/xfer); "
              f"virtual/realtime {mv / mr:.2f}x (target <= 2x)")
        sys.stdout.flush()


def bench_allreduce(ranks=8, iters=2000):
    prog = os.path.join(REPO, BUILD, "tests", "provider", "mpi_allreduce_loop")
    script = (f"t0=$(date +%s%N)\n{' '.join(MPIRUN)} -np {ranks} {prog} {{n}} 1\nrc=$?\n"
              f"t1=$(date +%s%N)\necho wall_ns=$((t1 - t0))\nexit $rc\n")
    res = {}
    for n in (iters // 5, iters):
        r = subprocess.run([sys.executable, CXISIM, "exec", "--", "bash", "-c", script.format(n=n)],
                           capture_output=True, text=True, timeout=1200, cwd=REPO)
        m = re.search(r"mpi_wtime=(\S+) per_iter_us=(\S+)", r.stdout)
        w = re.search(r"wall_ns=(\d+)", r.stdout)
        if r.returncode or not m or not w:
            sys.exit(f"bench: allreduce loop failed:\n{r.stdout}\n{r.stderr}")
        res[n] = (float(m.group(1)), int(w.group(1)) / 1e9)
    (s1, w1), (s2, w2) = res[iters // 5], res[iters]
    sim, wall = s2 - s1, w2 - w1
    print(f"Open MPI Allreduce (8 B, {ranks} ranks) under virtual time: {res[iters][0] / iters * 1e6:.2f} us "
          f"simulated per Allreduce; {iters - iters // 5} more iterations took {sim * 1e3:.3f} ms simulated "
          f"and {wall:.2f} s wall: slowdown {wall / sim:.0f}x (wall / simulated)")


def netpipe(sets=()):
    """NetPIPE's one-way times (us) at 8 B and 4 MiB over Open MPI under virtual time (cpu_scale as the
    scenario's, else sets'), from one run: {bytes: us}."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "np.out")
        r = subprocess.run([sys.executable, CXISIM, "exec", *set_args(sets), "--", *MPIRUN, "-np", "2",
                            "NPopenmpi", "-u", str(4 << 20), "-n", "200", "-p", "0", "-o", out],
                           capture_output=True, text=True, timeout=600, cwd=REPO)
        rows = [ln.split() for ln in open(out).read().splitlines()] if os.path.exists(out) else []
        t = {int(f[0]): float(f[2]) * 1e6 for f in rows if len(f) >= 3}
        if r.returncode or 8 not in t or (4 << 20) not in t:
            sys.exit(f"bench: NetPIPE failed:\n{r.stdout}\n{r.stderr}")
        return t


LOAD_RUNS = int(os.environ.get("BENCH_LOAD_RUNS", "5"))


def bench_host_load():
    """Host-load independence: the figures the benchmarks print, idle and with 2 CPU hogs on the 2 cores, the
    issue's target is within 2%; by default (cpu_scale 0) and with application CPU time charged (cpu_scale 1).  Each run
    with hogs directly follows its idle twin (same variant), so a drift of the machine over the batch falls
    on both columns alike; the hogs are started and killed around each loaded run (provider_helpers)."""
    print(f"virtual-time bench: host-load independence, printed figures, median of {LOAD_RUNS} idle / 2-CPU-hog "
          f"pairs run back to back; the default (cpu_scale 0), and cpu_scale 1 alone, with "
          f"emulation.keep_cores_awake 1 and with emulation.span_clip_ns 20000 (quantile 0.1)")
    one = "emulation.cpu_scale=1"
    variants = (("", ()), (" cpu_scale 1", (one,)), (" cpu_scale 1 keep_cores_awake", (one, "emulation.keep_cores_awake=1")),
                (" cpu_scale 1 span clip q 0.1 20 us", (one, "emulation.span_clip_ns=20000",
                                                        "emulation.span_clip_quantile=0.1")))
    figures = (("fi_pingpong 8 B us/xfer", "pp"), ("NetPIPE 8 B one-way us", 8), ("NetPIPE 4 MiB one-way us", 4 << 20))
    runs = {(v, n, key): [] for v, _ in variants for n in (0, 2) for _, key in figures}
    for _ in range(LOAD_RUNS):
        for v, sets in variants:
            for n in (0, 2):
                with cpu_hogs(n):
                    runs[v, n, "pp"].append(pingpong("virtual", ITERS, sets)[0])
                    t = netpipe(sets)
                for size in (8, 4 << 20):
                    runs[v, n, size].append(t[size])
    for v, _ in variants:
        for name, key in figures:
            i, h = statistics.median(runs[v, 0, key]), statistics.median(runs[v, 2, key])
            lo, hi = min(runs[v, 2, key]), max(runs[v, 2, key])
            print(f"{name}{v}: idle {i:.3f} ({min(runs[v, 0, key]):.3f}..{max(runs[v, 0, key]):.3f}); "
                  f"2 CPU hogs {h:.3f} ({lo:.3f}..{hi:.3f}); loaded/idle {h / i:.3f} (target: 1 +- 0.02)")
    sys.stdout.flush()


def main():
    which = sys.argv[1:] or ["pingpong", "host-load", "allreduce"]
    if "pingpong" in which:
        bench_pingpong()
    if "host-load" in which:
        bench_host_load()
    if "allreduce" in which:
        bench_allreduce()


if __name__ == "__main__":
    main()
