/* The provider's FI_CXI_* environment and host-side costs, and the "cxi" scenario section that sets both
 * for simulated processes. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../model.h"
#include "../util.h"
#include "sw_impl.h"

void sw_env_defaults(struct sw_env *e)
{
	memset(e, 0, sizeof(*e));
	e->rx_match_mode = SW_MATCH_HARDWARE;
	e->oflow_buf_size = 12ULL << 20;
	e->oflow_buf_min_posted = 3;
	e->req_buf_size = 12ULL << 20;
	e->req_buf_min_posted = 6;
	e->req_buf_max_count = 0;
	e->rdzv_threshold = 16384;
	e->rdzv_get_min = 2049;
	e->rdzv_eager_size = 2048;
	e->sw_rx_tx_init_max = 1024;
	e->rnr_max_timeout_us = 500000;
	e->fc_retry_usec_delay = 1000;
	e->cq_fill_percent = 50;
	e->default_cq_size = 131072;
	e->default_vni = 10;
	e->optimized_mrs = true;
	e->prov_key_cache = true;
	e->mr_match_events = false;
	e->trunc_ok = false;
	e->msg_offload = true;
}

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
	{ "FC_RETRY_USEC_DELAY", ENV_U64, F(fc_retry_usec_delay), 0, 1ULL << 32 },
	{ "CQ_FILL_PERCENT", ENV_U32, F(cq_fill_percent), 1, 100 },
	{ "DEFAULT_CQ_SIZE", ENV_U32, F(default_cq_size), 16, 1u << 24 },
	{ "DEFAULT_VNI", ENV_U32, F(default_vni), 0, 65535 },
	{ "OPTIMIZED_MRS", ENV_BOOL, F(optimized_mrs), 0, 1 },
	{ "PROV_KEY_CACHE", ENV_BOOL, F(prov_key_cache), 0, 1 },
	{ "MR_MATCH_EVENTS", ENV_BOOL, F(mr_match_events), 0, 1 },
	{ "TRUNC_OK", ENV_BOOL, F(trunc_ok), 0, 1 },
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

static void env_derive(struct sw_env *e)
{
	e->msg_offload = e->rx_match_mode != SW_MATCH_SOFTWARE;
	if (e->req_buf_min_posted < 2)
		e->req_buf_min_posted = 2;
	if (!e->req_buf_max_count)
		e->req_buf_max_count = 8 * e->req_buf_min_posted;
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
	env_derive(e);
	return 0;
}

void sw_env_from_cfg(struct sw_env *e, const struct cfg *c)
{
	char key[64];
	for (size_t i = 0; i < ARRAY_SIZE(env_vars); i++) {
		const struct env_var *v = &env_vars[i];
		size_t n = strlen(v->name);
		for (size_t k = 0; k <= n; k++)
			key[k] = (char)(v->name[k] >= 'A' && v->name[k] <= 'Z' ? v->name[k] - 'A' + 'a' : v->name[k]);
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
	env_derive(e);
}

/* ---------------------------------------------------------------- the "cxi" section */

static const struct param cxi_params[] = {
	{ "kernel_call_ns", "ns", 2500, 0, 1e9,
	  "assumed; seed 000 Fig 9: reg/dereg paths that enter the kernel are the slow ones" },
	{ "mr_map_ns", "ns", 1500, 0, 1e9, "assumed: pinning/mapping a small buffer for an MR (cxil_map)" },
	{ "mr_cache_lookup_ns", "ns", 100, 0, 1e9,
	  "assumed; seed 000 Fig 9: provider key cache makes reg and dereg cheap (~0.1 us)" },
	{ "mr_le_append_ns", "ns", 400, 0, 1e9, "assumed: software side of an MR LE append/unlink and its wait" },
	{ "mr_event_poll_ns", "ns", 200, 0, 1e9,
	  "assumed; seed 000 Fig 9: match events cost ~2 us for reg + dereg, 10x the key cache" },
	{ "mr_event_poll_max_us", "us", 100, 0, 1e9, "upstream: MR match-event close polls up to 100 us" },
	{ "mr_bookkeeping_ns", "ns", 50, 0, 1e9, "assumed: per reg/dereg provider data-structure work" },
	{ "ctrl_eq_slots", "count", 4096, 16, 1 << 24, "assumed: control EQ size (FC messages, MR events)" },
};

struct cxi_world {
	struct sw_env env;
	struct sw_costs costs;
};

static void costs_from(struct sw_costs *k, const struct cfg *c)
{
	k->kernel_call = (simtime_t)(param_get(c, &cxi_params[0]) * 1000.0 + 0.5);
	k->mr_map = (simtime_t)(param_get(c, &cxi_params[1]) * 1000.0 + 0.5);
	k->mr_cache_lookup = (simtime_t)(param_get(c, &cxi_params[2]) * 1000.0 + 0.5);
	k->mr_le_append = (simtime_t)(param_get(c, &cxi_params[3]) * 1000.0 + 0.5);
	k->mr_event_poll = (simtime_t)(param_get(c, &cxi_params[4]) * 1000.0 + 0.5);
	k->mr_event_poll_max = (simtime_t)(param_get(c, &cxi_params[5]) * 1e6 + 0.5);
	k->mr_bookkeeping = (simtime_t)(param_get(c, &cxi_params[6]) * 1000.0 + 0.5);
	k->ctrl_eq_slots = (uint32_t)param_get_u64(c, &cxi_params[7]);
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

void sw_env_scenario(struct sim *sim, struct sw_env *e)
{
	sw_costs(sim);
	struct cxi_world *w = sim_world_get(sim, "cxi");
	*e = w->env;
}
