/* Stats output rules: zero counters and empty histograms are written nowhere; per-entity names (a component
 * that is a decimal number) are summarised by family in the JSON and listed one by one in the CSV; the
 * output depends on names and values only, never on registration order. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "../../sim/rng.h"
#include "../../sim/stats.h"

static char *dump(const struct stats *st, int json)
{
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	if (json)
		stats_dump_json(st, f, 0);
	else
		stats_dump_csv(st, f);
	fclose(f);
	return buf;
}

static struct json_object *dump_json(const struct stats *st)
{
	char *buf = dump(st, 1);
	struct json_object *o = json_tokener_parse(buf);
	cr_assert_not_null(o, "stats JSON must parse: %s", buf);
	free(buf);
	return o;
}

static struct json_object *get(struct json_object *o, const char *path)
{
	char part[128];
	while (*path) {
		size_t n = strcspn(path, "/");
		snprintf(part, sizeof(part), "%.*s", (int)n, path);
		struct json_object *v;
		if (!json_object_object_get_ex(o, part, &v))
			return NULL;
		o = v;
		path += n + (path[n] == '/');
	}
	return o;
}

static long long num(struct json_object *o, const char *path)
{
	struct json_object *v = get(o, path);
	cr_assert_not_null(v, "missing %s", path);
	return (long long)json_object_get_int64(v);
}

Test(stats, family_names)
{
	char buf[256];
	static const struct {
		const char *name, *family;
		bool entity;
	} cases[] = {
		{ "nic.3.C_CNTR_LPE_NET_MATCH_PRIORITY_0", "nic.*.C_CNTR_LPE_NET_MATCH_PRIORITY_0", true },
		{ "fabric.sw.12.port.7.tc.0.tx_bytes", "fabric.sw.*.port.*.tc.*.tx_bytes", true },
		{ "nic.8192.le_pool.32.used", "nic.*.le_pool.*.used", true },
		{ "fabric.route.minimal_pkts", "fabric.route.minimal_pkts", false },
		{ "x.4999", "x.*", true },
		{ "7", "*", true },
		{ "a1.2b.c", "a1.2b.c", false }, /* digits inside a component do not make an entity */
		{ "a..b", "a..b", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool e = stats_family_name(cases[i].name, buf, sizeof(buf));
		cr_assert_str_eq(buf, cases[i].family, "%s", cases[i].name);
		cr_assert_eq(e, cases[i].entity, "%s", cases[i].name);
	}
}

Test(stats, zero_counters_and_empty_histograms_are_not_written)
{
	struct stats *st = stats_create();
	(*stats_counter(st, "a.hits")) = 3;
	stats_counter(st, "a.misses");
	stats_counter(st, "nic.%d.idle", 5);
	hist_add(stats_hist(st, "a.lat"), 10);
	stats_hist(st, "a.never");
	struct json_object *o = dump_json(st);
	cr_assert_eq(num(o, "counters/a.hits"), 3);
	cr_assert_null(get(o, "counters/a.misses"), "a zero counter is absent");
	cr_assert_null(get(o, "counter_families/nic.*.idle"), "a family whose members are all zero is absent");
	cr_assert_eq(num(o, "histograms/a.lat/count"), 1);
	cr_assert_null(get(o, "histograms/a.never"), "an empty histogram is absent");
	cr_assert_eq(num(o, "counters_registered"), 3);
	cr_assert_eq(num(o, "counters_zero"), 2);
	cr_assert_eq(num(o, "counters_per_entity"), 0);
	cr_assert_eq(num(o, "histograms_registered"), 2);
	cr_assert_eq(num(o, "histograms_empty"), 1);
	json_object_put(o);
	char *csv = dump(st, 0);
	cr_assert_not_null(strstr(csv, "a.hits,counter,3\n"));
	cr_assert_null(strstr(csv, "a.misses"));
	cr_assert_null(strstr(csv, "nic.5.idle"));
	cr_assert_null(strstr(csv, "a.never"));
	cr_assert_not_null(strstr(csv, "a.lat.count,hist,1\n"));
	free(csv);
	stats_destroy(st);
}

