"""Our C test programs on the libfabric API (tests/progs/provider/prov_*.c), each run as several processes
over the simulated fabric under `cxisim exec`.  Every program prints one line per check and PASSED/FAILED."""
import pytest

from provider_helpers import cxisim_exec, prog

PROGRAMS = {
    "prov_atomic": "atomics: fi_query_atomic/*valid table as upstream, every valid (op, datatype, kind) executed "
                   "and checked (new and previous value), misuse codes, bounds FI_EIO, 4 concurrent initiators "
                   "serialised (fetch-add values, CSWAP lock), provider/optimized/standard keys",
    "prov_errors": "misuse gives the right -FI_E* codes; upstream option numbers",
    "prov_multi_recv": "multi-recv completions, offsets, FI_MULTI_RECV, cancel; min_multi_recv after enable, "
                       "messages larger than the space left truncated (FI_ETRUNC), expected and unexpected",
    "prov_peek": "FI_PEEK found/not found, FI_CLAIM then receive, FI_DISCARD, in hardware/software/hybrid modes",
    "prov_rma_events": "fi_writedata target completions (FI_CXI_ENABLE_WRITEDATA), remote-access counters",
    "prov_rma_bounds": "RMA past an MR's end: FI_EIO, no data moved (client/provider keys, optimized/standard)",
    "prov_source_err": "FI_SOURCE_ERR from an unknown peer, AV insert, reply",
    "prov_av_user_id": "FI_AV_USER_ID as AV open flag and as insert flag",
    "prov_auth_keys": "two VNIs accepted by one server through multiple auth keys, third VNI FI_ENOTCONN",
    "prov_rma": "RMA read/write into a passive target, with and without the key cache",
    "prov_mr_close": "RMA after MR close: FI_EIO without the key cache, hazard with it; match events",
    "prov_rnr": "RNR: late receive retried, timeout FI_EIO prov_errno 18",
    "prov_cq": "CQ formats, wait fd and fi_trywait, truncation, cancel, directed receive, counters",
    "prov_cq_overflow": "a 16-entry CQ receiving 300 completions unread: held by the daemon, none lost",
    "prov_getinfo": "fi_getinfo hints -> caps/modes/attributes by upstream's rules (table, one row per rule); "
                    "in-band address exchange without FI_SOURCE_ERR; fi_cq_signal wakes fi_cq_sread (-FI_EAGAIN)",
    "prov_attrs": "object attributes and flags as upstream cxi: FI_AFFINITY CQ/EQ, NULL attributes, byte "
                  "counters, empty binds, AV flags",
    "prov_domain_mrs": "CXISIM_DOMAIN_MRS=1 domain-scoped MRs keep the requested key without FI_MR_PROV_KEY "
                       "(fabtests' FT_MR_KEY, no exchange), -FI_ENOKEY/-FI_EKEYREJECTED; provider keys with it",
    "prov_trigger": "triggered operations (FI_TRIGGER, fi_triggered_context, fi_ep_alias) and deferred work "
                    "(FI_QUEUE_WORK: RMA, tagged send, atomics, counter set/add chained, threshold-0 receive) fire "
                    "exactly at their thresholds, in threshold order, reading the buffer when they fire; "
                    "FI_FLUSH_WORK drops held work; FI_CANCEL_WORK -FI_EINVAL; misuse codes; 2048 TLEs then the trigger queue stalls (2040 more, then -FI_EAGAIN; stalled work runs when TLEs come back)",
    "prov_trig_limit": "FI_CXI_ENABLE_TRIG_OP_LIMIT=1: deferred work -FI_ENOSPC past the dwq depth (2048 TLEs less "
                       "upstream's 8 reserved), again after a flush; queued work takes effect at the caller's "
                       "virtual time (a waiter on its counter wakes no earlier)",
    "prov_op_variants": "iovec and message forms of send/recv/read/write (and tagged): accepted forms move the "
                        "data, each misuse its -FI_E* code; CQ/counter/EQ wait objects and FI_GETWAIT",
}


# Every program in both time modes: virtual (`cxisim exec`'s default) and realtime.  They are quick.
@pytest.mark.parametrize("time_mode", ["virtual", "realtime"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program(name, time_mode):
    r = cxisim_exec([prog(name)], timeout=180, time_mode=time_mode)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"PASSED {name}" in out, out
    assert "FAIL" not in out, out
