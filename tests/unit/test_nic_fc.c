/* Flow control and hybrid matching under constrained LE pools, mirroring the upstream provider's
 * test_sw.sh runs (le_pools max_alloc=10: tagged/fc in hardware and hybrid mode). */
#include <criterion/criterion.h>

#include "nic_fclib.h"

#define THREE_NICS_MAX10                                                                                    \
	"{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 3},"                                        \
	" \"nic\": {\"le_pools\": [{\"pool\": 0, \"max_alloc\": 10}]}}"

static void hw_mode(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_HARDWARE;
	a->env.oflow_buf_size = 256 * 1024;
}

static void hybrid_mode(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_HYBRID;
	a->env.oflow_buf_size = 256 * 1024;
	a->env.req_buf_size = 256 * 1024;
	a->env.req_buf_min_posted = 2;
}

/* Receive everything two senders sent and check exactly-once, in-order-per-sender delivery. */
static void receive_all(struct tsim *s, struct tep *r, uint32_t total_per_sender, uint32_t nsenders)
{
	uint32_t total = total_per_sender * nsenders;
	uint8_t(*bufs)[FC_MSG_LEN] = calloc(total, FC_MSG_LEN);
	uint32_t posted = 0;
	while (posted < total) {
		int rc = sw_recv(r->ep, (uint64_t)(uintptr_t)bufs[posted], FC_MSG_LEN, NULL, 0xbeef, 0, FI_TAGGED,
				 (void *)(uintptr_t)posted);
		if (rc == -FI_EAGAIN) {
			sim_run(s->sim);
			cr_assert_null(sw_ep_fatal(r->ep) ? NULL : NULL);
			continue;
		}
		cr_assert_eq(rc, 0);
		posted++;
	}
	sim_run(s->sim);
	cr_assert_eq(r->n, total, "every message delivered (%zu of %u)", r->n, total);
	uint32_t *next = calloc(nsenders, sizeof(*next));
	for (size_t i = 0; i < r->n; i++) {
		cr_assert_eq(r->comps[i].c.err, 0);
		cr_assert_eq(r->comps[i].c.len, FC_MSG_LEN);
		uint32_t id, seq;
		memcpy(&id, (const void *)(uintptr_t)r->comps[i].c.buf, 4);
		memcpy(&seq, (const uint8_t *)(uintptr_t)r->comps[i].c.buf + 4, 4);
		cr_assert_lt(id, nsenders);
		cr_assert_eq(seq, next[id], "sender %u: got %u, expected %u (in order, exactly once)", id, seq, next[id]);
		next[id]++;
	}
	free(next);
	free(bufs);
}

static void fc_run(void (*mode)(struct sw_ep_attr *), struct tsim *s, struct tep *r, struct fc_sender snd[2],
		   uint32_t n)
{
	cr_assert_eq(tep_open(r, s, 1, mode), 0);
	fc_sender_start(&snd[0], s, 0, 0, n, 3, sw_ep_addr(r->ep), mode);
	fc_sender_start(&snd[1], s, 2, 1, n, 3, sw_ep_addr(r->ep), mode);
	sim_run(s->sim);
	cr_assert_eq(snd[0].completed, n);
	cr_assert_eq(snd[1].completed, n);
	cr_assert_eq(snd[0].errors + snd[1].errors, 0);
	receive_all(s, r, n, 2);
	cr_assert_null(sw_ep_fatal(r->ep));
}

Test(nic_fc, hardware_mode_max_alloc_10_flow_control_recovers)
{
	struct tsim s = tsim_new(THREE_NICS_MAX10, 1);
	struct tep r;
	struct fc_sender snd[2];
	memset(snd, 0, sizeof(snd));
	fc_run(hw_mode, &s, &r, snd, 400);
	/* Flow control happened, for the right reason, and every drop was reported and replayed. */
	cr_assert_gt(sw_ep_stats(r.ep)->fc_transitions, 0);
	cr_assert_gt(tctr(&s, "nic.1.sim.nic_state_change.FC_UNEXPECTED_FAIL"), 0);
	cr_assert_eq(tctr(&s, "nic.1.sim.nic_state_change.SM_UNEXPECTED_FAIL"), 0);
	uint64_t drops = tctr(&s, "nic.1.sim.pt_disabled_drops");
	cr_assert_gt(drops, 0);
	cr_assert_eq(sw_ep_stats(r.ep)->fc_drops_replayed, drops, "drop counts balance");
	cr_assert_eq(sw_ep_stats(snd[0].t.ep)->fc_notify_sent + sw_ep_stats(snd[1].t.ep)->fc_notify_sent,
		     sw_ep_stats(r.ep)->fc_resume_sent);
	cr_assert_eq(sw_ep_rxc_state(r.ep), RXC_ENABLED);
	struct nic_pte_status st;
	nic_pte_status(sw_ep_nic(r.ep), sw_ep_rx_ptn(r.ep), &st);
	cr_assert_eq(st.state, C_PTLTE_ENABLED);
	struct nic_le_pool_status ps;
	nic_le_pool_status(sw_ep_nic(r.ep), st.le_pool, &ps);
	cr_assert_leq(ps.high_water, 10, "LE use never above its limit");
	cr_assert_gt(ps.alloc_fail, 0);
	fc_sender_free(&snd[0]);
	fc_sender_free(&snd[1]);
	tep_close(&r);
	tsim_free(&s);
}

