/* Regression test for an engine fix made for the NIC model: after sim_run_until(T) stops short of the next
 * event E (T < E), an event scheduled at T + d < E must still fire before E.  The daemon and RNR tests
 * drive the engine exactly this way. */
#include <criterion/criterion.h>

#include "../../sim/engine.h"

static simtime_t fired[4];
static int nfired;

static void mark(struct sim *sim, void *obj, uint64_t arg)
{
	(void)obj;
	(void)arg;
	fired[nfired++] = sim_now(sim);
}

Test(nic_engine, schedule_after_run_until_keeps_order)
{
	struct sim *s = sim_create(1);
	nfired = 0;
	sim_schedule(s, SIM_US(1), mark, NULL, 0);
	sim_schedule(s, SIM_US(1000), mark, NULL, 0);
	sim_run_until(s, SIM_US(10));
	cr_assert_eq(nfired, 1);
	cr_assert_eq(sim_now(s), SIM_US(10));
	sim_schedule(s, SIM_US(5), mark, NULL, 0); /* at 15 us, before the one at 1000 us */
	sim_run(s);
	cr_assert_eq(nfired, 3);
	cr_assert_eq(fired[1], SIM_US(15));
	cr_assert_eq(fired[2], SIM_US(1000));
	sim_destroy(s);
}
