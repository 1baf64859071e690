"""Dragonfly bandwidth: one long flow at link rate, max-min shares into one endpoint, coarse bulk mode vs
packet level."""
import pytest

LINK_PAYLOAD_GBPS = 200 * 2048 / (2048 + 64)  # 193.94: link rate x mtu / (mtu + header)


def flows(metrics):
    return metrics["fabric_traffic"]["flows"]


def test_long_flow_reaches_payload_rate(run_scenario):
    _, m = run_scenario("scenarios/fabric/long_flow.yaml.j2")
    f = flows(m)[0]
    assert f["delivered_bytes"] == f["bytes"] == 64 << 20
    assert f["gbps"] == pytest.approx(LINK_PAYLOAD_GBPS, rel=0.01)
    assert f["gbps"] < LINK_PAYLOAD_GBPS, "headers must cost bandwidth"
    c = m["stats"]["counters"]
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
