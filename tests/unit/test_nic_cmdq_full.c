/* A full command queue is -FI_EAGAIN for the application and a wait for the software layer, never a fatal
 * error (regression: rpc_server with 8,180 preposted receives died with "internal command queue overflow",
 * fi_recv -256).  Application receives past the queue's room get -FI_EAGAIN and succeed once the NIC has
 * fetched; internal commands (MR appends) that find the queue full wait in order and all complete; every
 * message then reaches its receive. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

enum { RX_SIZE = 16, NRECV = 6000, NMR = 6000 };

static void small_queues(struct sw_ep_attr *a)
{
	a->rx_size = RX_SIZE; /* target queue: 4 x (16 + 1024) = 4,160 slots */
}

Test(nic_cmdq_full, receives_get_eagain_then_succeed)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, small_queues), 0);
	static uint8_t bufs[NRECV][8];
	int posted = 0, eagain = 0;
	while (posted < NRECV) {
		int rc = sw_recv(b.ep, (uint64_t)(uintptr_t)bufs[posted], 8, NULL, 0, 0, 0, (void *)(uintptr_t)(posted + 1));
		if (rc == -FI_EAGAIN) {
			eagain++;
			sim_run(s.sim); /* progress: the NIC fetches the queued appends */
			continue;
		}
		cr_assert_eq(rc, 0, "receive %d: %d", posted, rc);
		posted++;
	}
	cr_assert_gt(eagain, 0, "the queue never filled: the test does not exercise -FI_EAGAIN");
	cr_assert_null(sw_ep_fatal(b.ep));
	sim_run(s.sim);
	/* Every receive is live: NRECV messages land, one in each, in post order. */
	static uint64_t payload[NRECV];
	int sent = 0;
	while (sent < NRECV) {
		payload[sent] = (uint64_t)sent;
		int rc = sw_send(a.ep, (uint64_t)(uintptr_t)&payload[sent], 8, NULL, sw_ep_addr(b.ep), 0, 0, FI_COMPLETION,
				 NULL);
		if (rc == -FI_EAGAIN) {
			sim_run(s.sim);
			continue;
		}
		cr_assert_eq(rc, 0);
		sent++;
	}
	sim_run(s.sim);
	cr_assert_eq(tep_count(&b, FI_RECV, 0), NRECV);
	for (int i = 0; i < NRECV; i++)
		cr_assert_eq(*(uint64_t *)bufs[i], (uint64_t)i, "receive %d got message %" PRIu64, i, *(uint64_t *)bufs[i]);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

static void reg_done(void *ctx, struct sw_mr *mr, int ret)
{
	(void)mr;
	cr_assert_eq(ret, 0);
	(*(int *)ctx)++;
}

Test(nic_cmdq_full, internal_commands_wait_in_order)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep b;
	cr_assert_eq(tep_open(&b, &s, 1, small_queues), 0);
	static uint8_t mem[NMR][64];
	static struct sw_mr *mrs[NMR];
	int done = 0;
	/* Registrations queue their appends internally, all at one instant: more than the queue holds. */
	for (int i = 0; i < NMR; i++)
		cr_assert_eq(sw_mr_reg(b.ep, (uint64_t)(uintptr_t)mem[i], sizeof(mem[i]), FI_REMOTE_WRITE, 1000 + i, 0, reg_done,
				       &done, &mrs[i]),
			     0, "registration %d", i);
	sim_run(s.sim);
	cr_assert_null(sw_ep_fatal(b.ep), "fatal: %s", sw_ep_fatal(b.ep));
	cr_assert_eq(done, NMR, "every registration completed (%d of %d)", done, NMR);
	cr_assert_gt(sw_ep_stats(b.ep)->cmdq_backlogged, 0, "the queue never filled: the backlog was not exercised");
	done = 0;
	for (int i = 0; i < NMR; i++)
		cr_assert_eq(sw_mr_close(mrs[i], reg_done, &done), 0);
	sim_run(s.sim);
	cr_assert_eq(done, NMR);
	tep_close(&b);
	tsim_free(&s);
}
