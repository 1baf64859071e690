"""NIC model through the engine binary: parameter table, flow-control scenarios, determinism, bad input."""
import csv
import filecmp
import os
import subprocess

FC = """\
name: nic-fc
seed: {{ seed | default(3) }}
stats:
  timeseries_interval_ns: 50000
fabric:
  topology: direct
  endpoints: 3
nic:
  le_pools:
    - pool: 0
      max_alloc: 10
  timeseries_nics: [1]
cxi:
  env:
    rx_match_mode: {{ mode | default("hardware") }}
    oflow_buf_size: 262144
    req_buf_size: 262144
    req_buf_min_posted: 2
nic_loadgen:
  senders: [0, 2]
  receiver: 1
  messages: {{ messages | default(400) }}
  recv_delay_us: 2000
  prepost: 32
"""


def test_params_table_has_provenance(engine):
    out = subprocess.run([engine, "--params"], capture_output=True, text=True, check=True).stdout
    rows = [l for l in out.splitlines() if l.startswith("| nic.") or l.startswith("| cxi.")]
    assert len(rows) >= 30
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        assert len(cells) == 5 and cells[4], f"row without provenance: {r}"
    assert any("nic.match_per_le_ns" in r for r in rows)
    assert any("cxi.env.rdzv_threshold | 16384" in r for r in rows)
    assert any("cxi.env.rnr_max_timeout_us | 500000" in r for r in rows)