Test(stats, per_entity_counters_are_summarised_by_family)
{
	struct stats *st = stats_create();
	/* nic.0..9: value 2*i, except that nic.3 and nic.7 tie at the maximum */
	for (int i = 0; i < 10; i++)
		(*stats_counter(st, "nic.%d.C_CNTR_LPE_PUT_CMDS", i)) = (uint64_t)(2 * i);
	(*stats_counter(st, "nic.7.C_CNTR_LPE_PUT_CMDS")) = 100;
	(*stats_counter(st, "nic.3.C_CNTR_LPE_PUT_CMDS")) = 100;
	(*stats_counter(st, "fabric.sw.1.port.2.tc.0.tx_pkts")) = 4;
	(*stats_counter(st, "fabric.sw.11.port.0.tc.3.tx_pkts")) = 6;
	stats_counter(st, "fabric.sw.11.port.1.tc.3.tx_pkts");
	struct json_object *o = dump_json(st);
	struct json_object *cs = get(o, "counters");
	cr_assert_eq(json_object_object_length(cs), 0, "no per-entity name among the plain counters");
	const char *f = "counter_families/nic.*.C_CNTR_LPE_PUT_CMDS/";
	char path[128];
#define FAM(field) (snprintf(path, sizeof(path), "%s%s", f, field), num(o, path))
	cr_assert_eq(FAM("members"), 10);
	cr_assert_eq(FAM("nonzero"), 9);
	cr_assert_eq(FAM("sum"), 2 * 45 - 6 - 14 + 200);
	cr_assert_eq(FAM("min"), 0);
	cr_assert_eq(FAM("max"), 100);
	cr_assert_str_eq(json_object_get_string(get(o, "counter_families/nic.*.C_CNTR_LPE_PUT_CMDS/max_at")),
			 "nic.3.C_CNTR_LPE_PUT_CMDS", "ties go to the first name in name order");
	f = "counter_families/fabric.sw.*.port.*.tc.*.tx_pkts/";
	cr_assert_eq(FAM("members"), 3);
	cr_assert_eq(FAM("nonzero"), 2);
	cr_assert_eq(FAM("sum"), 10);
	cr_assert_str_eq(json_object_get_string(get(o, "counter_families/fabric.sw.*.port.*.tc.*.tx_pkts/max_at")),
			 "fabric.sw.11.port.0.tc.3.tx_pkts");
	cr_assert_eq(num(o, "counters_per_entity"), 11);
	cr_assert_eq(num(o, "counters_zero"), 2);
#undef FAM
	json_object_put(o);
	/* the CSV keeps every nonzero value, per entity */
	char *csv = dump(st, 0);
	cr_assert_not_null(strstr(csv, "\nnic.3.C_CNTR_LPE_PUT_CMDS,counter,100\n"));
	cr_assert_not_null(strstr(csv, "\nnic.9.C_CNTR_LPE_PUT_CMDS,counter,18\n"));
	cr_assert_null(strstr(csv, "nic.0.C_CNTR_LPE_PUT_CMDS"));
	cr_assert_null(strstr(csv, "fabric.sw.11.port.1.tc.3.tx_pkts"));
	free(csv);
	stats_destroy(st);
}

Test(stats, per_entity_histograms_are_merged)
{
	struct stats *st = stats_create();
	for (int e = 0; e < 4; e++) {
		struct histogram *h = stats_hist(st, "ep.%d.lat_ps", e);
		for (uint64_t v = 1; e < 3 && v <= 100; v++)
			hist_add(h, v * (uint64_t)(e + 1));
	}
	struct json_object *o = dump_json(st);
	cr_assert_null(get(o, "histograms/ep.0.lat_ps"));
	cr_assert_eq(num(o, "histogram_families/ep.*.lat_ps/members"), 4);
	cr_assert_eq(num(o, "histogram_families/ep.*.lat_ps/nonempty"), 3);
	cr_assert_eq(num(o, "histogram_families/ep.*.lat_ps/count"), 300);
	cr_assert_eq(num(o, "histogram_families/ep.*.lat_ps/sum"), 5050 * 6);
	cr_assert_eq(num(o, "histogram_families/ep.*.lat_ps/min"), 1);
	cr_assert_eq(num(o, "histogram_families/ep.*.lat_ps/max"), 300);
	long long p50 = num(o, "histogram_families/ep.*.lat_ps/p50");
	/* the merged median of {1..100} u {2..200 step 2} u {3..300 step 3} is 83 (150 values lie below it);
	 * the log-linear buckets give it within 1% */
	cr_assert(p50 >= 82 && p50 <= 84, "p50 %lld", p50);
	cr_assert_eq(num(o, "histograms_per_entity"), 3);
	cr_assert_eq(num(o, "histograms_empty"), 1);
	json_object_put(o);
	stats_destroy(st);
}

