"""Front end and engine: bad input, determinism, --set plumbing."""
import filecmp
import json
import os

import pytest
from cxisim.counters import counters

HOLD = """\
name: hold
seed: 7
engine:
  event_limit: {{ events | default(20000) }}
hold:
  pending: {{ pending | default(500) }}
  mean_increment_ns: 100
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def assert_bad(proc, tmp_path, *needles):
    assert proc.returncode == 2, proc.stderr
    msg = proc.stderr.strip()
    assert len(msg.splitlines()) == 1, f"expected one message, got:\n{msg}"
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"
    assert not (tmp_path / "out").exists(), "a failed run must leave no output directory"


def test_missing_file(cxisim, tmp_path):
    proc = cxisim("run", "nope.yaml.j2", "--out", "out")
    assert_bad(proc, tmp_path, "nope.yaml.j2", "No such file")


def test_jinja_syntax_error(cxisim, tmp_path):
    path = write(tmp_path, "bad.yaml.j2", "name: x\nhold:\n  pending: {{ pending | default(3) \n")
    proc = cxisim("run", path, "--out", "out")
    assert_bad(proc, tmp_path, "bad.yaml.j2:3", "template syntax error")


def test_undefined_template_variable(cxisim, tmp_path):
    path = write(tmp_path, "undef.yaml.j2", "hold:\n  pending: {{ pending }}\n")
    proc = cxisim("run", path, "--out", "out")
    assert_bad(proc, tmp_path, "undef.yaml.j2", "'pending' is undefined")


def test_yaml_syntax_error(cxisim, tmp_path):
    path = write(tmp_path, "y.yaml.j2", "hold:\n  pending: [1, 2\n  x: 3\n")
    proc = cxisim("run", path, "--out", "out")
    assert_bad(proc, tmp_path, "y.yaml.j2", "YAML error")


def test_unknown_field(cxisim, tmp_path):
    path = write(tmp_path, "u.yaml.j2", HOLD + "  pendnig: 3\n")
    proc = cxisim("run", path, "--out", "out")
    assert_bad(proc, tmp_path, "u.yaml.j2", "field 'hold.pendnig'", "unknown field")


def test_unknown_section(cxisim, tmp_path):
    path = write(tmp_path, "s.yaml.j2", HOLD + "nosuchmodel:\n  a: 1\n")
    proc = cxisim("run", path, "--out", "out")
    assert_bad(proc, tmp_path, "s.yaml.j2", "field 'nosuchmodel'", "unknown field")


def test_wrong_type(cxisim, tmp_path):
    path = write(tmp_path, "t.yaml.j2", HOLD)
    proc = cxisim("run", path, "--out", "out", "--set", "pending=many")
    assert_bad(proc, tmp_path, "t.yaml.j2", "field 'hold.pending'", "expected a non-negative integer")


def test_out_of_range(cxisim, tmp_path):
    path = write(tmp_path, "r.yaml.j2", HOLD)
    proc = cxisim("run", path, "--out", "out", "--set", "pending=0")
    assert_bad(proc, tmp_path, "r.yaml.j2", "field 'hold.pending'", "out of range")


def test_bad_enum(cxisim, tmp_path):
    path = write(tmp_path, "e.yaml.j2", HOLD + "  distribution: gaussian\n")
    proc = cxisim("run", path, "--out", "out")
    assert_bad(proc, tmp_path, "e.yaml.j2", "field 'hold.distribution'", "exponential, uniform")


def test_unknown_set_key(cxisim, tmp_path):
    path = write(tmp_path, "k.yaml.j2", HOLD)
    proc = cxisim("run", path, "--out", "out", "--set", "nosuch.section.key=1")
    assert_bad(proc, tmp_path, "k.yaml.j2", "field 'nosuch'", "unknown field")
    proc = cxisim("run", path, "--out", "out", "--set", "hold.nosuch=1")
    assert_bad(proc, tmp_path, "k.yaml.j2", "field 'hold.nosuch'", "unknown field")
    proc = cxisim("run", path, "--out", "out", "--set", "hold.pending.x=1")
    assert_bad(proc, tmp_path, "k.yaml.j2", "field 'hold.pending.x'", "'hold.pending' is a value, not a section")


def test_set_key_makes_the_sections_the_template_left_out(cxisim, tmp_path):
    """README's common fields apply to every scenario: `--set engine.event_limit=N` on a template without an
    `engine:` section makes the section (the run stops after N events), as does a model's section."""
    text = "name: hold\nseed: 7\nhold:\n  pending: 500\n  mean_increment_ns: 100\n"
    path = write(tmp_path, "s.yaml.j2", text)
    proc = cxisim("run", path, "--out", "out", "--run", "r", "--set", "engine.event_limit=1000",
                  "--set", "stats.timeseries_interval_ns=1000")
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out" / "hold" / "r" / "scenario.json") as f:
        sc = json.load(f)
    assert sc["engine"] == {"event_limit": 1000} and sc["stats"] == {"timeseries_interval_ns": 1000}, sc
    with open(tmp_path / "out" / "hold" / "r" / "metrics.json") as f:
        m = json.load(f)
    assert m["engine"]["events_processed"] == 1000 and m["engine"]["stop_reason"] == "event_limit", m["engine"]


