/* The provider's FI_CXI_* environment and host-side costs, and the "cxi" scenario section that sets both
 * for simulated processes. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../model.h"
#include "../util.h"
#include "sw_impl.h"

/* The "cxi" section's parameters: host-side costs of the provider, then the FI_CXI_* defaults. */
static const struct param cxi_params[] = {
	{ "kernel_call_ns", "ns", 2500, 0, 1e9,
	  "assumed; seed 000 Fig 9: reg/dereg paths that enter the kernel are the slow ones.  Also the fixed part of "
	  "a host mapping (upstream cxip_do_map / cxip_map_nocache: the cxil_map driver call) and of its unmap "
	  "(cxil_unmap)" },
	{ "mr_cache_lookup_ns", "ns", 70, 0, 1e9,
	  "assumed; seed 000 Fig 9: provider key cache makes reg and dereg cheap (~0.1 us).  Also one search of "
	  "libfabric's MR cache that hits (ofi_mr_cache_search / _find: a lock and a tree lookup) and one release "
	  "into it (ofi_mr_cache_delete)" },
	{ "map_page_ns", "ns per 4 KiB page", 250, 0, 1e9,
	  "assumed: what cxil_map does per page (CXI_MAP_PIN: the driver pins it, get_user_pages, and writes its "
	  "translation into the NIC's ATU); the order of published pinning costs of verbs registration "
	  "(ibv_reg_mr: ~0.1-0.3 us per 4 KiB page above a fixed few us)" },
	{ "unmap_page_ns", "ns per 4 KiB page", 100, 0, 1e9,
	  "assumed: what cxil_unmap does per page (unpin, ATU entry invalidated); below the map's cost, as "
	  "releasing pages needs no fault-in" },
	{ "mr_le_append_ns", "ns", 800, 0, 1e9, "assumed: software side of an MR LE append/unlink and its wait" },
	{ "mr_event_poll_ns", "ns", 200, 0, 1e9,
	  "assumed; seed 000 Fig 9: match events cost ~2 us for reg + dereg, 10x the key cache" },
	{ "mr_event_poll_max_us", "us", 100, 0, 1e9, "upstream: MR match-event close polls up to 100 us" },
	{ "mr_bookkeeping_ns", "ns", 30, 0, 1e9, "assumed: per reg/dereg provider data-structure work" },
	{ "ctrl_eq_slots", "count", 4096, 16, 1 << 24, "assumed: control EQ size (FC messages, MR events)" },
	/* Host work of flow-control recovery, hybrid transitions and RNR (struct sw_host_work): what each step
	 * does is upstream's (prov/cxi cxip_msg_hpc.c, cxip_msg_rnr.c; driver calls: shs-libcxi); its cost is
	 * assumed, at the scale of the other provider steps (an event handled ~300-400 ns, a command and its
	 * doorbell ~250 ns, a driver call kernel_call_ns). */
	{ "fc_state_change_ns", "ns", 500, 0, 1e9,
	  "assumed; upstream cxip_recv_pte_cb + cxip_flush_appends: the PtlTE's STATE_CHANGE event (disable or "
	  "software-managed; or software's own SETSTATE after a failed append), the RX state machine, the "
	  "append-flush SEARCH command (no log line: FI_LOG_LEVEL is unset by default)" },
	{ "fc_onload_entry_ns", "ns", 300, 0, 1e9,
	  "assumed; upstream cxip_ux_onload_cb: per header the SEARCH_AND_DELETE returns, allocate the software "
	  "record, pair it with its overflow PUT event, append it to the software unexpected list; the onload "
	  "itself reads the list's offsets with two cxil_pte_status driver calls (kernel_call_ns each)" },
	{ "fc_replay_recv_ns", "ns", 300, 0, 1e9,
	  "assumed; upstream cxip_recv_replay: per receive whose append failed, matched against the software "
	  "unexpected list and appended again" },
	{ "buf_append_ns", "ns", 250, 0, 1e9,
	  "assumed; upstream cxip_ptelist_buf_replenish: per overflow/request buffer appended (command + doorbell); "
	  "a buffer allocated on the way is mapped for the NIC (kernel_call_ns)" },
	{ "fc_reenable_ns", "ns", 250, 0, 1e9,
	  "assumed; upstream cxip_recv_reenable: the SETSTATE command that re-enables the PtlTE; every attempt "
	  "first reads the PtlTE's drop count with cxil_pte_status (kernel_call_ns), and the hybrid re-enable "
	  "is the synchronous cxil_pte_transition_sm driver call (kernel_call_ns)" },
	{ "fc_ctrl_rx_ns", "ns", 400, 0, 1e9,
	  "assumed; upstream cxip_fc_process_drops / cxip_fc_resume: an FC_NOTIFY or FC_RESUME taken from the "
	  "control EQ and its record (calloc, list)" },
	{ "fc_ctrl_tx_ns", "ns", 250, 0, 1e9,
	  "assumed; upstream cxip_ctrl_msg_send: an FC_NOTIFY or FC_RESUME sent (IDC command + doorbell); a "
	  "dropped one is resent after usleep(FI_CXI_FC_RETRY_USEC_DELAY), which blocks the thread" },
	{ "fc_send_drop_ns", "ns", 300, 0, 1e9,
	  "assumed; upstream cxip_send_req_dropped: a send's C_RC_PT_DISABLED ACK, the disabled-peer lookup (and "
	  "the walk of the message queue that parks its other sends, for the first)" },
	{ "fc_send_replay_ns", "ns", 250, 0, 1e9,
	  "assumed; upstream cxip_fc_resume: per parked send, re-issued in order (command + doorbell)" },
	{ "fc_send_eagain_ns", "ns", 200, 0, 1e9,
	  "assumed; upstream cxip_send_req_queue: a send to a disabled peer returns -FI_EAGAIN after a progress "
	  "pass over the control EQ (cxip_ep_ctrl_progress_locked)" },
	{ "rnr_nack_ns", "ns", 300, 0, 1e9,
	  "assumed; upstream cxip_rnr_send_cb + cxip_rnr_queue_retry: an RNR NACK (C_RC_ENTRY_NOT_FOUND ACK), the "
	  "clock read and the insertion in a retry wait queue" },
	{ "rnr_retry_ns", "ns", 250, 0, 1e9,
	  "assumed; upstream cxip_process_rnr_time_wait: the send re-issued from the wait queue in progress "
	  "(command + doorbell)" },
	/* FI_CXI_* defaults of simulated processes (cxi.env.<name>); the daemon takes them from the application's
	 * environment instead. */
	{ "env.rx_match_mode", "0 hardware, 1 software, 2 hybrid", 0, 0, 2, "cassini-reference: FI_CXI_RX_MATCH_MODE=hardware" },
	{ "env.hybrid_preemptive", "bool", 0, 0, 1, "cassini-reference: FI_CXI_HYBRID_PREEMPTIVE" },
	{ "env.hybrid_recv_preemptive", "bool", 0, 0, 1, "cassini-reference: FI_CXI_HYBRID_RECV_PREEMPTIVE" },
	{ "env.hybrid_posted_recv_preemptive", "bool", 0, 0, 1,
	  "cassini-reference: FI_CXI_HYBRID_POSTED_RECV_PREEMPTIVE" },
	{ "env.hybrid_unexpected_msg_preemptive", "bool", 0, 0, 1,
	  "cassini-reference: FI_CXI_HYBRID_UNEXPECTED_MSG_PREEMPTIVE" },
	{ "env.oflow_buf_size", "bytes", 12 << 20, 4096, 17179869184.0, "cassini-reference: FI_CXI_OFLOW_BUF_SIZE 12 MiB" },
	{ "env.oflow_buf_min_posted", "count", 3, 1, 1024, "cassini-reference: 3 overflow buffers posted" },
	{ "env.req_buf_size", "bytes", 12 << 20, 4096, 17179869184.0, "cassini-reference: FI_CXI_REQ_BUF_SIZE 12 MiB" },
	{ "env.req_buf_min_posted", "count", 6, 2, 1024, "cassini-reference: 6 request buffers posted (at least 2)" },
	{ "env.req_buf_max_count", "count", 0, 0, 1 << 20, "cassini-reference: at most 8x min_posted (0: that)" },
	{ "env.rdzv_threshold", "bytes", 16384, 0, 1 << 30, "cassini-reference: FI_CXI_RDZV_THRESHOLD" },
	{ "env.rdzv_get_min", "bytes", 2049, 0, 1 << 30, "cassini-reference: FI_CXI_RDZV_GET_MIN" },
	{ "env.rdzv_eager_size", "bytes", 2048, 0, 1 << 30, "cassini-reference: FI_CXI_RDZV_EAGER_SIZE" },
	{ "env.sw_rx_tx_init_max", "count", 1024, 1, 1 << 20, "cassini-reference: FI_CXI_SW_RX_TX_INIT_MAX" },
	{ "env.rnr_max_timeout_us", "us", 500000, 0, 1099511627776.0, "cassini-reference: FI_CXI_RNR_MAX_TIMEOUT_US" },
	{ "env.rnr_append_retry_timeout_us", "us", 2000000, 0, 1099511627776.0,
	  "upstream prov/cxi cxip.h CXIP_RNR_APPEND_RETRY_TIMEOUT_US (fi_cxi(7) says 200 ms; the code wins): an RNR "
	  "receive that cannot get an LE for this long is fatal" },
	{ "env.fc_retry_usec_delay", "us", 1000, 0, 4294967296.0, "cassini-reference: FI_CXI_FC_RETRY_USEC_DELAY" },
	{ "env.cq_fill_percent", "%", 50, 1, 100, "cassini-reference: FI_CXI_CQ_FILL_PERCENT" },
	{ "env.default_cq_size", "count", 131072, 16, 1 << 24, "cassini-reference: FI_CXI_DEFAULT_CQ_SIZE" },
	{ "env.default_vni", "vni", 10, 0, 65535, "cassini-reference: FI_CXI_DEFAULT_VNI" },
	{ "env.optimized_mrs", "bool", 1, 0, 1, "cassini-reference: FI_CXI_OPTIMIZED_MRS=1" },
	{ "env.prov_key_cache", "bool", 1, 0, 1, "cassini-reference: FI_CXI_PROV_KEY_CACHE=1" },
	{ "env.mr_match_events", "bool", 0, 0, 1, "cassini-reference: FI_CXI_MR_MATCH_EVENTS=0" },
	{ "env.trunc_ok", "bool", 0, 0, 1, "cassini-reference: FI_CXI_TRUNC_OK=0" },
	{ "env.enable_writedata", "bool", 0, 0, 1,
	  "upstream prov/cxi: FI_CXI_ENABLE_WRITEDATA=0 (fi_writedata and its target completions need it)" },
};


