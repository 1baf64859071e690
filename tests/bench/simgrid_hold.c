/* The hold model written against SimGrid 3.32 (C API, Debian's libsimgrid): N actors, each sleeping a
 * random time in a loop.  Every wake-up is one event, the same work unit as one handler of our engine's
 * hold model.  Prints events per wall second. */
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long iters;
static long long wakeups;

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void holder(int argc, char **argv)
{
	uint64_t state = (uint64_t)atoll(argv[argc - 1]);
	for (long i = 0; i < iters; i++) {
		/* uniform in [0, 2 us), as in our benchmark */
		sg_actor_sleep_for((double)(splitmix(&state) >> 11) * 0x1.0p-53 * 2e-6);
		wakeups++;
	}
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s PLATFORM.xml ACTORS ITERATIONS [simgrid --cfg=...]\n", argv[0]);
		return 2;
	}
	const char *platform = argv[1];
	long actors = atol(argv[2]);
	iters = atol(argv[3]);
	int sargc = argc - 3;
	argv[3] = argv[0];
	simgrid_init(&sargc, argv + 3);
	simgrid_load_platform(platform);
	sg_host_t host = sg_host_by_name("h0");
	char seed[32];
	for (long a = 0; a < actors; a++) {
		snprintf(seed, sizeof(seed), "%ld", a + 1);
		char *av[] = { "holder", seed, NULL };
		sg_actor_create("holder", host, holder, 2, av);
	}
	double t0 = wall();
	simgrid_run();
	double dt = wall() - t0;
	printf("simgrid hold model: actors=%ld events=%lld wall=%.3f s rate=%.3f M events/s\n", actors, wakeups, dt,
	       (double)wakeups / dt * 1e-6);
	return 0;
}
