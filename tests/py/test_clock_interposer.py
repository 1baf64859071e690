"""libcxisim-clock.so on its own: tests/progs/clock/clock_check drives it with a virtual-time owner of its own
(a shared library registering cxisim_clock_ops, as the provider does), so the mapping from virtual time to
every clock, the sleeps, the timed waits, the syscall(2) paths, the registrant's real clock, detach, fork
and the cycle counter are checked exactly, without the daemon."""
import os
import subprocess
import sys
import time

import pytest

from provider_helpers import BUILD_DIR, CLOCK_LIB, PRELOAD, SANITIZED

CHECK = os.path.join(BUILD_DIR, "tests", "clock", "clock_check")
HOUR = 3600 * 10**9


def run_check(name, epoch=True, **env_extra):
    env = dict(os.environ)
    for k in ("CXISIM_CLOCK_EPOCH", "CXISIM_CPU_SCALE", "CXISIM_SOCKET"):
        env.pop(k, None)
    if epoch:
        # an hour ahead of the real clocks: a real read cannot pass for a virtual one
        env["CXISIM_CLOCK_EPOCH"] = ",".join(str(time.clock_gettime_ns(c) + HOUR) for c in
                                             (time.CLOCK_REALTIME, time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME))
    env["LD_PRELOAD"] = (PRELOAD + ":" if PRELOAD else "") + CLOCK_LIB
    if SANITIZED:
        env.setdefault("ASAN_OPTIONS", "abort_on_error=1:detect_leaks=1")
    env.update(env_extra)
    return subprocess.run([CHECK, name], capture_output=True, text=True, timeout=60, env=env)


@pytest.mark.parametrize("name", ["reads", "sleeps", "waits", "cond", "detach", "fork"])
def test_clock_check(name):
    r = run_check(name)
    assert r.returncode == 0 and f"ok {name}" in r.stdout, r.stdout + r.stderr


def test_null_arguments_get_the_real_result():
    """NULL time values and buffers (legal ones and EFAULT ones) give the same result with the interposer
    attached as without it; gettimeofday(NULL, tz) crashed the wrapper, whose NULL check the compiler had
    deleted on the strength of libc's nonnull declaration."""
    real = run_check("nulls", epoch=False, LD_PRELOAD=PRELOAD or "")
    assert real.returncode == 0 and "ok nulls" in real.stdout, real.stdout + real.stderr
    r = run_check("nulls")
    assert r.returncode == 0 and "ok nulls" in r.stdout, r.stdout + r.stderr


def test_sleep_takes_virtual_not_wall_time():
    """1.03 s of sleeps (nanosleep, usleep, sleep, clock_nanosleep, syscall(SYS_nanosleep)) pass in virtual
    time, exactly, in far less wall time."""
    r = run_check("sleeps")
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("sleeps:"))
    wall = int(line.split()[-2])
    assert wall < 200_000_000, line


def test_continuity_without_epoch():
    """A process that read the real clock before it attached never sees time go backwards."""
    r = run_check("continuity", epoch=False)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("scale", ["2", "0.5"])
def test_cpu_clocks_scaled(scale):
    r = run_check("cpu", CXISIM_CPU_SCALE=scale)
    assert r.returncode == 0, r.stdout + r.stderr


def test_noattach_is_real():
    """Nothing registered (mpirun, a shell): every clock and sleep is the real one."""
    r = run_check("noattach")
    assert r.returncode == 0, r.stdout + r.stderr


def test_rdtsc_trap():
    """rdtsc is trapped and reads virtual time where the CPU honours PR_SET_TSC; some hypervisors do not
    (the interposer probes at start and leaves the counter real)."""
    r = run_check("tsc", CXISIM_SOCKET="/nonexistent")
    if r.returncode == 77:
        pytest.skip(r.stdout.strip())
    assert r.returncode == 0, r.stdout + r.stderr


# Every way a program starts another: the exec family, posix_spawn, system, popen (Python's os/subprocess
# reach them), a shell's fork + execve, and syscall(SYS_execve) (through ctypes).
START_PROGRAMS = r"""
import ctypes, os, subprocess, sys
assert subprocess.run(["/bin/true"]).returncode == 0
assert os.system("/bin/true") == 0
assert os.waitpid(os.posix_spawn("/bin/true", ["/bin/true"], os.environ), 0)[1] == 0
assert os.popen("/bin/echo popen").read() == "popen\n"
assert subprocess.run(["/bin/sh", "-c", "env > /dev/null && /bin/sh -c 'exec /bin/true'"]).returncode == 0
pid = os.fork()
if pid == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    argv = (ctypes.c_char_p * 2)(b"/bin/true", None)
    libc.syscall(59, b"/bin/true", argv, None)  # SYS_execve on x86-64
    os._exit(3)
assert os.waitpid(pid, 0)[1] == 0
print("started all")
"""


def test_programs_started_while_the_counter_is_trapped():
    """The counter trap survives execve and the new program's loader reads the counter before any handler
    is installed: every way of starting a program lets the counter run for the call, so the children live
    (on a machine without the trap this holds trivially)."""
    env = dict(os.environ, LD_PRELOAD=(PRELOAD + ":" if PRELOAD else "") + CLOCK_LIB, CXISIM_SOCKET="/nonexistent")
    if SANITIZED:
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    r = subprocess.run([sys.executable, "-c", START_PROGRAMS], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "started all" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("script, status, out", [
    ("kill -SEGV $$; echo alive", -11, ""),                              # default action: killed
    ("trap '' SEGV; kill -SEGV $$; echo alive", 0, "alive\n"),           # ignored
    ("trap 'echo caught' SEGV; kill -SEGV $$; echo alive", 0, "caught\nalive\n"),  # the program's handler
])
def test_a_sent_sigsegv_keeps_its_meaning(script, status, out):
    """The interposer's SIGSEGV handler (the counter trap) passes every other SIGSEGV on as the program
    disposed of it.  A fault comes back by itself once the default action is restored; a SIGSEGV sent by
    kill does not, and used to be swallowed: the shell lived on and `cxisim exec` reported status 0."""
    env = dict(os.environ, LD_PRELOAD=(PRELOAD + ":" if PRELOAD else "") + CLOCK_LIB, CXISIM_SOCKET="/nonexistent")
    if SANITIZED:
        env["ASAN_OPTIONS"] = "detect_leaks=0:handle_segv=0"
    r = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert (r.returncode, r.stdout) == (status, out), r.stdout + r.stderr


def test_no_interposer_no_registration():
    """Without the preload, the owner finds no cxisim_clock_register (as the provider does) and says so."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([CHECK, "reads"], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 1 and "no interposer preloaded" in r.stdout, r.stdout + r.stderr