enum env_type { ENV_BOOL, ENV_U32, ENV_U64, ENV_MODE };

struct env_var {
	const char *name; /* without FI_CXI_ */
	enum env_type type;
	size_t off;
	uint64_t min, max;
};

#define F(x) offsetof(struct sw_env, x)
static const struct env_var env_vars[] = {
	{ "RX_MATCH_MODE", ENV_MODE, F(rx_match_mode), 0, 0 },
	{ "HYBRID_PREEMPTIVE", ENV_BOOL, F(hybrid_preemptive), 0, 1 },
	{ "HYBRID_RECV_PREEMPTIVE", ENV_BOOL, F(hybrid_recv_preemptive), 0, 1 },
	{ "HYBRID_POSTED_RECV_PREEMPTIVE", ENV_BOOL, F(hybrid_posted_recv_preemptive), 0, 1 },
	{ "HYBRID_UNEXPECTED_MSG_PREEMPTIVE", ENV_BOOL, F(hybrid_unexpected_msg_preemptive), 0, 1 },
	{ "OFLOW_BUF_SIZE", ENV_U64, F(oflow_buf_size), 4096, 1ULL << 34 },
	{ "OFLOW_BUF_MIN_POSTED", ENV_U32, F(oflow_buf_min_posted), 1, 1024 },
	{ "REQ_BUF_SIZE", ENV_U64, F(req_buf_size), 4096, 1ULL << 34 },
	{ "REQ_BUF_MIN_POSTED", ENV_U32, F(req_buf_min_posted), 2, 1024 },
	{ "REQ_BUF_MAX_COUNT", ENV_U32, F(req_buf_max_count), 0, 1 << 20 },
	{ "RDZV_THRESHOLD", ENV_U32, F(rdzv_threshold), 0, 1u << 30 },
	{ "RDZV_GET_MIN", ENV_U32, F(rdzv_get_min), 0, 1u << 30 },
	{ "RDZV_EAGER_SIZE", ENV_U32, F(rdzv_eager_size), 0, 1u << 30 },
	{ "SW_RX_TX_INIT_MAX", ENV_U32, F(sw_rx_tx_init_max), 1, 1u << 20 },
	{ "RNR_MAX_TIMEOUT_US", ENV_U64, F(rnr_max_timeout_us), 0, 1ULL << 40 },
	{ "RNR_APPEND_RETRY_TIMEOUT_US", ENV_U64, F(rnr_append_retry_timeout_us), 0, 1ULL << 40 },
	{ "FC_RETRY_USEC_DELAY", ENV_U64, F(fc_retry_usec_delay), 0, 1ULL << 32 },
	{ "CQ_FILL_PERCENT", ENV_U32, F(cq_fill_percent), 1, 100 },
	{ "DEFAULT_CQ_SIZE", ENV_U32, F(default_cq_size), 16, 1u << 24 },
	{ "DEFAULT_VNI", ENV_U32, F(default_vni), 0, 65535 },
	{ "OPTIMIZED_MRS", ENV_BOOL, F(optimized_mrs), 0, 1 },
	{ "PROV_KEY_CACHE", ENV_BOOL, F(prov_key_cache), 0, 1 },
	{ "MR_MATCH_EVENTS", ENV_BOOL, F(mr_match_events), 0, 1 },
	{ "TRUNC_OK", ENV_BOOL, F(trunc_ok), 0, 1 },
	{ "ENABLE_WRITEDATA", ENV_BOOL, F(enable_writedata), 0, 1 },
};
#undef F

