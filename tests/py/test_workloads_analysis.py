"""cxisim sweep / plot / report, and bad workload input (exit 2, one message naming file and field)."""
import json
import os
import subprocess

import pytest

from workloads_common import SMALL

SWEEP = SMALL.replace("name: small", "name: fig5-small") + """\
sweep:
  clients: [16, 32]
  strategy: [standard, multi_recv]
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_sweep_runs_points_in_parallel_and_indexes_them(cxisim, tmp_path):
    path = write(tmp_path, "s.yaml.j2", SWEEP)
    proc = cxisim("sweep", path, "--out", "out", "--jobs", "2", "--set", "measure_us=100", check=True)
    idx = json.loads((tmp_path / "out" / "fig5-small" / "sweep.json").read_text())
    assert [p["params"] for p in idx["points"]] == [
        {"clients": 16, "strategy": "standard"}, {"clients": 16, "strategy": "multi_recv"},
        {"clients": 32, "strategy": "standard"}, {"clients": 32, "strategy": "multi_recv"}]
    for p in idx["points"]:
        m = json.loads((tmp_path / "out" / "fig5-small" / p["run"] / "metrics.json").read_text())
        assert m["rpc_client"]["processes"] == p["params"]["clients"]
        assert m["rpc_server"]["strategy"] == p["params"]["strategy"]
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["clients", "strategy", "M"]
    assert len(lines) == 6  # header, 4 points, index path


def test_sweep_vary_overrides_and_list(cxisim, tmp_path):
    path = write(tmp_path, "s.yaml.j2", SWEEP)
    proc = cxisim("sweep", path, "--vary", "clients=8,24,40", "--list", check=True)
    assert proc.stdout.split() == [f"clients={c}_strategy={s}" for c in (8, 24, 40)
                                   for s in ("standard", "multi_recv")]


def test_sweep_writes_a_slurm_job_array(cxisim, tmp_path):
    path = write(tmp_path, "s.yaml.j2", SWEEP)
    cxisim("sweep", path, "--out", "out", "--slurm", "job.sh", "--slurm-max-parallel", "2", check=True)
    script = (tmp_path / "job.sh").read_text()
    assert "#SBATCH --array=0-3%2" in script
    assert not (tmp_path / "out" / "fig5-small" / "clients=16_strategy=standard").exists()
    # Run array task 2 as Slurm would: it runs exactly that point.
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="2")
    subprocess.run(["bash", str(tmp_path / "job.sh")], env=env, check=True, capture_output=True)
    runs = sorted(p.name for p in (tmp_path / "out" / "fig5-small").iterdir() if p.is_dir())
    assert runs == ["clients=32_strategy=standard"]


@pytest.mark.parametrize("args, needle", [
    (["--slurm", "/proc/nope/job.sh"], "--slurm /proc/nope/job.sh"),
    (["--slurm", "job.sh", "--out", "/proc/nope"], "--out /proc/nope"),
    (["--slurm", "job.sh", "--slurm-max-parallel", "0"], "--slurm-max-parallel 0: expected a positive integer"),
    (["--slurm", "job.sh", "--slurm-time", "half an hour"], "--slurm-time 'half an hour'"),
    # Each --slurm-option is one #SBATCH line: a line break in it made the rest a command of the job.
    (["--slurm", "job.sh", "--slurm-option", "--partition=x\ntouch pwned"], "--slurm-option '--partition=x"),
    (["--slurm", "job.sh", "--slurm-option", "partition=x"], "--slurm-option 'partition=x'"),
    (["--slurm", "job.sh", "--out", "o\ntouch pwned"], "--out 'o\\ntouch pwned': a job script cannot"),
    (["--slurm", "job\rx.sh"], "--slurm 'job\\rx.sh': a job script cannot"),
])
def test_bad_slurm_options_write_nothing(cxisim, tmp_path, args, needle):
    """A job-array script that sbatch would refuse (%0, a time limit it cannot parse), or that cannot be
    written, is bad input: exit 2, one line, and neither the script nor the points file is left behind."""
    path = write(tmp_path, "s.yaml.j2", SWEEP)
    assert_bad(cxisim("sweep", path, "--out", "out", *args), needle)
    assert not (tmp_path / "job.sh").exists() and not (tmp_path / "out").exists()


def test_plot_and_report(cxisim, tmp_path):
    path = write(tmp_path, "s.yaml.j2", SWEEP)
    cxisim("sweep", path, "--out", "out", "--set", "measure_us=100", check=True)
    proc = cxisim("plot", "out/fig5-small", "--kind", "rpc-rate", "--kind", "latency", "--kind", "le-use",
                  check=True)
    files = proc.stdout.split()
    assert sorted(os.path.basename(f) for f in files) == sorted(
        f"{k}.{e}" for k in ("rpc-rate", "latency", "le-use") for e in ("png", "svg"))
    for f in files:
        assert os.path.getsize(f) > 2000
    svg = open([f for f in files if f.endswith("rpc-rate.svg")][0], encoding="utf-8").read()
    assert "seed 000" in svg  # the published Fig 5 values are overlaid
    proc = cxisim("report", "out", check=True)
    html = open(os.path.join(tmp_path, proc.stdout.strip()), encoding="utf-8").read()
    assert "fig5-small" in html and "<table>" in html and ".svg" in html
    assert html.count("<tr>") >= 5


def test_plot_of_nothing_is_bad_input(cxisim, tmp_path):
    (tmp_path / "empty").mkdir()
    proc = cxisim("plot", "empty")
    assert proc.returncode == 2 and "no run directories" in proc.stderr


def _with(text, section, key, value):
    m = json.loads(text)
    m[section][key] = value
    return json.dumps(m)


HOSTILE_RUN_FILES = [  # (file, how it is spoilt, the problem named, the commands that read it)
    ("metrics.json", lambda t: t[:300], "not a run directory's metrics.json", ("plot", "report")),
    ("metrics.json", lambda t: "null", "a JSON object expected", ("plot", "report")),
    ("metrics.json", lambda t: _with(t, "rpc_server", "rpc_rate", "x"),
     "field 'rpc_server.rpc_rate': expected a finite number", ("plot", "report")),
    ("metrics.json", lambda t: _with(t, "rpc_client", "processes", "many"),
     "field 'rpc_client.processes': expected a finite number", ("plot",)),
    ("run.json", lambda t: '{"wall_time_s": ', "not a run directory's run.json", ("plot", "report")),
    ("run.json", lambda t: '{"wall_time_s": "fast"}', "field 'wall_time_s'", ("plot", "report")),
    ("timeseries.csv", lambda t: t + "1,2\n", "fields, the header has", ("plot",)),
    ("timeseries.csv", lambda t: t.replace("\n0,", "\nabc,", 1), "expected a finite number", ("plot",)),
    ("timeseries.csv", lambda t: "\udcff", "not a timeseries file", ("plot",)),
]


@pytest.mark.parametrize("name, spoil, problem, cmds", HOSTILE_RUN_FILES)
def test_plot_and_report_refuse_a_spoilt_run_directory(cxisim, tmp_path, name, spoil, problem, cmds):
    """A run directory is input too (hand-edited, truncated by a full disk, from another tool): plot and
    report refuse it with one line naming the file and the problem, exit 2 -- never a traceback -- and write
    no figure and no report."""
    path = write(tmp_path, "s.yaml.j2", SMALL)
    cxisim("run", path, "--out", "out", "--run", "good", "--set", "measure_us=100", check=True)
    cxisim("run", path, "--out", "out", "--run", "bad", "--set", "measure_us=100", check=True)
    f = tmp_path / "out" / "small" / "bad" / name
    f.write_bytes(spoil(f.read_text()).encode("utf-8", "surrogateescape"))
    kinds = ["--kind", "le-use"] if name == "timeseries.csv" else ["--kind", "rpc-rate", "--kind", "rank"]
    argv = {"plot": ["plot", "out/small", "--out", "figs", *kinds], "report": ["report", "out"]}
    for cmd in cmds:
        assert_bad(cxisim(*argv[cmd]), os.path.join("small", "bad", name), problem)
    assert not (tmp_path / "figs").exists() and not (tmp_path / "out" / "report.html").exists()


def assert_bad(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    msg = proc.stderr.strip()
    assert len(msg.splitlines()) == 1, msg
    for n in needles:
        assert n in msg, (n, msg)


def test_sweep_value_must_be_a_list(cxisim, tmp_path):
    path = write(tmp_path, "s.yaml.j2", SMALL + "sweep:\n  clients: 16\n")
    assert_bad(cxisim("sweep", path, "--out", "out"), "s.yaml.j2", "field 'sweep.clients'", "list")


def test_bad_vary(cxisim, tmp_path):
    path = write(tmp_path, "s.yaml.j2", SWEEP)
    assert_bad(cxisim("sweep", path, "--vary", "clients"), "--vary 'clients'", "key=v1,v2")


def test_clients_without_server(cxisim, tmp_path):
    text = SMALL.split("rpc_server:")[0] + "rpc_client:\n  processes: 4\n"
    path = write(tmp_path, "c.yaml.j2", text)
    assert_bad(cxisim("run", path, "--out", "out"), "c.yaml.j2", "field 'rpc_client.processes'", "rpc_server")
    assert not (tmp_path / "out").exists()


def test_copy_threshold_above_buffers(cxisim, tmp_path):
    path = write(tmp_path, "t.yaml.j2", SMALL.replace("  protocol:", "  copy_threshold: 5\n  protocol:"))
    assert_bad(cxisim("run", path, "--out", "out"), "field 'rpc_server.copy_threshold'", "multi_recv_buffers")


def test_unknown_strategy(cxisim, tmp_path):
    path = write(tmp_path, "u.yaml.j2", SMALL)
    assert_bad(cxisim("run", path, "--out", "out", "--set", "strategy=eager"), "field 'rpc_server.strategy'")


def test_clients_beyond_the_fabric(cxisim, tmp_path):
    path = write(tmp_path, "f.yaml.j2", SMALL)
    assert_bad(cxisim("run", path, "--out", "out", "--set", "clients=5000"), "field 'rpc_client.processes'",
               "no NIC at address")
