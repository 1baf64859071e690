/* Event-queue fill and overflow behaviour at the provider level, and determinism of the NIC model. */
#include <criterion/criterion.h>

#include "nic_fclib.h"

static void manual16(struct sw_ep_attr *a)
{
	a->progress = SW_PROGRESS_MANUAL;
	a->cq_size = 16;
}

Test(nic_eq, sends_get_eagain_at_fill_percent_until_drained)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, manual16), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t src[8];
	for (int i = 0; i < 64; i++)
		cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)src, 8, NULL, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	int accepted = 0;
	for (int i = 0; i < 20; i++) {
		int rc = sw_send(a.ep, (uint64_t)(uintptr_t)src, 8, NULL, sw_ep_addr(b.ep), 0, 0, FI_MSG, NULL);
		if (rc == -FI_EAGAIN)
			break;
		cr_assert_eq(rc, 0);
		accepted++;
		sim_run(s.sim);
	}
	/* 18 slots (16 + 2), FI_CXI_CQ_FILL_PERCENT 50: saturated once 9 events sit in the EQ -- the
	 * rendezvous-source PtlTE's enable (STATE_CHANGE) and 8 ACKs. */
	cr_assert_eq(accepted, 8, "accepted %d", accepted);
	cr_assert_eq(a.n, 0, "manual progress: nothing completed yet");
	sw_ep_progress(a.ep);
	cr_assert_eq(a.n, 8);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, 8, NULL, sw_ep_addr(b.ep), 0, 0, FI_MSG, NULL), 0);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

static void manual8(struct sw_ep_attr *a)
{
	a->progress = SW_PROGRESS_MANUAL;
	a->cq_size = 8;
}

Test(nic_eq, hardware_eq_overflow_is_fatal)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, manual8), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t src[8];
	for (int i = 0; i < 16; i++)
		cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)src, 8, NULL, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	/* All issued while the EQ is nearly empty: 16 ACKs for a 10-slot EQ already holding one event. */
	for (int i = 0; i < 16; i++)
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, 8, NULL, sw_ep_addr(b.ep), 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(tctr(&s, "nic.0.C_CNTR_EE_EVENTS_DROPPED_ORDINARY_CNTR_0"), 7, "%llu", (unsigned long long)tctr(&s, "nic.0.C_CNTR_EE_EVENTS_DROPPED_ORDINARY_CNTR_0"));
	sw_ep_progress(a.ep);
	cr_assert_str_eq(a.fatal, "H/W Event Queue overflow detected.\n");
	cr_assert_eq(a.n, 9);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_eq, full_rx_eq_disables_ptlte_and_recovers)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, manual8), 0);
	static uint8_t src[20][8], dst[20][8];
	for (int i = 0; i < 20; i++) {
		memset(src[i], i + 1, 8);
		cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst[i], 8, NULL, 0, 0, FI_MSG, NULL), 0);
	}
	sim_run(s.sim);
	for (int i = 0; i < 20; i++)
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src[i], 8, NULL, sw_ep_addr(b.ep), 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(tctr(&s, "nic.1.sim.nic_state_change.FC_EQ_FULL"), 1);
	cr_assert_gt(tctr(&s, "nic.1.sim.pt_disabled_drops"), 0);
	for (int k = 0; k < 100 && b.n < 20; k++) {
		sw_ep_progress(b.ep);
		sim_run(s.sim);
	}
	cr_assert_eq(b.n, 20);
	cr_assert_null(sw_ep_fatal(b.ep));
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(b.comps[i].c.err, 0);
		cr_assert_eq(dst[i][0], i + 1, "message %d in order", i);
	}
	cr_assert_eq(sw_ep_rxc_state(b.ep), RXC_ENABLED);
	cr_assert_eq(sw_ep_stats(b.ep)->fc_drops_replayed, tctr(&s, "nic.1.sim.pt_disabled_drops"));
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

/* ---------------------------------------------------------------- determinism */

static void hw(struct sw_ep_attr *a)
{
	a->env.oflow_buf_size = 256 * 1024;
}

static char *run_fc_scenario(uint64_t seed, size_t *len)
{
	struct tsim s = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 3},"
				 " \"nic\": {\"le_pools\": [{\"pool\": 0, \"max_alloc\": 10}]}}",
				 seed);
	struct tep r;
	struct fc_sender snd[2];
	memset(snd, 0, sizeof(snd));
	cr_assert_eq(tep_open(&r, &s, 1, hw), 0);
	fc_sender_start(&snd[0], &s, 0, 0, 150, 3, sw_ep_addr(r.ep), hw);
	fc_sender_start(&snd[1], &s, 2, 1, 150, 3, sw_ep_addr(r.ep), hw);
	sim_run(s.sim);
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	fprintf(f, "now=%llu events=%llu\n", (unsigned long long)sim_now(s.sim),
		(unsigned long long)sim_events_processed(s.sim));
	stats_dump_csv(sim_stats(s.sim), f);
	fclose(f);
	fc_sender_free(&snd[0]);
	fc_sender_free(&snd[1]);
	tep_close(&r);
	tsim_free(&s);
	return buf;
}

Test(nic_det, same_seed_same_telemetry)
{
	size_t l1, l2;
	char *a = run_fc_scenario(7, &l1);
	char *b = run_fc_scenario(7, &l2);
	cr_assert_eq(l1, l2);
	cr_assert_eq(memcmp(a, b, l1), 0, "identical telemetry for the same seed");
	cr_assert(strstr(a, "C_CNTR_LPE_NET_MATCH_OVERFLOW") != NULL);
	free(a);
	free(b);
}
