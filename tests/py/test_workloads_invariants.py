"""RPC workloads: mechanism and invariants at small scale (direct fabric, seconds per test).

Every test asserts numbers that a broken policy changes: messages lost or duplicated, limits exceeded,
mechanisms (LE exhaustion, hybrid transitions, copy fallback, credits, timeouts, deadlines) not happening.
"""
import csv
import json
import os

import pytest

from workloads_common import BULK, SMALL



def accounting(m):
    """The exactly-once invariants every drained run must satisfy."""
    c, s = m["rpc_client"], m["rpc_server"]
    assert c["stuck"] == 0 and c["lost"] == 0, c
    assert c["active_at_end"] == 0, c
    assert c["started"] == c["completed"] + c["failed"], c
    assert c["unexpected_completions"] == 0, c
    assert s["duplicates"] == 0 and s["foreign"] == 0, s
    assert s["requests"] == s["responses"], s
    # Every attempt that reached the server was answered; without timeouts every attempt completed.
    if c["timeouts"] == 0 and c["send_errors"] == 0:
        assert s["requests"] == c["attempts"] == c["completed"], (s, c)


@pytest.mark.parametrize("strategy", ["standard", "multi_recv"])
def test_no_rpc_lost_or_duplicated(run_scenario, strategy):
    _, m = run_scenario(SMALL, {"strategy": strategy, "clients": 96})
    accounting(m)
    assert m["rpc_client"]["completed"] > 500
    assert m["rpc_client"]["failed"] == 0


def test_same_seed_same_metrics(run_scenario):
    d1, _ = run_scenario(SMALL, {"strategy": "standard"}, run="a")
    d2, _ = run_scenario(SMALL, {"strategy": "standard"}, run="b")
    for name in ("metrics.json", "telemetry.csv", "timeseries.csv"):
        with open(os.path.join(d1, name), "rb") as f1, open(os.path.join(d2, name), "rb") as f2:
            assert f1.read() == f2.read(), name


