"""Sleeps, timed waits and timers reached through syscall(2) (libcxisim-clock.so's syscall wrapper,
provider/clock/interposer.c, and clk_*_syscall in waits.c, timers.c, signals.c), and epoll_pwait2:
tests/progs/clock/clock_syscalls runs the same checks
- with the interposer's test owner (no daemon: sleeps jump to their deadline, waits step 10 ms at most),
- under `cxisim exec` over the cxi provider at cpu_scale 0 (the provider's virtual clocks), and
- never attached, on the real clock (outside `cxisim exec`, no interposer).
In virtual time every expectation is exact: syscall(SYS_nanosleep, 10 ms) is 10,000,000 ns of
CLOCK_MONOTONIC, a timerfd armed with SYS_timerfd_settime wakes SYS_read and SYS_ppoll at its expiry (ppoll
writes 980 ms left of its 1 s back, as the kernel does), a POSIX timer made by SYS_timer_create signals
SYS_rt_sigtimedwait at 15 ms, SYS_pause ends at an ITIMER_REAL expiry, and every readiness wait
(poll, ppoll, select, pselect6, epoll_wait, epoll_pwait, epoll_pwait2) times out at its virtual deadline.
Only lower bounds on real time are asserted when not attached; nothing depends on how fast the host is."""
import os

from clock_modes import assert_misuse_as_real, passed
from clock_modes import run_owner as owner_run
from clock_modes import run_real as real_run
from provider_helpers import BUILD_DIR, cxisim_exec

PROG = os.path.join(BUILD_DIR, "tests", "clock", "clock_syscalls")
CHECKS = ["sys_sleeps", "sys_timerfd", "sys_timers", "sys_polls"]


def run_owner(checks):
    return owner_run(PROG, checks)


def run_real(checks):
    return real_run(PROG, checks)


def test_syscalls_with_the_test_owner():
    r = run_owner(CHECKS)
    assert passed(r, CHECKS), r.stdout + r.stderr


def test_syscalls_under_cxisim_exec():
    r = cxisim_exec([PROG, "fabric", *CHECKS], sets={"cpu_scale": 0}, timeout=300)
    assert passed(r, CHECKS), r.stdout + r.stderr


def test_syscalls_on_the_real_clock():
    """Never attached: the kernel's calls, each at least as long as asked."""
    r = run_real(CHECKS)
    assert passed(r, CHECKS), r.stdout + r.stderr


def test_syscall_misuse_gives_the_kernels_errno():
    """Bad signal-set sizes, time values, clocks, fds and timer ids: the same return and errno as the real
    system calls, outside `cxisim exec`, attached over the provider, and with the test owner."""
    assert_misuse_as_real(PROG, "sys_misuse", 18)
