"""Memory registration in virtual time (docs/provider.md "Memory registration costs"): fi_mr_regattr maps the
buffer through the MR cache model (provider/iomm.c) and fi_close(mr) releases it; the calling thread's clock
moves by exactly the modelled cost, from the "cxi" parameters the simulated processes use (kernel_call_ns,
map_page_ns, unmap_page_ns, mr_cache_lookup_ns).  Cache hits, misses, eviction by FI_MR_CACHE_MAX_COUNT and
FI_MR_CACHE_MAX_SIZE, the monitor dropping unmapped memory, FI_MR_CACHE_MONITOR=disabled and misuse are in
tests/progs/provider/prov_mr_cost.c; fabtests' fi_mr_cache_evict runs when the system has it."""
import os

import pytest

from provider_helpers import cxisim_exec, prog

COSTS = {"kernel_call_ns": 1000, "map_page_ns": 300, "unmap_page_ns": 50, "mr_cache_lookup_ns": 70,
         "mr_bookkeeping_ns": 30, "mr_le_append_ns": 800}
MR_CACHE_EVICT = os.environ.get("CXISIM_FI_MR_CACHE_EVICT", "/work/ext/fabtests-inst/bin/fi_mr_cache_evict")


def run_costs(costs, extra_sets=None):
    sets = {"cpu_scale": 0, **{f"cxi.{k}": v for k, v in costs.items()}, **(extra_sets or {})}
    args = [str(costs[k]) for k in ("kernel_call_ns", "map_page_ns", "unmap_page_ns", "mr_cache_lookup_ns",
                                    "mr_bookkeeping_ns", "mr_le_append_ns")]
    r = cxisim_exec([prog("prov_mr_cost"), *args], sets=sets, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "PASSED prov_mr_cost" in out and "FAIL" not in out, out
    return out


def test_registration_costs_the_modelled_virtual_time():
    """cpu_scale 0: each fi_mr_regattr / fi_close(mr), each data-path post and fi_mr_enable moves the caller's
    clock by exactly the model's cost."""
    out = run_costs(COSTS)
    assert out.count("ok   ") == 61, out
    assert "first registration of 4 pages: lookups + driver call + 4 pages: 2340 ns" in out, out


def test_registration_costs_follow_the_parameters():
    """Other values of the same parameters (the defaults' kernel call, a dearer page): the program's model,
    computed from its arguments, still matches to the nanosecond, so the provider reads the scenario's."""
    out = run_costs({"kernel_call_ns": 2500, "map_page_ns": 1000, "unmap_page_ns": 0, "mr_cache_lookup_ns": 10,
                     "mr_bookkeeping_ns": 50, "mr_le_append_ns": 600})
    assert "first registration of 4 pages: lookups + driver call + 4 pages: 6520 ns" in out, out


def test_realtime_registration_unmodelled():
    """Realtime mode: nothing is modelled (no charge, no monitor); every call still gives the same results."""
    r = cxisim_exec([prog("prov_mr_cost")], time_mode="realtime", timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "PASSED prov_mr_cost" in out and "FAIL" not in out, out


@pytest.mark.skipif(not os.access(MR_CACHE_EVICT, os.X_OK), reason="fabtests' fi_mr_cache_evict not installed")
@pytest.mark.parametrize("monitor", [None, "disabled"])
def test_fabtests_mr_cache_evict(monitor):
    """fi_mr_cache_evict times three fi_mr_regattr calls (virtual time under `cxisim exec`): first, cached,
    after the buffer was freed and allocated again at the same address.  With the monitor its three host
    cases pass; with FI_MR_CACHE_MONITOR=disabled it finds no cache and skips them."""
    env = {"FI_MR_CACHE_MONITOR": monitor} if monitor else None
    r = cxisim_exec([MR_CACHE_EVICT, "-p", "cxi"], env=env, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "Summary: all tests passed" in out, out
    for case in ("mmap", "brk", "sbrk"):
        line = next(ln for ln in out.splitlines() if f"mr_cache_{case}_test" in ln)
        if monitor:
            assert "Assuming MR cache not enabled by provider" in line, line
        else:
            assert line.endswith("PASS!"), line
