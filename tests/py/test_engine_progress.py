"""The engine's progress record (--progress-file) and the interleaved speed ratio of `make bench-scale`
(tests/bench/speed_ratio.py), which reads it: both leave every output as it is."""
import filecmp
import json
import os
import struct
import subprocess
import sys


def _progress_record(path):
    with open(path, "rb") as f:
        return struct.unpack("<4Q", f.read(32))


def test_progress_file_counts_the_run_and_changes_no_output(engine, tmp_path):
    """--progress-file (tests/bench/speed_ratio.py reads it): at the end the record holds the run's event count
    and virtual time with the phase 'done', and every output equals a run without it."""
    cfg = tmp_path / "s.json"
    cfg.write_text('{"seed": 3, "engine": {"event_limit": 300001}, "hold": {"pending": 700}}')
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    subprocess.run([engine, "--config", str(cfg), "--out", str(tmp_path / "a"), "--quiet"], check=True)
    prog = tmp_path / "progress.bin"
    subprocess.run([engine, "--config", str(cfg), "--out", str(tmp_path / "b"), "--quiet",
                    "--progress-file", str(prog)], check=True)
    for name in ("metrics.json", "telemetry.csv", "timeseries.csv"):
        assert filecmp.cmp(tmp_path / "a" / name, tmp_path / "b" / name, shallow=False), name
    with open(tmp_path / "b" / "metrics.json", encoding="utf-8") as f:
        m = json.load(f)
    magic, events, now_ps, phase = _progress_record(prog)
    assert magic == 0x31474F5250584343
    assert (events, now_ps, phase) == (m["engine"]["events_processed"], m["engine"]["virtual_time_ps"], 2)
    assert events == 300001
    # a file that cannot be made is bad input: one message, status 2
    bad = subprocess.run([engine, "--config", str(cfg), "--out", str(tmp_path / "a"), "--quiet",
                          "--progress-file", str(tmp_path / "no" / "such" / "dir")], capture_output=True, text=True)
    assert bad.returncode == 2 and "--progress-file" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_interleaved_ratio_runs_both_and_keeps_the_large_runs_outputs(run_scenario, tmp_path):
    """tests/bench/speed_ratio.py (bench-scale's ratios): the two runs alternate, the small one restarted when
    it ends first, and the large run's metrics.json is that of a plain run (no assertion on any speed)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
    import speed_ratio
    fig4 = "scenarios/fig4-multithread.yaml.j2"
    large = {"clients": 1664, "nodes": 1, "strategy": "multi_recv", "warmup_us": 300, "measure_us": 1500}
    small = {"clients": 104, "nodes": 1, "strategy": "multi_recv", "warmup_us": 100, "measure_us": 1000}
    r = speed_ratio.ratio(os.path.join(speed_ratio.REPO, fig4), large, small, slice_s=0.05, out=str(tmp_path))
    assert r["pairs"] >= 1 and r["median"] > 0 and r["lo"] <= r["median"] <= r["hi"]
    assert r["run_ratio"] > 0 and 0 < r["run_lo"] <= r["run_hi"]
    assert r["large_cpu_total_s"] > 0
    _, plain = run_scenario(fig4, large)
    with open(os.path.join(r["large_dir"], "metrics.json"), encoding="utf-8") as f:
        assert json.load(f) == plain
