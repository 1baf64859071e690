"""Input rules of the scenario front end and of the engine's config reader (issue 10, items 6-16).

Every bad input ends with one line naming the file, the field and the problem, status 2, and nothing
written: no run directory, no hidden temporary directory, nothing outside --out.
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import BUILD, CXISIM, REPO
from test_engine_frontend import HOLD, assert_bad, write

SHORT = "name: short\nengine:\n  event_limit: 2000\nhold:\n  pending: 50\n  mean_increment_ns: 100\n"
LONG = "name: long\nengine:\n  event_limit: 2000000000\nhold:\n  pending: 1000\n  mean_increment_ns: 100\n"


def scenario(name):
    return os.path.join(REPO, "scenarios", name)


# ---- 6: bytes that are not UTF-8

def test_non_utf8_byte(cxisim, tmp_path):
    p = tmp_path / "bin.yaml.j2"
    p.write_bytes(b"name: x\ndescription: caf\xe9\nhold:\n  pending: 3\n")
    assert_bad(cxisim("run", p, "--out", "out"), tmp_path, "bin.yaml.j2:2", "not UTF-8", "0xe9")


def test_non_utf8_set_value(cxisim, tmp_path):
    path = write(tmp_path, "h.yaml.j2", HOLD)
    env = dict(os.environ, CXISIM_BUILD=BUILD)
    proc = subprocess.run([sys.executable.encode(), CXISIM.encode(), b"run", path.encode(), b"--out", b"out",
                           b"--set", b"pending=\xff"], cwd=tmp_path, env=env, capture_output=True)
    assert proc.returncode == 2 and b"not UTF-8" in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr


# ---- 7, 12: template variables are typed and range-checked before rendering

@pytest.mark.parametrize("template,setting,needles", [
    ("fig4-multithread.yaml.j2", "nodes=0", ["template variable 'nodes'", "out of range [1, 1024]"]),
    ("fig10-bulk-bw.yaml.j2", "nodes=0", ["template variable 'nodes'", "out of range [1, 1024]"]),
    ("fig5-rpc-rate.yaml.j2", "clients=abc", ["template variable 'clients'", "expected an integer, got 'abc'"]),
    ("fig5-rpc-rate.yaml.j2", "clients=1000000000000", ["template variable 'clients'", "out of range"]),
    ("fig9-mr-methods.yaml.j2", "mr_method=fast", ["template variable 'mr_method'", "expected one of optimized"]),
    ("fabric/ordering.yaml.j2", "ordered=3", ["template variable 'ordered'", "expected true or false"]),
    ("demo.yaml.j2", "strategy=a: b", ["template variable 'strategy'", "expected a word"]),
    ("fig5-rpc-rate.yaml.j2", "seed=-1", ["template variable 'seed'", "out of range [0, 18446744073709551615]"]),
])
def test_shipped_template_variables_checked_first(cxisim, tmp_path, template, setting, needles):
    t0 = time.monotonic()
    proc = cxisim("run", scenario(template), "--out", "out", "--set", setting)
    assert_bad(proc, tmp_path, os.path.basename(template), *needles)
    # before the range check, clients=10^12 spent minutes in the template's loop over client groups
    assert time.monotonic() - t0 < 60


def _template_files():
    root = os.path.join(REPO, "scenarios")
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)
                  for f in fs if f.endswith(".yaml.j2"))


@pytest.mark.parametrize("template", _template_files())
def test_shipped_templates_declare_every_variable(template):
    from cxisim import scenario as scn
    from cxisim import variables
    path = scenario(template)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    decl = variables.declared(path, text)
    assert decl is not None, f"{template} has no variables block"
    reads = variables.inputs_of(text, scn.template_variables(path, text))
    assert set(decl) == reads, (f"{template}: declare {sorted(reads - set(decl))} and drop "
                                f"{sorted(set(decl) - reads)} in its variables block (README, Running scenarios)")


def test_declared_int_takes_integral_numbers(cxisim, tmp_path):
    text = "{#- variables: x\n    events: int 1..1000000\n#}\n" + SHORT.replace("2000", "{{ events | default(7) }}")
    path = write(tmp_path, "d.yaml.j2", text)
    proc = cxisim("run", path, "--out", "out", "--set", "events=1e3", check=True)
    with open(os.path.join(tmp_path, proc.stdout.strip(), "metrics.json")) as f:
        assert json.load(f)["engine"]["events_processed"] == 1000


def test_bad_declaration(cxisim, tmp_path):
    path = write(tmp_path, "d.yaml.j2", "# x\n{#- variables: x\n    n: int 5..1\n#}\nname: {{ n }}\n")
    assert_bad(cxisim("run", path, "--out", "out"), tmp_path, "d.yaml.j2:3", "variables", "int 5..1")


def test_undeclared_variable_in_declaring_template(cxisim, tmp_path):
    path = write(tmp_path, "d.yaml.j2", "{#- variables: x\n    n: int 1..5\n#}\n{%- set k = 2 %}\n"
                 "name: a{{ n | default(1) }}{{ m | default(1) }}{{ k }}\n")
    assert_bad(cxisim("run", path, "--out", "out", "--set", "m=3"), tmp_path, "template variable 'm'",
               "not declared", "declared: n")
    # a template's own intermediate values are not inputs either
    assert_bad(cxisim("run", path, "--out", "out", "--set", "k=3"), tmp_path, "field 'k'", "unknown field")


@pytest.mark.parametrize("expr,needle", [
    ("{{ 1 / 0 }}", "ZeroDivisionError"), ("{{ 'a' + 1 }}", "TypeError"),
    ("{% for i in range(10 ** 12) %}{% endfor %}", "Range too big"), ("{{ 2 ** 100000000 }}", "too large"),
    ("{{ ''.__class__.__mro__ }}", "unsafe"), ("{{ 'x' * 10 ** 10 }}", "out of memory"),
    ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "recursion"),
    ("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}", "nested too deeply"),
], ids=lambda v: v[:40] if isinstance(v, str) else None)
def test_template_errors_are_one_line(cxisim, tmp_path, expr, needle):
    path = write(tmp_path, "t.yaml.j2", SHORT + "description: x" + expr + "\n")
    assert_bad(cxisim("run", path, "--out", "out"), tmp_path, "t.yaml.j2", needle)


# ---- 8, 9: what YAML can say and JSON cannot hold

@pytest.mark.parametrize("line,needles", [
    ("1: 2", ["field '1'", "key 1 is not a string"]),
    ("true: x", ["field 'true'", "key true is not a string"]),
    ("null: 1", ["field 'null'", "key null is not a string"]),
    ("x: {? [a]\n  : 1}", ["YAML error"]),
    ("x: !!binary aGVsbG8=", ["field 'x'", "binary data"]),
    ("x: !!timestamp 2020-01-01", ["field 'x'", "timestamp"]),
    ("x: !!set {a, b}", ["field 'x'", "a set"]),
    ("x: &x [*x]", ["field 'x[0]'", "contains itself"]),
    ("x: .nan", ["field 'x'", "not a finite number"]),
    ("x: 18446744073709551616", ["field 'x'", "does not fit in 64 bits"]),
    ("x: \"a\\0b\"", ["field 'x'", "NUL"]),
    ("x: \"\\uD800\"", ["field 'x'", "surrogate"]),
    ("x: " + "[" * 20000 + "]" * 20000, ["nested too deeply"]),
    ("x: " + "[" * 40 + "]" * 40, ["field 'x", "nested more than 32"]),
    ("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh")),
     ["more than 1,000,000 values"]),
    ("hold: {pending: 1}\nhold: {pending: 2}", ["duplicate key 'hold'"]),
], ids=lambda v: v[:30] if isinstance(v, str) else "")
def test_values_json_cannot_hold(cxisim, tmp_path, line, needles):
    path = write(tmp_path, "v.yaml.j2", "{% raw %}" + line + "\n{% endraw %}" + SHORT.replace("name: short\n", ""))
    assert_bad(cxisim("run", path, "--out", "out"), tmp_path, "v.yaml.j2", *needles)


def test_yaml12_scalars(run_scenario, tmp_path):
    """A date, `yes` and `1e3` read as YAML 1.2 does: a string, a string, a number."""
    rundir, m = run_scenario(SHORT + "description: 2020-01-01\n", sets={"hold.mean_increment_ns": "1e2",
                                                                         "engine.event_limit": "1e3"})
    with open(os.path.join(rundir, "scenario.json")) as f:
        cfg = json.load(f)
    assert cfg["description"] == "2020-01-01" and cfg["hold"]["mean_increment_ns"] == 100.0
    assert m["engine"]["events_processed"] == 1000


def test_set_value_errors_are_one_line(cxisim, tmp_path):
    path = write(tmp_path, "h.yaml.j2", HOLD)
    assert_bad(cxisim("run", path, "--out", "out", "--set", 'pending="a'), tmp_path, "--set 'pending=\"a'",
               "not a YAML scalar")
    assert_bad(cxisim("run", path, "--out", "out", "--set", "hold.x=.inf"), tmp_path, "field 'hold.x'",
               "not a finite number")


# ---- 10: names are single safe path components

@pytest.mark.parametrize("name,needle", [
    ("../../../x", "is not a valid name"), ("a/b", "is not a valid name"), (".hidden", "is not a valid name"),
    ('"a\\0b"', "is not a valid name"), ("n" * 300, "at most 255 bytes"), ("..", "is not a valid name"),
    ("''", "is not a valid name"), ("[a]", "expected a name"),
], ids=lambda v: v[:20])
def test_bad_names(cxisim, tmp_path, name, needle):
    path = write(tmp_path, "n.yaml.j2", SHORT.replace("name: short", f"name: {name}"))
    deep = tmp_path / "a" / "b" / "c"
    deep.mkdir(parents=True)
    proc = subprocess.run([sys.executable, CXISIM, "run", path, "--out", "out"], cwd=deep, capture_output=True,
                          text=True, env=dict(os.environ, CXISIM_BUILD=BUILD))
    assert proc.returncode == 2 and "field 'name'" in proc.stderr and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["a", "n.yaml.j2"] and os.listdir(deep) == [], "wrote outside --out"


@pytest.mark.parametrize("run", ["../x", "..", "a/b", ".x", ""])
def test_bad_run_names(cxisim, tmp_path, run):
    path = write(tmp_path, "r.yaml.j2", SHORT)
    assert_bad(cxisim("run", path, "--out", "out", "--run", run), tmp_path, "--run", "not a valid name")


def test_name_derived_from_odd_file_name(cxisim, tmp_path):
    path = write(tmp_path, "my scenario (2).yaml.j2", SHORT.replace("name: short\n", ""))
    proc = cxisim("run", path, "--out", "out", check=True)
    assert proc.stdout.strip() == os.path.join("out", "my-scenario--2-", "seed1")


# ---- 11: seeds of 2^64 or more, in the scenario or on the command line

@pytest.mark.parametrize("seed", ["18446744073709551616", "1e23", "99999999999999999999999"])
def test_seed_beyond_64_bits(cxisim, tmp_path, seed):
    path = write(tmp_path, "s.yaml.j2", SHORT + f"seed: {seed}\n")
    assert_bad(cxisim("run", path, "--out", "out"), tmp_path, "s.yaml.j2", "field 'seed'",
               "out of range [0, 18446744073709551615]")
    path = write(tmp_path, "s.yaml.j2", SHORT)
    assert_bad(cxisim("run", path, "--out", "out", "--seed", seed), tmp_path, f"--seed {seed}",
               "out of range [0, 18446744073709551615]")


def test_largest_seed_runs(run_scenario):
    _, m = run_scenario(SHORT + "seed: 18446744073709551615\n")
    assert m["seed"] == 18446744073709551615
    _, m = run_scenario(SHORT, seed="18446744073709551615")
    assert m["seed"] == 18446744073709551615


# ---- 14: SIGTERM cleans up like Ctrl-C

def _engines_of(path_part):
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"cxisim-engine" in cmd and path_part.encode() in cmd:
                out.append(int(pid))
    return out


def _wait_for(pred, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_removes_temporary_run_directory(tmp_path, sig, status):
    path = write(tmp_path, "long.yaml.j2", LONG)
    out = tmp_path / "out"
    # The front end starts with SIGINT at its default, as from a terminal: a shell starts background jobs
    # (`make test &`, a CI runner's script) with SIGINT ignored, the child inherits that, and a program
    # started with SIGINT ignored rightly keeps ignoring it -- the front end included.
    p = subprocess.Popen([sys.executable, CXISIM, "run", path, "--out", str(out), "--quiet"], cwd=tmp_path,
                         env=dict(os.environ, CXISIM_BUILD=BUILD), stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert _wait_for(lambda: _engines_of(str(out))), "the engine did not start"
    p.send_signal(sig)  # to the front end only, as `kill` does (Ctrl-C would reach the engine as well)
    assert p.wait(timeout=60) == status, p.stderr.read()
    assert _wait_for(lambda: not _engines_of(str(out)), 10), "the engine outlived the front end"
    assert not out.exists(), sorted(str(q) for q in out.rglob("*"))


def test_sigterm_stops_a_sweep(tmp_path):
    path = write(tmp_path, "sw.yaml.j2", LONG + "sweep:\n  hold.pending: [100, 200]\n")
    out = tmp_path / "out"
    p = subprocess.Popen([sys.executable, CXISIM, "sweep", path, "--out", str(out), "-j", "2"], cwd=tmp_path,
                         env=dict(os.environ, CXISIM_BUILD=BUILD), stderr=subprocess.PIPE, text=True)
    assert _wait_for(lambda: len(_engines_of(str(out))) == 2), "the points did not start"
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=60) == 143, p.stderr.read()
    assert _wait_for(lambda: not _engines_of(str(out)), 10), "engines outlived the sweep"
    assert not out.exists(), sorted(str(q) for q in out.rglob("*"))


def test_a_bad_point_ends_the_sweep_at_once_and_leaves_nothing(tmp_path):
    """One point of a sweep is bad input (a value the engine refuses): the sweep exits 2 with the engine's
    message, stops the point still running (event_limit 2e9: minutes; it used to run to completion before the
    sweep reported), and leaves no output -- not even the empty scenario directory the points made."""
    path = write(tmp_path, "sw.yaml.j2", LONG + "sweep:\n  hold.mean_increment_ns: [100, -5]\n")
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, CXISIM, "sweep", path, "--out", str(out), "-j", "2"], cwd=tmp_path,
                       env=dict(os.environ, CXISIM_BUILD=BUILD), capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "field 'hold.mean_increment_ns'" in p.stderr, p.stderr
    assert _wait_for(lambda: not _engines_of(str(out)), 10), "an engine outlived the sweep"
    assert not out.exists(), sorted(str(q) for q in out.rglob("*"))


def test_sigterm_while_submitting_stops_the_started_points(tmp_path, monkeypatch):
    """The race behind a sweep that outlived SIGTERM on a loaded host: point 1's worker started its engine
    while the main thread was still submitting point 2, and the signal landed there.  Driven here on
    purpose: the second submit raises Terminated (what the SIGTERM handler raises) once the first engine
    runs.  The sweep must stop that engine and return at once; before the fix the pool's exit waited for
    the engine's whole run (event_limit 2e9: minutes), so this test fails by its timeout."""
    import concurrent.futures
    import threading
    from cxisim import Terminated
    from cxisim.sweep import Sweep
    import cxisim.run as runmod
    monkeypatch.setenv("CXISIM_BUILD", BUILD)
    monkeypatch.setattr(runmod, "_stopping", False)
    path = write(tmp_path, "sw.yaml.j2", LONG + "sweep:\n  hold.pending: [100, 200]\n")
    out = tmp_path / "out"
    sw = Sweep(path, out=str(out))
    real_submit = concurrent.futures.ThreadPoolExecutor.submit
    calls = []

    def submit(self, fn, *a, **kw):
        calls.append(1)
        if len(calls) == 2:
            assert _wait_for(lambda: len(_engines_of(str(out))) == 1), "point 1 did not start"
            raise Terminated()
        return real_submit(self, fn, *a, **kw)

    monkeypatch.setattr(concurrent.futures.ThreadPoolExecutor, "submit", submit)
    result = {}

    def run():
        try:
            sw.run(jobs=2, log=None)
        except BaseException as e:  # noqa: B902 -- Terminated is what must come out
            result["exc"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    try:
        assert not t.is_alive(), "the sweep waited for its running engine after Terminated"
        assert isinstance(result.get("exc"), Terminated), result
        assert _wait_for(lambda: not _engines_of(str(out)), 10), "engines outlived the sweep"
    finally:
        runmod.stop_engines()


# ---- 15, 16: the engine's own input

def _engine(engine, *args, **kw):
    return subprocess.run([engine, *args], capture_output=True, text=True, timeout=60, **kw)


def test_engine_config_dev_zero(engine, tmp_path):
    p = _engine(engine, "--config", "/dev/zero", "--out", str(tmp_path))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "NUL byte" in p.stderr, p.stderr


def test_engine_config_size_cap(engine, tmp_path):
    yes = subprocess.Popen(["yes", "    "], stdout=subprocess.PIPE)
    try:
        p = _engine(engine, "--config", "/dev/stdin", "--out", str(tmp_path), stdin=yes.stdout)
    finally:
        yes.kill()
        yes.wait()
    assert p.returncode == 2 and "larger than 64 MiB" in p.stderr, p.stderr


def test_engine_out_checked_before_running(engine, tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"engine": {"event_limit": 2000000000}, "hold": {"pending": 1000}}))
    p = _engine(engine, "--config", str(cfg), "--out", str(tmp_path / "missing" / "dir"))  # would run minutes
    assert p.returncode == 2 and "--out" in p.stderr and "No such file or directory" in p.stderr, p.stderr
    p = _engine(engine, "--config", str(cfg), "--out", str(cfg))
    assert p.returncode == 2 and "Not a directory" in p.stderr, p.stderr


