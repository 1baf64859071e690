"""Endpoint congestion control: an incast of 32 senders into one endpoint, and a victim flow to another
endpoint of the same switch that shares the senders' source switch and path."""
import pytest
from cxisim.counters import counters, telemetry_counters

LINK_PAYLOAD_GBPS = 200 * 2048 / (2048 + 64)
INCAST = "scenarios/fabric/incast.yaml.j2"


def victim(m):
    return m["fabric_traffic"]["flows"][-1]


def run_victim_alone(run_scenario, cc):
    _, m = run_scenario(INCAST, {"senders": 0, "fabric.congestion_control": cc})
    return victim(m)["gbps"]


def test_victim_collapses_without_congestion_control(run_scenario):
    alone = run_victim_alone(run_scenario, False)
    assert alone == pytest.approx(LINK_PAYLOAD_GBPS, rel=0.01)
    rundir, m = run_scenario(INCAST, {"fabric.congestion_control": False})
    v = victim(m)
    assert v["delivered_bytes"] == v["bytes"]
    # tree saturation: the hot endpoint's packets fill the shared input buffers along the victim's path
    assert v["gbps"] < 0.2 * alone, (v["gbps"], alone)
    assert counters(m)["fabric.cc.throttle_feedback"] == 0
    hwm = telemetry_counters(rundir)["fabric.sw.0.port.0.tc.0.queue_hwm_bytes"]
    assert hwm > 512 * 1024, "the hot endpoint's queue fills its switch"
    assert counters(m).family("fabric.sw.*.port.*.tc.*.queue_hwm_bytes")["max"] >= hwm
    # the saturated tree holds packets for want of credits (link free, no credit)
    assert counters(m).family("fabric.sw.*.port.*.tc.*.stall_ps")["nonzero"] > 0


def test_victim_keeps_its_throughput_with_congestion_control(run_scenario):
    alone = run_victim_alone(run_scenario, True)
    assert alone == pytest.approx(LINK_PAYLOAD_GBPS, rel=0.01)
    _, m = run_scenario(INCAST)
    v = victim(m)
    assert v["gbps"] >= 0.8 * alone, (v["gbps"], alone)
    inc = [f["gbps"] for f in m["fabric_traffic"]["flows"][:-1]]
    assert len(inc) == 32
    # the sources that feed the hot endpoint were held back, each to a fair share of its link
    assert counters(m)["fabric.cc.throttle_feedback"] > 1000
    for g in inc:
        assert g == pytest.approx(LINK_PAYLOAD_GBPS / 32, rel=0.05)
