"""Helpers for the provider's tests: run real programs over the simulated fabric with `cxisim exec`, and
start/stop a daemon of our own when a test needs to watch or kill it."""
import contextlib
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
BUILD = os.environ.get("CXISIM_BUILD", "build")
BUILD_DIR = os.path.join(REPO, BUILD)
CXISIM = os.path.join(REPO, "cxisim")
DAEMON = os.path.join(BUILD_DIR, "bin", "cxisimd")
PROGS = os.path.join(BUILD_DIR, "tests", "provider")
CLOCK_LIB = os.path.join(BUILD_DIR, "provider", "libcxisim-clock.so")
SANITIZED = BUILD.rstrip("/").endswith("-san")


@contextlib.contextmanager
def cpu_hogs(n=2):
    """n processes spinning at the caller's priority while the block runs (n = 2: both cores of this
    machine busy).  Shared by the tests and `make bench`."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.2)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def await_listener(port):
    """Shell lines that wait (up to 30 s) until something listens on TCP `port`: fi_pingpong's out-of-band
    socket.  A fixed `sleep 0.3` before starting the client lost that race on a loaded machine ('connection
    refused')."""
    return (f"for _ in $(seq 600); do awk '$4 == \"0A\" {{print $2}}' /proc/net/tcp /proc/net/tcp6 "
            f"| grep -qi ':{port:04X}$' && break; sleep 0.05; done\n")


def free_tcp_port():
    """A TCP port nothing listens on now (the kernel's pick for a bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pingpong_pair(server_args, client_args, server_out="/dev/null"):
    """Shell lines: fi_pingpong's server in the background (its pid in $srv, its output to server_out),
    then its client once the server listens.  The out-of-band control port is a free one, not fi_pingpong's
    fixed default (47592): with the default, two test runs on one machine met each other's servers (the
    client connected to the other run's listener, or found it gone: 'connection refused', then a hang)."""
    port = free_tcp_port()
    return (f"fi_pingpong {server_args} -B {port} > {server_out} 2>&1 &\nsrv=$!\n" + await_listener(port) +
            f"fi_pingpong {client_args} -P {port} localhost\n")


def prog(name):
    return os.path.join(PROGS, name)


def _sanitizer_preload():
    """Under SANITIZE=1 the provider library carries ASan/UBSan; programs we did not build (fi_info,
    fi_pingpong, mpirun, NPopenmpi) need the runtimes preloaded to load it."""
    libs = []
    for lib in ("libasan.so", "libubsan.so"):
        p = subprocess.run(["gcc", f"-print-file-name={lib}"], capture_output=True, text=True).stdout.strip()
        if os.path.isabs(p):
            libs.append(p)
    return ":".join(libs)


PRELOAD = _sanitizer_preload() if SANITIZED else ""


def base_env():
    env = dict(os.environ, CXISIM_BUILD=BUILD)
    env.pop("CXISIM_SOCKET", None)
    if SANITIZED:
        env.setdefault("ASAN_OPTIONS", "abort_on_error=1:detect_leaks=1")
        env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    return env


def wrap(cmd):
    """The command line to run CMD with.  Under SANITIZE=1 the sanitizer runtimes are preloaded, and leak
    checking is left to our own programs and the daemon: Open MPI and libfabric's tools leak at exit by
    design (dlclosed components), which says nothing about the provider."""
    if not PRELOAD:
        return list(cmd)
    ours = os.path.realpath(cmd[0]).startswith(os.path.realpath(BUILD_DIR))
    extra = [] if ours else ["ASAN_OPTIONS=abort_on_error=1:detect_leaks=0"]
    # The clock interposer `cxisim exec` preloads comes after the sanitizer runtimes (they must be first).
    return ["env", f"LD_PRELOAD={PRELOAD}:{CLOCK_LIB}", *extra, *cmd]


def cxisim_exec(cmd, sets=None, timeout=120, env=None, scenario=None, out=None, time_mode=None, daemon_log=None,
                nice=0):
    """Run CMD (list) under `cxisim exec`; returns CompletedProcess (stdout+stderr text).  With `out`, the
    daemon writes its metrics there.  time_mode: --time (default: exec's own default, virtual).  nice: the
    whole run (daemon and program) at that niceness, below cpu_hogs' processes."""
    args = [sys.executable, CXISIM, "exec"]
    if scenario:
        args += ["--scenario", scenario]
    if out:
        args += ["--out", str(out)]
    if time_mode:
        args += ["--time", time_mode]
    if daemon_log:
        args += ["--daemon-log", str(daemon_log)]
    for k, v in (sets or {}).items():
        args += ["--set", f"{k}={v}"]
    args += ["--", *wrap(cmd)]
    e = base_env()
    if env:
        e.update(env)
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=e, cwd=REPO,
                          preexec_fn=(lambda: os.nice(nice)) if nice else None)