/* Same names and values registered in another order give the same bytes. */
Test(stats, output_independent_of_registration_order)
{
	char *out[2][2];
	for (int pass = 0; pass < 2; pass++) {
		struct stats *st = stats_create();
		for (int k = 0; k < 3000; k++) {
			int i = pass ? 2999 - k : k;
			(*stats_counter(st, "nic.%d.ep.%d.x", i % 37, i)) = (uint64_t)(i % 5);
			(*stats_counter(st, "g.%d", i % 11)) += 1;
			if (i % 100 == 0)
				hist_add(stats_hist(st, "nic.%d.lat", i % 7), (uint64_t)i);
		}
		(*stats_counter(st, "plain")) = 9;
		out[pass][0] = dump(st, 1);
		out[pass][1] = dump(st, 0);
		stats_destroy(st);
	}
	cr_assert_str_eq(out[0][0], out[1][0]);
	cr_assert_str_eq(out[0][1], out[1][1]);
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 2; k++)
			free(out[p][k]);
}

/* Registration is a find-or-create: after many more names (the index grows several times), a name gives
 * back the slot it got first, and lookups without creating agree. */
Test(stats, slots_survive_growth)
{
	struct stats *st = stats_create();
	uint64_t *first[64];
	for (int i = 0; i < 64; i++)
		*(first[i] = stats_counter(st, "early.%d", i)) = (uint64_t)i + 1;
	for (int i = 0; i < 200000; i++)
		(*stats_counter(st, "nic.%d.late", i))++;
	for (int i = 0; i < 64; i++) {
		char name[32];
		snprintf(name, sizeof(name), "early.%d", i);
		cr_assert_eq(stats_counter(st, "%s", name), first[i]);
		cr_assert_eq(stats_find_counter(st, name), first[i]);
		cr_assert_eq(*first[i], (uint64_t)i + 1);
	}
	cr_assert_null(stats_find_counter(st, "nic.200000.late"));
	cr_assert_null(stats_find_hist(st, "early.3"), "a counter is not a histogram");
	struct json_object *o = dump_json(st);
	cr_assert_eq(num(o, "counter_families/nic.*.late/members"), 200000);
	cr_assert_eq(num(o, "counter_families/early.*/sum"), 64 * 65 / 2);
	json_object_put(o);
	stats_destroy(st);
}

/* Counter blocks are n counters in every respect: the same names and values registered one by one or as
 * blocks give the same JSON and CSV, byte for byte (per-entity members summarised by family with the
 * right members, min, max and max_at; members without a number written by name; zeros written nowhere). */
Test(stats, blocks_dump_as_plain_counters)
{
	static const char *const names[] = { "a", "b.7.c", "C_CNTR_X_0", "le_pool.12.used", "zero" };
	static const char *const flat[] = { "rate", "total" };
	char *out[2][2];
	for (int pass = 0; pass < 2; pass++) {
		struct stats *st = stats_create();
		for (int nic = 0; nic < 300; nic++) {
			uint64_t v[5] = { (uint64_t)(nic % 7), (uint64_t)(nic == 123 ? 99 : nic % 3), (uint64_t)nic,
					  nic % 2 ? 5u : 0u, 0 };
			if (pass) {
				uint64_t *b = stats_counter_block(st, names, 5, "nic.%d", nic);
				memcpy(b, v, sizeof(v));
			} else {
				for (int i = 0; i < 5; i++)
					*stats_counter(st, "nic.%d.%s", nic, names[i]) = v[i];
			}
		}
		/* A block whose members have no number anywhere: written one by one. */
		if (pass) {
			uint64_t *b = stats_counter_block(st, flat, 2, "workload.x");
			b[0] = 3;
			b[1] = 0;
		} else {
			*stats_counter(st, "workload.x.rate") = 3;
			*stats_counter(st, "workload.x.total") = 0;
		}
		*stats_counter(st, "plain") = 1;
		out[pass][0] = dump(st, 1);
		out[pass][1] = dump(st, 0);
		stats_destroy(st);
	}
	cr_assert_str_eq(out[0][0], out[1][0]);
	cr_assert_str_eq(out[0][1], out[1][1]);
	struct json_object *o = json_tokener_parse(out[1][0]);
	cr_assert_eq(num(o, "counters_registered"), 300 * 5 + 2 + 1);
	cr_assert_eq(num(o, "counter_families/nic.*.b.*.c/max"), 99);
	cr_assert_str_eq(json_object_get_string(get(o, "counter_families/nic.*.b.*.c/max_at")), "nic.123.b.7.c");
	cr_assert_eq(num(o, "counters/workload.x.rate"), 3);
	cr_assert_null(get(o, "counter_families/nic.*.zero"));
	json_object_put(o);
	for (int p = 0; p < 2; p++)
		for (int k = 0; k < 2; k++)
			free(out[p][k]);
}

/* A member's full name finds its slot, through stats_find_counter and stats_counter alike (which creates
 * nothing then), whatever dots the member name holds; registering a block again returns the same slots. */
