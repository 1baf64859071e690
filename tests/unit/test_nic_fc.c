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
	cr_assert_eq(tsw_msg_records(s->sim), 0, "every unexpected record went back with its message");
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
	cr_assert_eq(tsw_records(s.sim), 0);
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
	cr_assert_eq(tsw_records(s.sim), 0);
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

/* Upstream tagged/hw2sw_*: hybrid mode, constrained LEs (max_alloc=60), eager and rendezvous messages
 * (FI_CXI_RDZV_THRESHOLD=2048, FI_CXI_RDZV_GET_MIN=0) arriving unexpected through the hardware-to-software
 * transition.  Every byte must arrive, rendezvous ones pulled by hardware or software Gets. */
static void hw2sw(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_HYBRID;
	a->env.rdzv_threshold = 2048;
	a->env.rdzv_get_min = 0;
	a->env.oflow_buf_size = 512 * 1024;
	a->env.req_buf_size = 512 * 1024;
}

static void hw_rdzv(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_HARDWARE;
	a->env.rdzv_threshold = 2048;
	a->env.rdzv_get_min = 0;
	a->env.oflow_buf_size = 512 * 1024;
}

static void mixed_run(void (*mode)(struct sw_ep_attr *), const char *json, struct tsim *sp, struct tep *ap,
		      struct tep *bp)
{
	*sp = tsim_new(json, 1);
	struct tsim s = *sp;
	cr_assert_eq(tep_open(ap, &s, 0, mode), 0);
	cr_assert_eq(tep_open(bp, &s, 1, mode), 0);
	enum { N = 120 };
	static uint8_t *src[N], *dst[N];
	size_t len[N];
	for (int i = 0; i < N; i++) {
		len[i] = (i % 3 == 0) ? 6000 + (size_t)i * 13 : 100 + (size_t)i;
		src[i] = malloc(len[i]);
		dst[i] = calloc(1, len[i]);
		for (size_t k = 0; k < len[i]; k++)
			src[i][k] = (uint8_t)(k * 31 + (size_t)i);
	}
	/* A few receives posted early (matched in hardware), the rest arrive unexpected. */
	for (int i = 0; i < 10; i++)
		cr_assert_eq(sw_recv(bp->ep, (uint64_t)(uintptr_t)dst[i], len[i], NULL, (uint64_t)i, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	for (int i = 0; i < N; i++) {
		int rc;
		while ((rc = sw_send(ap->ep, (uint64_t)(uintptr_t)src[i], len[i], NULL, sw_ep_addr(bp->ep), (uint64_t)i, 0,
				     FI_TAGGED, NULL)) == -FI_EAGAIN)
			sim_run(s.sim);
		cr_assert_eq(rc, 0);
	}
	sim_run(s.sim);
	for (int i = 10; i < N; i++) {
		int rc;
		while ((rc = sw_recv(bp->ep, (uint64_t)(uintptr_t)dst[i], len[i], NULL, (uint64_t)i, 0, FI_TAGGED, NULL)) ==
		       -FI_EAGAIN)
			sim_run(s.sim);
		cr_assert_eq(rc, 0);
	}
	sim_run(s.sim);
	cr_assert_null(sw_ep_fatal(bp->ep));
	cr_assert_eq(bp->n, N);
	cr_assert_eq(ap->n, N);
	for (size_t i = 0; i < bp->n; i++)
		cr_assert_eq(bp->comps[i].c.err, 0);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(memcmp(src[i], dst[i], len[i]), 0, "message %d (%zu B)", i, len[i]);
		free(src[i]);
		free(dst[i]);
	}
	cr_assert_gt(sw_ep_stats(bp->ep)->sw_rdzv_gets, 0, "rendezvous after software matching uses software Gets");
	cr_assert_gt(sw_ep_stats(bp->ep)->hw_rdzv_gets, 0, "rendezvous matched in hardware uses the NIC's Get");
	cr_assert_eq(tsw_msg_records(s.sim), 0, "every unexpected and rendezvous record went back");
	cr_assert_eq(sw_reqs_live(s.sim), 0);
}

Test(nic_fc, hybrid_hw_to_sw_with_eager_and_rendezvous)
{
	struct tsim s;
	struct tep a, b;
	mixed_run(hw2sw,
		  "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2},"
		  " \"nic\": {\"le_pools\": [{\"pool\": 0, \"max_alloc\": 60}]}}",
		  &s, &a, &b);
	cr_assert_eq(sw_ep_rxc_state(b.ep), RXC_ENABLED_SOFTWARE);
	cr_assert_eq(sw_ep_stats(b.ep)->sw_transitions, 1);
	tep_close(&a);
	tep_close(&b);
	cr_assert_eq(tsw_records(s.sim), 0);
	tsim_free(&s);
}

Test(nic_fc, hardware_flow_control_with_eager_and_rendezvous)
{
	struct tsim s;
	struct tep a, b;
	mixed_run(hw_rdzv,
		  "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2},"
		  " \"nic\": {\"le_pools\": [{\"pool\": 0, \"max_alloc\": 30}]}}",
		  &s, &a, &b);
	cr_assert_eq(sw_ep_rxc_state(b.ep), RXC_ENABLED);
	cr_assert_gt(sw_ep_stats(b.ep)->fc_transitions, 0);
	cr_assert_eq(sw_ep_stats(b.ep)->fc_drops_replayed, tctr(&s, "nic.1.sim.pt_disabled_drops"));
	tep_close(&a);
	tep_close(&b);
	cr_assert_eq(tsw_records(s.sim), 0);
	tsim_free(&s);
}

/* FI_CXI_HYBRID_POSTED_RECV_PREEMPTIVE / _UNEXPECTED_MSG_PREEMPTIVE: hybrid mode moves to software
 * matching before the LE pool is exhausted, once hardware holds more than rx_attr.size receives or
 * unexpected headers; nothing is lost across the switch. */
static void preempt_posted(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_HYBRID;
	a->env.hybrid_posted_recv_preemptive = true;
	a->env.req_buf_size = 256 * 1024;
	a->env.oflow_buf_size = 256 * 1024;
	a->rx_size = 16;
}

static void preempt_unexpected(struct sw_ep_attr *a)
{
	preempt_posted(a);
	a->env.hybrid_posted_recv_preemptive = false;
	a->env.hybrid_unexpected_msg_preemptive = true;
}

static void preempt_run(void (*mode)(struct sw_ep_attr *), bool recv_first)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, mode), 0);
	cr_assert_eq(tep_open(&b, &s, 1, mode), 0);
	enum { N = 40 };
	static uint8_t src[N][32], dst[N][32];
	memset(dst, 0, sizeof(dst));
	for (int phase = 0; phase < 2; phase++) {
		bool do_recv = (phase == 0) == recv_first;
		for (int i = 0; i < N; i++) {
			int rc;
			if (do_recv) {
				while ((rc = sw_recv(b.ep, (uint64_t)(uintptr_t)dst[i], 32, NULL, (uint64_t)i, 0, FI_TAGGED,
						     NULL)) == -FI_EAGAIN)
					sim_run(s.sim);
			} else {
				memset(src[i], i + 1, 32);
				while ((rc = sw_send(a.ep, (uint64_t)(uintptr_t)src[i], 32, NULL, sw_ep_addr(b.ep), (uint64_t)i,
						     0, FI_TAGGED, NULL)) == -FI_EAGAIN)
					sim_run(s.sim);
			}
			cr_assert_eq(rc, 0);
			sim_run(s.sim);
		}
	}
	cr_assert_eq(b.n, N);
	for (int i = 0; i < N; i++)
		cr_assert_eq(dst[i][0], i + 1, "message %d", i);
	cr_assert_eq(sw_ep_rxc_state(b.ep), RXC_ENABLED_SOFTWARE, "pre-emptive switch to software matching");
	cr_assert_eq(sw_ep_stats(b.ep)->fc_transitions, 1, "one software-initiated transition");
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_ERR_NO_SPACE_NET") + tctr(&s, "nic.1.C_CNTR_LPE_ERR_NO_SPACE_APPEND"), 0,
		     "switched before any LE exhaustion");
	cr_assert_eq(tsw_records(s.sim), 0);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_fc, hybrid_posted_recv_preemptive)
{
	preempt_run(preempt_posted, true);
}

Test(nic_fc, hybrid_unexpected_msg_preemptive)
{
	preempt_run(preempt_unexpected, false);
}
