"""Provider misuse at random (tests/progs/provider/prov_fuzz_api.c): seeded sequences of transfers, RMA,
atomics, cancels, AV/MR operations and options with hostile arguments, on two endpoints of one process.
Every call returns 0, a count or a -FI_E* code; after a drain every accepted operation has completed exactly
once (success or error) -- the invariant "no operation lost" under misuse.  It found three defects, each
pinned here: a rendezvous send into a receive no longer than its eager part never completed at the sender;
an RMA whose key or destination no MR or process can have was retried forever (the endpoint's queue stalled
behind it); a blocking control call behind a command refused for a full event queue deadlocked in virtual
time.  A failing seed replays with FUZZ_TRACE=1 (every operation and completion) and FUZZ_SKIP=letters
(operation kinds left out) to narrow it down.

Open: at 2,000 rounds, on a loaded or sanitized run (about 1 file run in 4 under SANITIZE=1, 1 in 9
unsanitized under load), one or two 1 MiB tagged rendezvous sends to a peer re-inserted into the AV never
complete, although the drain posts matching receives.  Narrowed on Nov 28 (session 27) with the daemon
instrumented: reproducible at about 1 run in 17 with seed 3, virtual time, 2,000 rounds, the sanitized build,
three runs at once beside six CPU hogs; without hogs 0 of 114.  The sender gets the Put's ACK (C_RC_OK) and
never the GET of its rendezvous source; the target's software never sees a PUT, PUT_OVERFLOW or RENDEZVOUS
event for that message, and at close its software unexpected list, pending Gets and Get wait list are
empty -- so the Put was accepted by an LE whose events software never receives, or its header sits on a
hardware list no receive's append searches.  The CI runs use 1,000 rounds: 160 runs of them (80 sanitized)
passed."""
import pytest

from provider_helpers import cxisim_exec, prog


@pytest.mark.parametrize("time_mode", ["virtual", "realtime"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_api_fuzz_loses_no_operation(seed, time_mode):
    r = cxisim_exec([prog("prov_fuzz_api"), str(seed), "1000"], timeout=300, time_mode=time_mode)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "PASSED prov_fuzz_api" in out and "FAIL" not in out, out[-4000:]
    assert "(0 left)" in out, out[-4000:]


@pytest.mark.parametrize("mode", ["hardware", "software", "hybrid"])
def test_rendezvous_into_a_short_receive_completes_the_send(mode):
    """A 2 MiB send into receives of 0 B .. 2 MiB - 1, matched on arrival and from the unexpected list:
    FI_ETRUNC with len/olen at the receiver, one successful completion at the sender (it hung whenever the
    receive took no more than the eager part)."""
    r = cxisim_exec([prog("prov_rdzv_trunc")], timeout=300, env={"FI_CXI_RX_MATCH_MODE": mode})
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "PASSED prov_rdzv_trunc" in out and "FAIL" not in out, out[-4000:]