def emulation_counters(rundir):
    """The daemon's `emulation.*` counters of a run directory (absent counters are 0)."""
    with open(os.path.join(str(rundir), "metrics.json")) as f:
        m = json.load(f)
    c = m["stats"]["counters"]
    return {k.split(".", 1)[1]: v for k, v in c.items() if k.startswith("emulation.")}


def provider_env(sock):
    """Environment of a process that uses our provider with the daemon at `sock`."""
    env = base_env()
    env["FI_PROVIDER_PATH"] = os.path.join(BUILD_DIR, "provider")
    env["CXISIM_SOCKET"] = sock
    env["CXISIM_DAEMON"] = DAEMON
    if PRELOAD:
        env["LD_PRELOAD"] = PRELOAD
    return env


def foreign_env(env):
    """`env` for running a program we did not build (fi_info...) directly under SANITIZE=1."""
    if PRELOAD:
        env = dict(env, ASAN_OPTIONS="abort_on_error=1:detect_leaks=0")
    return env


DEFAULT_SCENARIO = {
    "name": "provider-test",
    "seed": 1,
    "fabric": {"topology": "direct", "endpoints": 17, "latency_ns": 350},
    "nic": {},
    "emulation": {"nodes": 8, "nics_per_node": 2},
}


class Daemon:
    """A cxisimd of the test's own (so it can be queried, killed, or left running)."""

    def __init__(self, tmpdir, scenario=None, private=False, extra=()):
        self.tmp = str(tmpdir)
        self.sock = os.path.join(self.tmp, "d.sock")
        cfg = os.path.join(self.tmp, "scenario.json")
        with open(cfg, "w") as f:
            json.dump(scenario or DEFAULT_SCENARIO, f)
        self.log = open(os.path.join(self.tmp, "cxisimd.log"), "w")
        args = [DAEMON, "--socket", self.sock, "--config", cfg, *extra]
        if private:
            args.append("--private")
        self.proc = subprocess.Popen(args, stderr=self.log, env=base_env())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"cxisimd exited with {self.proc.returncode}: {self.log_text()}")
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                s.connect(self.sock)
                s.close()
                return
            except OSError:
                time.sleep(0.01)
        raise RuntimeError("cxisimd did not start")

    def env(self):
        env = provider_env(self.sock)
        env["CXISIM_NO_AUTOSTART"] = "1"
        return env

    def log_text(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def status(self):
        return daemon_status(self.sock)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


CTL_STATUS = 7


def ctl_request(sock_path, op, body=b"", seq=1):
    """One control request on a fresh connection (the daemon's wire format: op, seq, status, len)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(sock_path)
    try:
        s.send(struct.pack("<IIiI", op, seq, 0, len(body)) + body)
        rep = s.recv(8192)
    finally:
        s.close()
    op_, seq_, status, ln = struct.unpack("<IIiI", rep[:16])
    return status, rep[16:16 + ln]


def daemon_status(sock_path):
    status, body = ctl_request(sock_path, CTL_STATUS)
    assert status == 0
    return json.loads(body.decode())
