"""Virtual time end to end: unmodified programs under `cxisim exec` (virtual time is its default; the clock
interposer libcxisim-clock.so is preloaded) read the simulated machine's time, so what they print does not
depend on how busy the host is.

- tests/progs/clock/clock_work: 1 ms of CPU between messages is cpu_scale x 1 ms of virtual time; a 10 ms
  nanosleep is 10 ms of virtual time, and far less wall time.
- fi_pingpong -p cxi -e rdm: the same latency with two CPU hogs on the two cores as idle.
- NetPIPE (NPopenmpi) over Open MPI (cm PML, OFI MTL, cxi) on the default scenario: the 8-byte latency is
  the model's prediction (docs/provider.md "Virtual time: what the model predicts"), the 4 MiB bandwidth is
  the link's payload rate, both unchanged under CPU hogs; with cpu_scale 0 two runs print the same figures."""
import contextlib
import re
import statistics
import subprocess
import sys
import time

import pytest

from provider_helpers import BUILD_DIR, cxisim_exec

CLOCK_WORK = f"{BUILD_DIR}/tests/clock/clock_work"
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
          "--mca", "mtl_ofi_provider_include", "cxi", "--mca", "btl", "self"]


@contextlib.contextmanager
def cpu_hogs(n=2):
    """n processes spinning at the tests' priority: both cores busy while the block runs."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.2)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def work_rows(mode, cpu_scale):
    r = cxisim_exec([CLOCK_WORK, mode], sets={"cpu_scale": cpu_scale}, timeout=120)
    assert r.returncode == 0 and "PASSED clock_work" in r.stdout, r.stdout + r.stderr
    rows = [tuple(int(x) for x in ln.split()[1:]) for ln in r.stdout.splitlines() if ln.startswith(mode + " ")]
    assert len(rows) == 20, r.stdout
    return rows  # (virtual ns, CPU ns, wall ns) per iteration


@pytest.mark.parametrize("cpu_scale", [1, 2])
def test_cpu_burn_advances_virtual_time_by_cpu_scale(cpu_scale):
    rows = work_rows("burn", cpu_scale)
    v = statistics.median(r[0] for r in rows)
    assert abs(v - 1e6 * cpu_scale) < 0.05 * 1e6 * cpu_scale, rows
    for virt, cpu, _ in rows:  # each one: the CPU time it burnt, scaled
        assert abs(virt - cpu * cpu_scale) < 0.05 * cpu * cpu_scale, rows


def test_cpu_burn_is_free_with_cpu_scale_0():
    rows = work_rows("burn", 0)
    assert all(r[0] == 0 for r in rows), rows


def test_sleep_is_virtual_time_exactly():
    """cpu_scale 0: a 10 ms nanosleep is exactly 10 ms of virtual time, and takes far less wall time (nothing
    else is pending)."""
    rows = work_rows("sleep", 0)
    assert all(r[0] == 10_000_000 for r in rows), rows
    assert statistics.median(r[2] for r in rows) < 2_000_000, rows


def test_sleep_with_cpu_time_charged():
    """cpu_scale 1 (the default): the sleep plus the little CPU time the thread spends around it."""
    rows = work_rows("sleep", 1)
    assert all(10_000_000 <= r[0] for r in rows), rows
    assert statistics.median(r[0] for r in rows) < 10_100_000, rows
    assert statistics.median(r[2] for r in rows) < 5_000_000, rows


def fi_pingpong(iters=2000, sets=None):
    script = (f"fi_pingpong -p cxi -e rdm -S 8 -I {iters} > /dev/null 2>&1 &\nsrv=$!\nsleep 0.3\n"
              f"fi_pingpong -p cxi -e rdm -S 8 -I {iters} localhost\nrc=$?\nwait $srv\nexit $rc\n")
    r = cxisim_exec(["bash", "-c", script], sets=sets, timeout=300)
    m = re.search(r"^8\s+\S+\s+=\S+\s+\S+\s+\S+s\s+\S+\s+(\S+)\s+\S+\s*$", r.stdout, re.M)
    assert r.returncode == 0 and m, r.stdout + r.stderr
    return float(m.group(1))


@pytest.mark.parametrize("cpu_scale", [0, 1])
def test_fi_pingpong_independent_of_host_load(cpu_scale):
    idle = fi_pingpong(sets={"cpu_scale": cpu_scale})
    with cpu_hogs(2):
        loaded = fi_pingpong(sets={"cpu_scale": cpu_scale})
    assert abs(loaded - idle) <= 0.02 * idle, (idle, loaded)


def netpipe(tmp_path, name, sets=None, upper=4 << 20, repeats=50):
    """NetPIPE's output file: {bytes: (Mbps as NetPIPE counts them, 2^20 bit/s; one-way time in s)}."""
    out = tmp_path / f"{name}.np"
    r = cxisim_exec([*MPIRUN, "-np", "2", "NPopenmpi", "-u", str(upper), "-n", str(repeats), "-p", "0",
                     "-o", str(out)], sets=sets, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {}
    for line in out.read_text().split("\n"):
        f = line.split()
        if len(f) >= 3:
            rows[int(f[0])] = (float(f[1]), float(f[2]))
    assert 8 in rows and upper in rows, out.read_text()
    return rows


# The model's one-way time for an 8-byte tagged message on the default scenario (docs/provider.md "Virtual
# time: what the model predicts"): the initiator's doorbell (100 ns), command (40 ns) and IDC slot (2 ns);
# the direct fabric's zero-load time, 350 ns + (8 + 64) B x 8 / 200 Gb/s = 352.88 ns; the target's match
# (40 ns + 2 ns for the one LE walked) and the event's PCIe write (250 + 20 ns).
PREDICTED_8B_S = (100 + 40 + 2 + 350 + (8 + 64) * 8 / 200 + 40 + 2 + 250 + 20) * 1e-9
# A long message moves at the link's payload rate: 200 Gb/s x 2048 / (2048 + 64).
PREDICTED_BW_BPS = 200e9 * 2048 / (2048 + 64)


def check_prediction(rows):
    lat = rows[8][1]
    assert abs(lat - PREDICTED_8B_S) <= 0.05 * PREDICTED_8B_S, (lat, PREDICTED_8B_S)
    bw = rows[4 << 20][0] * 2**20
    assert abs(bw - PREDICTED_BW_BPS) <= 0.05 * PREDICTED_BW_BPS, (bw, PREDICTED_BW_BPS)


def test_netpipe_matches_model_and_host_load(tmp_path):
    idle = netpipe(tmp_path, "idle")
    check_prediction(idle)
    with cpu_hogs(2):
        loaded = netpipe(tmp_path, "loaded")
    for size in (8, 4 << 20):
        assert abs(loaded[size][1] - idle[size][1]) <= 0.02 * idle[size][1], (size, idle[size], loaded[size])


def test_netpipe_cpu_scale_0_is_deterministic(tmp_path):
    a = netpipe(tmp_path, "a", sets={"cpu_scale": 0}, upper=65536)
    b = netpipe(tmp_path, "b", sets={"cpu_scale": 0}, upper=65536)
    assert a == b
    assert abs(a[8][1] - PREDICTED_8B_S) <= 0.05 * PREDICTED_8B_S, a[8]
