#!/usr/bin/python3
"""Events per CPU-second of a large run against a small one, measured so that a shared machine cannot blur it.

The two runs of one ratio (e.g. Fig 4 at 1,104,896 and at 6,656 clients) are alive at the same time but never
run together: this script stops one engine (SIGSTOP) while the other runs (SIGCONT), alternating in slices of
a few seconds, and after each slice reads the running engine's CPU time (/proc/PID/schedstat, nanoseconds)
and its event count (the record the engine keeps in --progress-file).  Only slices inside the run loop count
(not the scenario's set-up, not the writing of outputs).  Each slice of the large run is paired with the small
run's slices just before and after it, so both see the same machine (neighbours, clock, the host's other
guests): the pair's ratio is (large events / CPU-s) / (small events / CPU-s).  Printed: the whole run's
ratio with the drift taken out slice by slice (the large run's events over the small run's events its CPU
time would have run at the rate measured beside it) with a 95% bootstrap interval -- the verdict figure,
since a large run's speed changes as it goes (clients joining, start transients); the median pair ratio with
its distribution-free 95% interval (order statistics); the plain ratio of totals; and the spread of the small
run's own slices (how much the machine moved while we measured).  Hardware counters
would settle it more directly; this VM exposes none (perf: instructions and cycles "not supported").

When the small run ends first, a fresh one is started (its set-up again outside the slices).  The large run
runs to its end and writes its outputs as usual (its metrics.json is the same as a run without the script's
stops: the engine's results do not depend on wall time).

    tests/bench/speed_ratio.py SCENARIO --large k=v,... --small k=v,... [--common k=v,...] [--slice S]
        [--engine BIN] [--small-engine BIN] [--out DIR]

With --small-engine the small run uses another engine build: the same scenario on both sides (--large ''
--small '') is then an A/B of two builds, the ratio being the large side's build's speed over the other's.

prints one summary line (and the slices with -v); `make bench-scale` uses ratio().
"""
import argparse
import json
import math
import os
import signal
import struct
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
sys.path.insert(0, os.path.join(REPO, "analysis"))

from cxisim import scenario as scn  # noqa: E402
from cxisim.run import engine_path  # noqa: E402

MAGIC = 0x31474F5250584343  # SIM_PROGRESS_MAGIC (sim/engine.h)
PHASE_SETUP, PHASE_RUN, PHASE_DONE = 0, 1, 2
SLICE_S = 1.0
EMPTY = (0, 0)


def write_config(template, sets, path):
    doc = scn.render(template, dict(sets))
    with open(path, "w", encoding="utf-8") as f:
        scn.dump_json(scn.resolved(doc), f)


class Engine:
    """One engine process under the script's control (stopped between its slices)."""

    def __init__(self, engine, config, outdir, label):
        os.makedirs(outdir, exist_ok=True)
        self.label, self.outdir = label, outdir
        self.prog = os.path.join(outdir, "progress.bin")
        # Spawned and reaped here (os.wait4), not through subprocess: the rusage of the reap is the
        # engine's whole CPU time (set-up and outputs too), and nothing else may reap it first.
        self.pid = os.posix_spawn(engine, [engine, "--config", config, "--out", outdir, "--quiet",
                                           "--progress-file", self.prog], os.environ)
        self.status = None
        self.cpu_total_s = None

    def record(self):
        """(events, phase), or (0, SETUP) before the engine has made its record."""
        try:
            with open(self.prog, "rb") as f:
                raw = f.read(32)
        except OSError:
            return 0, PHASE_SETUP
        if len(raw) < 32:
            return 0, PHASE_SETUP
        magic, events, _now, phase = struct.unpack("<4Q", raw)
        return (events, phase) if magic == MAGIC else (0, PHASE_SETUP)

    def cpu_ns(self):
        with open(f"/proc/{self.pid}/schedstat", encoding="ascii") as f:
            return int(f.read().split()[0])

    def _state(self):
        try:
            with open(f"/proc/{self.pid}/stat", encoding="ascii") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "X"

    def alive(self):
        """Running or stopped (an engine that exited stays a zombie until reap())."""
        return self.status is None and self._state() not in ("Z", "X")

    def stop(self):
        if not self.alive():
            return
        os.kill(self.pid, signal.SIGSTOP)
        while self._state() not in ("T", "t", "Z", "X"):
            time.sleep(0.001)

    def cont(self):
        if self.status is None:
            os.kill(self.pid, signal.SIGCONT)

    def reap(self):
        if self.status is None:
            _, st, ru = os.wait4(self.pid, 0)
            self.status = os.waitstatus_to_exitcode(st)
            self.cpu_total_s = ru.ru_utime + ru.ru_stime
        return self.status

    def slice(self, seconds):
        """Run one slice: (events, cpu_ns) when it lay inside the run loop, EMPTY when the engine got no CPU
        or ran no event in it (a loaded machine), None when the run loop was not running at both ends."""
        if not self.alive():
            return None
        ev0, ph0 = self.record()
        c0 = self.cpu_ns()
        self.cont()
        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end and self.alive():
            time.sleep(min(0.05, max(0.0, t_end - time.monotonic())))
        if not self.alive():
            return None
        self.stop()
        ev1, ph1 = self.record()
        c1 = self.cpu_ns()
        if ph0 != PHASE_RUN or ph1 != PHASE_RUN:
            return None
        if c1 <= c0 or ev1 <= ev0:
            return EMPTY
        return ev1 - ev0, c1 - c0

    def to_run_loop(self):
        """Let the set-up run (alone) until the run loop starts; False when the engine ended instead."""
        self.cont()
        while self.alive() and self.record()[1] == PHASE_SETUP:
            time.sleep(0.02)
        self.stop()
        return self.alive() and self.record()[1] == PHASE_RUN

    def finish(self):
        self.cont()
        rc = self.reap()
        if rc != 0:
            raise RuntimeError(f"{self.label}: engine exited with status {rc}")

    def kill(self):
        if self.status is None:
            if self.alive():
                os.kill(self.pid, signal.SIGKILL)  # ends a stopped process too
            self.reap()


