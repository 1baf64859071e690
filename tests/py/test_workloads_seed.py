"""Seed 000 validations at reduced scale (full scale: `make bench`, tests/bench/bench_workloads.py).

Only rpc_server.service_ns is calibrated (on the Fig 5 multi-recv single-thread rate, 1.3 M ops/s); every
band below is a validation that must come out of the mechanism (docs/workloads.md).  They also guard the
policies: a change that loses messages or halves the multi-recv rate fails here.
"""
import pytest

from cxisim import seed000


def band(name, v):
    lo, hi = seed000.BANDS[name]
    assert (lo is None or v >= lo) and (hi is None or v <= hi), f"{name}: {v:g} outside [{lo}, {hi}]"


def quick(clients, in_flight=1, per_us=1.0):
    """A short window (one round of the clients' windows at per_us RPCs per us, after two): enough for the
    bands, not for a steady-state estimate (the scenarios' defaults are; `make bench` runs them)."""
    rnd = clients * in_flight / per_us
    return {"warmup_us": round(200 + 2 * rnd, 1), "measure_us": round(max(1000, rnd), 1)}


def rate(m):
    assert m["rpc_client"]["lost"] == 0 and m["rpc_server"]["duplicates"] == 0
    return m["rpc_server"]["rpc_rate"]


@pytest.mark.parametrize("clients", [104, 1664])
def test_fig5_multi_recv_above_1M(run_scenario, clients):
    _, m = run_scenario("scenarios/fig5-rpc-rate.yaml.j2", {"clients": clients, "strategy": "multi_recv", **quick(clients)})
    band("fig5_multi_recv_min", rate(m))
    # and not above the calibration point by more than the scatter of a short window
    assert rate(m) < 1.45e6


def test_fig5_standard_and_multi_recv_at_6656(run_scenario):
    _, ms = run_scenario("scenarios/fig5-rpc-rate.yaml.j2", {"clients": 6656, "strategy": "standard", **quick(6656)})
    _, mm = run_scenario("scenarios/fig5-rpc-rate.yaml.j2", {"clients": 6656, "strategy": "multi_recv", **quick(6656)})
    band("fig5_standard_at_6656", rate(ms))
    band("fig5_multi_recv_min", rate(mm))
    # The mechanism behind it: 6,656 requests outstanding against 512 posted buffers, so most reposts are
    # completed from the hardware unexpected list (extra provider events and a copy out of the overflow
    # buffer), on top of the repost itself; multi-recv never reposts or copies at this load.
    s = ms["rpc_server"]
    assert s["unexpected_posts"] > 0.5 * s["requests"], s
    assert s["posted_high_water"] == 512
    assert mm["rpc_server"]["unexpected_posts"] == 0 and mm["rpc_server"]["multi_recv_copies"] == 0


@pytest.fixture(scope="module")
def fig4(tmp_path_factory):
    """Fig 4 peaks at reduced scale: 1,664 client processes x 4 in flight, 1 and 2 server nodes."""
    import json
    import os
    import subprocess
    import sys
    from conftest import CXISIM, REPO, BUILD
    out = tmp_path_factory.mktemp("fig4")
    res = {}
    for nodes in (1, 2):
        for strategy in ("standard", "multi_recv"):
            proc = subprocess.run([sys.executable, CXISIM, "run", os.path.join(REPO, "scenarios", "fig4-multithread.yaml.j2"),
                                   "--out", str(out), "--set", f"nodes={nodes}", "--set", f"strategy={strategy}",
                                   "--set", "clients=1664", "--set", "warmup_us=3000", "--set", "measure_us=2000"],
                                  capture_output=True, text=True,
                                  env=dict(os.environ, CXISIM_BUILD=BUILD))
            assert proc.returncode == 0, proc.stderr
            with open(os.path.join(proc.stdout.strip(), "metrics.json"), encoding="utf-8") as f:
                res[(nodes, strategy)] = json.load(f)
    return res


def test_fig4_two_nodes(fig4):
    band("fig4_multi_recv_2nodes_peak", rate(fig4[(2, "multi_recv")]))
    band("fig4_standard_2nodes_peak", rate(fig4[(2, "standard")]))