Test(nic_fc, hybrid_mode_max_alloc_10_goes_software_and_delivers)
{
	struct tsim s = tsim_new(THREE_NICS_MAX10, 1);
	struct tep r;
	struct fc_sender snd[2];
	memset(snd, 0, sizeof(snd));
	fc_run(hybrid_mode, &s, &r, snd, 400);
	cr_assert_eq(sw_ep_rxc_state(r.ep), RXC_ENABLED_SOFTWARE);
	cr_assert_geq(sw_ep_stats(r.ep)->sw_transitions, 1);
	cr_assert_eq(tctr(&s, "nic.1.sim.nic_state_change.SM_UNEXPECTED_FAIL"), 1);
	struct nic_pte_status st;
	nic_pte_status(sw_ep_nic(r.ep), sw_ep_rx_ptn(r.ep), &st);
	cr_assert_eq(st.state, C_PTLTE_SOFTWARE_MANAGED);
	struct nic_le_pool_status ps;
	nic_le_pool_status(sw_ep_nic(r.ep), st.le_pool, &ps);
	cr_assert_leq(ps.high_water, 10);
	fc_sender_free(&snd[0]);
	fc_sender_free(&snd[1]);
	tep_close(&r);
	tsim_free(&s);
}

/* More posted receives than LEs: in hardware mode the append failure leads to flow control that cannot
 * recover any LE, which upstream reports as fatal; hybrid mode goes software-managed instead. */
static void too_many_receives(void (*mode)(struct sw_ep_attr *), struct tsim *s, struct tep *r, struct tep *a,
			      uint8_t (*bufs)[16], int n)
{
	cr_assert_eq(tep_open(r, s, 1, mode), 0);
	cr_assert_eq(tep_open(a, s, 0, mode), 0);
	for (int i = 0; i < n; i++) {
		int rc;
		while ((rc = sw_recv(r->ep, (uint64_t)(uintptr_t)bufs[i], 16, NULL, (uint64_t)i, 0, FI_TAGGED, NULL)) ==
		       -FI_EAGAIN)
			sim_run(s->sim);
		if (rc == -FI_EOTHER)
			return;
		cr_assert_eq(rc, 0);
	}
	sim_run(s->sim);
}

Test(nic_fc, hardware_mode_flow_control_without_recovery_is_fatal)
{
	struct tsim s = tsim_new(THREE_NICS_MAX10, 1);
	struct tep r, a;
	static uint8_t bufs[40][16];
	too_many_receives(hw_mode, &s, &r, &a, bufs, 40);
	cr_assert_not_null(sw_ep_fatal(r.ep));
	cr_assert_str_eq(r.fatal,
			 "LE resources not recovered during flow control. FI_CXI_RX_MATCH_MODE=[hybrid|software] is "
			 "required\n");
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_ERR_NO_SPACE_APPEND"), tctr(&s, "nic.1.C_CNTR_LPE_ERR_NO_SPACE_APPEND"));
	cr_assert_gt(tctr(&s, "nic.1.C_CNTR_LPE_ERR_NO_SPACE_APPEND"), 0);
	cr_assert_eq(sw_recv(r.ep, (uint64_t)(uintptr_t)bufs[0], 16, NULL, 0, 0, FI_TAGGED, NULL), -FI_EOTHER);
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}

Test(nic_fc, hybrid_mode_too_many_receives_goes_software)
{
	struct tsim s = tsim_new(THREE_NICS_MAX10, 1);
	struct tep r, a;
	static uint8_t bufs[40][16], src[40][16];
	too_many_receives(hybrid_mode, &s, &r, &a, bufs, 40);
	cr_assert_null(sw_ep_fatal(r.ep));
	cr_assert_eq(sw_ep_rxc_state(r.ep), RXC_ENABLED_SOFTWARE);
	for (int i = 39; i >= 0; i--) {
		memset(src[i], i + 1, 16);
		int rc;
		while ((rc = sw_send(a.ep, (uint64_t)(uintptr_t)src[i], 16, NULL, sw_ep_addr(r.ep), (uint64_t)i, 0,
				     FI_TAGGED, NULL)) == -FI_EAGAIN)
			sim_run(s.sim);
		cr_assert_eq(rc, 0);
	}
	sim_run(s.sim);
	cr_assert_eq(r.n, 40);
	for (int i = 0; i < 40; i++)
		cr_assert_eq(bufs[i][0], i + 1, "receive %d got its tagged message", i);
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}
