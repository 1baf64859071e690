/* Object pools recycle records; RNG streams are reproducible per (seed, name) and independent. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../sim/pool.h"
#include "../../sim/rng.h"

Test(pool, reuses_returned_objects_without_growing)
{
	struct pool p;
	pool_init(&p, 40, 64);
	void *a[64];
	for (int i = 0; i < 64; i++)
		a[i] = pool_get(&p);
	cr_assert_eq(p.allocated, 64);
	cr_assert_eq(p.nslabs, 1);
	for (int i = 0; i < 64; i++)
		for (int j = i + 1; j < 64; j++)
			cr_assert_neq(a[i], a[j]);
	/* Returned objects come back (LIFO) and no new slab is carved while any is free. */
	for (int round = 0; round < 1000; round++) {
		void *x = a[round % 64];
		pool_put(&p, x);
		void *y = pool_get(&p);
		cr_assert_eq(x, y);
	}
	cr_assert_eq(p.allocated, 64);
	cr_assert_eq(p.live, 64);
	void *extra = pool_get(&p);
	cr_assert_eq(p.nslabs, 2, "a 65th live object needs a second slab");
	cr_assert_eq(p.live, 65);
	pool_put(&p, extra);
	for (int i = 0; i < 64; i++)
		pool_put(&p, a[i]);
	cr_assert_eq(p.live, 0);
	pool_free_all(&p);
}

Test(pool, objects_are_aligned_and_disjoint)
{
	struct pool p;
	pool_init(&p, 13, 8);
	char *o[32];
	for (int i = 0; i < 32; i++) {
		o[i] = pool_get(&p);
		cr_assert_eq((uintptr_t)o[i] % 8, 0);
		memset(o[i], i, 13);
	}
	for (int i = 0; i < 32; i++)
		for (int k = 0; k < 13; k++)
			cr_assert_eq(o[i][k], i, "object %d overwritten", i);
	pool_free_all(&p);
}

/* A poisoned pool (sw requests) hands out whole, writable objects, keeps its accounting, and stays poisoned
 * after pool_free_all; under ASan every byte of a handed-out object must be addressable. */
Test(pool, poisoned_pool_objects_are_usable_and_flag_survives_free_all)
{
	struct pool p;
	pool_init(&p, 100, 4);
	cr_assert_not(p.poison);
	p.poison = true;
	for (int round = 0; round < 2; round++) {
		unsigned char *o[9];
		for (int i = 0; i < 9; i++) {
			o[i] = pool_get(&p);
			memset(o[i], 0xa0 + i, 100);
		}
		cr_assert_eq(p.live, 9);
		for (int i = 0; i < 9; i++)
			cr_assert_eq(o[i][99], 0xa0 + i);
		for (int i = 0; i < 9; i++)
			pool_put(&p, o[i]);
		cr_assert_eq(p.live, 0);
		cr_assert_eq(pool_get(&p), o[8], "LIFO reuse");
		pool_put(&p, o[8]);
		pool_free_all(&p);
		cr_assert(p.poison);
		cr_assert_eq(p.nslabs, 0);
	}
	pool_free_all(&p);
}

/* The arena packs records into 2 MiB-aligned chunks (so they share huge pages): zeroed, 64-byte aligned,
 * disjoint, consecutive within a chunk, a new chunk only when the current one is full. */
Test(arena, records_packed_zeroed_aligned_in_huge_page_chunks)
{
	struct arena a = { 0 };
	enum { N = 20000, SZ = 200 }; /* rounded to 256: 8,192 per chunk, three chunks */
	static unsigned char *r[N];
	for (int i = 0; i < N; i++) {
		r[i] = arena_alloc(&a, SZ);
		cr_assert_eq((uintptr_t)r[i] % 64, 0);
		for (int b = 0; b < SZ; b++)
			cr_assert_eq(r[i][b], 0, "record %d byte %d not zeroed", i, b);
		memset(r[i], 0xa5, SZ);
		if (i && (uintptr_t)r[i] % (2u << 20))
			cr_assert_eq(r[i], r[i - 1] + 256, "record %d not packed after %d", i, i - 1);
	}
	cr_assert_eq(a.nchunks, 3);
	for (size_t c = 0; c < a.nchunks; c++)
		cr_assert_eq((uintptr_t)a.chunks[c] % (2u << 20), 0, "chunk %zu not 2 MiB aligned", c);
	cr_assert_eq(a.used, (size_t)N * 256);
	cr_assert_geq(arena_bytes(&a), 3 * (2u << 20));
	arena_free(&a);
	cr_assert_eq(a.nchunks, 0);
	cr_assert_eq(arena_bytes(&a), 0);
}

