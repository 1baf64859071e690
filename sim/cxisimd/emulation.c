/* The "emulation" scenario section (daemon only): how real processes map onto the simulated machine and
 * how virtual time relates to the wall clock.
 *
 *   emulation:
 *     nodes: 32            # simulated nodes real processes may be placed on (0: all NICs / nics_per_node)
 *     nics_per_node: 2     # cxi0..cxiN-1 of each node; node k owns NIC addresses
 *                          # first_nic + k*N .. first_nic + k*N + N-1
 *     first_nic: 1         # NIC address 0 is left unused: no Slingshot NIC has address 0, and some
 *                          # software (Mercury) takes an all-zero cxi address for "none"
 *     placement: auto      # auto | node0 | round_robin | rank
 *     time_mode: realtime  # realtime (virtual time follows the wall clock) | virtual (the lockstep on the
 *                          # threads' virtual clocks, vclock.c; `cxisim exec`'s default)
 *     slowdown: 1.0        # realtime: wall seconds per virtual second
 *     realtime_lead_us: 100
 *     cpu_scale: 0         # virtual: virtual seconds per second of a thread's CPU time (0: CPU time is free)
 *     stall_timeout_us: 2000  # virtual: the stall rule's wall-time bound (vclock.c)
 *     park_timeout_us: 2000   # virtual: a parked thread re-checks after this much wall time
 *     retry_ns: 100        # virtual: a thread whose command queue is full retries after this
 *     keep_cores_awake: 0  # virtual, cpu_scale > 0: 1 runs idle-class spinners on every core (awake.c)
 *     cpu_latency_qos_us: 0  # virtual: CPU latency request held while attached, so idle
 *                          # CPUs poll instead of halting; -1: none (hostidle.c)
 *     span_clip_ns: 0      # virtual, cpu_scale > 0: the most a span above its site's median is forgiven
 *                          # (provider/vtime.c: the span clip); 0: charge measured CPU exactly
 *     span_clip_quantile: 0.5  # the span clip: which quantile of a site's spans it charges up to (0.5: median)
 *     span_clip_after_park: 0  # the span clip: 1 clips only the spans that began right after a park
 *     span_clip_site: pair     # the span clip's key: pair (previous span's end, this span's end) | end
 *     spin_read_ns: 35     # virtual, cpu_scale 0: what a clock read costs when the thread's previous
 *                          # clock read came with nothing in between (a spin on the clock: provider/vtime.c)
 *     spin_free_reads: 16  # virtual, cpu_scale 0: reads in a row that stay free before spin_read_ns applies
 *
 * A process can also ask for a node itself (CXISIM_NODE); the daemon refuses a node outside the range.
 */
#include <stdlib.h>

#include "../model.h"
#include "../fabric/fabric.h"
#include "../nic/nic.h"
#include "../util.h"
#include "daemon.h"

