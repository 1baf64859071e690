"""`cxisim exec`: run any command over the simulated fabric (cxisimd + the libfabric provider "cxi")."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from . import REPO, InputError
from . import inputs
from . import run as runmod
from .run import interrupts_held
from . import scenario as scn

HELP = "run a command over the simulated Slingshot fabric (e.g. fi_pingpong, mpirun)"
DESCRIPTION = ("Start the emulation daemon cxisimd with SCENARIO (default scenarios/emulation.yaml.j2), "
               "run CMD with the environment that makes libfabric load cxisim's provider \"cxi\" "
               "(FI_PROVIDER_PATH, CXISIM_SOCKET) and Open MPI use it (OMPI_MCA_pml=cm, OMPI_MCA_mtl=ofi, "
               "OMPI_MCA_mtl_ofi_provider_include=cxi, unless already set), then stop the daemon.  Exits with CMD's status.  Time is "
               "virtual by default (the daemon runs the simulated machine's time in lockstep with the "
               "application threads' virtual clocks; application CPU time is free unless the scenario or "
               "--set cpu_scale=1 charges it); --time realtime follows the wall clock.  With --out "
               "the run directory gets scenario.json, metrics.json, telemetry.csv, timeseries.csv and "
               "run.json, as `cxisim run` writes them.")

DEFAULT_SCENARIO = os.path.join(REPO, "scenarios", "emulation.yaml.j2")
TIME_MODES = ("virtual", "realtime")


def add_arguments(p):
    p.add_argument("--scenario", default=DEFAULT_SCENARIO, metavar="S",
                   help="scenario template with fabric, nic and emulation sections "
                        "(default: scenarios/emulation.yaml.j2)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="set a template variable or a dotted field (e.g. --set nodes=4); repeatable")
    p.add_argument("--seed", default=None, metavar="N",
                   help="random seed of the engine, 0 to 2^64-1 (default: the scenario's, else 1)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="directory for the daemon's outputs at exit (created)")
    p.add_argument("--time", choices=TIME_MODES, default=None,
                   help="virtual: the lockstep on the threads' virtual clocks (default); realtime: virtual time "
                        "follows the wall clock (slowed by emulation.slowdown).  Default: the scenario's "
                        "emulation.time_mode if it sets one, else virtual")
    p.add_argument("--daemon-log", default=None, metavar="FILE",
                   help="the daemon's stderr (default: discarded unless CXISIM_VERBOSE is set)")
    p.add_argument("command", nargs="+", metavar="CMD", help="the command to run (put it after --)")


def _build_dir():
    return os.path.join(REPO, os.environ.get("CXISIM_BUILD", "build"))


def _wait_socket(path, proc, timeout=300.0):
    # Large scenarios (thousands of simulated clients, under ASan) take a while to build before the
    # daemon listens; a daemon that exits is noticed at once.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            s.connect(path)
            return True
        except OSError:
            time.sleep(0.01)
        finally:
            s.close()
    return False


# Open MPI's path over libfabric's cxi, as on a Slingshot machine: the cm PML with the OFI MTL, restricted to
# cxi.  Debian's /etc/openmpi/openmpi-mca-params.conf turns the OFI components off (mtl = ^ofi), and Open MPI
# then runs an unflagged `mpirun` over shared memory and TCP: the run looks fine and never touches the
# simulated fabric.  Defaults only: a variable already in the environment, and any --mca on mpirun's command
# line (which overrides the environment), keep the user's choice.
OPEN_MPI_OVER_CXI = {
    "OMPI_MCA_pml": "cm",
    "OMPI_MCA_mtl": "ofi",
    "OMPI_MCA_mtl_ofi_provider_include": "cxi",
    "OMPI_MCA_btl_ofi_provider_include": "cxi",
}


def exec_env(sock, build, time_mode="virtual", cpu_scale=None):
    env = dict(os.environ)
    for k, v in OPEN_MPI_OVER_CXI.items():
        env.setdefault(k, v)
    provdir = os.path.join(build, "provider")
    old = env.get("FI_PROVIDER_PATH")
    env["FI_PROVIDER_PATH"] = provdir + (":" + old if old else "")
    env["CXISIM_SOCKET"] = sock
    env["CXISIM_DAEMON"] = os.path.join(build, "bin", "cxisimd")
    env["CXISIM_NO_AUTOSTART"] = "1"  # the command uses this daemon, never a private one
    env["CXISIM_TIME"] = time_mode    # the provider asks for this mode at attach (mixed modes are refused)
    env.update(clock_env(env, build, cpu_scale))
    return env


def clock_env(env, build, cpu_scale=None):
    """The clock interposer (libcxisim-clock.so) for every process the command runs: appended to LD_PRELOAD
    (after what is there, e.g. a sanitizer runtime that must come first).  Processes that attach in virtual
    time read and spend virtual time through it; the others (mpirun, shells) keep the real clocks.
    CXISIM_CLOCK_EPOCH is the real REALTIME, MONOTONIC and BOOTTIME at this start (ns): virtual time 0 maps
    to it, so every process of the run shares one timeline; CXISIM_CPU_SCALE scales the CPU clocks as the
    provider charges CPU time."""
    lib = os.path.join(build, "provider", "libcxisim-clock.so")
    out = {}
    if os.path.exists(lib):
        old = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p and p != lib]
        out["LD_PRELOAD"] = ":".join(old + [lib])
    if "CXISIM_CLOCK_EPOCH" not in env:
        out["CXISIM_CLOCK_EPOCH"] = ",".join(str(time.clock_gettime_ns(c)) for c in
                                             (time.CLOCK_REALTIME, time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME))
    if cpu_scale is not None:
        out["CXISIM_CPU_SCALE"] = repr(float(cpu_scale))
    return out


def time_mode(cfg, requested):
    """The run's time mode: --time, else the scenario's emulation.time_mode, else virtual; written into the
    resolved scenario so that the daemon and the provider agree."""
    emu = cfg.get("emulation")
    if not isinstance(emu, dict):
        return requested or "virtual"
    mode = requested or emu.get("time_mode") or "virtual"
    if mode not in TIME_MODES:
        raise InputError(f"emulation.time_mode: {mode!r} is not one of {', '.join(TIME_MODES)}")
    emu["time_mode"] = mode
    return mode


def main(args):
    """Exit status: CMD's (128 + N if exec was stopped by signal N), 1 if the emulation itself failed, 2 on
    bad input.  --out is written only when the emulation ended well: the daemon writes into a staging
    directory beside the outputs, moved into place at the end; bad input (a bad scenario, an unusable
    --daemon-log, a command that does not exist) or a failed daemon leaves nothing behind, not even the
    directories --out created."""
    seed = inputs.seed_option(args.seed)
    log = _open_daemon_log(args.daemon_log)
    stage = _OutStage(args.out) if args.out else None
    result = {"daemon_ok": False}
    try:
        return _emulate(args, seed, stage.path if stage else None, log, result)
    finally:
        if log:
            log.close()
        if stage:
            stage.publish() if result["daemon_ok"] else stage.discard()


def _open_daemon_log(path):
    if path is None:
        return None
    try:
        return open(path, "a")
    except OSError as e:
        raise InputError(f"--daemon-log {path}: {e.strerror}") from None


def _emulate(args, seed, out, user_log, result):
    """Run the daemon and the command; result["daemon_ok"] says whether the daemon exited 0 (its outputs in
    OUT are whole) once the command ran."""
    build = _build_dir()
    daemon = os.path.join(build, "bin", "cxisimd")
    if not os.access(daemon, os.X_OK):
        raise RuntimeError(f"daemon binary {daemon} not found: run `make` first")
    sets = scn.parse_sets(args.sets)
    doc = scn.render(args.scenario, sets)
    cfg = scn.resolved(doc, seed)
    mode = time_mode(cfg, getattr(args, "time", None))
    tmp = tempfile.mkdtemp(prefix="cxisim-exec-")
    sock = os.path.join(tmp, "cxisimd.sock")
    proc = None
    ran = False
    try:
        cfg_path = os.path.join(tmp, "scenario.json")
        with open(cfg_path, "w", encoding="utf-8") as f:
            scn.dump_json(cfg, f)
        # The daemon dies with this process, however it dies (SIGKILL of exec by a test's timeout too).
        cmd = [daemon, "--socket", sock, "--config", cfg_path, "--source", args.scenario,
               "--exit-with-parent", str(os.getpid()), *getattr(args, "daemon_args", [])]
        if out:
            # The run directory, as `cxisim run` writes it: the resolved scenario beside the outputs.
            shutil.copyfile(cfg_path, os.path.join(out, "scenario.json"))
            cmd += ["--out", out]
        verbose = bool(os.environ.get("CXISIM_VERBOSE"))
        log_path = user_log.name if user_log else os.path.join(tmp, "cxisimd.log")
        if not verbose and not user_log:
            cmd.append("--quiet")
        with open(log_path, "a") as log:
            proc = subprocess.Popen(cmd, stderr=None if verbose else log)
        if not _wait_socket(sock, proc):
            with open(log_path) as f:
                err = f.read()
            if proc.poll() == 2:  # config error: the daemon printed file, field and problem
                sys.stderr.write(err)
                raise InputError("")
            raise RuntimeError(f"cxisimd did not start: {err.strip()}")
        emu = cfg.get("emulation") if isinstance(cfg.get("emulation"), dict) else {}
        try:
            rc = _run_command(args.command, exec_env(sock, build, mode, emu.get("cpu_scale")))
        except FileNotFoundError:
            raise InputError(f"cxisim exec: {args.command[0]}: command not found")
        except _Signalled as e:
            ran = True
            return 128 + e.signum  # the finally below stops the daemon
        ran = True
        rc = rc if rc >= 0 else 128 - rc
        drc = _stop(proc)
        if not verbose:
            _relay_warnings(log_path)
        if drc != 0:
            # The emulation itself failed (e.g. a sanitizer report at exit): say so, fail the run.
            with open(log_path) as f:
                sys.stderr.write(f.read()[-4000:])
            sys.stderr.write(f"cxisim exec: cxisimd exited with status {drc}\n")
            return rc or 1
        return rc
    finally:
        if proc:
            result["daemon_ok"] = ran and _stop(proc) == 0
        shutil.rmtree(tmp, ignore_errors=True)


class _OutStage:
    """--out DIR, staged: checked and created before the daemon starts (a bad --out is bad input, not a
    failure after the whole job ran); the daemon writes into DIR/.cxisim-exec.tmp-PID; publish() moves
    its files into DIR (replacing an earlier run's), discard() removes them and the directories made."""

    def __init__(self, out):
        self.out = out
        self.created = runmod.missing_dirs(out)
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            runmod.remove_created(self.created)
            raise InputError(f"--out {out}: {e.strerror}") from None
        if not os.access(out, os.W_OK):
            runmod.remove_created(self.created)
            raise InputError(f"--out {out}: not writable")
        self.path = os.path.join(out, f".cxisim-exec.tmp-{os.getpid()}")
        shutil.rmtree(self.path, ignore_errors=True)
        os.mkdir(self.path)

    def publish(self):
        for name in sorted(os.listdir(self.path)):
            os.replace(os.path.join(self.path, name), os.path.join(self.out, name))
        os.rmdir(self.path)

    def discard(self):
        shutil.rmtree(self.path, ignore_errors=True)
        runmod.remove_created(self.created)


def _relay_warnings(log_path):
    """The daemon's warnings (e.g. a CPU latency request it could not hold, so that charged CPU time may
    depend on host load) reach the user even when its log goes to a file."""
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                if line.startswith("cxisimd: warning:"):
                    sys.stderr.write(line)
    except OSError:
        pass


class _Signalled(Exception):
    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _on_signal(signum, frame):
    raise _Signalled(signum)


def _run_command(command, env):
    """Run COMMAND; SIGTERM, SIGINT or SIGHUP sent to exec is passed on to it (and, if it does not exit
    within 5 s, SIGKILL), then _Signalled is raised so that exec stops its daemon and exits."""
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    child = None
    try:
        # A signal landing inside Popen (after the fork, before it returns) would leave `child` unset and
        # the command running on: hold it until `child` is known.
        with interrupts_held(tuple(old)):
            child = subprocess.Popen(command, env=env)
        return child.wait()
    except _Signalled as e:
        if child:
            _signal_child(child, e.signum)
        raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _signal_child(child, signum):
    # Further signals meanwhile must not interrupt the cleanup.
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    if child.poll() is None:
        child.send_signal(signum)
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode
