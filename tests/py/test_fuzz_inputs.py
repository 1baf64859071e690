"""Seeded fuzz of the scenario front end (`cxisim run`) and of the engine's config input (`cxisim-engine`).

Every case must end with status 0, 1 or 2 and one line (the run directory on stdout, or the error on stderr),
without a traceback or a signal, write nothing outside its --out, and leave no partial run directory.  The
mutations are in tests/py/fuzz_mutator.py; a failure names the seed and the case index, which reproduce it.

The front-end cases run `cxisim run` in a forked copy of this process (the `cxisim` script is just
`sys.exit(cli.main())`; forking saves the interpreter start), and every 20th case through the real script;
two cases run at a time.
"""
import collections
import io
import json
import os
import random
import signal
import subprocess
import sys
import time
import traceback

from conftest import BUILD, CXISIM, REPO
from fuzz_mutator import ConfigMutator, ScenarioMutator
from workloads_common import SMALL

SEED = 20240610
FRONT_CASES = 120
ENGINE_CASES = 180
JOBS = 2  # cases run at once (the machine's cores)
CASE_TIMEOUT_S = 60  # a hang, not a slow case: the corpus runs stop after 5,000 events

LIMIT = "engine:\n  event_limit: 5000\n"

HOLD = """\
name: hold
seed: {{ seed | default(7) }}
engine:
  event_limit: {{ events | default(20000) }}
hold:
  pending: {{ pending | default(50) }}
  mean_increment_ns: {{ increment | default(100) }}
"""

LOADGEN = """\
name: loadgen
cxi:
  env:
    rx_match_mode: {{ mode | default("software") }}
fabric:
  topology: direct
  endpoints: 3
nic:
  le_pools:
    - pool: 0
      max_alloc: {{ max_alloc | default(10) }}
  timeseries_nics: [1]
nic_loadgen:
  senders: [0, 2]
  receiver: 1
  messages: {{ messages | default(50) }}
  prepost: 8
""" + LIMIT

FLOWS = """\
name: flows
seed: {{ seed | default(1) }}
fabric:
  topology: dragonfly
  preset: tiny
fabric_traffic:
  flows:
{%- for i in range(senders | default(4)) %}
    - {src: {{ i + 1 }}, dst: 0, bytes: {{ bytes | default(65536) }}, message_bytes: 8192, bulk: true}
{%- endfor %}
""" + LIMIT

SHIPPED = ["demo", "fig5-rpc-rate", "fig6-rnr-latency", "fig9-mr-methods", "fig10-bulk-bw", "fabric/long_flow",
           "fabric/incast", "fabric/pattern"]


def corpus():
    """(file name, template bytes, fixed argv) of every base scenario."""
    out = [("hold.yaml.j2", HOLD, []), ("small.yaml.j2", SMALL + LIMIT, []), ("loadgen.yaml.j2", LOADGEN, []),
           ("flows.yaml.j2", FLOWS, [])]
    for name in SHIPPED:
        with open(os.path.join(REPO, "scenarios", name + ".yaml.j2"), encoding="utf-8") as f:
            text = f.read()
        if "\nengine:" in text:
            out.append((os.path.basename(name) + ".yaml.j2", text, ["--set", "engine.event_limit=5000"]))
        else:
            out.append((os.path.basename(name) + ".yaml.j2", text.rstrip("\n") + "\n" + LIMIT, []))
    return [(n, t.encode(), a) for n, t, a in out]


RUN_FILES = {"scenario.json", "metrics.json", "telemetry.csv", "timeseries.csv", "run.json"}


