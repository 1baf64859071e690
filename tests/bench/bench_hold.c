/* Engine benchmark: the hold model with a fixed number of pending events.  Each handler draws an
 * increment from its RNG stream and schedules one successor.  Prints events per wall second.
 *
 * usage: bench_hold [PENDING [EVENTS [DIST]]]
 *   uniform  increments uniform in [0, 2 us) (the default, and the classic hold benchmark)
 *   bimodal  90% uniform in [1, 100] ns, 10% exactly +500 us (packet hops vs. retransmit timers)
 *   packet   30% at +0 (a handler scheduling at now), 60% in [1, 100] ns, 10% +500 us
 *   exp      exponential, mean 1 us
 * The skewed ones check that the queue does not depend on a well-spread distribution.  In steady state
 * nearly all pending events of bimodal and packet are timers (a timer lives 5000 times longer than a hop),
 * while nearly all events fired are hops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../sim/engine.h"
#include "../../sim/rng.h"

enum dist { UNIFORM, BIMODAL, PACKET, EXPONENTIAL };

struct hold {
	struct rng rng;
	enum dist dist;
};

static simtime_t near_or_timer(struct rng *r, unsigned zero_pct)
{
	uint64_t p = rng_below(r, 100);
	if (p < zero_pct)
		return 0;
	if (p < 90)
		return SIM_NS(1) + rng_below(r, SIM_NS(99) + 1);
	return SIM_US(500);
}

static simtime_t draw(struct hold *h)
{
	switch (h->dist) {
	case UNIFORM: return rng_below(&h->rng, SIM_US(2));
	case BIMODAL: return near_or_timer(&h->rng, 0);
	case PACKET: return near_or_timer(&h->rng, 30);
	case EXPONENTIAL: return (simtime_t)rng_exp(&h->rng, (double)SIM_US(1));
	}
	return 0;
}

static void fire(struct sim *sim, void *obj, uint64_t arg)
{
	struct hold *h = obj;
	(void)arg;
	sim_schedule(sim, draw(h), fire, h, 0);
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "uniform", "bimodal", "packet", "exp" };
	uint64_t pending = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000;
	uint64_t events = argc > 2 ? strtoull(argv[2], NULL, 0) : 20000000;
	struct hold h = { .dist = UNIFORM };
	if (argc > 3) {
		unsigned i = 0;
		while (i < 4 && strcmp(argv[3], names[i]))
			i++;
		if (i == 4) {
			fprintf(stderr, "bench_hold: unknown distribution '%s' (uniform, bimodal, packet, exp)\n", argv[3]);
			return 2;
		}
		h.dist = (enum dist)i;
	}
	struct sim *sim = sim_create(1);
	rng_init(&h.rng, 1, "hold");
	/* With a fixed +500 us timer, a population started at t = 0 would move in synchronized waves for
	 * many periods; starting it spread over one period gives the steady state at once. */
	for (uint64_t i = 0; i < pending; i++)
		sim_schedule(sim, h.dist == BIMODAL || h.dist == PACKET ? rng_below(&h.rng, SIM_US(500)) : draw(&h),
			     fire, &h, 0);
	/* Warm up so the queue reaches its steady shape before timing. */
	sim_set_limits(sim, (struct sim_limits){ .time_limit = SIM_TIME_MAX, .event_limit = pending * 2 });
	sim_run(sim);
	sim_set_limits(sim, (struct sim_limits){ .time_limit = SIM_TIME_MAX, .event_limit = pending * 2 + events });
	double t0 = wall();
	sim_run(sim);
	double dt = wall() - t0;
	/* The default line keeps its historical format (tests/bench/engine.sh parses it). */
	printf("engine hold model: pending=%llu events=%llu %s%s%swall=%.3f s rate=%.2f M events/s\n",
	       (unsigned long long)pending, (unsigned long long)events, h.dist == UNIFORM ? "" : "dist=",
	       h.dist == UNIFORM ? "" : names[h.dist], h.dist == UNIFORM ? "" : " ", dt, (double)events / dt * 1e-6);
	sim_destroy(sim);
	return 0;
}