/* Pools carving from one arena (pool_init_from) lay out records in the order they are taken, packed at the
 * arena's alignment, whatever pool each comes from; a returned record is the next one its pool hands out;
 * the arena's chunks are counted in arena_mapped_bytes until it is freed. */
Test(arena, pools_sharing_an_arena_hand_out_adjacent_records)
{
	struct arena a = { .align = 8 };
	struct pool x, y;
	uint64_t before = arena_mapped_bytes();
	pool_init_from(&x, 112, &a);
	pool_init_from(&y, 72, &a);
	char *x1 = pool_get(&x), *y1 = pool_get(&y), *y2 = pool_get(&y), *x2 = pool_get(&x);
	cr_assert_eq(y1, x1 + 112);
	cr_assert_eq(y2, y1 + 72);
	cr_assert_eq(x2, y2 + 72);
	cr_assert_eq(x.allocated, 2);
	cr_assert_eq(y.allocated, 2);
	cr_assert_eq(pool_bytes(&x), 2 * 112);
	cr_assert_eq(arena_mapped_bytes(), before + (2u << 20));
	pool_put(&y, y1);
	cr_assert_eq(pool_get(&y), y1);
	char *y3 = pool_get(&y);
	cr_assert_eq(y3, x2 + 112, "a new record follows the last one carved");
	pool_free_all(&x);
	pool_free_all(&y);
	arena_free(&a);
	cr_assert_eq(arena_mapped_bytes(), before);
	cr_assert_eq(a.align, 8, "the alignment survives arena_free");
}

Test(rng, same_seed_and_name_reproduce)
{
	struct rng a, b;
	rng_init(&a, 1234, "nic.3.rnr");
	rng_init(&b, 1234, "nic.3.rnr");
	for (int i = 0; i < 10000; i++)
		cr_assert_eq(rng_next(&a), rng_next(&b));
	rng_init_idx(&a, 9, "client", 77);
	rng_init_idx(&b, 9, "client", 77);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(rng_below(&a, 1000), rng_below(&b, 1000));
}

/* Pearson correlation of two streams' uniforms. */
static double corr(struct rng *a, struct rng *b, int n)
{
	double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
	for (int i = 0; i < n; i++) {
		double x = rng_uniform(a), y = rng_uniform(b);
		sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y;
	}
	double cov = sxy / n - (sx / n) * (sy / n);
	return cov / sqrt((sxx / n - (sx / n) * (sx / n)) * (syy / n - (sy / n) * (sy / n)));
}

Test(rng, streams_are_independent)
{
	struct rng a, b, c, d, e;
	rng_init(&a, 1, "nic.0");
	rng_init(&b, 1, "nic.1");  /* neighbouring name */
	rng_init(&c, 2, "nic.0");  /* neighbouring seed */
	rng_init_idx(&d, 1, "nic", 0);
	rng_init_idx(&e, 1, "nic", 1);
	const int n = 200000;
	/* |r| for independent streams has standard deviation 1/sqrt(n) ~ 0.0022; 0.01 is > 4 sigma. */
	cr_assert_lt(fabs(corr(&a, &b, n)), 0.01);
	cr_assert_lt(fabs(corr(&a, &c, n)), 0.01);
	cr_assert_lt(fabs(corr(&d, &e, n)), 0.01);
	/* No two of them share even their first output. */
	struct rng s[4];
	rng_init(&s[0], 1, "x");
	rng_init(&s[1], 1, "y");
	rng_init(&s[2], 2, "x");
	rng_init_idx(&s[3], 1, "x", 0);
	uint64_t v[4];
	for (int i = 0; i < 4; i++)
		v[i] = rng_next(&s[i]);
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			cr_assert_neq(v[i], v[j]);
}

Test(rng, distributions)
{
	struct rng r;
	rng_init(&r, 5, "dist");
	const int n = 400000;
	uint64_t hist[10] = { 0 };
	double sum = 0;
	for (int i = 0; i < n; i++) {
		uint64_t k = rng_below(&r, 10);
		cr_assert_lt(k, 10);
		hist[k]++;
		sum += rng_exp(&r, 3.0);
	}
	for (int k = 0; k < 10; k++) /* expected 40000, sd 190: allow 5 sd */
		cr_assert(hist[k] > 39050 && hist[k] < 40950, "bucket %d: %lu", k, hist[k]);
	cr_assert(fabs(sum / n - 3.0) < 0.03, "exp mean %f", sum / n);
	cr_assert_eq(rng_below(&r, 1), 0);
}
