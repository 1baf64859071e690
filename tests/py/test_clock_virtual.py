"""Virtual time end to end: unmodified programs under `cxisim exec` (virtual time is its default; the clock
interposer libcxisim-clock.so is preloaded) read the simulated machine's time, so what they print does not
depend on how busy the host is.

- tests/progs/clock/clock_work: 1 ms of CPU between messages is cpu_scale x 1 ms of virtual time; a 10 ms
  nanosleep is 10 ms of virtual time, and far less wall time; trapped rdtsc reads and the interposer's virtual
  waits are not charged.
- fi_pingpong -p cxi -e rdm (cpu_scale 0): the model's 8-byte latency, the same with two CPU hogs on the
  two cores.
- NetPIPE (NPopenmpi) over Open MPI (cm PML, OFI MTL, cxi), cpu_scale 0: the model's 8-byte latency, the
  same small-message figures in two runs and under CPU hogs."""
import itertools
import json
import re
import statistics

import pytest

from provider_helpers import BUILD_DIR, DEFAULT_SCENARIO, pingpong_pair, cpu_hogs, cxisim_exec, emulation_counters

CLOCK_WORK = f"{BUILD_DIR}/tests/clock/clock_work"
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
          "--mca", "mtl_ofi_provider_include", "cxi", "--mca", "btl", "self"]


def work_rows(mode, cpu_scale, scenario=None):
    """cpu_scale None: no setting (the scenario's, else the daemon's default); the dotted key sets the field in a
    scenario file as in the template."""
    sets = {} if cpu_scale is None else {"emulation.cpu_scale": cpu_scale}
    r = cxisim_exec([CLOCK_WORK, mode], sets=sets, scenario=scenario, timeout=120)
    assert r.returncode == 0 and "PASSED clock_work" in r.stdout, r.stdout + r.stderr
    rows = [tuple(int(x) for x in ln.split()[1:]) for ln in r.stdout.splitlines() if ln.startswith(mode + " ")]
    assert len(rows) == 20, r.stdout
    return rows  # (virtual ns, CPU ns, wall ns) per iteration


@pytest.mark.parametrize("cpu_scale", [1, 2])
def test_cpu_burn_advances_virtual_time_by_cpu_scale(cpu_scale):
    rows = work_rows("burn", cpu_scale)
    v = statistics.median(r[0] for r in rows)
    assert abs(v - 1e6 * cpu_scale) < 0.05 * 1e6 * cpu_scale, rows
    # Each one: the CPU time it burnt, scaled.  On a loaded host a single iteration may be off (an
    # interrupt or a preemption costs CPU time inside the measured span); 18 of the 20 must hold.
    good = [abs(virt - cpu * cpu_scale) < 0.05 * cpu * cpu_scale for virt, cpu, _ in rows]
    assert sum(good) >= 18, rows


def test_trapped_counter_reads_are_not_charged():
    """Where the CPU honours PR_SET_TSC, each rdtsc is a fault, a signal and a sigreturn: ~5 us of the
    thread's CPU time here, against nanoseconds for the instruction.  That is the emulation's cost (tsc.c):
    200 reads between two clock reads advance virtual time by a small part of the CPU they cost (measured
    5-7% in the mean, 11% at most, idle and with 2 or 3 CPU hogs; 95% before the trap's cost was taken
    off).  Where the counter is not trapped (the reads cost almost nothing) the test skips."""
    rows = work_rows("tsc", 1)
    cpu = statistics.median(r[1] for r in rows)
    if cpu < 200 * 1000:
        pytest.skip(f"the cycle counter is not trapped here (200 reads cost {cpu} ns of CPU)")
    virt = statistics.median(r[0] for r in rows)
    assert virt < 0.25 * cpu, rows


@pytest.mark.parametrize("mode", ["rt", "rt-mpi"])
def test_waits_on_the_cq_fd_end_at_the_completion(mode):
    """clock_work's round trips wait for each completion as event-driven programs do: an empty fi_cq_read,
    fi_trywait, then poll() on the CQ's wait fd with a 100 ms timeout (the interposer's virtual wait).  The
    daemon used to wake the thread before ringing the fd's doorbell; the woken thread saw no fd ready and
    slept on to its timeout: 100 or 200 ms of virtual time in most round trips at cpu_scale 1.  Now every
    one ends at its completion (5-17 us here at cpu_scale 1); at cpu_scale 0 two runs give the same
    round trips to the clock's resolution: each is the difference of two clock_gettime readings, each the
    picosecond virtual time truncated to the nanosecond, and where the run's timeline starts within the
    nanosecond depends on how long Open MPI's start-up waited for its launcher (the NetPIPE test below), so
    the difference may be 1 ns apart (1912 vs 1911 once in a loaded make test)."""
    rows = work_rows(mode, 1)
    assert all(v < 1_000_000 for v, _, _ in rows), rows
    a, b = work_rows(mode, 0), work_rows(mode, 0)
    assert all(abs(x[0] - y[0]) <= 1 for x, y in zip(a, b)) and len(a) == len(b), (a, b)
    assert all(v < 3_000 for v, _, _ in a), a


