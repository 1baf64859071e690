/* The "fabric_traffic" model: synthetic traffic for fabric studies, sent straight through the fabric
 * interface NICs use (it attaches as the NIC of every endpoint it touches, so it cannot share a scenario
 * with the NIC model on the same endpoints).
 *
 *   flows:   explicit flows {src, dst, bytes, message_bytes, start_ns, ordered, bulk, tc, window}; a flow
 *            sends ceil(bytes / message_bytes) messages, all at start (window 0) or keeping `window`
 *            messages in flight (the next one leaves when one is delivered).
 *   pattern: uniform (destination uniform over the other endpoints) or group_shift (uniform over the
 *            endpoints of the next group, dragonfly only); each endpoint offers `load` of its link (in
 *            wire time) as a Poisson stream of message_bytes messages from start_ns to duration_us.
 *            Accepted load is measured over [warmup_us, duration_us].
 * Summary: per flow bytes, completion time, throughput (over its life, and over the measurement window
 * [measure_start_us, measure_end_us] if given) and reorder count; for the pattern, offered and accepted
 * load and message latency percentiles.
 */
#include <stdlib.h>

#include "../model.h"
#include "../pool.h"
#include "../rng.h"
#include "../stats.h"
#include "../util.h"
#include "dragonfly.h"
#include "fabric.h"

struct tg_flow {
	uint32_t src, dst, tc, window;
	uint8_t flags;
	uint64_t bytes, msg_bytes;
	uint32_t nmsgs, sent, delivered;
	uint64_t delivered_bytes, window_bytes;
	simtime_t start, end, first_lat, min_lat;
	uint32_t max_idx, reordered;
	bool any;
};

enum tg_pattern { TG_NONE, TG_UNIFORM, TG_GROUP_SHIFT };

struct tg {
	struct sim *sim;
	struct fabric *fab;
	struct pool msgs;
	struct tg_flow *flows;
	uint32_t nflows;
	/* pattern */
	enum tg_pattern pattern;
	double load;
	uint32_t msg_bytes, neps, group_eps, ngroups, tc;
	uint8_t flags;
	simtime_t start, stop, warm, mean_gap, msg_wire;
	struct rng *rng;
	simtime_t m_start, m_end; /* per-flow measurement window */
	uint64_t pat_sent, pat_delivered, win_delivered;
	struct histogram *lat;
};

static const struct param tg_params[] = {
	{ "load", "fraction", 0.5, 0.0001, 1, "scenario: offered load per endpoint, fraction of link wire time" },
	{ "message_bytes", "bytes", 2048, 0, 4294967295.0, "scenario: pattern message size" },
	{ "duration_us", "us", 20, 0, 1e9, "scenario: pattern generation stops here" },
	{ "warmup_us", "us", 5, 0, 1e9, "scenario: accepted load is measured after this" },
	{ "start_ns", "ns", 0, 0, 1e12, "scenario: pattern start" },
	{ "endpoints", "count", 0, 0, FABRIC_MAX_NICS, "scenario: pattern uses the first N endpoints (0 = all)" },
};

static struct fabric_msg *new_msg(struct tg *g, uint32_t src, uint32_t dst, uint32_t bytes, uint32_t tc,
				  uint8_t flags, void *ctx, uint64_t idx)
{
	struct fabric_msg *m = pool_get(&g->msgs);
	*m = (struct fabric_msg){ .src = src, .dst = dst, .tc = (uint8_t)tc, .flags = flags, .bytes = bytes,
				  .ctx = ctx, .ctx_arg = idx };
	return m;
}

static void flow_send_one(struct tg *g, struct tg_flow *f)
{
	uint64_t off = (uint64_t)f->sent * f->msg_bytes;
	uint64_t b = f->bytes - off < f->msg_bytes ? f->bytes - off : f->msg_bytes;
	struct fabric_msg *m = new_msg(g, f->src, f->dst, (uint32_t)b, f->tc, f->flags, f, f->sent);
	f->sent++;
	fabric_send(g->sim, g->fab, m);
}