def test_hardware_mode_flow_control_recovers(run_scenario):
    rundir, m = run_scenario(FC)
    lg, nic = m["nic_loadgen"], m["nic"]
    assert lg["received"] == lg["expected"] == 800
    assert lg["out_of_order"] == 0 and lg["recv_errors"] == 0 and lg["send_errors"] == 0
    assert lg["fc_transitions"] > 0
    assert lg["drops_replayed"] == nic["pt_disabled_drops"] > 0
    assert lg["rx_state"] == "RXC_ENABLED" and not lg["fatal"]
    assert nic["le_pool_high_water"] <= 10
    with open(os.path.join(rundir, "timeseries.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c.startswith("nic.1.le_pool.")]
    assert len(cols) == 4
    assert all(int(r[c]) <= 10 for r in rows for c in cols), "LE use never above max_alloc"
    assert int(rows[-1]["nic.1.limit_hits"]) > 0


def test_hybrid_mode_goes_software(run_scenario):
    _, m = run_scenario(FC, sets={"mode": "hybrid"})
    lg = m["nic_loadgen"]
    assert lg["received"] == lg["expected"] and lg["out_of_order"] == 0
    assert lg["sw_transitions"] == 1
    assert lg["rx_state"] == "RXC_ENABLED_SOFTWARE"


def test_same_seed_identical_outputs(run_scenario):
    d1, _ = run_scenario(FC, run="a", sets={"messages": 150})
    d2, _ = run_scenario(FC, run="b", sets={"messages": 150})
    for name in ("telemetry.csv", "timeseries.csv"):
        assert filecmp.cmp(os.path.join(d1, name), os.path.join(d2, name), shallow=False), name


BUSY = """\
name: nic-busy
seed: 1
fabric:
  topology: direct
  endpoints: 2
nic:
  tx_cmd_ns: 40
  idc_per_64b_ns: 0
  match_base_ns: {{ match_base | default(40) }}
  match_per_le_ns: 0
  tgt_cmd_ns: 50
nic_loadgen:
  senders: [0]
  receiver: 1
  messages: 400
  prepost: 64
"""


def telemetry(rundir):
    with open(os.path.join(rundir, "telemetry.csv"), encoding="utf-8") as f:
        return {r["name"]: int(r["value"]) for r in csv.DictReader(f)}


def test_engine_busy_time_counters(run_scenario):
    """sim.tx_busy_ps and sim.pe_busy_ps_<pe> add up the transmit engine's and each PE's service times, so a
    run tells how close a NIC came to its command and request rates (docs/nic.md, "What limits a server
    NIC")."""
    for match_base in (40, 70):
        rundir, _ = run_scenario(BUSY, sets={"match_base": match_base})
        t = telemetry(rundir)
        # 400 IDC Puts at tx_cmd each (the sender's only transmit commands)
        assert t["nic.0.sim.tx_busy_ps"] == 400 * 40_000
        assert "nic.1.sim.tx_busy_ps" not in t  # the receiver sent nothing (zero counters are not written)
        for nic in (0, 1):
            for pe in range(4):
                puts = t.get(f"nic.{nic}.C_CNTR_LPE_NET_MATCH_REQUESTS_{pe}", 0)
                cmds = sum(t.get(f"nic.{nic}.C_CNTR_LPE_{k}_CMDS_{pe}", 0) for k in ("APPEND", "SETSTATE"))
                assert t.get(f"nic.{nic}.sim.pe_busy_ps_{pe}", 0) == puts * match_base * 1000 + cmds * 50_000, (nic, pe)
        assert t["nic.1.C_CNTR_LPE_PUT_CMDS"] == 400


PCT = """\
name: nic-pct
seed: 1
fabric:
  topology: direct
  endpoints: 3
nic:
  pct_tct_entries: {{ tct | default(8192) }}
  pct_idle_us: {{ idle | default(32.768) }}
  pct_conn_ns: {{ conn | default(0) }}
nic_loadgen:
  senders: [0, 2]
  receiver: 1
  messages: 300
  prepost: 64
"""


def test_pct_connections_open_once_per_busy_period(run_scenario):
    """A sender's requests to one receiver share one PCT connection while they keep coming within the idle
    time (32.8 us); with a 1 ns idle time every request opens its own (docs/nic.md, "PCT connections")."""
    rundir, m = run_scenario(PCT)
    t = telemetry(rundir)
    assert m["nic_loadgen"]["received"] == 600
    for s in (0, 2):
        assert t[f"nic.{s}.C_CNTR_PCT_CONN_SCT_OPEN"] == 1
    assert t["nic.1.C_CNTR_PCT_CONN_TCT_OPEN"] == 2 and t["nic.1.sim.pct_tct_high_water"] == 2
    rundir, m = run_scenario(PCT, sets={"idle": 0.001})
    t = telemetry(rundir)
    assert m["nic_loadgen"]["received"] == 600
    assert t["nic.0.C_CNTR_PCT_CONN_SCT_OPEN"] == t["nic.2.C_CNTR_PCT_CONN_SCT_OPEN"] == 300
    assert t["nic.1.C_CNTR_PCT_CONN_TCT_OPEN"] == 600


def test_pct_connection_cost_charged_per_open(run_scenario):
    """nic.pct_conn_ns (a connection's open and close handshake, 0 by default) occupies the transmit engine of
    the end that opens a source connection and the PE that meets a request opening a target connection: with
    every request opening both (1 ns idle time), 100 ns per connection adds 300 x 100 ns to each sender's
    transmit engine and 600 x 100 ns to the receiver's PEs; nothing else changes what is delivered."""
    busy = {}
    for conn in (0, 100):
        rundir, m = run_scenario(PCT, sets={"idle": 0.001, "conn": conn})
        t = telemetry(rundir)
        assert m["nic_loadgen"]["received"] == 600 and m["nic_loadgen"]["out_of_order"] == 0
        assert t["nic.1.C_CNTR_PCT_CONN_TCT_OPEN"] == 600
        busy[conn] = (t["nic.0.sim.tx_busy_ps"], t["nic.2.sim.tx_busy_ps"],
                      sum(t.get(f"nic.1.sim.pe_busy_ps_{pe}", 0) for pe in range(4)))
    assert busy[100][0] - busy[0][0] == busy[100][1] - busy[0][1] == 300 * 100_000
    assert busy[100][2] - busy[0][2] == 600 * 100_000


def test_pct_no_target_connection_nack_and_retry(run_scenario):
    """With one TCT, the second sender's requests are NACKed (C_RC_NO_TARGET_CONN) until the first sender's
    connection has been idle for the idle time; the retry handler resends them and nothing is lost."""
    rundir, m = run_scenario(PCT, sets={"tct": 1})
    t = telemetry(rundir)
    lg = m["nic_loadgen"]
    assert lg["received"] == lg["expected"] == 600 and lg["send_errors"] == 0 and lg["out_of_order"] == 0
    assert t["nic.1.C_CNTR_PCT_NO_TCT_NACKS"] > 0
    assert t["nic.1.sim.pct_tct_high_water"] == 1
    assert t.get("nic.0.sim.rh_retries", 0) + t.get("nic.2.sim.rh_retries", 0) == t["nic.1.C_CNTR_PCT_NO_TCT_NACKS"]


def write(tmp_path, text):
    p = tmp_path / "bad.yaml.j2"
    p.write_text(text)
    return str(p)


def assert_bad(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    for n in needles:
        assert n in proc.stderr, f"{n!r} not in {proc.stderr!r}"


def test_bad_le_pool_entry(cxisim, tmp_path):
    text = FC.replace("    - pool: 0\n", "    - pool: 0\n      index: 3\n")
    proc = cxisim("run", write(tmp_path, text), "--out", "out")
    assert_bad(proc, "bad.yaml.j2", "nic.le_pools[0]", "exactly one of")


def test_bad_max_alloc(cxisim, tmp_path):
    text = FC.replace("max_alloc: 10", "max_alloc: 99999")
    proc = cxisim("run", write(tmp_path, text), "--out", "out")
    assert_bad(proc, "nic.le_pools[0].max_alloc")


def test_bad_match_mode(cxisim, tmp_path):
    proc = cxisim("run", write(tmp_path, FC), "--out", "out", "--set", "mode=hardwear")
    assert_bad(proc, "cxi.env.rx_match_mode")


def test_unknown_nic_field(cxisim, tmp_path):
    text = FC.replace("  timeseries_nics: [1]\n", "  timeseries_nics: [1]\n  pcie_latncy_ns: 5\n")
    proc = cxisim("run", write(tmp_path, text), "--out", "out")
    assert_bad(proc, "nic.pcie_latncy_ns")