static const char *const mode_names[] = { "hardware", "software", "hybrid", NULL };

static void env_store(struct sw_env *e, const struct env_var *v, uint64_t x)
{
	char *base = (char *)e;
	switch (v->type) {
	case ENV_BOOL: *(bool *)(base + v->off) = x != 0; break;
	case ENV_U32: *(uint32_t *)(base + v->off) = (uint32_t)x; break;
	case ENV_U64: *(uint64_t *)(base + v->off) = x; break;
	case ENV_MODE: *(enum sw_match_mode *)(base + v->off) = (enum sw_match_mode)x; break;
	}
}

/* A request buffer's header room: the fabric header and the unrestricted Portals header of a message landing
 * in it (cassini_user_defs.h, packed: 20 + 43 bytes; upstream CXIP_REQ_BUF_HEADER_MAX_SIZE). */
#define REQ_BUF_HEADER_MAX 63u
#define SW_RX_TX_INIT_MIN 64u /* upstream CXIP_SW_RX_TX_INIT_MIN */

/* Every numeric value into its FI_CXI_* range (the env_vars rows). */
static void env_clamp(struct sw_env *e)
{
	char *base = (char *)e;
	for (size_t i = 0; i < ARRAY_SIZE(env_vars); i++) {
		const struct env_var *v = &env_vars[i];
		uint64_t x;
		if (v->type == ENV_U32)
			x = *(uint32_t *)(base + v->off);
		else if (v->type == ENV_U64)
			x = *(uint64_t *)(base + v->off);
		else
			continue;
		env_store(e, v, x < v->min ? v->min : x > v->max ? v->max : x);
	}
}

