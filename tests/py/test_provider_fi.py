"""libfabric's own programs over the simulated fabric: fi_info lists the "cxi" provider with the real
provider's attributes, and fi_pingpong runs with data checks in message and tagged modes for every size up
to (and past) 1 MiB."""
import os
import re
import subprocess
import time

import pytest

from provider_helpers import pingpong_pair, cxisim_exec, foreign_env, provider_env


def fi_info_blocks(text):
    return [b for b in text.split("---") if "fi_info:" in b]


def field(block, name):
    m = re.search(rf"^\s*{name}: (.*)$", block, re.M)
    return m.group(1).strip() if m else None


def test_fi_info_lists_provider():
    r = cxisim_exec(["fi_info", "-p", "cxi"])
    assert r.returncode == 0, r.stderr
    assert "provider: cxi" in r.stdout
    doms = set(re.findall(r"domain: (cxi\d+)", r.stdout))
    assert doms == {"cxi0", "cxi1"}, "one domain per NIC of the node (2 in the default scenario)"
    protos = re.findall(r"protocol: (\S+)", r.stdout)
    assert "FI_PROTO_CXI" in protos
    assert all(t == "FI_EP_RDM" for t in re.findall(r"type: (\S+)", r.stdout))


def test_fi_info_attributes_match_reference():
    """`fi_info -p cxi -v` passes hints (the provider name): as upstream, one offer per NIC (provider keys,
    FI_PROTO_CXI), secondary caps that cost on the data path only when asked for (FI_SOURCE and
    FI_SOURCE_ERR never here; FI_RMA_EVENT and FI_FENCE stay for hints without caps), the transmit order
    the hints ask for (none).  Without hints (`fi_info -v`) every offer is listed."""
    r = cxisim_exec(["fi_info", "-p", "cxi", "-v"])
    assert r.returncode == 0, r.stderr
    blocks = fi_info_blocks(r.stdout)
    assert len(blocks) == 2, "one offer per NIC when hints are given"
    b = blocks[0]
    caps = field(b, "caps")
    for c in ["FI_MSG", "FI_TAGGED", "FI_RMA", "FI_READ", "FI_WRITE", "FI_RECV", "FI_SEND", "FI_REMOTE_READ",
              "FI_REMOTE_WRITE", "FI_DIRECTED_RECV", "FI_MULTI_RECV", "FI_RMA_EVENT", "FI_FENCE", "FI_LOCAL_COMM",
              "FI_REMOTE_COMM"]:
        assert c in caps, c
    for c in ["FI_SOURCE", "FI_SOURCE_ERR"]:
        assert c not in re.split(r"[ ,\[\]]+", caps), c
    rx_caps = re.findall(r"fi_rx_attr:\n\s*caps: \[(.*)\]", b)[0]
    tx_caps = re.findall(r"fi_tx_attr:\n\s*caps: \[(.*)\]", b)[0]
    for c in ["FI_SEND", "FI_FENCE", "FI_READ,", "FI_WRITE,"]:
        assert c not in rx_caps, c
    for c in ["FI_RECV", "FI_REMOTE_READ", "FI_REMOTE_WRITE", "FI_MULTI_RECV", "FI_RMA_EVENT", "FI_DIRECTED_RECV"]:
        assert c not in tx_caps, c
    assert field(b, "mode") == "[  ]"
    assert field(b, "addr_format") == "FI_ADDR_CXI"
    assert re.fullmatch(r"fi_addr_cxi://0x[0-9a-f]{8}", field(b, "src_addr"))
    assert field(b, "type") == "FI_EP_RDM"
    assert field(b, "protocol") == "FI_PROTO_CXI"
    assert field(b, "max_msg_size") == str(2**32 - 1)
    assert field(b, "mem_tag_format") == "0x0000aaaaaaaaaaaa"
    assert field(b, "inject_size") == "192"
    assert re.findall(r"^\s*size: (\d+)", b, re.M) == ["1024", "1024"]
    orders = re.findall(r"^\s*msg_order: \[(.*)\]", b, re.M)
    assert orders[0].strip() == "", "tx msg_order: what the hints ask for"
    assert "FI_ORDER_SAS" in orders[1] and "FI_ORDER_RMA_WAW" in orders[1]
    assert field(b, "iov_limit") == "1"
    assert field(b, "threading") == "FI_THREAD_SAFE"
    assert field(b, "control_progress") == "FI_PROGRESS_MANUAL"
    assert field(b, "data_progress") == "FI_PROGRESS_MANUAL"
    assert field(b, "mr_key_size") == "8"
    assert "FI_MR_ENDPOINT" in field(b, "mr_mode") and "FI_MR_PROV_KEY" in field(b, "mr_mode")
    assert field(b, "cq_data_size") == "8"
    assert field(b, "auth_key_size") == "8"
    assert field(b, "name") == "cxi0"

    r = cxisim_exec(["fi_info", "-v"])
    assert r.returncode == 0, r.stderr
    blocks = [b for b in fi_info_blocks(r.stdout) if field(b, "prov_name") == "cxi"]
    # per NIC: provider keys, client keys, then the RNR protocol with both
    assert len(blocks) == 8
    assert all("FI_SOURCE" not in field(b, "caps") for b in blocks), "no FI_SOURCE(_ERR) without hints"
    assert "FI_ORDER_SAS" in field(blocks[0], "msg_order")
    client = blocks[1]
    assert field(client, "mr_key_size") == "4" and "FI_MR_PROV_KEY" not in field(client, "mr_mode")
    rnr = blocks[2]
    assert field(rnr, "inject_size") == "0"
    assert field(rnr, "mem_tag_format") == "0x000000aaaaaaaaaa"
    assert "FI_ORDER_SAS" not in field(rnr, "msg_order")