Test(stats, block_members_are_found_by_name)
{
	static const char *const names[] = { "sim.les_searched", "le_pool.3.alloc_fail", "x" };
	struct stats *st = stats_create();
	uint64_t *b7 = stats_counter_block(st, names, 3, "nic.%u", 7u);
	uint64_t *b8 = stats_counter_block(st, names, 3, "nic.%u", 8u);
	cr_assert_neq(b7, b8);
	cr_assert_eq(stats_counter_block(st, names, 3, "nic.7"), b7);
	cr_assert_eq(stats_find_counter(st, "nic.7.sim.les_searched"), &b7[0]);
	cr_assert_eq(stats_find_counter(st, "nic.8.le_pool.3.alloc_fail"), &b8[1]);
	cr_assert_eq(stats_counter(st, "nic.%u.%s", 8u, "x"), &b8[2]);
	cr_assert_null(stats_find_counter(st, "nic.9.x"));
	cr_assert_null(stats_find_counter(st, "nic.7.y"));
	cr_assert_null(stats_find_counter(st, "nic.7"));
	cr_assert_eq(stats_size(st), 6);
	*stats_counter(st, "nic.7.y") = 1; /* not a member: a counter of its own */
	cr_assert_eq(stats_size(st), 7);
	struct json_object *o = dump_json(st);
	cr_assert_eq(num(o, "counters_registered"), 7);
	cr_assert_eq(num(o, "counters_zero"), 6);
	json_object_put(o);
	stats_destroy(st);
}

/* Quantiles come within 1% (relative) of the sample's own exact quantile (rank floor(q n)) on known
 * distributions, including narrow ones whose quantiles all fall inside a few buckets (closed-loop
 * latencies) and ones spanning many powers of two. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void check_precision(const char *what, uint64_t *v, size_t n)
{
	struct histogram *h = calloc(1, sizeof(*h));
	for (size_t i = 0; i < n; i++)
		hist_add(h, v[i]);
	qsort(v, n, sizeof(*v), cmp_u64);
	static const double q[] = { 0.01, 0.1, 0.25, 0.45, 0.5, 0.75, 0.9, 0.99, 0.999 };
	for (size_t k = 0; k < sizeof(q) / sizeof(q[0]); k++) {
		double exact = (double)v[(size_t)(q[k] * (double)n)];
		double got = (double)hist_quantile(h, q[k]);
		double rel = exact ? (got - exact) / exact : got;
		cr_assert(rel <= 0.01 && rel >= -0.01, "%s: q%.3f = %.0f, exact %.0f (%.3f%%)", what, q[k], got, exact,
			  100 * rel);
	}
	cr_assert_eq(hist_quantile(h, 1.0), v[n - 1]);
	free(h);
}

Test(stats, histogram_percentiles_within_one_percent)
{
	enum { N = 200000 };
	uint64_t *v = malloc(N * sizeof(*v));
	struct rng r;
	rng_init(&r, 7, "hist");
	for (size_t i = 0; i < N; i++) /* exponential, mean 10 us in ps */
		v[i] = (uint64_t)rng_exp(&r, 1e7);
	check_precision("exponential", v, N);
	for (size_t i = 0; i < N; i++) /* uniform over [1 ms, 1.05 ms): a closed-loop latency, 5% wide */
		v[i] = 1000000000ULL + rng_below(&r, 50000000ULL);
	check_precision("narrow uniform", v, N);
	for (size_t i = 0; i < N; i++) { /* log-uniform over 1 ns .. 1 s */
		double e = rng_uniform(&r) * 9.0 + 3.0;
		v[i] = (uint64_t)pow(10.0, e);
	}
	check_precision("log-uniform", v, N);
	for (size_t i = 0; i < N; i++) /* bimodal: 2 us or 40 us, +-1% */
		v[i] = (i % 10 ? 2000000ULL : 40000000ULL) + rng_below(&r, 40000ULL);
	check_precision("bimodal", v, N);
	/* The worst case of in-bucket interpolation: every sample of a bucket at its lower edge.  Two point masses,
	 * 2^20 ps and 1.5 x 2^20 ps (both bucket edges whatever the resolution), half the samples each: the
	 * 0.45 quantile is placed 90% of the way across the first bucket, 0.7% above the exact 2^20 with 128
	 * sub-buckets per power of two and 1.4% with 64, so this case pins the resolution. */
	for (size_t i = 0; i < N; i++)
		v[i] = i % 2 ? 3ULL << 19 : 1ULL << 20;
	check_precision("point masses at bucket edges", v, N);
	for (size_t i = 0; i < N; i++) /* small integers are exact */
		v[i] = rng_below(&r, 100);
	check_precision("small", v, N);
	free(v);
}
