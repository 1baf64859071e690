/* Seeded random streams, one per component.
 *
 * Each stream is xoshiro256** seeded through splitmix64 from (run seed, FNV-1a hash of the component's name),
 * so a component's draws depend only on the run seed and its own name, never on how its events interleave
 * with other components' events.
 */
#ifndef CXISIM_RNG_H
#define CXISIM_RNG_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

/* Seed a stream named e.g. "nic.17.rnr" from the run seed. */
void rng_init(struct rng *r, uint64_t run_seed, const char *name);
/* Same, with an integer index appended to the name (avoids snprintf in builders). */
void rng_init_idx(struct rng *r, uint64_t run_seed, const char *name, uint64_t idx);

uint64_t rng_next(struct rng *r);
/* Uniform in [0, n), n > 0, without modulo bias. */
uint64_t rng_below(struct rng *r, uint64_t n);
/* Uniform double in [0, 1). */
double rng_uniform(struct rng *r);
/* Exponential with the given mean. */
double rng_exp(struct rng *r, double mean);

#endif
