"""Robustness of the provider and the daemon: a client killed with SIGKILL in the middle of transfers
leaves the daemon and the other processes running and its resources freed; a dead daemon turns every call
into -FI_EIO within a second; a hostile client cannot reach memory without its key and VNI, nor crash the
daemon with malformed control messages or commands."""
import os
import signal
import socket
import struct
import subprocess
import time

import pytest

from provider_helpers import Daemon, ctl_request, cxisim_exec, prog


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    killed = d.proc.poll() is not None
    rc = d.stop()
    assert killed or rc == 0, f"cxisimd exited with {rc}:\n{d.log_text()[-3000:]}"


def wait_line(proc, prefix, timeout=30):
    deadline = time.monotonic() + timeout
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith(prefix):
            return line, lines
    raise AssertionError(f"no {prefix!r} line; got {lines}")


def test_sigkill_client_mid_transfer(daemon):
    env = daemon.env()
    env["CXISIM_NODE"] = "0"  # node 0 owns NIC addresses 1 and 2 (NIC 0 is left unused)
    server = subprocess.Popen([prog("prov_stream"), "server", "77", "1"], stdout=subprocess.PIPE, text=True, env=env)
    wait_line(server, "READY")
    cenv = daemon.env()
    cenv["CXISIM_NODE"] = "3"
    victim = subprocess.Popen([prog("prov_stream"), "client", "1", "77", "0"], stdout=subprocess.PIPE, text=True,
                              env=cenv)
    wait_line(victim, "STREAMING")
    time.sleep(0.3)  # 1 MiB messages in flight
    before = daemon.status()
    assert before["clients"] == 2 and before["endpoints"] == 2
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    deadline = time.monotonic() + 5
    st = daemon.status()
    while st["clients"] != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
        st = daemon.status()
    assert st["clients"] == 1, st
    assert st["client_deaths"] == 1
    assert st["endpoints"] == 1, "the killed client's endpoint is gone"
    assert st["queues"] == before["queues"] // 2, "its command and event queues are freed"
    # A fresh client still gets through to the same server, which then finishes normally.
    r = subprocess.run([prog("prov_stream"), "client", "1", "77", "20"], capture_output=True, text=True, env=cenv,
                       timeout=120)
    assert r.returncode == 0 and "PASSED prov_stream client" in r.stdout, r.stdout + r.stderr
    out, _ = server.communicate(timeout=60)
    assert server.returncode == 0, out
    assert "1 clients done" in out
    assert daemon.proc.poll() is None, "the daemon kept running"
    st = daemon.status()
    assert st["clients"] == 0 and st["endpoints"] == 0 and st["queues"] == 0 and st["ops_in_flight"] == 0
    assert st["op_pool_live"] == 0, "no operation record leaked"


def test_daemon_death_gives_eio_within_a_second(daemon):
    p = subprocess.Popen([prog("prov_daemon_death")], stdout=subprocess.PIPE, text=True, env=daemon.env())
    wait_line(p, "READY")
    time.sleep(0.2)
    t_kill = time.monotonic()
    daemon.proc.send_signal(signal.SIGKILL)
    daemon.proc.wait()
    line, _ = wait_line(p, "DEAD", timeout=10)
    out = p.stdout.read()
    p.wait(30)
    assert p.returncode == 0, line + out
    times = dict(kv.split("=") for kv in line.split()[1:])
    for k, v in times.items():
        dt = float(v) - t_kill
        assert 0 <= dt < 1.0, f"{k} noticed the daemon's death after {dt:.3f} s"
    assert "PASSED prov_daemon_death" in out


def test_hostile_client_cannot_touch_foreign_memory():
    r = cxisim_exec([prog("prov_hostile")], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASSED prov_hostile" in r.stdout


def test_malformed_control_traffic(daemon):
    """Garbage on the control socket, requests before attach, wrong versions, unknown ids: each gets an
    error or a closed connection; the daemon serves a real client afterwards."""
    sock = daemon.sock

    def raw(payload):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(2)
        s.connect(sock)
        try:
            s.send(payload)
            try:
                return s.recv(4096)
            except (socket.timeout, ConnectionResetError):
                return b""
        finally:
            s.close()

    assert raw(b"x") == b""  # short message: connection closed
    assert raw(struct.pack("<IIiI", 2, 1, 0, 100)) == b""  # length mismatch: closed
    # A request other than attach before attaching: -EPROTO
    status, _ = ctl_request(sock, 2, struct.pack("<II", 1, 64))
    assert status == -71
    # Attach with a wrong protocol version: -EPROTO
    attach = struct.pack("<IiIiiiII64s64s", 99, os.getpid(), 0, -1, -1, -1, 0, 0, b"h", b"p")
    status, _ = ctl_request(sock, 1, attach)
    assert status == -71
    # Unknown op
    status, _ = ctl_request(sock, 999)
    assert status < 0
    st = daemon.status()
    assert st["clients"] == 0, "every bad connection was dropped"
    r = subprocess.run([prog("prov_errors")], capture_output=True, text=True, env=daemon.env(), timeout=60)
    assert r.returncode == 0, r.stdout
    assert daemon.proc.poll() is None