/* The corrections upstream's cxip_env_init makes to values it cannot use, here for every way values arrive
 * (a process's FI_CXI_* through the daemon, a scenario's cxi section): a request buffer smaller than one
 * eager message and its header left software receives waiting forever for room. */
void sw_env_correct(struct sw_env *e)
{
	/* Values that arrive unchecked (an endpoint open request carries the provider's FI_CXI_* as the
	 * process read them, or as a hand-written ring says) are brought into the ranges the FI_CXI_* and
	 * scenario paths refuse values outside of: an overflow buffer of 1 byte, or none posted
	 * (FI_CXI_OFLOW_BUF_MIN_POSTED=0), left hardware matching disabling and re-enabling the portal
	 * forever, since no unexpected message could ever land (Open MPI's mpi_checks hung). */
	env_clamp(e);
	e->msg_offload = e->rx_match_mode != SW_MATCH_SOFTWARE;
	if (e->rdzv_threshold > e->oflow_buf_size) {
		/* Upstream resets it to the default even when that is still above the buffer (and its get-minimum
		 * check below then wraps around); an eager message must fit in an overflow buffer, so not here. */
		uint64_t def = (uint64_t)param_find(cxi_params, ARRAY_SIZE(cxi_params), "env.rdzv_threshold")->def;
		e->rdzv_threshold = (uint32_t)(def < e->oflow_buf_size ? def : e->oflow_buf_size);
	}
	if (e->rdzv_get_min > e->oflow_buf_size - e->rdzv_threshold)
		e->rdzv_get_min = 0;
	if (e->rdzv_eager_size > e->rdzv_threshold)
		e->rdzv_eager_size = e->rdzv_threshold;
	uint64_t min_free = REQ_BUF_HEADER_MAX + (uint64_t)e->rdzv_threshold + e->rdzv_get_min;
	if (e->rx_match_mode != SW_MATCH_HARDWARE && e->req_buf_size < min_free)
		e->req_buf_size = min_free;
	if (e->req_buf_min_posted < 2)
		e->req_buf_min_posted = 2;
	/* req_buf_max_count 0 stays "8 x min_posted", resolved when an endpoint opens. */
	if (e->req_buf_max_count && e->req_buf_max_count < e->req_buf_min_posted)
		e->req_buf_max_count = e->req_buf_min_posted;
	if (e->sw_rx_tx_init_max < SW_RX_TX_INIT_MIN)
		e->sw_rx_tx_init_max = SW_RX_TX_INIT_MIN;
}