def test_malformed_set(cxisim, tmp_path):
    path = write(tmp_path, "m.yaml.j2", HOLD)
    proc = cxisim("run", path, "--out", "out", "--set", "pending")
    assert_bad(proc, tmp_path, "--set 'pending'", "key=value")


def test_failed_run_keeps_existing_scenario_dir_clean(cxisim, tmp_path):
    """A bad run next to a good one leaves the good run alone and adds nothing."""
    path = write(tmp_path, "g.yaml.j2", HOLD)
    ok = cxisim("run", path, "--out", "out", check=True)
    good = os.path.join(tmp_path, ok.stdout.strip())
    before = sorted(os.listdir(tmp_path / "out" / "hold"))
    bad = cxisim("run", path, "--out", "out", "--set", "pending=-4")
    assert bad.returncode == 2
    assert sorted(os.listdir(tmp_path / "out" / "hold")) == before
    assert os.path.exists(os.path.join(good, "metrics.json"))


def test_same_seed_byte_identical(run_scenario, tmp_path):
    a, _ = run_scenario(HOLD, seed=11, run="a")
    b, _ = run_scenario(HOLD, seed=11, run="b")
    for name in ("metrics.json", "telemetry.csv", "timeseries.csv", "scenario.json"):
        assert filecmp.cmp(os.path.join(a, name), os.path.join(b, name), shallow=False), name


def test_different_seed_differs(run_scenario):
    _, ma = run_scenario(HOLD, seed=1, run="a")
    _, mb = run_scenario(HOLD, seed=2, run="b")
    assert ma["engine"]["virtual_time_ps"] != mb["engine"]["virtual_time_ps"]
    assert ma["seed"] == 1 and mb["seed"] == 2


def test_set_reaches_engine(run_scenario):
    # a template variable
    _, m = run_scenario(HOLD, sets={"pending": 123, "events": 4567})
    assert m["hold"]["pending"] == 123
    assert m["engine"]["events_processed"] == 4567
    assert counters(m)["hold.fired"] == 4567
    # a dotted path into the rendered document (the engine reads it)
    _, m = run_scenario(HOLD, sets={"hold.mean_increment_ns": 2.5})
    assert m["hold"]["mean_increment_ps"] == 2500


def test_scenario_json_is_resolved(run_scenario):
    rundir, _ = run_scenario(HOLD, sets={"pending": 9}, seed=5)
    with open(os.path.join(rundir, "scenario.json")) as f:
        cfg = json.load(f)
    assert cfg["seed"] == 5 and cfg["hold"]["pending"] == 9


def test_time_limit_stop(run_scenario):
    text = "engine:\n  time_limit_us: 3\nhold:\n  pending: 10\n  mean_increment_ns: 100\n"
    _, m = run_scenario(text)
    assert m["engine"]["stop_reason"] == "time_limit"
    assert m["engine"]["virtual_time_ps"] == 3_000_000
    # each hold event fires at most ~ once per 100 ns per pending slot: 10 slots x 3 us / 100 ns ~ 300
    assert 150 < m["engine"]["events_processed"] < 600


def test_help_documents_every_option(cxisim):
    top = cxisim("--help", check=True).stdout
    assert "run" in top
    sub = cxisim("run", "--help", check=True).stdout
    for opt in ("--set", "--seed", "--out", "--run", "--quiet"):
        assert opt in sub


@pytest.mark.parametrize("args", [["--params"]])
def test_engine_params_table(engine, args):
    import subprocess
    out = subprocess.run([engine, *args], capture_output=True, text=True, check=True).stdout
    assert "| hold.pending | 10000 | count |" in out
    assert "provenance" in out


def _run_on_pty(cmd, cwd):
    """Run cmd with stderr on a pseudo-terminal; returns (status, what it wrote to stderr)."""
    import pty
    import subprocess
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(), b"".join(chunks).decode(errors="replace")


def test_progress_line_on_terminal_only(engine, tmp_path):
    cfg = tmp_path / "s.json"
    cfg.write_text('{"engine": {"event_limit": 200000}, "hold": {"pending": 100}}')
    (tmp_path / "o").mkdir()
    rc, err = _run_on_pty([engine, "--config", str(cfg), "--out", str(tmp_path / "o")], tmp_path)
    assert rc == 0
    assert "[cxisim] virtual" in err and "M events/s" in err and "ETA" in err, err
    rc, err = _run_on_pty([engine, "--config", str(cfg), "--out", str(tmp_path / "o"), "--quiet"], tmp_path)
    assert rc == 0 and "[cxisim]" not in err