def test_cq_signal_ends_a_poll_on_the_cq_fd():
    """One thread sleeps in poll() on its CQ's wait fd (100 ms timeout), another calls fi_cq_signal 1 ms
    (virtual) later: the poll returns then.  fi_cq_signal used to wake the sleeper before writing the fd,
    and a sleeper that looked at the fd first slept on to its timeout (100 ms in 3-5 of 20 here, in every
    run; with that order put back, 2 of 3 runs idle had such a wait).  What looked like a residual lost
    wake-up under CPU hogs (7-9 of 10 runs there) was the program's own race: its fi_trywait, which drains
    the fd, came after the signaller's start, and on a loaded host the signal could come first (all 50 bad
    waits of those runs had it so, none of 97 signalled after fi_trywait).  With fi_trywait first, 0 of 20
    runs under 2 CPU hogs and 0 of 20 idle had a wait at its timeout, so every run must be clean."""
    for _ in range(3):
        r = cxisim_exec([CLOCK_WORK, "signal"], timeout=120)
        assert r.returncode == 0 and "PASSED clock_work" in r.stdout, r.stdout + r.stderr
        waits = [int(v) for v in re.findall(r"^signal (\d+) 0 0$", r.stdout, re.M)]
        assert len(waits) == 20, r.stdout
        assert all(v < 10_000_000 for v in waits), f"waits slept to their timeout: {waits}"


def _excursion_rows(sets, nice=0):
    """clock_work excursion under `sets` at cpu_scale 1 (the echo's 50 us of CPU is charged; with CPU time
    free an excursion's CPU could not move the clock anyway): its 20 round trips as (virtual ns, empty polls
    before the reply)."""
    r = cxisim_exec([CLOCK_WORK, "excursion"], sets={"emulation.cpu_scale": 1, **sets}, timeout=120, nice=nice)
    assert r.returncode == 0 and "PASSED clock_work" in r.stdout, r.stdout + r.stderr
    rows = [(int(v), int(n)) for v, n in re.findall(r"^excursion (\d+) (\d+) 0$", r.stdout, re.M)]
    assert len(rows) == 20, r.stdout
    return rows


def test_park_timeout_excursions_are_not_charged():
    """A parked thread whose park ends by its wall-clock timeout (emulation.park_timeout_us; 10 us here, so
    that many do) gets an empty poll back; the CPU it spends before it polls the same CQ again, with nothing
    changed, must not move its clock, or what it measures depends on how fast the daemon and the peer ran
    in wall time.  clock_work's pinger burns 1 ms of CPU after every such poll while its echo replies
    100 us (virtual sleep) + 50 us (CPU) after the ping: every round trip stays far below 1 ms (with the
    excursions charged, 3-5 of 20 took 1.0-1.1 ms in every run).

    A residual race is known (docs/provider.md "Time"): on a loaded host a round trip now and then still
    gets part of an excursion charged (1 of 24 runs under 2 CPU hogs once the stall rule stopped
    extrapolating excursions, 2-3 of 12 before; 0 of 40 idle).  So the rule must hold for every round trip
    of at least one of up to 5 runs in which parks timed out; the code that charged excursions fails that
    in every run."""
    bad_runs = []
    for _ in range(5):
        rows = _excursion_rows({"emulation.park_timeout_us": 10})
        assert all(v >= 150_000 for v, _ in rows), rows  # the echo's 100 us sleep + 50 us of CPU, always
        if not any(n > 1 for _, n in rows):
            continue
        bad = [v for v, _ in rows if v >= 500_000]
        if not bad:
            return
        bad_runs.append(bad)
    if bad_runs:
        pytest.fail(f"excursions charged in every run with timed-out parks: {bad_runs}")
    pytest.skip("no park timed out in 5 runs: nothing to check")