static void ev_flow_send(struct sim *sim, void *obj, uint64_t arg)
{
	struct tg *g = sim_world_get(sim, "fabric_traffic");
	struct tg_flow *f = obj;
	(void)arg;
	uint32_t n = f->window ? f->window : f->nmsgs;
	while (n-- && f->sent < f->nmsgs)
		flow_send_one(g, f);
}

static void ev_flow_refill(struct sim *sim, void *obj, uint64_t arg);

static void flow_delivered(struct tg *g, struct tg_flow *f, struct fabric_msg *m)
{
	simtime_t now = sim_now(g->sim), lat = now - m->sent;
	uint32_t idx = (uint32_t)m->ctx_arg;
	if (!f->delivered)
		f->first_lat = f->min_lat = lat;
	if (lat < f->min_lat)
		f->min_lat = lat;
	if (f->any && idx < f->max_idx)
		f->reordered++;
	else
		f->max_idx = idx;
	f->any = true;
	f->delivered++;
	f->delivered_bytes += m->bytes;
	if (now > g->m_start && now <= g->m_end)
		f->window_bytes += m->bytes;
	f->end = now;
	if (f->window && f->sent < f->nmsgs)
		sim_schedule(g->sim, 0, ev_flow_refill, f, 0); /* keep `window` messages in flight */
}

static void tg_deliver(struct sim *sim, void *nic, struct fabric_msg *m)
{
	struct tg *g = nic;
	(void)sim;
	if (m->ctx) {
		flow_delivered(g, m->ctx, m);
	} else {
		simtime_t now = sim_now(g->sim);
		g->pat_delivered++;
		if (m->sent >= g->warm)
			hist_add(g->lat, now - m->sent);
		if (now >= g->warm && now <= g->stop)
			g->win_delivered++;
	}
	pool_put(&g->msgs, m);
}

static void ev_flow_refill(struct sim *sim, void *obj, uint64_t arg)
{
	struct tg *g = sim_world_get(sim, "fabric_traffic");
	(void)arg;
	flow_send_one(g, obj);
}

static uint32_t pick_dst(struct tg *g, uint32_t src, struct rng *r)
{
	if (g->pattern == TG_GROUP_SHIFT) {
		uint32_t grp = (src / g->group_eps + 1) % g->ngroups;
		return grp * g->group_eps + (uint32_t)rng_below(r, g->group_eps);
	}
	uint32_t d = (uint32_t)rng_below(r, g->neps - 1);
	return d >= src ? d + 1 : d;
}

static void ev_gen(struct sim *sim, void *obj, uint64_t src)
{
	struct tg *g = obj;
	struct rng *r = &g->rng[src];
	struct fabric_msg *m = new_msg(g, (uint32_t)src, pick_dst(g, (uint32_t)src, r), g->msg_bytes, g->tc, g->flags,
				       NULL, 0);
	g->pat_sent++;
	fabric_send(sim, g->fab, m);
	simtime_t gap = (simtime_t)rng_exp(r, (double)g->mean_gap);
	if (sim_now(sim) + gap < g->stop)
		sim_schedule(sim, gap, ev_gen, g, src);
}

static uint8_t read_flags(const struct cfg *c)
{
	return (uint8_t)((cfg_bool(c, "ordered", false) ? FABRIC_ORDERED : 0) | (cfg_bool(c, "bulk", false) ? FABRIC_BULK : 0));
}

static void attach(struct tg *g, uint32_t ep)
{
	fabric_attach(g->fab, ep, tg_deliver, g);
}