def test_run_out_that_cannot_be_created(cxisim, tmp_path):
    path = write(tmp_path, "o.yaml.j2", SHORT)
    (tmp_path / "afile").write_text("")
    proc = cxisim("run", path, "--out", "afile/out")
    assert proc.returncode == 2 and "--out afile/out" in proc.stderr and len(proc.stderr.splitlines()) == 1


@pytest.mark.parametrize("text,needles", [
    ('{"seed": 18446744073709551616}', ["field 'seed'", "out of range [0, 18446744073709551615]"]),
    ('{"seed": 18446744073709551615, "x": 1}', ["field 'x'", "unknown field"]),
    ('{"name": "a\\u0000b"}', ["field 'name'", "NUL"]),
    ('{"name": "a\\"b"}', ["field 'name'", "not a valid name"]),
    ('{"hold": {"a\\nb": 1}}', ["field 'hold.a\\x0ab'", "unknown field"]),
    ('{"a": ' + "[" * 40 + "]" * 40 + "}", ["line 1", "nested more than 32"]),
    ('{"a": 1} {"b": 2}', ["cannot read config", "line 1"]),
    ('{"a": "\xff"}', ["cannot read config", "utf-8"]),
    ('{"engine": {"time_limit_us": NaN}}', ["field 'engine.time_limit_us'", "value nan out of range"]),
    ('{"a": 1,}', ["cannot read config"]),
    ('{"a": \n', ["cannot read config", "line 2", "unexpected end"]),
], ids=lambda v: v[:30] if isinstance(v, str) else "")
def test_engine_config_rules(engine, tmp_path, text, needles):
    cfg = tmp_path / "c.json"
    cfg.write_bytes(text.encode("latin-1"))
    out = tmp_path / "o"
    out.mkdir()
    p = _engine(engine, "--config", str(cfg), "--out", str(out), "--source", "mine.yaml.j2")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("mine.yaml.j2: "), p.stderr
    for n in needles:
        assert n in p.stderr, p.stderr
    assert os.listdir(out) == []


