"""Open MPI 4.1.4 (Debian) over the cxi provider: the cm PML with the OFI MTL restricted to "cxi".  The
test program checks ping-pong data across the eager and rendezvous thresholds, MPI_ANY_SOURCE with
MPI_Probe/Iprobe/Mprobe, and Allreduce/Alltoall results; NetPIPE's NPopenmpi runs to completion."""
import json
import os
import re

import pytest
from cxisim.counters import counters

from provider_helpers import cxisim_exec, prog

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
          "--mca", "mtl_ofi_provider_include", "cxi", "--mca", "btl", "self"]


# In exec's default (virtual time), and 4 ranks also in realtime mode.
@pytest.mark.parametrize("ranks,time_mode", [(2, None), (4, None), (8, None), (4, "realtime")])
def test_mpi_checks(ranks, time_mode):
    r = cxisim_exec([*MPIRUN, "-np", str(ranks), prog("mpi_checks")], timeout=300, time_mode=time_mode)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"PASSED mpi_checks on {ranks} ranks" in out
    assert "FAIL" not in out
    for what in ["ping-pong 0 B..4 MiB", "MPI_Probe + MPI_ANY_SOURCE", "MPI_Iprobe and MPI_Mprobe",
                 "MPI_Allreduce of 100000", "MPI_Alltoall"]:
        assert re.search(rf"^ok\s+{re.escape(what)}", out, re.M), what


@pytest.mark.parametrize("env", [{"FI_CXI_OFLOW_BUF_SIZE": "1"}, {"FI_CXI_OFLOW_BUF_MIN_POSTED": "0"},
                                 {"FI_CXI_OFLOW_BUF_SIZE": "1", "FI_CXI_RX_MATCH_MODE": "hybrid"}])