def test_stalled_excursions_are_not_extrapolated():
    """The same program with the stall rule looking after 100 us of wall time (emulation.stall_timeout_us):
    each 1 ms excursion outlasts it, and a thread extrapolated from its CPU time in an excursion jumps to a
    horizon that holds the excursion's CPU, which dropping the excursion cannot take back.  So a thread back
    from a timed-out park is extrapolated only once it has used 50 x stall_timeout_us of CPU time.  Idle: 0
    of 13 runs with a round trip out of bounds, against 11 of 13 without that rule.  The second run is
    loaded (the run at nice 15 under 3 CPU hogs, so that a 1 ms burn takes many ms of wall time): when the
    wait was 50 x stall_timeout_us of wall time, 5 of 6 such runs had 1-4 round trips of 0.54-0.96 ms (and
    CI failed once on the unloaded run); with the wait in CPU time, 0 of 6."""
    sets = {"emulation.park_timeout_us": 10, "emulation.stall_timeout_us": 100}
    rows = _excursion_rows(sets)
    assert all(150_000 <= v < 500_000 for v, _ in rows), rows
    with cpu_hogs(3):
        rows = _excursion_rows(sets, nice=15)
    assert all(150_000 <= v < 500_000 for v, _ in rows), rows


def test_virtual_waits_charge_only_the_application():
    """50 poll() calls with a 1 ms timeout on a pipe nobody writes: exactly 50 ms of virtual time for the
    waits, plus only what the application's own code costs.  The interposer's work in a virtual wait (its
    real poll(0) readiness checks, its clock reads between idles: ~10 us of CPU per call here) is the
    emulation's (ops enter/leave).  Measured excess per 50 calls: median 11-12 us idle and with 2 or 3 CPU
    hogs (it holds the row's own four raw clock reads), 1.9% of the row's CPU time; 35-58 us (4.5-7.5%) when
    the checks were charged.  Where the application's code itself is slower (a sanitized build, a loaded
    machine: 26-28 us of 1.5-1.9 ms of CPU), the bound grows with the row's CPU time, 3.5% of it.  The
    least-disturbed row is judged (the fewest host interruptions; its excess was 11-12 us idle): charged
    checks would be in every row, while a loaded host inflates some rows: the median reached 35.8 us in a
    full CI run beside another session's 12 GB benchmark; two idle runs after it: least 11.9 / 11.1 us,
    median 12.4 / 12.3 us, most 18.7 / 42.6 us."""
    rows = work_rows("poll", 1)
    assert all(r[0] >= 50_000_000 for r in rows), rows
    excess = min(r[0] for r in rows) - 50_000_000
    assert excess < max(25_000, 0.035 * statistics.median(r[1] for r in rows)), rows


def test_control_requests_take_effect_at_the_callers_time(tmp_path):
    """A memory registration (and its close) after 1 ms of CPU: the daemon holds each request until the
    engine reaches the caller's virtual time (it had no reason to go there before: nothing else happens), so
    the request takes effect then -- not at the engine's earlier now -- and the caller goes on from that
    time: the iteration still measures its burnt CPU time, nothing more."""
    r = cxisim_exec([CLOCK_WORK, "reg"], sets={"cpu_scale": 1}, out=tmp_path / "run", timeout=120)
    assert r.returncode == 0 and "PASSED clock_work" in r.stdout, r.stdout + r.stderr
    rows = [tuple(int(x) for x in ln.split()[1:]) for ln in r.stdout.splitlines() if ln.startswith("reg ")]
    assert len(rows) == 20, r.stdout
    good = [abs(virt - cpu) < 0.05 * cpu for virt, cpu, _ in rows]
    assert sum(good) >= 18, rows
    c = emulation_counters(tmp_path / "run")
    # requests that waited for the engine to reach their time, or found it there because their sender's own
    # bound (PCB_WAIT_REQUEST) took it there first: 13 measured (idle and with 2 CPU hogs, 8 runs); 3-5
    # with the hold disabled (counting only the second kind: it raced with the request, and the old
    # threshold of 5 failed 3 runs in 4 on main at 1354301 because that case was not counted)
    assert c.get("held_requests", 0) >= 10, c
    assert c.get("causality_lag_count", 0) == 0, c


# emulation.spin_read_ns: at cpu_scale 0 a clock read past the 16th in a row (no provider call or wait
# between) costs this much virtual time, so that a spin on the clock ends (test_a_spin_on_the_clock_ends).
SPIN_READ_NS = 35
SPIN_FREE_READS = 16