def test_argparse_errors_are_one_line(cxisim):
    proc = cxisim("run", "--nope")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_declaration_kinds():
    from cxisim import variables
    decl = variables.declared("k.yaml.j2", "{#- variables: x\n    n: int 1..10\n    f: number 0..1\n    b: bool\n"
                              "    w: word\n    p: path\n    c: one of a, b\n    l: list of int 0..9\n#}\n")
    ok = {"n": (1e1, 10), "f": (0.5, 0.5), "b": (False, False), "w": ("multi_recv", "multi_recv"),
          "p": ("/tmp/x/rpc.cxcap", "/tmp/x/rpc.cxcap"), "c": ("b", "b"), "l": ([0, 9.0], [0, 9])}
    for k, (given, expected) in ok.items():
        got = decl[k].check(given)
        assert got == expected and type(got) is type(expected), (k, got)
    bad = {"n": [0, 11, 1.5, True, "3", None], "f": [1.01, float("nan"), "x", False], "b": [1, "true"],
           "w": ["a b", "a: b", "", 3, "x" * 256], "p": ["a b", "a:b", "#x", ""], "c": ["c", 1],
           "l": [3, [10], ["a"], [1] * 5000]}
    for k, values in bad.items():
        for v in values:
            with pytest.raises(ValueError):
                decl[k].check(v)