static const struct param emu_params[] = {
	{ "nodes", "count", 0, 0, 1 << 20, "scenario size; 0: every NIC of the scenario, nics_per_node at a time" },
	{ "nics_per_node", "count", 2, 1, CXISIM_MAX_NICS_PER_NODE,
	  "assumed default; an Aurora node has 8 (cassini-reference: Addressing)" },
	{ "slowdown", "ratio", 1, 0.001, 1e6, "realtime mode: wall seconds per virtual second" },
	{ "realtime_lead_us", "us", 100, 0, 1e6,
	  "assumed: the engine may run this far ahead of the wall clock, so one wake-up serves a whole exchange" },
	{ "max_clients", "count", 4096, 1, 1 << 20, "resource guard on attached processes" },
	{ "first_nic", "count", 1, 0, FABRIC_MAX_NICS - 1,
	  "NIC addresses are algorithmic MACs, never 0 on a real fabric; Mercury rejects an all-zero address" },
	{ "cpu_scale", "ratio", 0, 0, 1e6,
	  "measured (docs/provider.md 'Why cpu_scale 0 is the default'): 0 (default) charges no CPU time, so a "
	  "program prints the model's figures (NetPIPE 8 B 0.807 us against 806.88 ns), byte-identical run to "
	  "run and idle vs under CPU hogs; 1 charges each thread's CPU time as if the simulated node's cores ran "
	  "application code as fast as this host's, and then figures follow this host (NetPIPE 8 B 1.5-2.3 us, "
	  "loaded/idle 0.83-1.14); >1 a slower core" },
	{ "stall_timeout_us", "us", 2000, 10, 1e8,
	  "assumed: wall time a thread may hold virtual time back without entering the provider before the "
	  "stall rule looks at it; well above a context switch under load, well below a test's patience" },
	{ "park_timeout_us", "us", 2000, 10, 1e8,
	  "assumed: a parked thread re-checks after this much wall time with nothing changing for it, so "
	  "progress made outside the provider (another thread's flag, a socket) is never lost" },
	{ "retry_ns", "ns", 100, 1, 1e9,
	  "assumed: the virtual time a thread waits before retrying after -FI_EAGAIN on a full command queue, "
	  "about one NIC command fetch" },
	{ "keep_cores_awake", "flag", 0, 0, 1,
	  "measured (docs/provider.md 'What the model predicts'): 1 runs SCHED_IDLE spinners on every core "
	  "while processes are attached (cpu_scale > 0): NetPIPE 8 B at cpu_scale 1 idle 2.19 -> 1.52 us "
	  "against 1.68 under 2 CPU hogs; off by default: it takes idle CPU from other sessions (autogroups) "
	  "and lengthens wall time under CPU hogs" },
	{ "cpu_latency_qos_us", "us", 0, -1, 2e9,
	  "measured (docs/provider.md 'What the model predicts'): the daemon holds this Linux PM QoS CPU latency "
	  "limit (/dev/cpu_dma_latency, needs root) while processes are attached; 0 keeps idle CPUs polling "
	  "instead of halting: at cpu_scale 0 fi_pingpong 8 B 152 -> 54 us of wall per round trip (a parked "
	  "thread's wake-up is no VM exit); NetPIPE 8 B at cpu_scale 1 idle 1.91 -> 1.57 us against 1.61-1.65 "
	  "under 2-3 CPU hogs, fi_pingpong 1.655 -> 1.27 against 1.345-1.36; costs power (in a VM, host CPU); a "
	  "CPU-bound loop beside the run ran 6-12% slower per second; -1 asks for nothing" },
	{ "span_clip_ns", "ns", 0, 0, 1e9,
	  "measured (docs/provider.md 'The span clip'): at cpu_scale 1 the upper tail of short spans grows under "
	  "host load (cold caches after a rank sleeps), their median does not; a span above its site's running "
	  "median is charged at most this much less; 0 (default) charges measured CPU exactly" },
	{ "span_clip_quantile", "ratio", 0.5, 0.01, 0.99,
	  "measured (docs/provider.md 'A per-call-site clip'): the quantile of a site's spans the clip charges up "
	  "to; 0.5 (default) is the median; a low one charges a site's warm cost" },
	{ "span_clip_after_park", "flag", 0, 0, 1,
	  "measured (docs/provider.md 'A per-call-site clip'): 1 clips only the spans that began right after the "
	  "thread parked (the cold ones); 0 (default) clips every span" },
	{ "spin_read_ns", "ns", 35, 0, 1e6,
	  "measured: clock_gettime(CLOCK_MONOTONIC) through the vDSO costs 35 ns on this host (10 M reads).  With "
	  "cpu_scale 0 a thread that spins on the clock outside the provider would see it stand still and, with "
	  "nothing else pending, spin forever (docs/provider.md 'Why cpu_scale 0 is the default'): a clock read "
	  "whose previous one came with nothing in between (no provider call, no wait) costs this much virtual "
	  "time; 0: free (such a spin ends only by the stall rule, if at all)" },
	{ "spin_free_reads", "count", 16, 0, 1e6,
	  "assumed: clock reads in a row (no provider call, no wait between them) that cost nothing before "
	  "spin_read_ns applies, so a program that reads the clock a few times between provider calls (Open "
	  "MPI's progress loop, NetPIPE's timer) and the interposer's own reads in a timed wait move nothing "
	  "(the timed-wait tests measure their waits to the ns: charging from the 2nd read added 35 ns)" },
};
static const char *const span_clip_sites[] = { "pair", "end", NULL };

static const char *const placements[] = { "auto", "node0", "round_robin", "rank", NULL };
static const char *const time_modes[] = { "realtime", "virtual", NULL };