def test_cpu_burn_is_free_with_cpu_scale_0():
    rows = work_rows("burn", 0)
    assert all(r[0] == 0 for r in rows), rows


def test_spin_free_reads_is_the_scenarios():
    """emulation.spin_free_reads (default 16) is how many clock reads in a row stay free at cpu_scale 0: with 0,
    the second of burn's two reads around its 1 ms of CPU costs spin_read_ns (here 1,000 ns); by default
    both are free (the test above)."""
    r = cxisim_exec([CLOCK_WORK, "burn"], timeout=120, sets={"emulation.cpu_scale": 0, "emulation.spin_free_reads": 0,
                                                               "emulation.spin_read_ns": 1000})
    assert r.returncode == 0 and "PASSED clock_work" in r.stdout, r.stdout + r.stderr
    rows = [int(ln.split()[1]) for ln in r.stdout.splitlines() if ln.startswith("burn ")]
    assert len(rows) == 20 and set(rows) == {1000}, rows


@pytest.mark.parametrize("scenario", [None, "own"])
def test_cpu_time_is_free_by_default(tmp_path, scenario):
    """emulation.cpu_scale defaults to 0 (docs/provider.md "Why cpu_scale 0 is the default"): with no setting
    the pinger's 1 ms burns between messages pass no virtual time, whether the scenario is exec's default
    template or one without the field (the daemon's parameter default); --set cpu_scale=1 charges them (about
    1 ms each: generous bounds, the precise 5% is test_cpu_burn_advances_virtual_time_by_cpu_scale's).
    With the old default (1) both cases saw ~1 ms per burn."""
    path = None
    if scenario:
        path = tmp_path / "scenario.json"
        path.write_text(json.dumps(DEFAULT_SCENARIO))
        assert "cpu_scale" not in path.read_text()
    free = work_rows("burn", None, scenario=path)
    assert all(r[0] == 0 and r[1] >= 900_000 for r in free), free
    charged = work_rows("burn", 1, scenario=path)
    assert all(r[0] >= 900_000 for r in charged), charged


@pytest.mark.parametrize("cpu_scale", [1, 0])
def test_account_says_what_cpu_time_became(cpu_scale):
    """CXISIM_VT_ACCOUNT=1: a thread that ends reports its CPU time and the virtual time it was charged
    (provider/vtime.c).  clock_work burn's pinger burns 20 x 1 ms between messages: at cpu_scale 1 it was
    charged at least those 20 ms (the burns are measured on its CPU clock, so preemption adds nothing) and
    never more than its CPU time; at cpu_scale 0 nothing.  (The echo child ends with _exit: no report.)"""
    r = cxisim_exec([CLOCK_WORK, "burn"], sets={"cpu_scale": cpu_scale}, env={"CXISIM_VT_ACCOUNT": "1"},
                    timeout=120)
    assert r.returncode == 0 and "PASSED clock_work" in r.stdout, r.stdout + r.stderr
    acc = [dict(kv.split("=") for kv in ln.split()[1:]) for ln in r.stderr.splitlines()
           if ln.startswith("cxisim-vt-account ")]
    assert len(acc) == 1, r.stderr
    cpu, charged, vclock = (int(acc[0][k]) for k in ("cpu_ns", "charged_ns", "vclock_ns"))
    if cpu_scale:
        assert 20_000_000 * 0.95 <= charged <= cpu and vclock >= charged, acc
    else:
        assert charged == 0 and cpu >= 20_000_000, acc
    quiet = cxisim_exec([CLOCK_WORK, "burn"], sets={"cpu_scale": cpu_scale}, timeout=120)
    assert "cxisim-vt-account" not in quiet.stderr


def test_a_spin_on_the_clock_ends():
    """A busy wait on CLOCK_MONOTONIC outside the provider (clock_work spin: until 1 ms has passed).  At
    cpu_scale 0 (the default) CPU time moves no clock, so the spinner read the same time forever and held the
    engine back: with the echo waiting for it, the stall rule let it go after 50 x stall_timeout_us of its CPU
    and time jumped to the echo's next deadline (100 ms per "1 ms" spin); once the echo had given up, nothing
    moved time at all and the run hung (1 run in 1 at emulation.spin_read_ns 0, which restores that).  Now a
    clock read past the 16th in a row costs emulation.spin_read_ns (35 ns), so the spin ends after 1 ms of
    virtual time (and at most one read's cost more), the same in every iteration and run.  At cpu_scale 1 its
    CPU time is charged instead: ~1 ms."""
    free = work_rows("spin", None)
    assert len({r[0] for r in free}) == 1 and 1_000_000 <= free[0][0] < 1_000_000 + 4 * SPIN_READ_NS, free
    charged = work_rows("spin", 1)
    assert all(1_000_000 <= r[0] for r in charged), charged
    assert statistics.median(r[0] for r in charged) < 2_000_000, charged