static void env_key(const struct env_var *v, char *key, size_t n)
{
	snprintf(key, n, "env.");
	size_t k = 4;
	for (const char *c = v->name; *c && k + 1 < n; c++)
		key[k++] = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
	key[k] = 0;
}

/* Defaults come from the parameter table, so the printed table and the model cannot disagree.  The table
 * is constant, so it is read once: every endpoint that opens starts from these defaults (a million of them
 * in the whole-machine scenario, each of which used to look its 25 variables up by name). */
static struct sw_env env_defaults;
static pthread_once_t env_defaults_once = PTHREAD_ONCE_INIT;

static void env_defaults_init(void)
{
	struct sw_env *e = &env_defaults;
	memset(e, 0, sizeof(*e));
	char key[64];
	for (size_t i = 0; i < ARRAY_SIZE(env_vars); i++) {
		env_key(&env_vars[i], key, sizeof(key));
		env_store(e, &env_vars[i], (uint64_t)param_find(cxi_params, ARRAY_SIZE(cxi_params), key)->def);
	}
	sw_env_correct(e);
}

void sw_env_defaults(struct sw_env *e)
{
	pthread_once(&env_defaults_once, env_defaults_init);
	*e = env_defaults;
}

int sw_env_parse(struct sw_env *e, const char *(*getenv_fn)(void *ctx, const char *name), void *ctx,
		 const char **bad)
{
	char name[64];
	for (size_t i = 0; i < ARRAY_SIZE(env_vars); i++) {
		const struct env_var *v = &env_vars[i];
		snprintf(name, sizeof(name), "FI_CXI_%s", v->name);
		const char *s = getenv_fn(ctx, name);
		if (!s)
			continue;
		uint64_t x = 0;
		if (v->type == ENV_MODE) {
			int k;
			for (k = 0; mode_names[k] && strcasecmp(s, mode_names[k]); k++)
				;
			if (!mode_names[k])
				goto fail;
			x = (uint64_t)k;
		} else {
			char *end;
			errno = 0;
			x = strtoull(s, &end, 0);
			if (errno || end == s || *end || x < v->min || x > v->max)
				goto fail;
		}
		env_store(e, v, x);
		continue;
fail:
		if (bad)
			*bad = env_vars[i].name;
		return -FI_EINVAL;
	}
	sw_env_correct(e);
	return 0;
}