def test_fi_info_device_name_filter():
    r = cxisim_exec(["fi_info", "-p", "cxi"], env={"FI_CXI_DEVICE_NAME": "cxi1"})
    assert r.returncode == 0, r.stderr
    assert set(re.findall(r"domain: (cxi\d+)", r.stdout)) == {"cxi1"}


def test_fi_info_env_vars_listed():
    env = foreign_env(provider_env("/nonexistent"))
    r = subprocess.run(["fi_info", "-e"], capture_output=True, text=True, env=env, timeout=30)
    for v in ["FI_CXI_RX_MATCH_MODE", "FI_CXI_RDZV_THRESHOLD", "FI_CXI_OPTIMIZED_MRS", "FI_CXI_PROV_KEY_CACHE",
              "FI_CXI_MR_MATCH_EVENTS", "FI_CXI_RNR_MAX_TIMEOUT_US", "FI_CXI_DEFAULT_VNI",
              "FI_CXI_DEFAULT_CQ_SIZE", "FI_CXI_HYBRID_PREEMPTIVE", "FI_CXI_REQ_BUF_SIZE", "FI_CXI_OFLOW_BUF_SIZE"]:
        assert v in r.stdout, v


def test_private_daemon_autostart(tmp_path):
    """No daemon running: the provider starts a private one with the default scenario, which exits once
    its last client is gone."""
    sock = str(tmp_path / "auto.sock")
    env = foreign_env(provider_env(sock))
    r = subprocess.run(["fi_info", "-p", "cxi"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "domain: cxi0" in r.stdout
    assert os.path.exists(sock)
    deadline = time.monotonic() + 10
    while os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(sock), "the private daemon exits after its linger time"


def run_pingpong(mode, tmp_path, time_mode=None):
    script = tmp_path / "pp.sh"
    # -S all: every size of fi_pingpong's list, 1 B to 8 MiB; -c: data checks on every transfer.
    script.write_text(
        "#!/bin/bash\n"
        + pingpong_pair(f"-p cxi -e rdm -m {mode} -S all -c -I 10", f"-p cxi -e rdm -m {mode} -S all -c -I 10",
                        server_out=f"{tmp_path}/server.txt") +
        "rc=$?\nwait $srv\nsrc=$?\n"
        "exit $(( rc | src ))\n")
    script.chmod(0o755)
    r = cxisim_exec([str(script)], timeout=300, time_mode=time_mode)
    server = (tmp_path / "server.txt").read_text()
    return r, server


# msg and tagged in exec's default (virtual time); tagged also in realtime mode.
@pytest.mark.parametrize("mode,time_mode", [("msg", None), ("tagged", None), ("tagged", "realtime")])
def test_fi_pingpong(mode, time_mode, tmp_path):
    r, server = run_pingpong(mode, tmp_path, time_mode)
    assert r.returncode == 0, f"client:\n{r.stdout}\n{r.stderr}\nserver:\n{server}"
    for out in (r.stdout, server):
        sizes = re.findall(r"^(\d+(?:\.\d+)?[km]?)\s+10\s+=10\s", out, re.M)
        assert "1" in sizes and "1m" in sizes, out
        assert len(sizes) >= 30
        assert "error" not in out.lower()