def test_sleep_is_virtual_time_exactly():
    """cpu_scale 0: a 10 ms nanosleep is exactly 10 ms of virtual time, and takes far less wall time (nothing
    else is pending): a real sleep takes 10 ms or more every time.  The wall time is the daemon's and the
    thread's turnaround: a median of 0.04-0.05 ms here, 3.0 ms in a run at nice 15 under 2 CPU hogs and three
    other sessions' work (a 2 ms bound failed there), so the bound is half the real sleep."""
    rows = work_rows("sleep", 0)
    assert all(r[0] == 10_000_000 for r in rows), rows
    assert statistics.median(r[2] for r in rows) < 5_000_000, rows


def test_sleep_with_cpu_time_charged():
    """cpu_scale 1: the sleep plus the little CPU time the thread spends around it."""
    rows = work_rows("sleep", 1)
    assert all(10_000_000 <= r[0] for r in rows), rows
    assert statistics.median(r[0] for r in rows) < 10_100_000, rows
    assert statistics.median(r[2] for r in rows) < 5_000_000, rows


def fi_pingpong(iters=2000, sets=None):
    args = f"-p cxi -e rdm -S 8 -I {iters}"
    script = pingpong_pair(args, args) + "rc=$?\nwait $srv\nexit $rc\n"
    r = cxisim_exec(["bash", "-c", script], sets=sets, timeout=300)
    m = re.search(r"^8\s+\S+\s+=\S+\s+\S+\s+\S+s\s+\S+\s+(\S+)\s+\S+\s*$", r.stdout, re.M)
    assert r.returncode == 0 and m, r.stdout + r.stderr
    return float(m.group(1))  # microseconds per one-way transfer


# The model's one-way time for an 8-byte message on the default scenario (docs/provider.md "What the model
# predicts"): the initiator's doorbell (100 ns), command (40 ns) and IDC slot (2 ns); the direct fabric's
# zero-load time, 350 ns + (8 + 64) B x 8 / 200 Gb/s = 352.88 ns; the target's match (40 ns + 2 ns for the
# one LE walked) and the event's PCIe write (250 + 20 ns): 806.88 ns.
PREDICTED_8B_US = (100 + 40 + 2 + 350 + (8 + 64) * 8 / 200 + 40 + 2 + 250 + 20) / 1000
# fi_pingpong reposts its receive between the arrival and its reply, and the provider maps a receive buffer
# through the MR cache (docs/provider.md "Memory registration costs"; upstream ignores descriptors without
# hybrid MR descriptors): a find that hits and the release of the mapping, mr_cache_lookup_ns (70 ns) each,
# on the critical path.  NetPIPE over Open MPI posts its next receive while its own message is in flight.
MR_CACHE_LOOKUP_NS = 70
PREDICTED_FI_PINGPONG_8B_US = PREDICTED_8B_US + 2 * MR_CACHE_LOOKUP_NS / 1000


def test_fi_pingpong_prints_the_model_and_ignores_host_load():
    """cpu_scale 0 (application CPU time free): fi_pingpong prints the model's latency, with two CPU hogs on
    the two cores as idle, within the issue's 2% (fi_pingpong prints two decimals: 0.81 us, one step of
    its print is 1.2%; measured 0.81 in 12 of 12 runs idle, with 2 and with 3 hogs; 0.94 since the receive
    buffer's mapping is charged, PREDICTED_FI_PINGPONG_8B_US)."""
    idle = fi_pingpong(sets={"cpu_scale": 0})
    assert abs(idle - PREDICTED_FI_PINGPONG_8B_US) <= 0.02 * PREDICTED_FI_PINGPONG_8B_US, (idle,
                                                                                        PREDICTED_FI_PINGPONG_8B_US)
    with cpu_hogs(2):
        loaded = fi_pingpong(sets={"cpu_scale": 0})
    assert abs(loaded - idle) <= 0.02 * idle, (idle, loaded)


