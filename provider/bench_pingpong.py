#!/usr/bin/python3
"""`make bench` for the provider: small-message latency and (one-outstanding) message rate of fi_pingpong
through cxisim's "cxi" provider (realtime mode, fabric latency 0) against libfabric's own "tcp" provider
on loopback, measured in the same run, alternating, median of several trials.  Prints both and the
ratio ours/tcp (latency: lower is better for both; a ratio below 1 means faster than tcp)."""
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
BUILD = os.environ.get("CXISIM_BUILD", "build")
TRIALS = int(os.environ.get("BENCH_TRIALS", "5"))
ITERS = os.environ.get("BENCH_ITERS", "5000")
SIZES = ["8", "64", "1024"]


def pingpong(prov, size, wrapper):
    port = str(20000 + (os.getpid() + int(time.time() * 1000)) % 20000)
    args = ["fi_pingpong", "-p", prov, "-e", "rdm", "-S", size, "-I", ITERS]
    srv = " ".join(args + ["-B", port])
    cli = " ".join(args + ["-P", port, "localhost"])
    script = f"{srv} > /dev/null 2>&1 &\nsrv=$!\nsleep 0.3\n{cli}\nrc=$?\nwait $srv\nexit $rc\n"
    r = subprocess.run([*wrapper, "bash", "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)
    # the result row: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec ("1024" prints as "1k")
    m = re.search(r"^\S+\s+\S+\s+=\S+\s+\S+\s+\S+s\s+\S+\s+(\S+)\s+(\S+)\s*$", r.stdout, re.M)
    if r.returncode or not m:
        sys.exit(f"bench: fi_pingpong -p {prov} -S {size} failed:\n{r.stdout}\n{r.stderr}")
    return float(m.group(1)), float(m.group(2))


def main():
    ours_wrap = [sys.executable, os.path.join(REPO, "cxisim"), "exec", "--time", "realtime", "--set", "latency_ns=0", "--"]
    env_ok = subprocess.run(["fi_info", "-p", "tcp", "-t", "FI_EP_RDM"], capture_output=True).returncode == 0
    if not env_ok:
        sys.exit("bench: libfabric's tcp provider offers no FI_EP_RDM endpoint here")
    print(f"provider bench: fi_pingpong -e rdm, {ITERS} iterations, median of {TRIALS} trials "
          f"(cxi: cxisim realtime, fabric latency 0; tcp: libfabric tcp on loopback)")
    print(f"{'size':>6} {'cxi us/xfer':>12} {'tcp us/xfer':>12} {'lat ratio':>10} {'cxi kmsg/s':>11} "
          f"{'tcp kmsg/s':>11} {'rate ratio':>10}")
    for size in SIZES:
        ours, tcp = [], []
        for _ in range(TRIALS):
            ours.append(pingpong("cxi", size, ours_wrap))
            tcp.append(pingpong("tcp", size, []))
        ol = statistics.median(x[0] for x in ours)
        tl = statistics.median(x[0] for x in tcp)
        # fi_pingpong keeps one message in flight: its message rate is 1 / (usec per transfer), which it
        # prints with two decimals in Mxfers/s; derive it from the latency instead.
        orate, trate = 1e3 / ol, 1e3 / tl
        print(f"{size:>6} {ol:>12.2f} {tl:>12.2f} {ol / tl:>10.2f} {orate:>11.1f} {trate:>11.1f} "
              f"{orate / trate:>10.2f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