def test_fig4_two_nodes_double_one(fig4):
    for s in ("multi_recv", "standard"):
        band("fig4_scaling_2_over_1", rate(fig4[(2, s)]) / rate(fig4[(1, s)]))


def test_fig4_multi_recv_an_order_above_standard(fig4):
    assert rate(fig4[(2, "multi_recv")]) > 5 * rate(fig4[(2, "standard")])


def test_fig4_server_threads_not_nic_bound_multi_recv(fig4):
    """What limits Fig 4's multi-recv rate in this model: the 64 server threads (each ~1.3 M/s), not their
    NICs or the fabric.  At the reduced peak (1,664 clients x 4, 2 server nodes) the threads are busy all the
    time while each server NIC's transmit engine (one response per RPC at nic.tx_cmd_ns) and list-processing
    engines have room left, no request is refused for want of a request state (TRS), and no switch port
    toward a server queues more than a few packets, so endpoint congestion control never throttles a client.
    This is why the model's multi-recv curve is flat with clients (docs/workloads.md, "Fig 4 by mechanism");
    a NIC or fabric limit that binds first must change this test and those docs together."""
    m = fig4[(2, "multi_recv")]
    s, fam = m["rpc_server"], m["stats"]["counter_families"]
    elapsed = m["engine"]["virtual_time_ps"]
    assert s["thread_utilization"] > 0.97, s
    tx = fam["nic.*.sim.tx_busy_ps"]["max"] / elapsed
    pe = max(fam[f"nic.*.sim.pe_busy_ps_{i}"]["max"] for i in range(4)) / elapsed
    # 20.8 M responses/s per server NIC at 40 ns each: ~0.8 of the window, less over the whole run (ramp)
    assert 0.3 < tx < 0.95, tx
    assert pe < 0.5, pe
    assert "nic.*.C_CNTR_PCT_NO_TRS_NACKS" not in fam and "nic.*.C_CNTR_PCT_NO_TCT_NACKS" not in fam
    assert fam["fabric.sw.*.port.*.tc.*.queue_hwm_bytes"]["max"] < 4096
    assert "fabric.cc.throttle_feedback" not in m["stats"]["counters"]


@pytest.mark.parametrize("strategy", ["multi_recv", "standard"])
def test_fig4_more_in_flight_helps_multi_recv_not_standard(run_scenario, strategy):
    """Seed 000 3.2.2: more RPCs in flight per client help multi-recv saturate, not standard receives.  104
    clients x 1 RPC against 64 server threads leave multi-recv bound by the round trip (~5 us: 104 RPCs per
    round trip, ~21 M/s), and 16 in flight fill the threads (~83 M/s): we ask for at least 3x (measured
    3.85x).  Standard receives are already bound by each engine's MR-cache lock at 1 in flight (~8 M/s), so
    16 in flight change the rate by less than 5% (measured 0.4%)."""
    r = {}
    for k in (1, 16):
        _, m = run_scenario("scenarios/fig4-multithread.yaml.j2",
                            {"clients": 104, "in_flight": k, "nodes": 2, "strategy": strategy,
                             "warmup_us": 1500, "measure_us": 3000 if strategy == "standard" else 1000})
        r[k] = rate(m)
    if strategy == "multi_recv":
        assert r[16] > 3 * r[1], r
    else:
        assert abs(r[16] / r[1] - 1) < 0.05, r


def test_fig6_rnr_below_default_above_the_rendezvous_threshold(run_scenario):
    """Seed 000 Fig 6: above the eager threshold (FI_CXI_RDZV_THRESHOLD 16 KiB) the RNR protocol, which sends
    every message eagerly, has a lower RPC latency than the default protocol's rendezvous (its extra round
    trip for the Get).  At large sizes this holds only because the target NIC writes each packet of an eager
    Put to host memory as it lands, as it does a Get reply's: writing the message after its last byte cost
    1 MiB 37 us more than the rendezvous Get (RNR 87.3 vs default 53.1 us).  One client, one RPC in flight,
    16 receives posted: nothing is NACKed.  Measured: 32 KiB 6.50 vs 9.62, 64 KiB 7.90 vs 11.06, 256 KiB
    16.34 vs 19.51, 1 MiB 49.91 vs 53.13 us (means); we ask for 3% below at every size."""
    for size in (32768, 65536, 262144, 1048576):
        lat = {}
        for proto in ("cxi", "cxi_rnr"):
            _, m = run_scenario("scenarios/fig6-rnr-latency.yaml.j2", {"request_bytes": size, "protocol": proto})
            c = m["rpc_client"]
            assert c["failed"] == 0 and c["lost"] == 0 and c["latency_ns"]["count"] > 0, c
            lat[proto] = c["latency_ns"]["mean"]
        assert lat["cxi_rnr"] < 0.97 * lat["cxi"], (size, lat)