def daemon_threads_script(pingpong):
    """Shell lines: the scheduling classes of the threads of the daemon and of its children (ps's CLS: TS
    normal, IDL SCHED_IDLE, B batch), sampled every 20 ms while the fi_pingpong pair runs ('during:'
    lines), then once both processes have gone and the daemon has seen them go (up to 10 s; 'after:').  pgrep,
    ps and its pipe run without LD_PRELOAD (pgrep never returned with the sanitizer runtimes preloaded)."""
    return ('dpid=$( (unset LD_PRELOAD; pgrep -f -- "--socket $CXISIM_SOCKET") | head -1)\n'
            'classes() { (unset LD_PRELOAD; ps -L -o cls= -p "$dpid" --ppid "$dpid" | sort | uniq -c |\n'
            '            tr -s " \\n" " "); }\n'
            '(while :; do echo "during: $(classes)"; sleep 0.02; done) &\nsampler=$!\n'
            f"{pingpong}rc=$?\nwait $srv\nkill $sampler\nwait $sampler 2>/dev/null\n"
            'for _ in $(seq 100); do classes | grep -q IDL || break; sleep 0.1; done\n'
            'echo "after: $(classes)"\necho "cpus: $(nproc)"\nexit $rc\n')


@pytest.mark.parametrize("sets, spinners", [({"emulation.keep_cores_awake": 1, "cpu_scale": 1}, True),
                                             ({"cpu_scale": 1}, False), ({"emulation.keep_cores_awake": 1}, False)])
