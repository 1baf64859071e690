"""FI_CXI_* variables of the application reach the NIC model: the daemon's telemetry (Cassini counter
names) shows software matching on the request list, rendezvous or eager transfers, as the variables ask.
Provider-level switches (key cache, optimized MRs, match mode) are read back through fi_control."""
import re

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


@pytest.mark.parametrize("value, expect", [("0", 1024), ("8", 1024), ("16385", 1024), ("16", 16), ("4096", 4096)])
def test_default_queue_sizes_out_of_range_fall_back(tmp_path, value, expect):
    """FI_CXI_DEFAULT_TX_SIZE / _RX_SIZE outside 16..the provider's maximum (16,384 TX, 15,360 RX) fall back
    to 1,024 with a warning, as upstream cxi does; 0 used to be reported as tx_attr.size 0, and fi_pingpong's
    server then failed to open its endpoint (-FI_EINVAL).  In range, fi_info reports the value and a
    ping-pong runs."""
    env = {"FI_CXI_DEFAULT_TX_SIZE": value, "FI_CXI_DEFAULT_RX_SIZE": value, "FI_LOG_LEVEL": "warn"}
    r = cxisim_exec(["fi_info", "-p", "cxi", "-v"], env=env, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    sizes = [int(x) for x in re.findall(r"^\s+size: (\d+)$", r.stdout, re.M)]
    assert sizes and set(sizes) == {expect}, sizes
    assert ("size invalid" in r.stderr) == (expect != int(value)), r.stderr
    script = tmp_path / "pp.sh"
    script.write_text("#!/bin/bash\n" + pingpong_pair("-p cxi -e rdm -S 8 -I 20", "-p cxi -e rdm -S 8 -I 20")
                      + "rc=$?\nwait $srv\nexit $rc\n")
    script.chmod(0o755)
    r = cxisim_exec([str(script)], env={k: v for k, v in env.items() if k != "FI_LOG_LEVEL"}, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("size", ["1", "4096"])
def test_request_buffers_too_small_for_a_message_are_enlarged(size):
    """FI_CXI_REQ_BUF_SIZE below one eager message and its header, with software matching: upstream cxi
    enlarges the buffers to that (63 B + FI_CXI_RDZV_THRESHOLD + FI_CXI_RDZV_GET_MIN); the model used them
    as given, and software receives waited forever for room (prov_fanin hung until its timeout).  The
    daemon applies the same corrections to every process's values (sim/nic/sw_env.c)."""
    env = {"FI_CXI_RX_MATCH_MODE": "software", "FI_CXI_REQ_BUF_SIZE": size}
    r = cxisim_exec([prog("prov_fanin")], env=env, timeout=120)
    assert r.returncode == 0 and "PASSED prov_fanin" in r.stdout, r.stdout + r.stderr