static void emu_build(struct sim *sim, const struct cfg *c)
{
	struct emu_cfg *e = xcalloc(1, sizeof(*e));
	e->nics_per_node = (uint32_t)param_get_u64(c, &emu_params[1]);
	uint32_t nics = nic_count(sim);
	uint32_t nodes = (uint32_t)param_get_u64(c, &emu_params[0]);
	if (!nics)
		cfg_fail(c, "nodes", "the emulation needs a 'nic' section with at least one NIC");
	e->first_nic = (uint32_t)param_get_u64(c, &emu_params[5]);
	if (e->first_nic >= nics)
		cfg_fail(c, "first_nic", "%u is not a NIC of the scenario (%u NICs)", e->first_nic, nics);
	if (!nodes)
		nodes = (nics - e->first_nic) / e->nics_per_node;
	if (!nodes || e->first_nic + (uint64_t)nodes * e->nics_per_node > nics)
		cfg_fail(c, "nodes", "%u nodes x %u NICs per node from NIC %u exceed the %u NICs of the scenario", nodes,
			 e->nics_per_node, e->first_nic, nics);
	e->nodes = nodes;
	e->placement = (enum placement_policy)cfg_enum(c, "placement", PLACE_AUTO, placements);
	e->time_mode = (enum cxisim_time_mode)cfg_enum(c, "time_mode", CXISIM_TIME_REALTIME, time_modes);
	e->slowdown = param_get(c, &emu_params[2]);
	e->lead = (simtime_t)(param_get(c, &emu_params[3]) * 1e6);
	e->max_clients = (uint32_t)param_get_u64(c, &emu_params[4]);
	e->cpu_scale = param_get(c, &emu_params[6]);
	e->stall_timeout_s = param_get(c, &emu_params[7]) * 1e-6;
	e->park_timeout_ns = (uint64_t)(param_get(c, &emu_params[8]) * 1e3);
	e->retry = (simtime_t)(param_get(c, &emu_params[9]) * 1e3);
	e->keep_cores_awake = param_get(c, &emu_params[10]) != 0;
	e->cpu_latency_qos_us = param_get(c, &emu_params[11]);
	e->span_clip_ns = (uint32_t)param_get_u64(c, &emu_params[12]);
	e->span_clip_q_pm = (uint32_t)(param_get(c, &emu_params[13]) * 1000 + 0.5);
	e->span_clip_after_park = param_get(c, &emu_params[14]) != 0;
	e->span_clip_end_site = cfg_enum(c, "span_clip_site", 0, span_clip_sites) == 1;
	e->spin_read_ns = (uint32_t)param_get_u64(c, &emu_params[15]);
	e->spin_free_reads = (uint32_t)param_get_u64(c, &emu_params[16]);
	if (e->cpu_latency_qos_us < 0 && e->cpu_latency_qos_us != -1)
		cfg_fail(c, "cpu_latency_qos_us", "%g: a latency in microseconds (>= 0), or -1 for no request",
			 e->cpu_latency_qos_us);
	sim_world_set(sim, "emulation", e);
	sim_on_destroy(sim, free, e);
}

struct emu_cfg *emu_get(struct sim *sim)
{
	return sim_world_get(sim, "emulation");
}

int emu_place(struct emu_cfg *e, int32_t requested_node, int32_t rank)
{
	if (requested_node >= 0)
		return (uint32_t)requested_node < e->nodes ? requested_node : -1;
	switch (e->placement) {
	case PLACE_NODE0:
		return 0;
	case PLACE_RANK:
		return rank >= 0 ? (int)((uint32_t)rank % e->nodes) : 0;
	case PLACE_ROUND_ROBIN:
		return (int)(e->next_rr++ % e->nodes);
	case PLACE_AUTO:
	default:
		if (rank >= 0)
			return (int)((uint32_t)rank % e->nodes);
		return (int)(e->next_rr++ % e->nodes);
	}
}

uint32_t emu_nic_addr(const struct emu_cfg *e, uint32_t node, uint32_t index)
{
	return e->first_nic + node * e->nics_per_node + index;
}

static struct model emu_model = {
	.key = "emulation",
	.order = 40,
	.build = emu_build,
	.params = emu_params,
	.nparams = ARRAY_SIZE(emu_params),
};
MODEL_REGISTER(emu_model)