void sw_env_from_cfg(struct sw_env *e, const struct cfg *c)
{
	char full[64];
	for (size_t i = 0; i < ARRAY_SIZE(env_vars); i++) {
		const struct env_var *v = &env_vars[i];
		env_key(v, full, sizeof(full));
		const char *key = full + 4;
		if (!cfg_has(c, key))
			continue;
		uint64_t x;
		switch (v->type) {
		case ENV_MODE: x = (uint64_t)cfg_enum(c, key, 0, mode_names); break;
		case ENV_BOOL: x = cfg_bool(c, key, false); break;
		default: x = cfg_u64(c, key, 0, v->min, v->max); break;
		}
		env_store(e, v, x);
	}
	sw_env_correct(e);
}

/* ---------------------------------------------------------------- the "cxi" section */


struct cxi_world {
	struct sw_env env;
	struct sw_costs costs;
};

static simtime_t ns_param(const struct cfg *c, const char *key)
{
	return (simtime_t)(param_get(c, param_find(cxi_params, ARRAY_SIZE(cxi_params), key)) * 1000.0 + 0.5);
}

static void costs_from(struct sw_costs *k, const struct cfg *c)
{
	k->kernel_call = ns_param(c, "kernel_call_ns");
	k->mr_cache_lookup = ns_param(c, "mr_cache_lookup_ns");
	k->mr_le_append = ns_param(c, "mr_le_append_ns");
	k->mr_event_poll = ns_param(c, "mr_event_poll_ns");
	k->mr_event_poll_max = ns_param(c, "mr_event_poll_max_us") * 1000;
	k->mr_bookkeeping = ns_param(c, "mr_bookkeeping_ns");
	k->map_page = ns_param(c, "map_page_ns");
	k->unmap_page = ns_param(c, "unmap_page_ns");
	k->ctrl_eq_slots = (uint32_t)param_get_u64(c, param_find(cxi_params, ARRAY_SIZE(cxi_params), "ctrl_eq_slots"));
	k->fc_state_change = ns_param(c, "fc_state_change_ns");
	k->fc_onload_entry = ns_param(c, "fc_onload_entry_ns");
	k->fc_replay_recv = ns_param(c, "fc_replay_recv_ns");
	k->buf_append = ns_param(c, "buf_append_ns");
	k->fc_reenable = ns_param(c, "fc_reenable_ns");
	k->fc_ctrl_rx = ns_param(c, "fc_ctrl_rx_ns");
	k->fc_ctrl_tx = ns_param(c, "fc_ctrl_tx_ns");
	k->fc_send_drop = ns_param(c, "fc_send_drop_ns");
	k->fc_send_replay = ns_param(c, "fc_send_replay_ns");
	k->fc_send_eagain = ns_param(c, "fc_send_eagain_ns");
	k->rnr_nack = ns_param(c, "rnr_nack_ns");
	k->rnr_retry = ns_param(c, "rnr_retry_ns");
}