def _tree(root):
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def _start_cli(argv, cwd, stdout, stderr, script):
    """Start `cxisim argv` in cwd, in its own process group: the real script (script=True) or cxisim's
    main(argv) in a forked child, as the script would run it.  Returns the pid."""
    pid = os.fork()
    if pid:
        return pid
    code = 1  # the child: never returns into pytest
    try:
        os.setpgid(0, 0)
        os.chdir(cwd)
        for fd, path in ((1, stdout), (2, stderr)):
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(f, fd)
            os.close(f)
        if script:
            os.environ["CXISIM_BUILD"] = BUILD
            os.execv(sys.executable, [sys.executable, CXISIM, *argv])
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from cxisim.cli import main
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
        code = 0 if code is None else code if isinstance(code, int) else 1
    except BaseException:  # what the interpreter does with an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def _run_all(starts, jobs):
    """Run the cases (callables starting one and returning its pid), `jobs` at a time; returns
    [(status or None, timed out, seconds)] in case order."""
    results, running, todo = [None] * len(starts), {}, list(enumerate(starts))
    while todo or running:
        while todo and len(running) < jobs:
            i, start = todo.pop(0)
            running[start()] = (i, time.monotonic())
        for pid, (i, t0) in list(running.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                results[i] = (os.waitstatus_to_exitcode(status), False, time.monotonic() - t0)
            elif time.monotonic() - t0 > CASE_TIMEOUT_S:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                results[i] = (None, True, time.monotonic() - t0)
            else:
                continue
            del running[pid]
        time.sleep(0.005)
    return results


def _lines(path):
    with open(path, "rb") as f:
        data = f.read()
    return data.decode("utf-8", "replace").splitlines()


CHAIN = ("a", "b", "c", "d", "e", "f")  # the case sits this deep, so that no `..` chain leaves its top unseen


def check_front_case(top, case, rc, timed_out, out_lines, err_lines):
    """The problems of one front-end case (empty: it held)."""
    bad = []
    if timed_out:
        return [f"no end within {CASE_TIMEOUT_S} s"]
    if rc not in (0, 1, 2):
        bad.append(f"status {rc}" + (" (signal)" if rc < 0 else ""))
    if any("Traceback" in line for line in err_lines):
        bad.append("traceback")
    # (a success may come with a model's warnings on stderr: a simulated process that met a fatal provider
    # condition, a measurement that is not stationary)
    if rc == 0 and len(out_lines) != 1:
        bad.append(f"success should print one line, got stdout {out_lines[:3]} stderr {err_lines[:3]}")
    if rc in (1, 2) and (len(err_lines) != 1 or out_lines):
        bad.append(f"failure should print one line, got stderr {err_lines[:4]}")
    chain = os.path.join(*CHAIN)
    allowed = {os.path.join(*CHAIN[:i + 1]) for i in range(len(CHAIN))}
    allowed |= {os.path.join(chain, "case", n) for n in ("", "scenario.yaml.j2", "stdout", "stderr", "out")}
    allowed.add(os.path.join(chain, "case"))
    outside = sorted(p for p in _tree(top) if p not in allowed and not p.startswith(os.path.join(chain, "case", "out", "")))
    if outside:
        bad.append(f"wrote outside --out: {outside[:3]}")
    out = os.path.join(case, "out")
    if rc != 0 and os.path.exists(out):
        bad.append(f"a failed run left {sorted(_tree(out))[:3]}")
    for d, dirs, files in os.walk(out):
        for n in dirs + files:
            if n.startswith("."):
                bad.append(f"hidden leftover {os.path.relpath(os.path.join(d, n), out)}")
        if files and set(files) != RUN_FILES:
            bad.append(f"partial run directory {os.path.relpath(d, out)}: {sorted(files)}")
    return bad


def _summary(kind, counts, failures, elapsed):
    dist = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items(), key=lambda kv: str(kv[0])))
    return f"{kind} fuzz: {sum(counts.values())} cases in {elapsed:.1f} s, ends {{{dist}}}, {len(failures)} failed"


