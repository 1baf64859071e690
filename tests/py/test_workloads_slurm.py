"""`cxisim sweep --slurm` on a real Slurm: Debian's slurm-wlm (slurmctld and slurmd on this machine) with
munge, each started by the test from a generated configuration in a temporary directory and stopped at the
end.  The job array is submitted with sbatch; every point's run directory must equal, byte for byte, the
one a local `cxisim sweep` of the same points writes, and `cxisim sweep --collect` must index and tabulate
the array's runs as the local sweep does (wall times aside).  The test is skipped, naming the check that
failed, only when the daemons cannot be started here (not installed, not root, or they do not come up)."""
import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from test_workloads_analysis import SWEEP, write

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")
DETERMINISTIC = ("scenario.json", "metrics.json", "telemetry.csv", "timeseries.csv")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout, procs, logs):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        for name, p in procs:
            if p.poll() is not None:
                pytest.skip(f"{name} exited ({p.returncode}) before {what}: {tail(logs)}")
        time.sleep(0.2)
    pytest.skip(f"timed out after {timeout} s waiting for {what}: {tail(logs)}")


def tail(paths):
    out = []
    for p in paths:
        if os.path.exists(p):
            with open(p, errors="replace") as f:
                lines = f.read().splitlines()[-3:]
            out.append(f"{os.path.basename(p)}: " + " | ".join(lines))
    return "; ".join(out) or "no log"


class Cluster:
    """munged, slurmctld and slurmd in the foreground under a private directory and ports."""

    def __init__(self, root):
        self.root = root
        self.procs = []
        self.env = dict(os.environ, SLURM_CONF=str(root / "slurm.conf"))

    def start(self):
        r = self.root
        for d in ("state", "spool", "log"):
            (r / d).mkdir()
        key = r / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        sock = r / "munge.sock"
        logs = [str(r / "log" / n) for n in ("munged.log", "slurmctld.log", "slurmd.log")]
        self.spawn("munged", ["munged", "-F", "-f", f"--socket={sock}", f"--key-file={key}",
                              f"--log-file={r / 'log' / 'munged.log'}", f"--pid-file={r / 'munged.pid'}",
                              f"--seed-file={r / 'munged.seed'}"])
        wait_for("the munge socket", sock.exists, 15, self.procs, logs)
        host = socket.gethostname()
        conf = f"""\
ClusterName=cxisimtest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={sock}
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'slurmctld.pid'}
SlurmdPidFile={r / 'slurmd.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN
PartitionName=cxisim Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""
        (r / "slurm.conf").write_text(conf)
        self.spawn("slurmctld", ["slurmctld", "-D", "-f", str(r / "slurm.conf")])
        self.spawn("slurmd", ["slurmd", "-D", "-f", str(r / "slurm.conf"), "-N", host])

        def idle():
            p = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env, capture_output=True, text=True)
            return p.returncode == 0 and p.stdout.strip() == "idle"
        wait_for("the node to be idle in sinfo", idle, 60, self.procs, logs)

    def spawn(self, name, argv):
        with open(self.root / "log" / f"{name}.out", "w") as out:
            p = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        self.procs.append((name, p))

    def stop(self):
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


@pytest.fixture
def slurm(tmp_path):
    missing = [d for d in DAEMONS if not shutil.which(d)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (make deps installs slurm-wlm and munge)")
    if os.geteuid() != 0:
        pytest.skip("slurmd and munged are started as root here; the test runs as another user")
    c = Cluster(tmp_path / "slurm")
    (tmp_path / "slurm").mkdir()
    try:
        c.start()
        yield c
    finally:
        c.stop()


def table_without_walls(stdout):
    """The summary table `cxisim sweep` prints, without its last column (wall s) and the index path after it."""
    return [line.rsplit(None, 1)[0] for line in stdout.splitlines()[:-1]]


def strip_walls(index):
    for p in index["points"]:
        p.pop("wall_time_s", None)
    return index


def test_sweep_job_array_on_a_real_slurm(cxisim, slurm, tmp_path):
    path = write(tmp_path, "s.yaml.j2", SWEEP)
    fixed = ["--set", "measure_us=100"]
    cxisim("sweep", path, *fixed, "--out", "out", "--slurm", "job.sh", "--slurm-max-parallel", "2", check=True)
    sub = subprocess.run(["sbatch", "--parsable", str(tmp_path / "job.sh")], cwd=tmp_path, env=slurm.env,
                         capture_output=True, text=True)
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 600
    while True:
        q = subprocess.run(["squeue", "-h", "-j", job], env=slurm.env, capture_output=True, text=True)
        if q.returncode == 0 and not q.stdout.strip():
            break
        assert time.monotonic() < deadline, f"job array {job} still queued or running: {q.stdout}"
        time.sleep(0.5)
    logs = sorted((tmp_path / "out" / "fig5-small").glob(f"slurm-{job}_*.log"))
    assert len(logs) == 4, f"one log per array task: {[p.name for p in logs]}"

    cxisim("sweep", path, *fixed, "--out", "local", "--jobs", "2", check=True)
    local = json.loads((tmp_path / "local" / "fig5-small" / "sweep.json").read_text())
    for p in local["points"]:
        for f in DETERMINISTIC:
            a = (tmp_path / "out" / "fig5-small" / p["run"] / f)
            b = (tmp_path / "local" / "fig5-small" / p["run"] / f)
            assert a.read_bytes() == b.read_bytes(), f"{p['run']}/{f} differs between Slurm and a local sweep"

    merged = cxisim("sweep", path, *fixed, "--out", "out", "--collect", check=True)
    index = json.loads((tmp_path / "out" / "fig5-small" / "sweep.json").read_text())
    assert all(p["wall_time_s"] > 0 for p in index["points"])
    local_table = cxisim("sweep", path, *fixed, "--out", "local", "--collect", check=True)
    assert table_without_walls(merged.stdout) == table_without_walls(local_table.stdout)
    assert len(table_without_walls(merged.stdout)) == 5  # header and 4 points
    for k in ("scenario", "sets", "seed", "sweep"):
        assert index[k] == local[k]
    assert strip_walls(index)["points"] == strip_walls(local)["points"]


def test_collect_names_a_point_not_run(cxisim, tmp_path):
    path = write(tmp_path, "s.yaml.j2", SWEEP)
    cxisim("sweep", path, "--out", "out", "--slurm", "job.sh", check=True)
    proc = cxisim("sweep", path, "--out", "out", "--collect")
    assert proc.returncode == 2
    assert "clients=16_strategy=standard: point not run" in proc.stderr