# ---- 11, 16 for `cxisim exec` and the daemon: the same seed rule, outputs checked before anything runs

DAEMON = os.path.join(REPO, BUILD, "bin", "cxisimd")


@pytest.mark.parametrize("seed", ["18446744073709551616", "1e23", "-1", "abc"])
def test_exec_seed_rule(cxisim, tmp_path, seed):
    proc = cxisim("exec", "--seed", seed, "--", "touch", "ran")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and f"--seed {seed}" in proc.stderr, \
        proc.stderr
    assert not (tmp_path / "ran").exists()  # refused before the daemon or the command started


def test_exec_largest_seed(cxisim, tmp_path):
    proc = cxisim("exec", "--seed", "18446744073709551615", "--out", "o", "--", "true")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "o" / "metrics.json").read_text())["seed"] == 18446744073709551615


def test_exec_out_checked_before_running(cxisim, tmp_path):
    (tmp_path / "afile").write_text("")
    proc = cxisim("exec", "--out", "afile/out", "--", "touch", "ran")
    assert proc.returncode == 2 and "--out afile/out" in proc.stderr and len(proc.stderr.splitlines()) == 1, \
        proc.stderr
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("args,needle", [
    (["--set", "nodes=0"], "template variable 'nodes'"),
    (["--daemon-log", "nodir/d.log"], "--daemon-log nodir/d.log: No such file or directory"),
    (["--", "./no-such-command"], "./no-such-command: command not found"),
])
def test_exec_bad_input_leaves_no_output(cxisim, tmp_path, args, needle):
    """Bad input found before or when the command starts (a bad scenario field, an unusable --daemon-log, a
    command that does not exist): exit 2, the message names the culprit, and --out holds nothing -- neither
    the directories it would have made nor a scenario.json or the daemon's metrics (before, a missing command
    left a whole run directory behind with exit 2, and an unusable --daemon-log exited 1 leaving
    out/scenario.json)."""
    cmd = ["exec", "--out", "a/b/out", *args]
    proc = cxisim(*(cmd if "--" in args else cmd + ["--", "true"]))
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert not (tmp_path / "a").exists(), list((tmp_path / "a").rglob("*"))


