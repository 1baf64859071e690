"""README "Your own server, start to plot": run the README's command block as written, with only the sizes
reduced (each substitution below must hit, so an edit of the README that this test no longer matches fails
it), in a scratch directory that sees the repository's cxisim, build and scenarios, and check what the
README promises: the capture, the one-point run, the matrix (answered exactly once), the modelled point and
curves, and one figure holding the real server's lines next to the modelled ones."""
import json
import os
import re
import subprocess

from provider_helpers import BUILD_DIR, PRELOAD, REPO, base_env

README = os.path.join(REPO, "README.md")

# (README text, reduced text): the 16-point matrix at 53,248 clients and the 20-point Fig 5 sweep take
# minutes; the test runs 2 x 2 x 1 points at 40 and 80 clients on one crossbar, and 2 modelled points.
REDUCE = [
    ("--set clients=1024 \\\n    --set measure_us=10000",
     "--set clients=48 --set topology=direct \\\n    --set measure_us=200"),
    ("./cxisim sweep scenarios/replay-rpc-rate.yaml.j2 --set capture=my.cxcap --set measure_us=10000",
     "./cxisim sweep scenarios/replay-rpc-rate.yaml.j2 --set capture=my.cxcap --set measure_us=200 "
     "--set topology=direct --vary clients=40,80 --vary match=hybrid"),
    ("./cxisim run scenarios/fig5-rpc-rate.yaml.j2 --set clients=1024",
     "./cxisim run scenarios/fig5-rpc-rate.yaml.j2 --set clients=104"),
    ("./cxisim sweep scenarios/fig5-rpc-rate.yaml.j2\n",
     "./cxisim sweep scenarios/fig5-rpc-rate.yaml.j2 --vary clients=104 --jobs 1\n"),
]


def readme_block():
    text = open(README, encoding="utf-8").read()
    m = re.search(r"<!-- BEGIN readme-replay -->\n```sh\n(.*?)```\n<!-- END readme-replay -->", text, re.S)
    assert m, "README.md: the readme-replay block is gone"
    return m.group(1)


def test_readme_replay_section_runs_as_written(tmp_path):
    block = readme_block()
    for old, new in REDUCE:
        assert old in block, f"README block no longer contains {old!r}: update REDUCE"
        block = block.replace(old, new)
    for name, target in (("cxisim", os.path.join(REPO, "cxisim")), ("build", BUILD_DIR),
                         ("scenarios", os.path.join(REPO, "scenarios"))):
        os.symlink(target, tmp_path / name)
    env = base_env()
    if PRELOAD:
        # Sanitized build: its runtimes first in every process (the clock interposer comes after them);
        # sh and env are not ours, so no leak checks.
        env["LD_PRELOAD"] = PRELOAD
        env["ASAN_OPTIONS"] = "abort_on_error=1:detect_leaks=0"
    script = tmp_path / "readme.sh"
    script.write_text("set -ex\n" + block)
    r = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]

    # 1. The capture: 80 requests from two clients, shown as JSON.
    shown = json.loads((tmp_path / "my.cxcap.json").read_text())
    assert isinstance(shown, dict) and shown, shown
    assert r.stdout.count("errors 0, bulk bad 0") == 2, r.stdout
    # 2. The one point: every client met, nothing lost, a window after the first round.
    one = json.loads((tmp_path / "out" / "mine-1024" / "metrics.json").read_text())["replay"]
    assert one["processes"] == 48 and one["answered"] > 48 and one["duplicates"] == 0
    assert one["unanswered_at_end"] == 0 and one["window_from"] == "first_round"
    assert 0 < one["first_round_ps"] < one["window_start_ps"] and one["rpc_rate"] > 0
    # 3. The matrix: each point's real server met every client, each request answered exactly once.
    base = tmp_path / "out" / "replay-rpc-rate"
    points = sorted(p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert len(points) == 4, points
    for name in points:
        m = json.loads((base / name / "metrics.json").read_text())["replay"]
        out = (base / name / "command.out").read_text()
        assert f"from {m['processes']} clients" in out, out
        assert m["answered"] >= m["processes"] and m["duplicates"] == 0 and m["unanswered_at_end"] == 0
        assert m["rpc_rate"] > 0, (name, m)
    # 4./5. The modelled point and curve, and one figure with both kinds of line.
    assert list((tmp_path / "out" / "check" / "fig5-rpc-rate").glob("*/metrics.json"))
    assert len(list((tmp_path / "out" / "fig5-rpc-rate").glob("*/metrics.json"))) == 2
    svg = (tmp_path / "out" / "mine" / "rpc-rate.svg").read_text()
    assert (tmp_path / "out" / "mine" / "rpc-rate.png").stat().st_size > 0
    assert "replay-rpc-rate: real server, multi_recv=4" in svg and "multi_recv=0" in svg, svg[:2000]
    assert "fig5-rpc-rate" in svg
