"""Interval timers, timer signals and timed waits in virtual time (libcxisim-clock.so, provider/clock/timers.c
and signals.c): tests/progs/clock/clock_timers runs the same checks
- with the interposer's test owner (no daemon: sleeps jump to their deadline, waits step 10 ms at most),
- under `cxisim exec` over the cxi provider at cpu_scale 0 (the provider's virtual clocks), and
- never attached, on the real clock (outside `cxisim exec`, and under it in a shell that never attaches).
In virtual time every expectation is exact: a 10 ms timerfd wakes poll/epoll_wait/read 10,000,000 ns of
CLOCK_MONOTONIC later, alarm(1) interrupts a 10 s nanosleep at 1 s with 9 s left, and so on.  No assertion
depends on how fast the host is, except lower bounds on the wall time of real timers (a real 10 ms timer
cannot fire sooner) and a generous upper bound on 20 s of virtual waits."""
import os

import pytest

from clock_modes import assert_misuse_as_real, measures, passed
from clock_modes import run_owner as owner_run
from clock_modes import run_real as real_run
from provider_helpers import BUILD_DIR, cxisim_exec

PROG = os.path.join(BUILD_DIR, "tests", "clock", "clock_timers")
TIMERFD = ["tfd_poll", "tfd_epoll", "tfd_read", "tfd_interval", "tfd_disarm", "tfd_abstime"]
SIGNALS = ["alarm", "pause", "periodic", "sigwait", "sigev_thread", "fork", "intr"]
WAITS = ["locks", "mq", "cpu_reads"]
ALL = TIMERFD + ["tfd_wall"] + SIGNALS + WAITS


def run_owner(checks, **env_extra):
    return owner_run(PROG, checks, **env_extra)


def run_real(checks):
    return real_run(PROG, checks)


@pytest.mark.parametrize("checks", [TIMERFD, SIGNALS, WAITS], ids=["timerfd", "signals", "waits"])
def test_timers_with_the_test_owner(checks):
    """Every check exact against the interposer's test owner; clock() is the CPU time x CXISIM_CPU_SCALE."""
    r = run_owner(checks, CXISIM_CPU_SCALE="2")
    assert passed(r, checks), r.stdout + r.stderr


def test_timers_under_cxisim_exec():
    """Over the cxi provider at cpu_scale 0: a 10 ms timerfd polled (poll, epoll_wait three times re-armed,
    a blocking read) fires at exactly 10 ms of virtual time; an interval timerfd counts 3 expirations after
    a 35 ms sleep and says the next is 5 ms away; disarm; TFD_TIMER_ABSTIME on MONOTONIC, REALTIME and
    BOOTTIME; alarm(1) cuts a 10 s nanosleep at 1 s with 9 s left; pause and sigsuspend end at the signal;
    setitimer and timer_create periodic timers give N signals in N periods; sigtimedwait/sigwait take a
    timer's signal; SIGEV_THREAD; timed locks and message queues time out in virtual time; and 20 waits of
    1 s take far less than 20 s of wall time (measured 0.4 s idle)."""
    r = cxisim_exec([PROG, "fabric", *ALL], sets={"cpu_scale": 0}, timeout=300)
    assert passed(r, ALL), r.stdout + r.stderr
    for what in ("tfd_poll", "tfd_epoll", "tfd_read"):
        m = measures(r.stdout, what)
        assert m and all(int(x["virtual"]) == 10_000_000 for x in m), r.stdout
    wall = [int(x["wall"]) for x in measures(r.stdout, "tfd_wall")]
    assert len(wall) == 1 and wall[0] < 10 * 10**9, r.stdout


def test_misuse_gives_the_real_errno():
    """Bad clock ids, flags, fds, values: the same return and errno as the real calls, outside `cxisim
    exec` without the interposer, attached over the provider, and with the test owner."""
    assert_misuse_as_real(PROG, "misuse", 18)


REAL_CHECKS = ["tfd_poll", "tfd_read", "tfd_interval", "alarm", "periodic"]


def real_walls(out):
    return {w: [int(x["wall"]) for x in measures(out, w)] for w in ("tfd_poll", "tfd_read", "alarm")}


def test_unattached_processes_keep_real_timers():
    """A process under `cxisim exec` that never attaches (here started by a shell) has the kernel's timers:
    a 10 ms timerfd takes at least 10 ms of wall time, alarm(1) at least 1 s -- as outside `cxisim exec`.
    (In virtual time they take microseconds of wall time.)"""
    r = cxisim_exec(["/bin/sh", "-c", f"{PROG} none {' '.join(REAL_CHECKS)}"], timeout=120)
    assert passed(r, REAL_CHECKS), r.stdout + r.stderr
    w = real_walls(r.stdout)
    assert w["tfd_poll"][0] >= 10_000_000 and w["tfd_read"][0] >= 10_000_000, r.stdout
    assert w["alarm"][0] >= 1_000_000_000, r.stdout
    outside = run_real(REAL_CHECKS)
    assert passed(outside, REAL_CHECKS), outside.stdout + outside.stderr
