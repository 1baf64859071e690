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

import sys

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


def _proto():
    """Protocol version and op numbers, read from the daemon's header so the test follows it."""
    import re
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "sim", "cxisimd", "proto.h")).read()
    version = int(re.search(r"#define CXISIM_PROTO_VERSION (\d+)", text).group(1))
    body = re.search(r"enum ctl_op \{(.*?)\};", text, re.S).group(1)
    ops = {}
    n = 0
    for m in re.finditer(r"^\s*(CTL_\w+)(?:\s*=\s*(\d+))?,", body, re.M):
        n = int(m.group(2)) if m.group(2) else n + 1
        ops[m.group(1)] = n
    return version, ops


def _attached_socket(sock, version):
    """A control connection attached to the daemon from this (pytest) process, in realtime mode."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(sock)
    attach = struct.pack("<IiIiiiII64s64s", version, os.getpid(), os.getuid(), -1, -1, -1, 0, 0, b"h", b"pytest")
    s.send(struct.pack("<IIiI", 1, 1, 0, len(attach)) + attach)
    # The reply carries file descriptors; take them and close them.
    msg, anc, _, _ = s.recvmsg(8192, socket.CMSG_SPACE(16 * 4))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            for fd in struct.unpack(f"{len(data) // 4}i", data[:len(data) - len(data) % 4]):
                os.close(fd)
    status = struct.unpack("<IIiI", msg[:16])[2]
    assert status == 0, f"attach refused: {status}"
    return s


def _request(s, op, body=b"", seq=2):
    s.send(struct.pack("<IIiI", op, seq, 0, len(body)) + body)
    msg, anc, _, _ = s.recvmsg(8192, socket.CMSG_SPACE(16 * 4))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            for fd in struct.unpack(f"{len(data) // 4}i", data[:len(data) - len(data) % 4]):
                os.close(fd)
    return struct.unpack("<IIiI", msg[:16])[2]


def test_control_requests_before_attach_are_refused(daemon):
    """Every control request but ATTACH and STATUS needs an attached client: before attach each is refused
    with -EPROTO and changes nothing (a stray CTL_SHUTDOWN used to switch the daemon to exit-when-idle,
    failing the job's later programs with -61).  The daemon then serves a real client."""
    version, ops = _proto()
    refused = [name for name in ops if name not in ("CTL_ATTACH", "CTL_STATUS", "CTL_OP_MAX")]
    assert "CTL_SHUTDOWN" in refused and len(refused) >= 9
    for name in refused:
        for body in (b"", bytes(256)):
            status, _ = ctl_request(daemon.sock, ops[name], body)
            assert status == -71, f"{name} before attach: {status}, expected -EPROTO"
    time.sleep(0.5)
    assert daemon.proc.poll() is None, "the daemon exited after requests from an unattached client"
    assert daemon.status()["clients"] == 0
    r = subprocess.run([prog("prov_errors")], capture_output=True, text=True, env=daemon.env(), timeout=60)
    assert r.returncode == 0, r.stdout
    time.sleep(0.5)
    assert daemon.proc.poll() is None


def test_shutdown_only_by_the_owner(tmp_path):
    """CTL_SHUTDOWN from an attached process that did not start the daemon is -EPERM and changes nothing;
    from the process that started it (here pytest itself: the daemon's parent), the daemon exits once idle."""
    version, ops = _proto()
    d = Daemon(tmp_path)
    try:
        # A stranger: an attached client in a child process (not the daemon's parent).
        code = (
            "import sys, os; sys.path.insert(0, %r)\n"
            "import test_provider_robust as t\n"
            "s = t._attached_socket(%r, %d)\n"
            "print(t._request(s, %d))\n" % (os.path.dirname(__file__), d.sock, version, ops["CTL_SHUTDOWN"]))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "-1", f"stranger's CTL_SHUTDOWN: {r.stdout!r}, expected -EPERM (-1)"
        time.sleep(0.5)
        assert d.proc.poll() is None, "a stranger's CTL_SHUTDOWN stopped the daemon"
        r = subprocess.run([prog("prov_errors")], capture_output=True, text=True, env=d.env(), timeout=60)
        assert r.returncode == 0, r.stdout
        assert d.proc.poll() is None
        # The owner may stop it: it exits once its last client (the owner's own connection) is gone.
        s = _attached_socket(d.sock, version)
        assert _request(s, ops["CTL_SHUTDOWN"]) == 0
        s.close()
        d.proc.wait(timeout=10)
        assert d.proc.returncode == 0
    finally:
        d.stop()


def test_exit_while_threads_are_inside_the_provider():
    """exit() from the main thread while three threads poll the CQ and two block in fi_cq_sread(-1) (as
    Mercury's kill test does): libfabric's destructor cleans the provider up under them.  Every run ends
    with status 0 and no signal, and the daemon goes on serving the next program.  The provider is linked
    -z nodelete, so libfabric's dlclose at exit never unmaps code a thread is running."""
    from provider_helpers import BUILD_DIR
    lib = os.path.join(BUILD_DIR, "provider", "libcxisim-fi.so")
    dyn = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
    assert "NODELETE" in dyn, "libcxisim-fi.so must be linked with -z nodelete"
    p = prog("prov_exit_polling")
    script = f'for i in 1 2 3 4 5; do {p}; echo "rc=$?"; done; {prog("prov_errors")}; echo "rc=$?"'
    r = cxisim_exec(["bash", "-c", script], timeout=180)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert out.count("rc=0") == 6, out
    assert out.count("PASSED prov_exit_polling") == 5, out
    assert "PASSED prov_errors" in out, out


def test_several_processes_on_one_node(tmp_path):
    """A server and three clients on one simulated node (--set nodes=1: every process shares the node's
    NICs, so each NIC holds the PtlTEs of four endpoints and its tables grow while LEs point at them),
    ping-pong from all clients at once across eager and rendezvous sizes; then Open MPI with 4 ranks on
    the one node.  The daemon stays up (no client death, no internal error) and every byte is checked."""
    from test_provider_mpi import MPIRUN
    out = tmp_path / "out"
    script = (f'{prog("prov_fanin")} && '
              f'{" ".join(MPIRUN)} -np 4 {prog("mpi_checks")}')
    r = cxisim_exec(["bash", "-c", script], sets={"nodes": 1}, timeout=300, out=out)
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert "PASSED prov_fanin" in text, text
    assert "PASSED mpi_checks on 4 ranks" in text, text
    import json
    from cxisim.counters import counters
    with open(out / "metrics.json") as f:
        st = counters(json.load(f))
    assert st["emulation.attaches"] == 8, st["emulation.attaches"]  # 4 fan-in processes + 4 ranks
    # The three forked clients end with _exit() (no libfabric cleanup, so no DETACH): the daemon counts
    # them as deaths and cleans up after them.  Nothing else may die.
    assert st["emulation.client_deaths"] == 3, st["emulation.client_deaths"]
