"""`cxisim exec` never leaves its daemon behind: killed by SIGTERM, SIGINT or SIGHUP it passes the signal on to
its command, stops the daemon and exits with 128 + the signal; killed by SIGKILL (alone, as
subprocess.run's timeout does, or with its whole process group, as pytest-timeout does) the daemon exits
too (it runs with --exit-with-parent: PR_SET_PDEATHSIG)."""
import os
import signal
import subprocess
import sys
import time

import pytest

from provider_helpers import CXISIM, REPO, base_env


def children(pid, comm=None):
    """Pids whose parent is PID (and whose command name is COMM)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        name = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        if int(fields[1]) == pid and (comm is None or name == comm):
            found.append(int(d))
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def wait_for(cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    return cond()


def start_exec():
    """exec running `sleep 600`, in a session of its own; returns (exec, daemon pid, command pid)."""
    p = subprocess.Popen([sys.executable, CXISIM, "exec", "--", "sleep", "600"], cwd=REPO, env=base_env(),
                         start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    daemon = wait_for(lambda: children(p.pid, "cxisimd"), 60)
    cmd = wait_for(lambda: children(p.pid, "sleep"), 60)
    assert daemon and cmd, "exec started its daemon and its command"
    return p, daemon[0], cmd[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_stops_command_and_daemon(sig):
    p, daemon, cmd = start_exec()
    try:
        p.send_signal(sig)
        rc = p.wait(timeout=30)
        assert rc == 128 + sig, p.stderr.read()
        assert wait_for(lambda: not alive(daemon), 10), "the daemon exited with exec"
        assert wait_for(lambda: not alive(cmd), 10), "the command got the signal"
    finally:
        for pid in (daemon, cmd):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if p.poll() is None:
            p.kill()


@pytest.mark.parametrize("group", [False, True], ids=["exec-alone", "process-group"])
def test_sigkill_leaves_no_daemon(group):
    p, daemon, cmd = start_exec()
    try:
        if group:
            os.killpg(p.pid, signal.SIGKILL)
        else:
            p.kill()
        p.wait(timeout=30)
        assert wait_for(lambda: not alive(daemon), 10), "the daemon exited when exec was killed"
    finally:
        for pid in (daemon, cmd):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_signal_inside_popen_reaches_the_command(monkeypatch):
    """A SIGTERM that lands while subprocess.Popen is still starting the command (after the fork, before
    Popen returns) is held until exec holds the command, then passed on to it: the command is not left
    running.  The signal is sent from inside Popen, so the window is hit every time."""
    from cxisim import cmd_exec
    real = subprocess.Popen
    started = []

    def popen_then_signalled(*a, **kw):
        p = real(*a, **kw)
        started.append(p)
        os.kill(os.getpid(), signal.SIGTERM)
        return p

    monkeypatch.setattr(cmd_exec.subprocess, "Popen", popen_then_signalled)
    try:
        with pytest.raises(cmd_exec._Signalled) as e:
            cmd_exec._run_command(["sleep", "600"], dict(os.environ))
        assert e.value.signum == signal.SIGTERM
        assert started, "the command was started"
        assert started[0].wait(timeout=10) == -signal.SIGTERM, "the command got the signal"
    finally:
        for p in started:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert signal.getsignal(signal.SIGTERM) is not cmd_exec._on_signal, "exec's handlers are restored"