@pytest.mark.parametrize("nodes,name", [(1, "fig10_write_1node_gbs"), (2, "fig10_write_2nodes_gbs")])
def test_fig10_bulk_write_and_read(run_scenario, nodes, name):
    _, w = run_scenario("scenarios/fig10-bulk-bw.yaml.j2", {"nodes": nodes, "op": "write", "clients": 416})
    _, r = run_scenario("scenarios/fig10-bulk-bw.yaml.j2", {"nodes": nodes, "op": "read", "clients": 416})
    bw_w, bw_r = w["rpc_client"]["bulk"]["bandwidth_gbs"], r["rpc_client"]["bulk"]["bandwidth_gbs"]
    band(name, bw_w)
    # Seed 000: reads are slightly lower (46 vs 48, 84 vs 96 GB/s).  A bulk read is the server's RMA write:
    # the server NICs source every byte from host memory through their PCIe read windows, while a bulk
    # write's Gets are sourced by the many client NICs.  "Lower" must clear the window's ~1% noise.
    assert 0.8 * bw_w < bw_r < 0.99 * bw_w, (bw_r, bw_w)
    for m in (w, r):
        assert m["rpc_client"]["failed"] == 0 and m["rpc_server"]["bulk"]["rma_errors"] == 0


@pytest.fixture(scope="module")
def fig9(tmp_path_factory):
    import json
    import os
    import subprocess
    import sys
    from conftest import CXISIM, REPO, BUILD
    out = tmp_path_factory.mktemp("fig9")
    res = {}
    for method in ("optimized", "standard", "prov_key_cache", "match_events"):
        proc = subprocess.run([sys.executable, CXISIM, "run", os.path.join(REPO, "scenarios", "fig9-mr-methods.yaml.j2"),
                               "--out", str(out), "--set", f"mr_method={method}", "--set", "measure_us=500"],
                              capture_output=True, text=True, env=dict(os.environ, CXISIM_BUILD=BUILD))
        assert proc.returncode == 0, proc.stderr
        with open(os.path.join(proc.stdout.strip(), "metrics.json"), encoding="utf-8") as f:
            b = json.load(f)["rpc_client"]["bulk"]
        res[method] = (b["mr_reg_ns"]["p50"], b["mr_dereg_ns"]["p50"])
    return res


def test_fig9_order_of_methods(fig9):
    opt, std, cache, ev = fig9["optimized"], fig9["standard"], fig9["prov_key_cache"], fig9["match_events"]
    # optimized MRs: kernel time on both; standard: registration cheaper, deregistration considerably higher
    assert std[0] < opt[0]
    assert std[1] > 2 * std[0]
    # key cache: deregistration (and registration) reduced
    assert cache[1] < std[1] and cache[0] < std[0]
    # match events: deregistration without the kernel call, but reg + dereg ~10x the key cache
    assert ev[1] < std[1]
    assert sum(ev) > 5 * sum(cache)


def test_fig9_match_events_about_2us(fig9):
    band("fig9_match_events_reg_dereg_ns", sum(fig9["match_events"]))


def test_fig5_fi_source_beats_header_parsing(run_scenario):
    # Seed 000 3.3: resolving the source in the provider (FI_SOURCE + FI_AV_USER_ID) sustains a higher rate
    # than unpacking the address from the header and looking it up.
    _, fast = run_scenario("scenarios/fig5-rpc-rate.yaml.j2", {"clients": 416, "source_lookup": "fi_source_user_id"})
    _, slow = run_scenario("scenarios/fig5-rpc-rate.yaml.j2", {"clients": 416, "source_lookup": "header"})
    assert rate(slow) < 0.9 * rate(fast), (rate(slow), rate(fast))
