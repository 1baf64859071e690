#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s, uint64_t h)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static void seed_from(struct rng *r, uint64_t run_seed, uint64_t name_hash)
{
	/* Mix the two through splitmix so that nearby seeds and similar names give unrelated states. */
	uint64_t x = run_seed;
	uint64_t a = splitmix64(&x);
	x = a ^ name_hash;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	if (!(r->s[0] | r->s[1] | r->s[2] | r->s[3]))
		r->s[0] = 1; /* the all-zero state is a fixed point */
}

void rng_init(struct rng *r, uint64_t run_seed, const char *name)
{
	seed_from(r, run_seed, fnv1a(name, 0xcbf29ce484222325ULL));
}

void rng_init_idx(struct rng *r, uint64_t run_seed, const char *name, uint64_t idx)
{
	uint64_t h = fnv1a(name, 0xcbf29ce484222325ULL);
	h ^= '#';
	h *= 0x100000001b3ULL;
	for (int i = 0; i < 8; i++) {
		h ^= (idx >> (8 * i)) & 0xff;
		h *= 0x100000001b3ULL;
	}
	seed_from(r, run_seed, h);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	/* Lemire's multiply-shift with rejection of the biased low range. */
	unsigned __int128 m = (unsigned __int128)rng_next(r) * n;
	uint64_t lo = (uint64_t)m;
	if (lo < n) {
		uint64_t thresh = -n % n;
		while (lo < thresh) {
			m = (unsigned __int128)rng_next(r) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double rng_uniform(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

double rng_exp(struct rng *r, double mean)
{
	return -mean * log1p(-rng_uniform(r));
}