static void build_flows(struct tg *g, const struct cfg *c, uint32_t nep)
{
	int n = cfg_array_len(c, "flows");
	g->nflows = (uint32_t)n;
	g->flows = xcalloc((size_t)n + 1, sizeof(*g->flows));
	for (int i = 0; i < n; i++) {
		struct cfg fc = cfg_array_obj(c, "flows", i);
		struct tg_flow *f = &g->flows[i];
		f->src = (uint32_t)cfg_u64(&fc, "src", 0, 0, nep - 1);
		f->dst = (uint32_t)cfg_u64(&fc, "dst", 0, 0, nep - 1);
		f->bytes = cfg_u64(&fc, "bytes", 0, 0, UINT64_MAX / 2);
		f->msg_bytes = cfg_u64(&fc, "message_bytes", f->bytes ? f->bytes : 1, 1, UINT32_MAX);
		if (f->msg_bytes > f->bytes && f->bytes)
			f->msg_bytes = f->bytes;
		f->start = cfg_time_ps(&fc, "start_ns", 0, 1000, 1e12);
		f->flags = read_flags(&fc);
		f->tc = (uint32_t)cfg_u64(&fc, "tc", 0, 0, 255);
		f->window = (uint32_t)cfg_u64(&fc, "window", 0, 0, UINT32_MAX);
		uint64_t nm = f->bytes ? (f->bytes + f->msg_bytes - 1) / f->msg_bytes : 1;
		if (nm > UINT32_MAX)
			cfg_fail(&fc, "message_bytes", "flow of %llu messages; use larger messages",
				 (unsigned long long)nm);
		f->nmsgs = (uint32_t)nm;
		attach(g, f->src);
		attach(g, f->dst);
		sim_schedule_at(g->sim, f->start, ev_flow_send, f, 0);
	}
}

static void build_pattern(struct tg *g, const struct cfg *c, uint32_t nep)
{
	static const char *const patterns[] = { "none", "uniform", "group_shift", NULL };
	g->pattern = cfg_enum(c, "pattern", TG_NONE, patterns);
	if (g->pattern == TG_NONE)
		return;
	g->load = param_get(c, &tg_params[0]);
	g->msg_bytes = (uint32_t)param_get_u64(c, &tg_params[1]);
	g->stop = cfg_time_ps(c, "duration_us", tg_params[2].def, 1e6, tg_params[2].max);
	g->warm = cfg_time_ps(c, "warmup_us", tg_params[3].def, 1e6, tg_params[3].max);
	g->start = cfg_time_ps(c, "start_ns", tg_params[4].def, 1e3, tg_params[4].max);
	g->neps = (uint32_t)param_get_u64(c, &tg_params[5]);
	g->tc = (uint32_t)cfg_u64(c, "tc", 0, 0, 255);
	g->flags = read_flags(c);
	if (!g->neps)
		g->neps = nep;
	if (g->neps > nep || g->neps < 2)
		cfg_fail(c, "endpoints", "%u endpoints asked; the fabric has %u (need at least 2)", g->neps, nep);
	if (g->warm >= g->stop)
		cfg_fail(c, "warmup_us", "the measurement window [warmup_us, duration_us] is empty");
	if (g->pattern == TG_GROUP_SHIFT) {
		struct df *d = sim_world_get(g->sim, "fabric.dragonfly");
		if (!d)
			cfg_fail(c, "pattern", "group_shift needs fabric.topology: dragonfly");
		g->group_eps = d->a * d->p;
		g->ngroups = d->g;
		if (g->ngroups < 2)
			cfg_fail(c, "pattern", "group_shift needs at least 2 groups");
		g->neps = nep;
	}
	g->msg_wire = fabric_wire_time(g->fab, g->msg_bytes);
	g->mean_gap = (simtime_t)((double)g->msg_wire / g->load);
	g->rng = xcalloc(g->neps, sizeof(*g->rng));
	for (uint32_t i = 0; i < g->neps; i++) {
		rng_init_idx(&g->rng[i], sim_seed(g->sim), "fabric_traffic.ep", i);
		attach(g, i);
		simtime_t first = g->start + (simtime_t)rng_exp(&g->rng[i], (double)g->mean_gap);
		if (first < g->stop)
			sim_schedule_at(g->sim, first, ev_gen, g, i);
	}
}

static void tg_free(void *p)
{
	struct tg *g = p;
	pool_free_all(&g->msgs);
	free(g->flows);
	free(g->rng);
	free(g);
}