def median_interval(xs):
    """Median and its distribution-free 95% interval (order statistics: P(Binomial(n, 1/2) < k) <= 2.5%)."""
    xs = sorted(xs)
    n = len(xs)
    med = xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])
    k, cdf = 0, 0.0
    while True:
        p = math.comb(n, k) / 2 ** n
        if cdf + p > 0.025:
            break
        cdf += p
        k += 1
    if k == 0:
        return med, xs[0], xs[-1], False  # too few pairs for a 95% interval: the range instead
    return med, xs[k - 1], xs[n - k], True


def whole_run_ratio(weighted, resamples=2000):
    """The whole run's ratio with the machine's drift taken out slice by slice: the large run's events over
    the small run's events its CPU time would have run at the rate measured beside it, sum(e_i) /
    sum(c_i * s_i); and a 95% bootstrap interval over the slices (fixed seed: the same slices give the same
    interval).  Unlike the median pair ratio it weighs every phase of the large run by its CPU time, so it
    is the figure for runs whose speed changes as they go (clients still joining, a start transient)."""
    import random
    est = lambda w: sum(e for e, _ in w) / sum(c for _, c in w)  # noqa: E731
    rng = random.Random(1)
    boots = sorted(est([w for w in rng.choices(weighted, k=len(weighted))]) for _ in range(resamples))
    return est(weighted), boots[int(0.025 * resamples)], boots[int(0.975 * resamples) - 1]


