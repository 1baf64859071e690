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

/* The clock test programs' assertion: prints "FAIL file:line: condition: message" and exits 1. */
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
