/* A virtual-time owner for testing libcxisim-clock.so without the daemon: a shared library (so that its own
 * clock reads come from "the registering library", as the provider's do) that registers cxisim_clock_ops
 * over one process-wide virtual clock.  Sleeps jump the clock to their deadline; waits take 1 ms of wall
 * time each and advance the clock by `wait_step_ns` (capped at the deadline), returning early like the
 * provider's ops->wait does. */
#ifndef CLOCK_OWNER_H
#define CLOCK_OWNER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MS 1000000ull
#define S 1000000000ull

static inline uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * S + (uint64_t)t->tv_nsec;
}

/* The absolute time ns after clock c's now (for TIMER_ABSTIME / timed waits). */
static inline struct timespec abs_after(clockid_t c, uint64_t ns)
{
	struct timespec t;
	clock_gettime(c, &t);
	uint64_t a = ts_ns(&t) + ns;
	t.tv_sec = (time_t)(a / S);
	t.tv_nsec = (long)(a % S);
	return t;
}

/* The clock test programs' assertion (and, above, their time helpers): prints "FAIL file:line: condition: message" and exits 1. */
#define CHECK(cond, ...)                                                                                  \
	do {                                                                                             \
		if (!(cond)) {                                                                           \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                           \
			printf(__VA_ARGS__);                                                             \
			printf("\n");                                                                    \
			exit(1);                                                                         \
		}                                                                                        \
	} while (0)

/* Register the ops with the interposer (found with dlsym, as the provider does); virtual time starts at
 * start_ns.  0 on success, -1 when no interposer is preloaded. */
int clock_owner_start(uint64_t start_ns, uint64_t wait_step_ns);
void clock_owner_stop(void);
uint64_t clock_owner_vt_ns(void);
/* Reads of the real clocks made from inside the owner library (must not be virtual). */
uint64_t clock_owner_real_ns(int clock_id);
/* How many times the interposer called each op. */
uint64_t clock_owner_calls(const char *op);

#endif