def timeseries(rundir):
    with open(os.path.join(rundir, "timeseries.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return rows


LE_LIMIT = 300


@pytest.fixture
def standard_overload(run_scenario):
    """Standard receives, hybrid matching, an LE pool capped at LE_LIMIT, far more requests than LEs."""
    nic = json.dumps({"le_pools": [{"pool": 0, "max_alloc": LE_LIMIT}]})
    return run_scenario(SMALL, {"strategy": "standard", "clients": 1024, "endpoints": 257, "in_flight": 1,
                                "post_init": 16, "post_incr": 16, "nic": nic, "measure_us": 600})


def test_le_use_never_above_limit(standard_overload):
    _, m = standard_overload
    s = m["rpc_server"]
    assert 0 < s["le_pool_high_water"] <= LE_LIMIT, s
    accounting(m)


def test_standard_overload_exhausts_les_and_goes_software(standard_overload):
    rundir, m = standard_overload
    s = m["rpc_server"]
    # Unexpected headers took LEs until the pool limit; the hybrid PtlTE then moved to software matching
    # (SM_UNEXPECTED_FAIL), the provider onloaded the hardware unexpected list, and software matched the rest.
    assert s["sw_transitions"] == 1 and s["endpoints_in_software"] == 1, s
    assert s["onloaded"] > 0 and s["software_matched"] > 0.9 * s["requests"], s
    # Mercury ran out of posted handles and extended its pool (16 at a time), which the timeseries shows.
    assert s["pool_extensions"] >= 1 and s["posted_high_water"] == 16 * (1 + s["pool_extensions"]), s
    rows = timeseries(rundir)
    posted = [int(r["rpc_server.posted"]) for r in rows]
    assert posted[0] == 16 and max(posted) > 16, posted[:10]
    # The NIC's own telemetry saw the limit being hit.
    tel = open(os.path.join(rundir, "telemetry.csv"), encoding="utf-8").read()
    assert "sim.nic_state_change.SM_UNEXPECTED_FAIL,counter,1" in tel


def test_multi_recv_copy_fallback_counted(run_scenario):
    # Two small buffers and a slow handler: buffers retire while requests still hold them, so the server is
    # often down to one posted buffer and must copy.
    _, m = run_scenario(SMALL, {"strategy": "multi_recv", "clients": 256, "buffers": 2, "buffer_bytes": 4096,
                                "service_ns": 2000, "measure_us": 600})
    s = m["rpc_server"]
    assert s["multi_recv_retired"] > 10, s
    assert s["multi_recv_copies"] > 0, s
    accounting(m)


def test_multi_recv_without_pressure_never_copies(run_scenario):
    _, m = run_scenario(SMALL, {"strategy": "multi_recv", "clients": 64})
    assert m["rpc_server"]["multi_recv_copies"] == 0
    assert m["rpc_server"]["multi_recv_retired"] == 0  # 4 x 2 MiB never fill at this load (seed 000 3.2.2)


def test_credits_and_quota_cap_in_flight(run_scenario):
    _, m = run_scenario(SMALL, {"threads": 4, "in_flight": 8, "credits": 1, "quota": 3, "clients": 32})
    c = m["rpc_client"]
    assert c["targets"] == 4
    assert c["max_inflight_per_target"] == 1, c
    assert c["max_inflight_per_process"] == 3, c
    assert c["queued"] > 0 and c["max_queue"] >= 1, c
    accounting(m)


def test_without_credits_window_is_the_limit(run_scenario):
    _, m = run_scenario(SMALL, {"threads": 4, "in_flight": 8, "clients": 32})
    c = m["rpc_client"]
    assert c["max_inflight_per_process"] == 8 and c["queued"] == 0, c


def test_timeouts_and_retries_accounted(run_scenario):
    # A 50 us handler behind 64 clients: most attempts time out after 20 us and are retried twice.
    _, m = run_scenario(SMALL, {"clients": 64, "in_flight": 1, "service_ns": 50000, "timeout_us": 20,
                                "retries": 2, "measure_us": 400})
    c, s = m["rpc_client"], m["rpc_server"]
    assert c["timeouts"] > 0 and c["retries"] > 0 and c["failed"] > 0, c
    assert c["retries"] <= 2 * c["started"]
    assert c["canceled"] > 0
    assert c["stuck"] == 0 and c["started"] == c["completed"] + c["failed"], c
    assert s["duplicates"] == 0 and s["requests"] == s["responses"], s


def test_vni_mismatch_delivers_nothing(run_scenario):
    _, m = run_scenario(SMALL, {"clients": 4, "in_flight": 1, "client_vni": 5, "server_vni": 7,
                                "measure_us": 50})
    c, s = m["rpc_client"], m["rpc_server"]
    assert s["requests"] == 0, s
    assert c["send_errors"] > 0 and c["completed"] == 0 and c["failed"] == c["started"], c
    assert c["vni_drops"] == c["send_errors"], c


def test_rnr_protocol_retries_instead_of_unexpected(run_scenario):
    # RNR: 16 posted receives for 256 clients; senders are NACKed and retry, nothing is lost.
    _, m = run_scenario(SMALL, {"strategy": "standard", "protocol": "cxi_rnr", "clients": 256, "in_flight": 1,
                                "post_init": 16, "post_incr": 0, "measure_us": 2000})
    c = m["rpc_client"]
    assert c["rnr_nacks"] > 0 and c["rnr_retries"] > 0, c
    assert m["rpc_server"]["onloaded"] == 0  # RNR has no unexpected list to onload
    accounting(m)
    assert c["completed"] > 100


def test_key_cache_without_deadlines_exposes_closed_mrs(run_scenario):
    # 8 clients behind a 40 us handler: most bulk RPCs time out (30 us) and the client closes its MR; the
    # server's RMA read then lands in memory the key cache left exposed.
    _, m = run_scenario(BULK, {"deadlines": "false"})
    c, s = m["rpc_client"], m["rpc_server"]
    assert c["timeouts"] > 0 and c["mr_hazards"] > 0, c
    assert s["bulk"]["deadline_skips"] == 0 and s["bulk"]["rma_errors"] == 0, s["bulk"]
    assert c["stuck"] == 0 and c["started"] == c["completed"] + c["failed"], c


def test_transfer_deadlines_prevent_hazards(run_scenario):
    # Seed 000 4.3: D_server = T + T_timeout, D_client = T + 2 T_timeout.  The server skips late RMAs and the
    # client keeps its MR until after the server's deadline: no access to a closed region.
    _, m = run_scenario(BULK, {"deadlines": "true"})
    c, s = m["rpc_client"], m["rpc_server"]
    assert s["bulk"]["deadline_skips"] > 0, s["bulk"]
    assert c["mr_hazards"] == 0, c
    # Every attempt ended by the server's error answer or, when that came after D_client, by the cancel.
    assert c["server_errors"] + c["canceled"] == c["attempts"] == s["bulk"]["deadline_skips"], (c, s["bulk"])
    assert c["stuck"] == 0 and c["started"] == c["completed"] + c["failed"], c


def test_without_the_cache_a_late_rma_fails_cleanly(run_scenario):
    # Standard MRs without the key cache: the closed MR's LE is gone, so the late RMA completes in error at
    # the server (FI_EIO) and nothing is touched.
    _, m = run_scenario(BULK, {"deadlines": "false", "cache": "false", "method": "standard"})
    c, s = m["rpc_client"], m["rpc_server"]
    assert c["timeouts"] > 0 and c["mr_hazards"] == 0, c
    assert s["bulk"]["rma_errors"] > 0, s["bulk"]
    assert c["stuck"] == 0, c


def test_full_command_queue_is_eagain_not_fatal(run_scenario):
    """8,180 receives posted at one instant fill the endpoint's target command queue (4 x (1024 + 1024)
    slots): the provider layer answers -FI_EAGAIN, the server retries, and the run completes with every RPC
    answered once (it used to die: "fi_recv on thread 0 failed: -256", engine status -6)."""
    _, m = run_scenario(SMALL, {"strategy": "standard", "clients": 96, "rpc_server.post_init": 8180})
    s = m["rpc_server"]
    assert s["fatal"] == 0, s["fatal_message"]
    assert s["eagain"] > 0, "the queue never filled: the test no longer exercises the case"
    assert s["posted_high_water"] == 8180
    accounting(m)
