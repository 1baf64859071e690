"""Virtual time (docs/provider.md "Time"): threads blocked every way the provider offers, in two processes,
are woken at the right virtual time (no deadlock, every message delivered); the stall rule keeps a process
that neither calls the provider nor blocks in it from stopping the others; commands are never late
(causality lag 0); a process that expects the other time mode is refused; `cxisim exec --out` writes a run
directory like `cxisim run` with real wall time and event rate."""
import json
import os
import re

import pytest

from provider_helpers import pingpong_pair, cxisim_exec, emulation_counters, prog


def run_json(rundir):
    with open(os.path.join(str(rundir), "run.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("time_mode", ["virtual", "realtime"])
def test_threads_blocked_every_way(tmp_path, time_mode):
    """Four threads per process in fi_cq_sread, fi_cntr_wait, poll and epoll_wait on the CQ's fd."""
    r = cxisim_exec([prog("prov_vtime_threads")], out=tmp_path / "run", time_mode=time_mode, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "PASSED prov_vtime_threads" in out and "FAIL" not in out, out
    assert len(re.findall(r"messages delivered intact", out)) == 8, out
    c = emulation_counters(tmp_path / "run")
    assert c["commands"] == 2 * 4 * 40 * 2, "every send and receive reached the NIC"
    if time_mode == "virtual":
        assert c.get("causality_lag_ps", 0) == 0 and c.get("causality_lag_count", 0) == 0, c
        assert c["wakes"] > 0, "idle threads were woken by their completions"


@pytest.mark.parametrize("how", ["pipe", "compute"])
@pytest.mark.parametrize("cpu_scale", [1, 0])
def test_stall_rule(tmp_path, how, cpu_scale):
    """A process that holds virtual time without entering the provider does not stop two others: blocked in
    a pipe read it is treated as idle; computing, its CPU time advances its clock (cpu_scale > 0) or it is
    treated as idle (cpu_scale 0).  Bounded: each episode costs at most stall_timeout_us of wall time."""
    r = cxisim_exec([prog("prov_vtime_stall"), how], out=tmp_path / "run", sets={"cpu_scale": cpu_scale},
                    timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "PASSED prov_vtime_stall" in out and "FAIL" not in out, out
    c = emulation_counters(tmp_path / "run")
    if how == "compute" and cpu_scale:
        assert c.get("extrapolations", 0) >= 1, c
    else:
        assert c.get("stalls", 0) >= 1, c
    assert c.get("causality_lag_ps", 0) == 0 and c.get("causality_lag_count", 0) == 0, c


def test_causality_lag_zero_fi_pingpong(tmp_path):
    """fi_pingpong under virtual time: no command ever reaches the daemon after its virtual time."""
    cmd = ["bash", "-c", pingpong_pair("-p cxi -e rdm -I 200 -S 8", "-p cxi -e rdm -I 200 -S 8")]
    r = cxisim_exec(cmd, out=tmp_path / "run", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    c = emulation_counters(tmp_path / "run")
    assert c["commands"] >= 400
    assert c.get("causality_lag_ps", 0) == 0 and c.get("causality_lag_count", 0) == 0, c


def test_realtime_counts_lag(tmp_path):
    """Realtime mode reports the same statistic (the engine runs ahead of the wall clock by design)."""
    cmd = ["bash", "-c", pingpong_pair("-p cxi -e rdm -I 200 -S 8", "-p cxi -e rdm -I 200 -S 8")]
    r = cxisim_exec(cmd, out=tmp_path / "run", time_mode="realtime", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    c = emulation_counters(tmp_path / "run")
    assert c["causality_lag_count"] > 0 and c["causality_lag_ps"] > 0, c


@pytest.mark.parametrize("daemon_mode,process_mode", [("virtual", "realtime"), ("realtime", "virtual")])
def test_mixed_time_modes_refused(tmp_path, daemon_mode, process_mode):
    log = tmp_path / "d.log"
    r = cxisim_exec(["env", f"CXISIM_TIME={process_mode}", "fi_info", "-p", "cxi"], time_mode=daemon_mode,
                    daemon_log=log)
    assert r.returncode != 0 and "provider: cxi" not in r.stdout, r.stdout
    assert "refused" in log.read_text()
    ok = cxisim_exec(["env", f"CXISIM_TIME={daemon_mode}", "fi_info", "-p", "cxi"], time_mode=daemon_mode)
    assert ok.returncode == 0 and "provider: cxi" in ok.stdout


@pytest.mark.parametrize("time_mode", ["virtual", "realtime"])
def test_exec_run_directory(tmp_path, time_mode):
    """Like `cxisim run`: scenario.json, metrics.json, telemetry.csv, run.json (issue 10: wall time and
    event rate were written as 0)."""
    rundir = tmp_path / "run"
    r = cxisim_exec([prog("prov_vtime_threads")], out=rundir, time_mode=time_mode)
    assert r.returncode == 0, r.stdout + r.stderr
    for f in ("scenario.json", "metrics.json", "telemetry.csv", "run.json"):
        assert (rundir / f).stat().st_size > 0, f
    sc = json.loads((rundir / "scenario.json").read_text())
    assert sc["emulation"]["time_mode"] == time_mode
    run = run_json(rundir)
    assert run["wall_time_s"] > 0 and run["events_per_s"] > 0, run
    m = json.loads((rundir / "metrics.json").read_text())
    assert m["engine"]["virtual_time_ps"] > 0
