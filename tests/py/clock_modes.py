"""The three modes of the clock test programs (tests/progs/clock/clock_test.h): with the interposer's test
owner (no daemon), never attached (no interposer, the real clock), and -- through provider_helpers'
cxisim_exec -- attached over the provider.  Shared by test_clock_timers.py and test_clock_syscalls.py."""
import subprocess
import time

from provider_helpers import CLOCK_LIB, PRELOAD, base_env, cxisim_exec

HOUR = 3600 * 10**9


def run_owner(prog, checks, **env_extra):
    """PROG owner CHECKS with the interposer preloaded and virtual clocks an hour ahead of the real ones (a
    real read cannot pass for a virtual one)."""
    env = base_env()
    for k in ("CXISIM_CLOCK_EPOCH", "CXISIM_CPU_SCALE"):
        env.pop(k, None)
    env["CXISIM_CLOCK_EPOCH"] = ",".join(str(time.clock_gettime_ns(c) + HOUR) for c in
                                         (time.CLOCK_REALTIME, time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME))
    env["LD_PRELOAD"] = (PRELOAD + ":" if PRELOAD else "") + CLOCK_LIB
    env.update(env_extra)
    return subprocess.run([prog, "owner", *checks], capture_output=True, text=True, timeout=120, env=env)


def run_real(prog, checks):
    """PROG none CHECKS outside `cxisim exec`, without the interposer: the kernel's calls."""
    env = base_env()
    env.pop("LD_PRELOAD", None)
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    return subprocess.run([prog, "none", *checks], capture_output=True, text=True, timeout=120, env=env)


def passed(r, checks):
    return r.returncode == 0 and all(f"ok {c}\n" in r.stdout for c in checks)


def measures(out, what):
    """The key=value pairs of each "measure WHAT k=v..." line."""
    return [dict(kv.split("=") for kv in ln.split()[2:]) for ln in out.splitlines()
            if ln.startswith(f"measure {what} ")]


def misuse(out):
    return [ln for ln in out.splitlines() if ln.startswith("misuse ")]


def assert_misuse_as_real(prog, check, min_cases):
    """CHECK prints one "misuse" line per bad call: at least min_cases, all failing, and the same lines
    outside `cxisim exec` without the interposer, attached over the provider (cpu_scale 0), and with the
    test owner."""
    real = run_real(prog, [check])
    assert passed(real, [check]), real.stdout + real.stderr
    lines = misuse(real.stdout)
    assert len(lines) >= min_cases and all(" -1 E" in ln for ln in lines), real.stdout
    virt = cxisim_exec([prog, "fabric", check], sets={"cpu_scale": 0}, timeout=120)
    assert passed(virt, [check]), virt.stdout + virt.stderr
    assert misuse(virt.stdout) == lines
    owner = run_owner(prog, [check])
    assert passed(owner, [check]) and misuse(owner.stdout) == lines, owner.stdout + owner.stderr