static void cxi_build(struct sim *sim, const struct cfg *c)
{
	struct cxi_world *w = xcalloc(1, sizeof(*w));
	sw_env_defaults(&w->env);
	struct cfg env = cfg_section(c, "env");
	sw_env_from_cfg(&w->env, &env);
	costs_from(&w->costs, c);
	sim_world_set(sim, "cxi", w);
	sim_on_destroy(sim, free, w);
}

static struct model cxi_model = {
	.key = "cxi",
	.order = 25,
	.build = cxi_build,
	.params = cxi_params,
	.nparams = ARRAY_SIZE(cxi_params),
};
MODEL_REGISTER(cxi_model)

const struct sw_costs *sw_costs(struct sim *sim)
{
	struct cxi_world *w = sim_world_get(sim, "cxi");
	if (w)
		return &w->costs;
	/* No "cxi" section: the table's defaults. */
	w = xcalloc(1, sizeof(*w));
	sw_env_defaults(&w->env);
	struct cfg none = { 0 };
	costs_from(&w->costs, &none);
	sim_world_set(sim, "cxi", w);
	sim_on_destroy(sim, free, w);
	return &w->costs;
}

void sw_map_costs(struct sim *sim, struct sw_map_costs *out)
{
	const struct sw_costs *k = sw_costs(sim);
	out->kernel_call_ps = (uint64_t)k->kernel_call;
	out->map_page_ps = (uint64_t)k->map_page;
	out->unmap_page_ps = (uint64_t)k->unmap_page;
	out->cache_lookup_ps = (uint64_t)k->mr_cache_lookup;
}

void sw_env_scenario(struct sim *sim, struct sw_env *e)
{
	sw_costs(sim);
	struct cxi_world *w = sim_world_get(sim, "cxi");
	*e = w->env;
}

struct sw_host_price sw_host_work_price(struct sim *sim, const struct sw_host_work *w)
{
	struct sw_host_price p;
	/* Nearly every call (one per process step) has nothing to price: skip the cost table's lookup. */
	if (!(w->fc_state_changes | w->fc_onloaded | w->fc_recv_replays | w->buf_appends | w->fc_reenables |
	      w->ctrl_rx | w->ctrl_tx | w->kernel_calls | w->sleep | w->fc_send_drops | w->fc_send_replays |
	      w->fc_send_eagain | w->rnr_nacks | w->rnr_retries | w->rnr_append_retries)) {
		p.fc = p.rnr = 0;
		return p;
	}
	const struct sw_costs *k = sw_costs(sim);
	p.fc = w->fc_state_changes * k->fc_state_change + w->fc_onloaded * k->fc_onload_entry +
	       w->fc_recv_replays * k->fc_replay_recv + w->buf_appends * k->buf_append +
	       w->fc_reenables * k->fc_reenable + w->ctrl_rx * k->fc_ctrl_rx + w->ctrl_tx * k->fc_ctrl_tx +
	       w->kernel_calls * k->kernel_call + w->sleep + w->fc_send_drops * k->fc_send_drop +
	       w->fc_send_replays * k->fc_send_replay + w->fc_send_eagain * k->fc_send_eagain;
	p.rnr = w->rnr_nacks * k->rnr_nack + (w->rnr_retries + w->rnr_append_retries) * k->rnr_retry;
	return p;
}