def test_fuzz_scenarios_through_cxisim_run(tmp_path, engine):
    import cxisim.cli
    cxisim.cli.build_parser()  # every command module imported once here, not in every forked case
    rng = random.Random(SEED)
    mut = ScenarioMutator(rng)
    base = corpus()
    cases, starts = [], []
    for i in range(FRONT_CASES):
        name, text, fixed = base[i % len(base)]
        data, args = mut.mutate(text)
        case = tmp_path.joinpath(f"c{i}", *CHAIN, "case")
        case.mkdir(parents=True)
        (case / "scenario.yaml.j2").write_bytes(data)
        argv = ["run", "scenario.yaml.j2", "--out", "out", "--quiet", *fixed, *args]
        cases.append((name, args, case))
        starts.append(lambda argv=argv, case=case, i=i: _start_cli(
            argv, str(case), str(case / "stdout"), str(case / "stderr"), script=i % 20 == 0))
    t0 = time.monotonic()
    results = _run_all(starts, JOBS)
    elapsed = time.monotonic() - t0
    counts, failures = collections.Counter(), []
    for i, ((name, args, case), (rc, timed_out, _)) in enumerate(zip(cases, results)):
        counts["timeout" if timed_out else rc] += 1
        out_lines, err_lines = _lines(case / "stdout"), _lines(case / "stderr")
        bad = check_front_case(tmp_path / f"c{i}", str(case), rc, timed_out, out_lines, err_lines)
        if bad:
            failures.append(f"case {i} ({name}, args {args}): {'; '.join(bad)}; stderr: {err_lines[-1:]}")
    summary = _summary("scenario", counts, failures, elapsed)
    print(summary)
    print("slowest:", sorted(((round(r[2], 2), i) for i, r in enumerate(results)), reverse=True)[:8])
    assert not failures, summary + "\n" + "\n".join(failures[:40])


def engine_corpus():
    """Resolved configs (dicts) the engine fuzz starts from: the front end's own output for the corpus."""
    from cxisim import scenario as scn
    import tempfile
    out = []
    with tempfile.TemporaryDirectory() as d:
        for name, text, fixed in corpus()[:6]:
            p = os.path.join(d, name)
            with open(p, "wb") as f:
                f.write(text)
            sets = scn.parse_sets([fixed[1]]) if fixed else {}
            out.append(scn.resolved(scn.render(p, sets)))
    return out


def _engine_case(engine, case, data):
    (case / "out").mkdir(parents=True)
    (case / "scenario.json").write_bytes(data)
    try:
        p = subprocess.run([engine, "--config", str(case / "scenario.json"), "--out", str(case / "out"),
                            "--source", "fuzz.yaml.j2", "--quiet"], capture_output=True, timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, True, []
    return p.returncode, False, p.stderr.decode("utf-8", "replace").splitlines()


def check_engine_case(case, rc, timed_out, err):
    if timed_out:
        return [f"no end within {CASE_TIMEOUT_S} s"]
    bad = []
    if rc not in (0, 1, 2):
        bad.append(f"status {rc}" + (" (signal)" if rc < 0 else ""))
    if rc == 0 and any("Sanitizer" in e or "runtime error" in e for e in err):  # (warnings may come)
        bad.append(f"success printed {err[:3]}")
    if rc != 0 and len(err) != 1:
        bad.append(f"failure should print one line, got {err[:4]}")
    files = set(os.listdir(case / "out"))
    if rc != 0 and files:
        bad.append(f"a failed run left {sorted(files)}")
    if rc == 0 and files - RUN_FILES:
        bad.append(f"unexpected outputs {sorted(files - RUN_FILES)}")
    if set(os.listdir(case)) != {"scenario.json", "out"}:
        bad.append(f"wrote outside --out: {sorted(set(os.listdir(case)) - {'scenario.json', 'out'})}")
    if rc == 0:
        with open(case / "out" / "metrics.json", "rb") as f:
            try:
                json.loads(f.read())
            except ValueError as e:
                bad.append(f"metrics.json is not JSON: {e}")
    return bad


def test_fuzz_configs_through_engine(tmp_path, engine):
    import concurrent.futures
    rng = random.Random(SEED + 1)
    mut = ConfigMutator(rng)
    base = engine_corpus()
    data = [mut.mutate(base[i % len(base)]) for i in range(ENGINE_CASES)]
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        results = list(ex.map(lambda i: _engine_case(engine, tmp_path / f"e{i}", data[i]), range(ENGINE_CASES)))
    elapsed = time.monotonic() - t0
    counts, failures = collections.Counter(), []
    for i, (rc, timed_out, err) in enumerate(results):
        counts["timeout" if timed_out else rc] += 1
        bad = check_engine_case(tmp_path / f"e{i}", rc, timed_out, err)
        if bad:
            failures.append(f"case {i}: {'; '.join(bad)}; stderr: {err[-1:]}")
    summary = _summary("engine config", counts, failures, elapsed)
    print(summary)
    assert not failures, summary + "\n" + "\n".join(failures[:40])
