/* Engine benchmark: the hold model with a fixed number of pending events.  Each handler draws a
 * uniform increment from its RNG stream and schedules one successor.  Prints events per wall second. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../sim/engine.h"
#include "../../sim/rng.h"

struct hold {
	struct rng rng;
	uint64_t range_ps; /* increments uniform in [0, range) */
};

static void fire(struct sim *sim, void *obj, uint64_t arg)
{
	struct hold *h = obj;
	(void)arg;
	sim_schedule(sim, rng_below(&h->rng, h->range_ps), fire, h, 0);
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	uint64_t pending = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000;
	uint64_t events = argc > 2 ? strtoull(argv[2], NULL, 0) : 20000000;
	struct sim *sim = sim_create(1);
	struct hold h = { .range_ps = 2000000 };
	rng_init(&h.rng, 1, "hold");
	for (uint64_t i = 0; i < pending; i++)
		sim_schedule(sim, rng_below(&h.rng, h.range_ps), fire, &h, 0);
	/* Warm up so the queue reaches its steady shape before timing. */
	sim_set_limits(sim, (struct sim_limits){ .time_limit = SIM_TIME_MAX, .event_limit = pending * 2 });
	sim_run(sim);
	sim_set_limits(sim, (struct sim_limits){ .time_limit = SIM_TIME_MAX, .event_limit = pending * 2 + events });
	double t0 = wall();
	sim_run(sim);
	double dt = wall() - t0;
	printf("engine hold model: pending=%llu events=%llu wall=%.3f s rate=%.2f M events/s\n",
	       (unsigned long long)pending, (unsigned long long)events, dt, (double)events / dt * 1e-6);
	sim_destroy(sim);
	return 0;
}