static void tg_build(struct sim *sim, const struct cfg *c)
{
	struct tg *g = xcalloc(1, sizeof(*g));
	g->sim = sim;
	g->fab = fabric_of(sim);
	if (!g->fab)
		cfg_fail(c, NULL, "fabric_traffic needs a fabric section");
	pool_init(&g->msgs, sizeof(struct fabric_msg), 1024);
	g->lat = stats_hist(sim_stats(sim), "fabric_traffic.latency_ps");
	sim_world_set(sim, "fabric_traffic", g);
	sim_on_destroy(sim, tg_free, g);
	uint32_t nep = fabric_num_endpoints(g->fab);
	g->m_start = cfg_time_ps(c, "measure_start_us", 0, 1e6, 1e9);
	g->m_end = cfg_time_ps(c, "measure_end_us", 0, 1e6, 1e9);
	if (g->m_end <= g->m_start)
		g->m_end = g->m_start = 0;
	build_flows(g, c, nep);
	build_pattern(g, c, nep);
}

static double gbps(uint64_t bytes, simtime_t ps)
{
	return ps ? (double)bytes * 8.0 / ((double)ps * 1e-3) : 0.0; /* bits per ns = Gb/s */
}

static void tg_summary(struct sim *sim, FILE *f)
{
	struct tg *g = sim_world_get(sim, "fabric_traffic");
	fputs("{\"flows\": [", f);
	for (uint32_t i = 0; i < g->nflows; i++) {
		struct tg_flow *fl = &g->flows[i];
		simtime_t dur = fl->end > fl->start ? fl->end - fl->start : 0;
		fprintf(f, "%s\n    {\"src\": %u, \"dst\": %u, \"bytes\": %llu, \"messages\": %u, \"delivered\": %u, "
			   "\"delivered_bytes\": %llu, \"start_ps\": %llu, \"end_ps\": %llu, \"gbps\": %.4f, "
			   "\"window_gbps\": %.4f, \"first_latency_ps\": %llu, \"min_latency_ps\": %llu, \"reordered\": %u}",
			i ? "," : "", fl->src, fl->dst, (unsigned long long)fl->bytes, fl->nmsgs, fl->delivered,
			(unsigned long long)fl->delivered_bytes, (unsigned long long)fl->start,
			(unsigned long long)fl->end, gbps(fl->delivered_bytes, dur),
			gbps(fl->window_bytes, g->m_end - g->m_start), (unsigned long long)fl->first_lat,
			(unsigned long long)fl->min_lat, fl->reordered);
	}
	fputs(g->nflows ? "\n  ]" : "]", f);
	if (g->pattern != TG_NONE) {
		static const char *const names[] = { "none", "uniform", "group_shift" };
		simtime_t win = g->stop - g->warm;
		double accepted = (double)g->win_delivered * (double)g->msg_wire / ((double)win * g->neps);
		fprintf(f, ",\n  \"pattern\": {\"name\": \"%s\", \"endpoints\": %u, \"message_bytes\": %u, "
			   "\"offered_load\": %.4f, \"accepted_load\": %.6f, \"window_ps\": %llu, \"sent\": %llu, "
			   "\"delivered\": %llu, \"delivered_in_window\": %llu, \"latency_ps\": {\"count\": %llu, "
			   "\"mean\": %.0f, \"p50\": %llu, \"p99\": %llu, \"max\": %llu}}",
			names[g->pattern], g->neps, g->msg_bytes, g->load, accepted, (unsigned long long)win,
			(unsigned long long)g->pat_sent, (unsigned long long)g->pat_delivered,
			(unsigned long long)g->win_delivered, (unsigned long long)g->lat->count,
			g->lat->count ? (double)g->lat->sum / (double)g->lat->count : 0.0,
			(unsigned long long)hist_quantile(g->lat, 0.5), (unsigned long long)hist_quantile(g->lat, 0.99),
			(unsigned long long)g->lat->max);
	}
	fputc('}', f);
}

static struct model tg_model = {
	.key = "fabric_traffic",
	.order = 30,
	.build = tg_build,
	.summary = tg_summary,
	.params = tg_params,
	.nparams = ARRAY_SIZE(tg_params),
};
MODEL_REGISTER(tg_model)
