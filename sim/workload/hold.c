/* The classic "hold" model of event-queue benchmarking: a fixed population of pending events; each handler
 * schedules exactly one successor at a random increment, so the queue size stays constant.  It exercises
 * the engine alone and is the engine's benchmark and smoke scenario. */
#include <stdlib.h>

#include "../model.h"
#include "../rng.h"
#include "../stats.h"
#include "../util.h"

enum hold_dist { HOLD_EXP, HOLD_UNIFORM };

struct hold {
	struct rng rng;
	double mean_ps;
	enum hold_dist dist;
	uint64_t pending;
	uint64_t *fired;
	struct histogram *incr;
};

static const struct param hold_params[] = {
	{ "pending", "count", 10000, 1, 1e8, "hold-model population (benchmark definition)" },
	{ "mean_increment_ns", "ns", 1000, 0.001, 1e12, "assumed; only scales virtual time" },
};

static simtime_t draw(struct hold *h)
{
	double x = h->dist == HOLD_EXP ? rng_exp(&h->rng, h->mean_ps) : rng_uniform(&h->rng) * 2.0 * h->mean_ps;
	return (simtime_t)x;
}

static void hold_fire(struct sim *sim, void *obj, uint64_t arg)
{
	struct hold *h = obj;
	(void)arg;
	(*h->fired)++;
	simtime_t d = draw(h);
	hist_add(h->incr, d);
	sim_schedule(sim, d, hold_fire, h, 0);
}

static void hold_build(struct sim *sim, const struct cfg *c)
{
	static const char *const dists[] = { "exponential", "uniform", NULL };
	struct hold *h = xcalloc(1, sizeof(*h));
	h->pending = param_get_u64(c, &hold_params[0]);
	h->mean_ps = param_get(c, &hold_params[1]) * 1000.0;
	h->dist = cfg_enum(c, "distribution", HOLD_EXP, dists);
	rng_init(&h->rng, sim_seed(sim), "hold");
	h->fired = stats_counter(sim_stats(sim), "hold.fired");
	h->incr = stats_hist(sim_stats(sim), "hold.increment_ps");
	for (uint64_t i = 0; i < h->pending; i++)
		sim_schedule(sim, draw(h), hold_fire, h, 0);
	sim_world_set(sim, "hold", h);
	sim_on_destroy(sim, free, h);
}

static void hold_summary(struct sim *sim, FILE *f)
{
	struct hold *h = sim_world_get(sim, "hold");
	fprintf(f, "{\"pending\": %llu, \"fired\": %llu, \"mean_increment_ps\": %.0f}", (unsigned long long)h->pending,
		(unsigned long long)*h->fired, h->mean_ps);
}

static struct model hold_model = {
	.key = "hold",
	.order = 30,
	.build = hold_build,
	.summary = hold_summary,
	.params = hold_params,
	.nparams = ARRAY_SIZE(hold_params),
};
MODEL_REGISTER(hold_model)