def test_exec_out_is_written_whole_or_not_at_all(cxisim, tmp_path):
    """The daemon writes into a staging directory that is moved into --out at the end: a run into an existing
    directory replaces an earlier run's files and leaves no staging directory; the command's own failure
    (exit 1) still gives a run directory (the emulation itself ended well); a bad --set afterwards leaves the
    earlier run's files as they were."""
    out = tmp_path / "o"
    assert cxisim("exec", "--seed", "7", "--out", "o", "--", "true").returncode == 0
    assert cxisim("exec", "--seed", "8", "--out", "o", "--", "false").returncode == 1
    names = sorted(p.name for p in out.iterdir())
    assert names == ["metrics.json", "run.json", "scenario.json", "telemetry.csv", "timeseries.csv"], names
    assert json.loads((out / "metrics.json").read_text())["seed"] == 8
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert cxisim("exec", "--seed", "9", "--out", "o", "--set", "nodes=0", "--", "true").returncode == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("args,needles", [
    (["--out", "missing/dir"], ["cxisimd: --out missing/dir", "No such file or directory"]),
    (["--out", "afile"], ["cxisimd: --out afile", "Not a directory"]),
    (["--linger", "abc"], ["--linger", "'abc' is not a number of seconds"]),
    (["--linger", "nan"], ["--linger", "'nan' is not a number of seconds"]),
    (["--capture-max-payload", "-1"], ["--capture-max-payload", "not a non-negative integer"]),
    (["--capture-max-image", "99999999999999999999"], ["--capture-max-image", "out of range"]),
])
def test_daemon_options_checked_before_serving(tmp_path, args, needles):
    (tmp_path / "afile").write_text("")
    sock = tmp_path / "d.sock"
    p = subprocess.run([DAEMON, "--socket", str(sock), *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    for n in needles:
        assert n in p.stderr, p.stderr
    assert not sock.exists()  # it never listened


def test_directories_made_are_removed_even_when_a_parallel_point_removed_one(tmp_path):
    """Two sweep points race to make out/NAME: one may record only out/NAME as its own, remove it, and leave
    out empty; the sweep's own cleanup then met out/NAME gone and stopped there, leaving out behind (seen
    once in test_sigterm_stops_a_sweep).  A directory already gone is passed over, not the end."""
    import cxisim.run as runmod
    out = tmp_path / "out"
    created = runmod.missing_dirs(str(out / "long"))
    out.mkdir()
    runmod.remove_created(created)
    assert not out.exists()
