/* NIC resource tables (PtlTEs, EQs, CTs) grow while their records are in use.  Regression for the daemon
 * abort "LE pool released below zero" with a third process on one node: LEs pointed into a PtlTE array
 * that moved when it grew past 8 entries. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

enum { NEPS = 24 };

static uint32_t le_used(struct nic *nic)
{
	uint32_t n = 0;
	for (unsigned pe = 0; pe < C_PE_COUNT; pe++)
		n += nic_pe_le_used(nic, pe);
	return n;
}

Test(nic_tables, les_survive_ptlte_table_growth)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct nic *nic = nic_get(s.sim, 1);
	uint32_t base = le_used(nic);
	static struct tep eps[NEPS];
	static uint8_t bufs[NEPS][4][64];

	/* The first endpoint posts receives (LEs on its PtlTE) before the others exist. */
	cr_assert_eq(tep_open(&eps[0], &s, 1, NULL), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sw_recv(eps[0].ep, (uint64_t)(uintptr_t)bufs[0][i], sizeof(bufs[0][i]), NULL, 0, 0, 0, (void *)(uintptr_t)(i + 1)), 0);
	sim_run(s.sim);
	uint32_t with_first = le_used(nic);
	cr_assert_gt(with_first, base);

	/* Enough endpoints on the same NIC to grow every table several times. */
	for (int e = 1; e < NEPS; e++)
		cr_assert_eq(tep_open(&eps[e], &s, 1, NULL), 0, "endpoint %d", e);
	sim_run(s.sim);
	uint32_t all = le_used(nic);
	cr_assert_geq(all, with_first);

	/* Closing the first endpoint returns exactly its LEs, to the pools they came from. */
	tep_close(&eps[0]);
	sim_run(s.sim);
	cr_assert_eq(le_used(nic), all - (with_first - base));
	for (int e = 1; e < NEPS; e++)
		tep_close(&eps[e]);
	sim_run(s.sim);
	cr_assert_eq(le_used(nic), base);
	tsim_free(&s);
}
