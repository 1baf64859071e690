"""FI_CXI_* variables of the application reach the NIC model: the daemon's telemetry (Cassini counter
names) shows software matching on the request list, rendezvous or eager transfers, as the variables ask.
Provider-level switches (key cache, optimized MRs, match mode) are read back through fi_control."""
import pytest
from cxisim.counters import telemetry_counters

from provider_helpers import pingpong_pair, cxisim_exec, prog


def counters(tmp_path, env, size="65536"):
    script = tmp_path / "pp.sh"
    script.write_text(
        "#!/bin/bash\n"
        + pingpong_pair(f"-p cxi -e rdm -S {size} -I 20 -c", f"-p cxi -e rdm -S {size} -I 20 -c")
        + "rc=$?\nwait $srv\nexit $rc\n")
    script.chmod(0o755)
    out = tmp_path / "out"
    r = cxisim_exec([str(script)], env=env, out=out, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return telemetry_counters(out)


def total(c, part):
    return c.total(part)


def test_defaults_hardware_matching_and_rendezvous(tmp_path):
    c = counters(tmp_path, {})
    assert total(c, "C_CNTR_LPE_NET_MATCH_PRIORITY") > 0
    assert total(c, "C_CNTR_LPE_NET_MATCH_REQUEST_") == 0
    # 64 KiB is above FI_CXI_RDZV_THRESHOLD (16384): rendezvous Puts and the target's Gets
    assert total(c, "C_CNTR_LPE_RENDEZVOUS_PUT_CMDS") >= 40
    assert total(c, "C_CNTR_LPE_GET_CMDS") >= 40


def test_software_match_mode(tmp_path):
    c = counters(tmp_path, {"FI_CXI_RX_MATCH_MODE": "software"})
    assert total(c, "C_CNTR_LPE_NET_MATCH_REQUEST_") >= 40, "every message lands on the request list"


def test_rendezvous_threshold(tmp_path):
    c = counters(tmp_path, {"FI_CXI_RDZV_THRESHOLD": "1000000"})
    assert total(c, "C_CNTR_LPE_RENDEZVOUS_PUT_CMDS") == 0
    assert total(c, "C_CNTR_LPE_GET_CMDS") == 0


@pytest.mark.parametrize("env", [
    {"FI_CXI_PROV_KEY_CACHE": "0"},
    {"FI_CXI_OPTIMIZED_MRS": "0"},
    {"FI_CXI_RX_MATCH_MODE": "hybrid"},
])
def test_provider_switches_from_env(env):
    r = cxisim_exec([prog("prov_errors")], env=env)
    assert r.returncode == 0 and "PASSED prov_errors" in r.stdout, r.stdout + r.stderr