def test_mpi_survives_unusable_buffer_settings(env):
    """A 1-byte overflow buffer, or none posted, holds no unexpected message: every one was dropped, the
    portal disabled and re-enabled, and the job ran forever (8.4 M limit hits, 16.8 M drops in 60 s).  The
    daemon brings such values to the smallest it accepts from a scenario (4 KiB, 1 buffer), and the job
    passes."""
    r = cxisim_exec([*MPIRUN, "-np", "4", prog("mpi_checks")], timeout=120, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "PASSED mpi_checks on 4 ranks" in out, out[-3000:]


def test_le_exhaustion_in_hardware_mode_says_why_and_hybrid_recovers():
    """One LE per pool (nic.le_pool_max_alloc 1): in hardware matching, flow control cannot recover the LEs,
    which upstream's provider treats as fatal (it aborts the process).  Here the endpoint stops and its
    operations fail with FI_EIO, and the user is told why and what to do -- before, the daemon's line went
    to its discarded log, and all the user saw was Open MPI dying of SIGSEGV.  With the remedy the message
    names (hybrid or software matching), the same job passes."""
    sets = {"nic.le_pool_max_alloc": 1}
    r = cxisim_exec([*MPIRUN, "-np", "2", prog("mpi_checks")], timeout=120, sets=sets)
    assert r.returncode != 0, r.stdout + r.stderr
    assert re.search(r"cxisimd: warning: mpi_checks \(pid \d+, rank [01]\) endpoint \d+ stopped, every operation "
                     r"fails with FI_EIO .*FI_CXI_RX_MATCH_MODE=\[hybrid\|software\] is required", r.stderr), r.stderr
    for mode in ("hybrid", "software"):
        r = cxisim_exec([*MPIRUN, "-np", "4", prog("mpi_checks")], timeout=120, sets=sets,
                        env={"FI_CXI_RX_MATCH_MODE": mode})
        assert r.returncode == 0 and "PASSED mpi_checks on 4 ranks" in r.stdout + r.stderr, r.stdout + r.stderr


FEATURES = os.path.join(os.path.dirname(__file__), "..", "progs", "provider", "mpi_features.py")


@pytest.mark.parametrize("mode, sets", [("hardware", None), ("software", None), ("hybrid", None),
                                        ("hybrid", {"nic.le_pool_max_alloc": 2})])
def test_mpi_features(mode, sets):
    """tests/progs/provider/mpi_features.py on 8 ranks in each receive matching mode, and in hybrid mode with
    2 LEs per pool (the LE exhaustion hardware mode cannot survive, test above)."""
    r = cxisim_exec([*MPIRUN, "-np", "8", "/usr/bin/python3", FEATURES], timeout=300, sets=sets,
                    env={"FI_CXI_RX_MATCH_MODE": mode})
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "PASSED mpi_features on 8 ranks" in out and "FAIL" not in out, out[-3000:]


def test_mpi_uses_cxi_provider(tmp_path):
    """The OFI MTL selected our provider on both ranks, and the traffic went through the daemon's NICs."""
    r = cxisim_exec([*MPIRUN, "--mca", "opal_common_ofi_verbose", "100", "--mca", "mtl_base_verbose", "100",
                     "-np", "2", prog("mpi_checks")], timeout=300, out=tmp_path / "out")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    # one offer per NIC (as upstream with hints): Open MPI spreads local ranks over cxi0 and cxi1
    assert len(re.findall(r"mtl:ofi:provider: cxi[01]", out)) == 2
    with open(tmp_path / "out" / "metrics.json") as f:
        stats = counters(json.load(f))
    assert stats["emulation.attaches"] == 2
    assert stats["emulation.commands"] > 100
    assert stats["emulation.client_deaths"] == 0
    # per-endpoint counters: metrics.json has their family sums (fabric.ep.*.tx_bytes)
    tx = sum(v for k, v in stats.items() if k.startswith("fabric.ep.") and k.endswith(".tx_bytes"))
    assert tx > 2 * (4 << 20), "the 4 MiB ping-pong crossed the simulated fabric"


def _attaches(rundir):
    with open(rundir / "metrics.json") as f:
        return counters(json.load(f)).get("emulation.attaches", 0)


def test_unflagged_mpirun_runs_over_cxi(tmp_path):
    """`cxisim exec -- mpirun -np 2 ./app` with no --mca runs over cxi: Debian's openmpi-mca-params.conf turns
    Open MPI's OFI components off (mtl = ^ofi), and such a run used shared memory and TCP -- it passed and
    never touched the simulated fabric (0 attaches).  exec now defaults Open MPI to cm + ofi + cxi; a --mca
    on mpirun's command line, or an OMPI_MCA_* variable the user set, keeps the user's choice."""
    plain = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
    tail = ["-np", "2", prog("mpi_checks")]
    runs = {"default": (plain + tail, None), "flag": (plain + ["--mca", "pml", "ob1"] + tail, None),
            "env": (plain + tail, {"OMPI_MCA_pml": "ob1"})}
    for name, (cmd, env) in runs.items():
        r = cxisim_exec(cmd, env=env, timeout=300, out=tmp_path / name)
        out = r.stdout + r.stderr
        assert r.returncode == 0 and "PASSED mpi_checks on 2 ranks" in out, out[-3000:]
    assert _attaches(tmp_path / "default") == 2
    assert _attaches(tmp_path / "flag") == 0
    assert _attaches(tmp_path / "env") == 0


def test_netpipe(tmp_path):
    out_file = tmp_path / "np.out"
    # -n: a fixed number of repeats.  NetPIPE otherwise sizes them to fill 0.25 s per point, which in virtual
    # time (the clock interposer) is ~10^5 round trips of a few microseconds each.
    r = cxisim_exec([*MPIRUN, "-np", "2", "NPopenmpi", "-u", "8192", "-n", "100", "-p", "0", "-o", str(out_file)],
                    timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line.split() for line in out_file.read_text().splitlines() if line.strip()]
    sizes = [int(row[0]) for row in rows]
    assert sizes[0] == 1 and sizes[-1] == 8192, sizes
    assert all(float(row[1]) > 0 for row in rows), "positive throughput at every size"


# One-sided MPI on Open MPI's RMA path: osc/rdma over btl/ofi over cxi (the OFI BTL needs FI_RMA | FI_ATOMIC).
# Open MPI 4.1's btl/ofi asks for FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY without FI_MR_ENDPOINT,
# which cxi (upstream too) refuses for an RMA target; CXISIM_DOMAIN_MRS=1 offers it domain-scoped MRs.
MPIRUN_OSC = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "pml", "cm", "--mca", "mtl", "ofi",
              "--mca", "mtl_ofi_provider_include", "cxi", "--mca", "btl", "self,ofi",
              "--mca", "btl_ofi_provider_include", "cxi", "--mca", "osc", "rdma"]
ONESIDED = os.path.join(os.path.dirname(__file__), "..", "progs", "provider", "mpi_onesided.py")


@pytest.mark.parametrize("ranks", [2, 4])
def test_mpi_onesided_osc_rdma_btl_ofi(ranks):
    r = cxisim_exec([*MPIRUN_OSC, "-np", str(ranks), "/usr/bin/python3", ONESIDED], timeout=300,
                    env={"CXISIM_DOMAIN_MRS": "1"})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"PASSED mpi_onesided on {ranks} ranks" in out, out
    assert "FAIL" not in out, out
    for what in ["MPI_Put", "MPI_Get", "MPI_Accumulate(MPI_SUM)", "MPI_Fetch_and_op", "MPI_Compare_and_swap"]:
        assert re.search(rf"^ok\s+{re.escape(what)}", out, re.M), what


def test_mpi_onesided_without_domain_mrs_finds_no_btl():
    """Without CXISIM_DOMAIN_MRS the OFI BTL gets no cxi offer (upstream's FI_MR_ENDPOINT rule): the window
    cannot reach the peer, as with upstream cxi and Open MPI 4.1."""
    r = cxisim_exec([*MPIRUN_OSC, "-np", "2", "/usr/bin/python3", ONESIDED], timeout=300)
    assert r.returncode != 0
    assert "PASSED" not in r.stdout + r.stderr
