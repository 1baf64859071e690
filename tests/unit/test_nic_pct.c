/* The PCT connection table (sim/nic/pct.c) keeps only open connections: closed ones leave the hash table
 * (deletion that moves later entries of a probe run back).  Checked against a reference that remembers every
 * class's last use: a connection is open while its last use is less than the idle time old, a use opens one
 * when none is, and is refused (nothing changes) when `limit` are open.  Many classes that collide, grow the
 * table and come and go exercise every case of the deletion. */
#include <criterion/criterion.h>

#include "../../sim/nic/nic_impl.h"

#define KEYS 3000

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void against_reference(uint64_t seed, uint32_t nkeys, uint32_t limit, simtime_t idle, simtime_t max_step)
{
	static simtime_t last[KEYS];
	static bool seen[KEYS];
	memset(seen, 0, sizeof(seen));
	struct nic_pct_table *t = nic_pct_table_new();
	simtime_t now = 0;
	uint64_t s = seed, opened = 0, refused = 0;
	for (int i = 0; i < 200000; i++) {
		now += rnd(&s) % (max_step + 1);
		uint32_t k = (uint32_t)(rnd(&s) % nkeys);
		uint32_t open = 0;
		for (uint32_t j = 0; j < nkeys; j++)
			open += seen[j] && last[j] + idle > now;
		bool was_open = seen[k] && last[k] + idle > now;
		int want = was_open ? 0 : open >= limit ? -1 : 1;
		/* Keys as the NIC makes them: peer << 12 | pid class << 1 | restricted bit. */
		int got = nic_pct_table_use(t, ((uint64_t)k << 12) | ((k & 7) << 1), now, idle, limit);
		cr_assert_eq(got, want, "use %d of class %u at %lu: %d, want %d", i, k, (unsigned long)now, got, want);
		if (want >= 0) {
			seen[k] = true;
			last[k] = now;
		}
		opened += want == 1;
		refused += want < 0;
		cr_assert_eq(nic_pct_table_open(t), open + (want == 1));
	}
	cr_assert_gt(opened, 1000);
	if (limit < nkeys)
		cr_assert_gt(refused, 100);
	nic_pct_table_free(t);
}

Test(nic_pct, open_connections_match_reference_with_churn)
{
	against_reference(1, 300, UINT32_MAX, 5000, 100);
}

Test(nic_pct, many_classes_grow_and_shrink)
{
	against_reference(7, KEYS, UINT32_MAX, 20000, 50);
}

Test(nic_pct, refusals_at_the_limit_change_nothing)
{
	against_reference(3, 400, 40, 5000, 30);
}
