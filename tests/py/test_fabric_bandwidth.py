"""Dragonfly bandwidth: one long flow at link rate, max-min shares into one endpoint, coarse bulk mode vs
packet level."""
import pytest
from cxisim.counters import counters

LINK_PAYLOAD_GBPS = 200 * 2048 / (2048 + 64)  # 193.94: link rate x mtu / (mtu + header)


def flows(metrics):
    return metrics["fabric_traffic"]["flows"]


def test_long_flow_reaches_payload_rate(run_scenario):
    _, m = run_scenario("scenarios/fabric/long_flow.yaml.j2")
    f = flows(m)[0]
    assert f["delivered_bytes"] == f["bytes"] == 64 << 20
    assert f["gbps"] == pytest.approx(LINK_PAYLOAD_GBPS, rel=0.01)
    assert f["gbps"] < LINK_PAYLOAD_GBPS, "headers must cost bandwidth"
    c = counters(m)
    assert c["fabric.pkts_delivered"] == 32768 and c["fabric.route.nonminimal_pkts"] == 0


@pytest.mark.parametrize("arbitration", ["age", "round_robin"])
def test_flows_into_one_endpoint_get_max_min_shares(run_scenario, arbitration):
    _, m = run_scenario("scenarios/fabric/fair_share.yaml.j2", {"fabric.arbitration": arbitration})
    g = [f["window_gbps"] for f in flows(m)]
    small = LINK_PAYLOAD_GBPS / 10  # endpoint 70's link shared by its ten flows
    big = (LINK_PAYLOAD_GBPS - small) / 3  # the rest of endpoint 0's link
    assert g[0] == pytest.approx(small, rel=0.05)
    for x in g[1:4]:
        assert x == pytest.approx(big, rel=0.05)
    for x in g[4:]:
        assert x == pytest.approx(small, rel=0.05)
    # the endpoint's link is full: nothing lost to congestion control
    assert sum(g[:4]) == pytest.approx(LINK_PAYLOAD_GBPS, rel=0.02)


@pytest.mark.parametrize("routing", ["adaptive", "minimal"])
def test_coarse_bulk_mode_matches_packet_level(run_scenario, routing):
    _, pk = run_scenario("scenarios/fabric/bulk_modes.yaml.j2", {"fabric.routing": routing})
    _, ch = run_scenario("scenarios/fabric/bulk_modes.yaml.j2", {"fabric.routing": routing, "fabric.bulk_mode": "chunk"})
    for a, b in zip(flows(pk), flows(ch)):
        assert b["delivered_bytes"] == a["delivered_bytes"] == a["bytes"]
        assert b["gbps"] == pytest.approx(a["gbps"], rel=0.05), (a, b)
        assert b["end_ps"] == pytest.approx(a["end_ps"], rel=0.05), (a, b)
    # the point of the coarse mode: fewer events for the same transfers
    assert ch["engine"]["events_processed"] * 3 < pk["engine"]["events_processed"]



TC_SHARES = """\
name: tc-shares
engine: {time_limit_us: 300}
fabric:
  topology: dragonfly
  preset: small
  routing: minimal
  congestion_control: {{ cc | default(true) | lower }}
  tc_shares: [3, 1, 1, 1]
fabric_traffic:
  measure_start_us: 100
  measure_end_us: 300
  flows:
    - {src: 2, dst: 0, bytes: 67108864, message_bytes: 8192, bulk: true, tc: 0}
    - {src: 40, dst: 0, bytes: 67108864, message_bytes: 8192, bulk: true, tc: 1}
    - {src: 41, dst: 1, bytes: 67108864, message_bytes: 8192, bulk: true, tc: {{ third_tc | default(2) }}}
"""


@pytest.mark.parametrize("cc", [True, False])
def test_traffic_classes_share_links_and_own_their_buffers(run_scenario, cc):
    # Two classes into endpoint 0: its link goes 3:1 to class 0 and class 1 (tc_shares [3, 1, ...]).  A
    # third flow, from the class-1 sender's switch to the neighbouring endpoint over the same global link,
    # is in class 2: whatever class 1 does, it gets the rest of that global link.
    _, m = run_scenario(TC_SHARES, {"cc": cc})
    g = [f["window_gbps"] for f in flows(m)]
    assert g[0] == pytest.approx(0.75 * LINK_PAYLOAD_GBPS, rel=0.05)
    assert g[1] == pytest.approx(0.25 * LINK_PAYLOAD_GBPS, rel=0.05)
    assert g[2] == pytest.approx(0.75 * LINK_PAYLOAD_GBPS, rel=0.05)


def test_one_class_saturates_only_its_own_buffers(run_scenario):
    # The same third flow in class 1, without congestion control: the class-1 backlog for endpoint 0
    # fills class 1's buffers along the shared path (head-of-line blocking), and the flow collapses.
    _, m = run_scenario(TC_SHARES, {"cc": False, "third_tc": 1})
    g = [f["window_gbps"] for f in flows(m)]
    assert g[2] < 0.35 * LINK_PAYLOAD_GBPS
