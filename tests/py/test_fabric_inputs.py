"""Dragonfly scenarios through the front end: determinism of telemetry, impossible topologies rejected
with the parameter named and exit status 2, the Aurora preset's size."""
import filecmp
import os

from cxisim.counters import counters

PATTERN = "scenarios/fabric/pattern.yaml.j2"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def test_same_seed_same_telemetry_byte_for_byte(run_scenario):
    sets = {"duration_us": 20, "warmup_us": 5, "load": 0.7}
    a, ma = run_scenario(PATTERN, sets, seed=7, run="a")
    b, mb = run_scenario(PATTERN, sets, seed=7, run="b")
    c, _ = run_scenario(PATTERN, sets, seed=8, run="c")
    for name in ("telemetry.csv", "metrics.json", "timeseries.csv"):
        assert filecmp.cmp(os.path.join(a, name), os.path.join(b, name), shallow=False), name
    assert not filecmp.cmp(os.path.join(a, "telemetry.csv"), os.path.join(c, "telemetry.csv"), shallow=False)
    with open(os.path.join(a, "telemetry.csv")) as f:
        rows = f.read().splitlines()
    # per port and traffic class: bytes, packets, queue high-water, stall time (rows only where nonzero:
    # this load stalls nowhere; the incast test sees stalls); per route kind: counts
    assert any(r.startswith("fabric.sw.") and ".tc.0.tx_bytes," in r for r in rows)
    assert any(r.startswith("fabric.ep.") and ".tc.0.tx_bytes," in r for r in rows)
    assert not any(r.endswith(",counter,0") for r in rows), "zero counters are not written"
    assert "fabric.route.minimal_pkts,counter," + str(counters(ma)["fabric.route.minimal_pkts"]) in rows
    assert counters(ma)["fabric.switch_traversals"] > 0


def bad(cxisim, tmp_path, sets, *needles):
    args = ["run", os.path.join(REPO, PATTERN), "--out", "out"]
    for k, v in sets.items():
        args += ["--set", f"{k}={v}"]
    proc = cxisim(*args)
    assert proc.returncode == 2, proc.stderr
    msg = proc.stderr.strip()
    assert len(msg.splitlines()) == 1, msg
    assert "pattern.yaml.j2" in msg
    for n in needles:
        assert n in msg, f"{n!r} not in {msg!r}"
    assert not (tmp_path / "out").exists()


def test_impossible_topologies_exit_2_naming_the_parameter(cxisim, tmp_path):
    bad(cxisim, tmp_path, {"fabric.groups": 0}, "field 'fabric.groups'")
    bad(cxisim, tmp_path, {"fabric.global_links_per_pair": 3}, "field 'fabric.global_links_per_pair'",
        "need 24 global ports per group")
    bad(cxisim, tmp_path, {"fabric.endpoints_per_switch": 60}, "field 'fabric.global_ports_per_switch'",
        "but has only 64")
    bad(cxisim, tmp_path, {"fabric.subset_groups": 12}, "field 'fabric.subset_groups'", "machine with 9")
    bad(cxisim, tmp_path, {"fabric.cc_scope": "everywhere"}, "field 'fabric.cc_scope'", "endpoint, fabric")
    bad(cxisim, tmp_path, {"fabric_traffic.endpoints": 1}, "field 'fabric_traffic.endpoints'")


def test_aurora_preset(run_scenario):
    _, m = run_scenario("name: aurora\nfabric:\n  topology: dragonfly\n  preset: aurora\n")
    f = m["fabric"]
    assert (f["groups"], f["switches"], f["endpoints"]) == (175, 5600, 89600)
    assert (f["switches_per_group"], f["endpoints_per_switch"], f["global_links_per_pair"]) == (32, 16, 2)
    assert f["switches_touched"] == 0 and f["ports_touched"] == 0, "no state before traffic"