def ratio(template, large, small, slice_s=SLICE_S, engine=None, out=None, log=None, small_engine=None):
    """Interleave a large and a small run of one scenario template; returns a dict (see summary())."""
    engine = engine or engine_path()
    small_engine = small_engine or engine
    tmp = tempfile.mkdtemp(prefix="speed-ratio-", dir=out)
    # The large run's directory is a run directory like `cxisim run`'s (scenario.json beside its outputs).
    os.makedirs(os.path.join(tmp, "large"))
    cfg_l, cfg_s = os.path.join(tmp, "large", "scenario.json"), os.path.join(tmp, "small.json")
    write_config(template, large, cfg_l)
    write_config(template, small, cfg_s)
    big = Engine(engine, cfg_l, os.path.join(tmp, "large"), "large")
    smalls = []
    pairs, lslices, sslices, weighted = [], [], [], []

    def new_small():
        e = Engine(small_engine, cfg_s, os.path.join(tmp, f"small{len(smalls)}"), "small")
        smalls.append(e)
        if not e.to_run_loop():
            raise RuntimeError("small run ended before its run loop")
        return e

    def small_slice():
        nonlocal sm
        s = sm.slice(slice_s)
        while s is None or s == EMPTY:
            if s is None:
                sm.kill()
                sm = new_small()
            s = sm.slice(slice_s)
        sslices.append(s)
        return s

    sm = None
    try:
        if not big.to_run_loop():
            raise RuntimeError("large run ended before its run loop")
        sm = new_small()
        before = small_slice()
        while True:
            b = big.slice(slice_s)
            if b is None:
                break
            if b == EMPTY:
                continue
            lslices.append(b)
            after = small_slice()
            rate_l = b[0] / b[1]
            rate_s = (before[0] + after[0]) / (before[1] + after[1])
            pairs.append(rate_l / rate_s)
            weighted.append((b[0], b[1] * rate_s))
            if log:
                log(f"  slice {len(pairs):3d}: large {rate_l * 1e3:.3f} M ev/CPU-s ({b[1] / 1e9:.2f} CPU-s), "
                    f"small {rate_s * 1e3:.3f} M, ratio {rate_l / rate_s:.3f}")
            before = after
        sm.kill()
        big.finish()
    finally:
        for e in smalls + [big]:
            e.kill()
    if len(pairs) < 1:
        raise RuntimeError("no slice of the large run lay inside its run loop: use a shorter --slice")
    med, lo, hi, ok = median_interval(pairs)
    tot = lambda sl: sum(e for e, _ in sl) / sum(c for _, c in sl) * 1e9  # noqa: E731
    srates = sorted(e / c * 1e9 for e, c in sslices)
    with open(os.path.join(big.outdir, "run.json"), encoding="utf-8") as f:
        runinfo = json.load(f)
    run_ratio, run_lo, run_hi = whole_run_ratio(weighted)
    return {"pairs": len(pairs), "median": med, "lo": lo, "hi": hi, "interval95": ok,
            "run_ratio": run_ratio, "run_lo": run_lo, "run_hi": run_hi,
            "total_ratio": tot(lslices) / tot(sslices), "large_evcpu": tot(lslices), "small_evcpu": tot(sslices),
            "small_min": srates[0], "small_max": srates[-1], "slice_s": slice_s, "small_runs": len(smalls),
            "large_dir": big.outdir, "large_run": runinfo, "large_cpu_total_s": big.cpu_total_s, "tmp": tmp}


def summary(r):
    iv = "95% interval" if r["interval95"] else "range (too few pairs for a 95% interval)"
    return (f"whole run {r['run_ratio']:.3f} (95% bootstrap interval {r['run_lo']:.3f}-{r['run_hi']:.3f}), "
            f"median of {r['pairs']} interleaved pairs {r['median']:.3f} ({iv} {r['lo']:.3f}-{r['hi']:.3f}), "
            f"ratio of totals {r['total_ratio']:.3f}: large {r['large_evcpu'] / 1e6:.2f} M ev/CPU-s, small "
            f"{r['small_evcpu'] / 1e6:.2f} M (its slices {r['small_min'] / 1e6:.2f}-{r['small_max'] / 1e6:.2f} M); "
            f"{r['slice_s']:g}-s slices, one engine stopped while the other runs")


def parse_sets(text):
    """'clients=6656,strategy=multi_recv' -> {'clients': 6656, 'strategy': 'multi_recv'} (as --set reads them)."""
    return scn.parse_sets([item for item in (text or "").split(",") if item])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("scenario")
    ap.add_argument("--large", required=True, help="k=v,... of the large run ('' for --common alone)")
    ap.add_argument("--small", required=True, help="k=v,... of the small run")
    ap.add_argument("--common", default="")
    ap.add_argument("--slice", type=float, default=SLICE_S)
    ap.add_argument("--engine")
    ap.add_argument("--small-engine")
    ap.add_argument("--out")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    path = a.scenario if os.path.exists(a.scenario) else os.path.join(REPO, "scenarios", a.scenario)
    common = parse_sets(a.common)
    log = (lambda s: print(s, flush=True)) if a.v else None
    r = ratio(path, {**common, **parse_sets(a.large)}, {**common, **parse_sets(a.small)}, a.slice, a.engine,
              a.out, log, a.small_engine)
    print(summary(r))
    print(f"large run: {r['large_dir']} (run loop {r['large_run']['cpu_time_s']:.1f} CPU-s, "
          f"{r['large_run']['events_per_cpu_s'] / 1e6:.2f} M ev/CPU-s over the whole loop; the engine's whole CPU "
          f"time {r['large_cpu_total_s']:.1f} s, peak RSS {r['large_run']['peak_rss_kb'] / 2**20:.2f} GB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