def test_cores_kept_awake_while_processes_are_attached(tmp_path, sets, spinners):
    """emulation.keep_cores_awake 1 (off by default; docs/provider.md "What the model predicts"): while
    processes are attached and CPU time is charged, the daemon runs one SCHED_IDLE spinner per CPU it may use
    (threads of a child process), so the cores never go idle; never a spinner of a class that competes with
    anyone, none once the processes have gone, none by default, none at cpu_scale 0 (the default: nothing
    charged).
    metrics.json counts them (emulation.awake_spinners)."""
    args = "-p cxi -e rdm -S 8 -I 3000"
    r = cxisim_exec(["bash", "-c", daemon_threads_script(pingpong_pair(args, args))], sets=sets,
                    out=tmp_path / "run", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    counts = lambda text: {cls: int(n) for n, cls in re.findall(r"(\d+) (\w+)", text)}  # noqa: E731
    during = [counts(t) for t in re.findall(r"^during: (.*)$", r.stdout, re.M)]
    after = re.search(r"^after: (.*)$", r.stdout, re.M)
    cpus = int(re.search(r"^cpus: (\d+)$", r.stdout, re.M).group(1))
    assert during and after, r.stdout
    assert all(set(d) <= {"TS", "IDL"} for d in during), during
    assert set(counts(after.group(1))) == {"TS"}, after.group(1)
    assert max(d.get("IDL", 0) for d in during) == (cpus if spinners else 0), (during, cpus)
    assert emulation_counters(tmp_path / "run").get("awake_spinners", 0) == (cpus if spinners else 0)


def netpipe(tmp_path, name, sets=None, upper=128, repeats=50):
    """NetPIPE's output file: {bytes: (Mbps as NetPIPE counts them, 2^20 bit/s; one-way time in s)}.  The
    one-way time is computed from the Mbps column (six decimals) rather than read from the time column
    (printed to 10 ns)."""
    out = tmp_path / f"{name}.np"
    r = cxisim_exec([*MPIRUN, "-np", "2", "NPopenmpi", "-u", str(upper), "-n", str(repeats), "-p", "0",
                     "-o", str(out)], sets=sets, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {}
    for line in out.read_text().split("\n"):
        f = line.split()
        if len(f) >= 3:
            rows[int(f[0])] = (float(f[1]), int(f[0]) * 8 / (float(f[1]) * 2**20))
    assert 8 in rows and upper in rows, out.read_text()
    return rows


# NetPIPE times each trial with two gettimeofday reads converted to double seconds (When()): each read is
# truncated to the microsecond, then rounded to the double's step at today's date (2^-22 s = 238 ns, the
# interposer's REALTIME is a fixed epoch of the run's start plus virtual time), and the difference is divided
# by 2 x repeats one-way trips.  Two runs whose virtual timelines are the same up to where the timed loop
# starts in the microsecond print one-way times at most this far apart.
NETPIPE_REPEATS = 200
NETPIPE_TICK_S = (1e-6 + 2 * 2.0**-22) / (2 * NETPIPE_REPEATS)


def test_netpipe_cpu_scale_0_is_deterministic_and_ignores_host_load(tmp_path):
    """NetPIPE over Open MPI (cm, OFI MTL, cxi) with cpu_scale 0: every size prints the same one-way time in
    two runs and in a run with two CPU hogs on the two cores, up to NetPIPE's own timer step
    (NETPIPE_TICK_S, 3.7 ns at 200 repeats: measured spreads 0.0-3.0 ns over 3 idle and 3 loaded runs),
    and the 8-byte time is the model's one-way time (PREDICTED_8B_US) within that step.  (Open MPI drains
    its CQ after each completion: the read that finds it empty returns at once, docs/provider.md "Time", so
    it sends its reply at the arrival's time.)  The runs start their timed loops at different virtual times
    (Open MPI's start-up waits for its launcher, outside the simulation, by 100 us sleeps), so the
    microsecond truncation of NetPIPE's clock falls differently: identical prints are not to be had from a
    microsecond clock, only identical timelines."""
    sets = {"cpu_scale": 0}
    a = netpipe(tmp_path, "a", sets=sets, repeats=NETPIPE_REPEATS)
    assert abs(a[8][1] - PREDICTED_8B_US * 1e-6) <= NETPIPE_TICK_S, (a[8], PREDICTED_8B_US)
    b = netpipe(tmp_path, "b", sets=sets, repeats=NETPIPE_REPEATS)
    with cpu_hogs(2):
        loaded = netpipe(tmp_path, "loaded", sets=sets, repeats=NETPIPE_REPEATS)
    for size in a:
        for other in (b, loaded):
            assert abs(other[size][1] - a[size][1]) <= NETPIPE_TICK_S, (size, a[size], other[size])


# The default scenario's link rate and payload efficiency (docs/nic.md "Large-message bandwidth"): 200 Gb/s,
# 2,048 payload bytes per 2,112 on the wire.
LINK_PAYLOAD_GBPS = 200 * 2048 / 2112


def test_netpipe_4mib_bandwidth_is_the_links(tmp_path):
    """Issue 11: NetPIPE's bandwidth at 4 MiB under `cxisim exec` (default: virtual time, CPU free) equals link
    rate x payload efficiency within 5%: 181.6 us one way, 184.8 Gb/s against 193.9 (4.7% below: the NIC's
    host-read stream and the fixed latencies; tests/unit/test_nic_bandwidth.c derives it in the engine)."""
    rows = netpipe(tmp_path, "big", upper=4 << 20, repeats=20)
    gbps = (4 << 20) * 8 / rows[4 << 20][1] / 1e9
    assert abs(gbps / LINK_PAYLOAD_GBPS - 1) <= 0.05, (gbps, LINK_PAYLOAD_GBPS)


_TAIL_RUNS = itertools.count()


def measured(case, attempts=3):
    """Run CASE (a function that asserts) until it passes, at most ATTEMPTS times.  The span clip's tests
    measure charges made from CPU time, and on a loaded host the spans' own cost moves (cold caches after
    a hog ran): run at nice 15 under 2 CPU hogs, 2 of 3 runs of them failed one bound each (the default
    median's long spans 87 ns below the short ones once; a 1 ms burn charged 6 us above its CPU once).  An
    estimator that ignores its parameters fails every attempt."""
    for i in range(attempts):
        try:
            return case()
        except AssertionError:
            if i == attempts - 1:
                raise


def tail_run(tmp_path, clip, mode="tail", skip=20, **clip_sets):
    """clock_work MODE (tail, tailq) at cpu_scale 1 with emulation.span_clip_ns CLIP (and the clip's other
    parameters CLIP_SETS): the short spans' virtual ns (the short ones, the ones 2 us longer; after the first
    SKIP) and the 1 ms burn's (virtual ns, CPU ns); the run's counters."""
    out = tmp_path / f"{mode}{clip}{''.join(f'-{k}{v}' for k, v in sorted(clip_sets.items()))}-{next(_TAIL_RUNS)}"
    r = cxisim_exec([CLOCK_WORK, mode], sets={"cpu_scale": 1, "span_clip_ns": clip, **clip_sets}, out=out,
                    timeout=120)
    assert r.returncode == 0 and "PASSED clock_work" in r.stdout, r.stdout + r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith("tail")]
    spans = [(int(x[1]), x[2] == "1") for x in rows if x[0] == "tail"]
    assert len(spans) == 200, r.stdout
    burn = [(int(x[1]), int(x[2])) for x in rows if x[0] == "tailburn"]
    assert len(burn) == 1, r.stdout
    # The site's estimate is known after its first samples: look at the spans after them.
    short = statistics.median(v for v, long in spans[skip:] if not long)
    longer = statistics.median(v for v, long in spans[skip:] if long)
    return short, longer, burn[0], emulation_counters(out)


def test_span_clip_forgives_a_short_spans_tail_not_a_long_burn(tmp_path):
    """emulation.span_clip_ns (provider/vtime.c "span clip"): at one site (consecutive clock reads) 9 of
    10 spans burn 1 us of CPU and 1 of 10 burns 3 us.  With a 20 us clip the longer ones are charged the
    site's median (the short span's); with 0 they are charged their CPU.  A 1 ms burn at the same site is
    charged 1 ms - clip with the clip, 1 ms without.  The counters say how many spans were clipped and by
    how much in all."""
    clip = 20000

    def clipped_case():
        short, longer, (v, cpu), c = tail_run(tmp_path, clip)
        assert longer - short < 500, (short, longer)
        assert 0.5 * clip < cpu - v < 1.5 * clip, (v, cpu)
        assert abs(v - cpu) < 0.05 * cpu, (v, cpu)  # still 1 ms within 5%
        spans, clipped, credit = (c.get(k, 0) for k in ("spans", "spans_clipped", "span_clip_credit_ns"))
        assert 200 <= spans and 20 <= clipped <= spans and clip <= credit <= clipped * clip, c

    def unclipped_case():
        short, longer, (v, cpu), c = tail_run(tmp_path, 0)
        assert longer - short > 1500, (short, longer)
        assert abs(v - cpu) < 0.25 * clip, (v, cpu)
        assert not any(c.get(k) for k in ("spans", "spans_clipped", "span_clip_credit_ns")), c

    measured(clipped_case)
    measured(unclipped_case)


def test_span_clip_quantile_charges_a_sites_low_quantile(tmp_path):
    """emulation.span_clip_quantile (provider/vtime.c "span clip"): at one site 3 of 4 spans burn 3 us and
    1 of 4 burns 1 us, so the site's median is the long span and its 10% quantile the short one.  With the
    quantile 0.1 (and a 20 us clip) the long spans are charged the short span's time, with either key (the
    pair of sites, or the ending site alone); with the default 0.5 they are charged their CPU (the median
    forgives nothing of them).  Counters: most spans clipped, each by at most the clip."""
    clip = 20000

    def low_quantile_case(site):
        short, longer, (v, cpu), c = tail_run(tmp_path, clip, "tailq", 100, span_clip_quantile=0.1,
                                              span_clip_site=site)
        assert longer - short < 500, (site, short, longer)
        assert abs(v - cpu) < 0.05 * cpu, (v, cpu)
        spans, clipped, credit = (c.get(k, 0) for k in ("spans", "spans_clipped", "span_clip_credit_ns"))
        assert 200 <= spans and 100 <= clipped <= spans and 100 * 1000 <= credit <= clipped * clip, c

    def median_case():
        # The default median charges the long spans their CPU: 2 us above the short ones in a normal build
        # (1.8-1.9 us measured), 1.2-1.75 us under the sanitizers (their short spans cost more; 1,350 ns
        # failed a SANITIZE=1 make test at the 1,500 first written here).  The low quantile leaves < 500.
        short, longer, _, c = tail_run(tmp_path, clip, "tailq", 100)
        assert longer - short > 1000, (short, longer)

    for site in ("pair", "end"):
        measured(lambda: low_quantile_case(site))
    measured(median_case)


def test_span_clip_after_park_clips_only_spans_that_follow_a_park(tmp_path):
    """emulation.span_clip_after_park 1: the spans of clock_work tail (consecutive clock reads, the thread
    never parks between them) are charged their CPU even with a 20 us clip, the 1 ms burn too; the spans
    that did follow a park (its message exchanges) are counted, and only they are clipped."""
    clip = 20000

    def case():
        short, longer, (v, cpu), c = tail_run(tmp_path, clip, span_clip_after_park=1)
        # 2 us of burn apart; under the sanitizers the short spans cost more (1,381 ns apart once in a
        # SANITIZE=1 make test); clipped, they would be < 500 ns apart.
        assert longer - short > 1000, (short, longer)
        assert abs(v - cpu) < 0.25 * clip, (v, cpu)
        spans, after, clipped = (c.get(k, 0) for k in ("spans", "spans_after_park", "spans_clipped"))
        assert 200 <= spans and 1 <= after <= spans and clipped <= after, c

    measured(case)
