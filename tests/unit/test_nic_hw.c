/* Hardware-level behaviour of the NIC model, driven through the command interface only. */
#include <criterion/criterion.h>

#include <errno.h>

#include "../../sim/nic/nic_impl.h"
#include "nic_hwlib.h"

Test(nic_hw, put_matches_priority_and_carries_bytes)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	char src[100], dst[128];
	for (int i = 0; i < 100; i++)
		src[i] = (char)i;
	memset(dst, 0xee, sizeof(dst));
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = 9, .le_flags = C_LE_OP_PUT | C_LE_USE_ONCE,
				  .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)dst, .length = 120,
				  .match_id = C_MATCH_ID_ANY, .match_bits = 42, .user_ptr = 0xabc });
	sim_run(t.sim);
	struct nic_pte_status st;
	cr_assert_eq(nic_pte_status(b.nic, b.ptn, &st), 0);
	cr_assert_eq(st.le_count[C_PTL_LIST_PRIORITY], 1);
	/* Enable and send. */
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(t.sim);
	put(&a, 1, 10, src, 100, 42);
	sim_run(t.sim);
	cr_assert_eq(memcmp(src, dst, 100), 0);
	cr_assert_eq((unsigned char)dst[100], 0xee);
	struct nic_event ev[16];
	int n = drain(&b, ev, 16);
	const struct nic_event *p = find_type(ev, n, C_EVENT_PUT);
	cr_assert_not_null(p);
	cr_assert_eq(p->rc, C_RC_OK);
	cr_assert_eq(p->mlength, 100);
	cr_assert_eq(p->buffer_id, 9);
	cr_assert_eq(p->user_ptr, 0xabc);
	cr_assert_eq(p->initiator, C_MATCH_ID(0, 4));
	cr_assert(p->flags & NIC_EVF_AUTO_UNLINKED);
	n = drain(&a, ev, 16);
	const struct nic_event *ack = find_type(ev, n, C_EVENT_ACK);
	cr_assert_not_null(ack);
	cr_assert_eq(ack->rc, C_RC_OK);
	cr_assert_eq(ack->ptl_list, C_PTL_LIST_PRIORITY);
	cr_assert_eq(ack->user_ptr, 0x77);
	cr_assert_eq(count_type(ev, n, C_EVENT_SEND), 1);
	cr_assert_eq(nic_pte_status(b.nic, b.ptn, &st), 0);
	cr_assert_eq(st.le_count[C_PTL_LIST_PRIORITY], 0);
	struct nic_le_pool_status ps;
	nic_le_pool_status(b.nic, st.le_pool, &ps);
	cr_assert_eq(ps.used, 0);
	cr_assert_eq(ps.high_water, 1);
	tsim_free(&t);
}

Test(nic_hw, unexpected_lands_in_overflow_then_put_overflow_on_append)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true, .en_flowctrl = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	static char oflow[4096], src[64], dst[64];
	memset(src, 0x5a, sizeof(src));
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_OVERFLOW, .buffer_id = 1,
				  .le_flags = C_LE_OP_PUT | C_LE_MANAGE_LOCAL | C_LE_NO_TRUNCATE, .ctn = NIC_NONE,
				  .start = (uint64_t)(uintptr_t)oflow, .length = sizeof(oflow), .min_free = 128,
				  .match_id = C_MATCH_ID_ANY, .ignore_bits = ~0ULL });
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(t.sim);
	put(&a, 1, 10, src, 64, 7);
	sim_run(t.sim);
	cr_assert_eq(memcmp(oflow, src, 64), 0);
	struct nic_event ev[16];
	int n = drain(&b, ev, 16);
	const struct nic_event *p = find_type(ev, n, C_EVENT_PUT);
	cr_assert_not_null(p);
	cr_assert_eq(p->ptl_list, C_PTL_LIST_OVERFLOW);
	cr_assert_eq(p->start, (uint64_t)(uintptr_t)oflow);
	struct nic_pte_status st;
	nic_pte_status(b.nic, b.ptn, &st);
	cr_assert_eq(st.ule_count, 1);
	/* A matching append consumes the header instead of linking. */
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = 5, .le_flags = C_LE_OP_PUT | C_LE_USE_ONCE,
				  .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)dst, .length = 64,
				  .match_id = C_MATCH_ID_ANY, .match_bits = 7 });
	sim_run(t.sim);
	n = drain(&b, ev, 16);
	p = find_type(ev, n, C_EVENT_PUT_OVERFLOW);
	cr_assert_not_null(p);
	cr_assert_eq(p->buffer_id, 5);
	cr_assert_eq(p->start, (uint64_t)(uintptr_t)oflow);
	cr_assert_eq(p->mlength, 64);
	cr_assert_eq(p->rlength, 64);
	nic_pte_status(b.nic, b.ptn, &st);
	cr_assert_eq(st.ule_count, 0);
	cr_assert_eq(st.le_count[C_PTL_LIST_PRIORITY], 0);
	tsim_free(&t);
}

Test(nic_hw, vni_mismatch_is_refused_and_nothing_delivered)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 5, 4, &o, 64);
	hwep_open(&b, t.sim, 1, 7, 3, &o, 64);
	char src[8] = "abcdefg", dst[8] = { 0 };
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .le_flags = C_LE_OP_PUT, .ctn = NIC_NONE,
				  .start = (uint64_t)(uintptr_t)dst, .length = 8, .match_id = C_MATCH_ID_ANY,
				  .ignore_bits = ~0ULL });
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(t.sim);
	struct nic_event ev[16];
	drain(&b, ev, 16);
	put(&a, 1, 5, src, 8, 0);
	sim_run(t.sim);
	int n = drain(&a, ev, 16);
	const struct nic_event *ack = find_type(ev, n, C_EVENT_ACK);
	cr_assert_not_null(ack);
	cr_assert_eq(ack->rc, C_RC_VNI_NOT_FOUND);
	cr_assert_eq(drain(&b, ev, 16), 0);
	cr_assert_eq(dst[0], 0);
	cr_assert_eq(tctr(&t, "nic.1.sim.vni_not_found"), 1);
	tsim_free(&t);
}

Test(nic_hw, le_pool_max_alloc_limits_appends)
{
	struct tsim t = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2},"
				 " \"nic\": {\"le_pools\": [{\"pool\": 0, \"max_alloc\": 10}]}}",
				 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep b;
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	static char buf[64];
	for (int i = 0; i < 12; i++)
		tgt(&b, NIC_CMD_TGT_APPEND,
		    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = (uint16_t)i, .le_flags = C_LE_OP_PUT,
					  .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)buf, .length = 64,
					  .match_id = C_MATCH_ID_ANY, .match_bits = (uint64_t)i });
	sim_run(t.sim);
	struct nic_event ev[32];
	int n = drain(&b, ev, 32);
	int ok = 0, nospace = 0;
	for (int i = 0; i < n; i++) {
		if (ev[i].type != C_EVENT_LINK)
			continue;
		ok += ev[i].rc == C_RC_OK;
		nospace += ev[i].rc == C_RC_NO_SPACE;
		if (ev[i].rc == C_RC_NO_SPACE)
			cr_assert_geq(ev[i].buffer_id, 10);
	}
	cr_assert_eq(ok, 10);
	cr_assert_eq(nospace, 2);
	struct nic_pte_status st;
	nic_pte_status(b.nic, b.ptn, &st);
	struct nic_le_pool_status ps;
	nic_le_pool_status(b.nic, st.le_pool, &ps);
	cr_assert_eq(ps.used, 10);
	cr_assert_eq(ps.max_alloc, 10);
	cr_assert_eq(ps.alloc_fail, 2);
	cr_assert_eq(tctr(&t, "nic.1.C_CNTR_LPE_ERR_NO_SPACE_APPEND"), 2);
	tsim_free(&t);
}

Test(nic_hw, flow_control_no_overflow_disables_and_counts_drops)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true, .en_flowctrl = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(t.sim);
	struct nic_event ev[32];
	drain(&b, ev, 32);
	char src[8] = { 0 };
	for (int i = 0; i < 3; i++)
		put(&a, 1, 10, src, 8, 1);
	sim_run(t.sim);
	int n = drain(&b, ev, 32);
	cr_assert_eq(count_type(ev, n, C_EVENT_STATE_CHANGE), 1);
	const struct nic_event *sc = find_type(ev, n, C_EVENT_STATE_CHANGE);
	cr_assert_eq(sc->sc.state, C_PTLTE_DISABLED);
	cr_assert_eq(sc->sc.reason, C_SC_FC_NO_MATCH);
	cr_assert(sc->flags & NIC_EVF_SC_NIC_AUTO);
	n = drain(&a, ev, 32);
	cr_assert_eq(count_type(ev, n, C_EVENT_ACK), 3);
	for (int i = 0; i < n; i++)
		if (ev[i].type == C_EVENT_ACK)
			cr_assert_eq(ev[i].rc, C_RC_PT_DISABLED);
	struct nic_pte_status st;
	nic_pte_status(b.nic, b.ptn, &st);
	cr_assert_eq(st.drop_count, 3);
	/* Re-enable with the wrong drop count fails; with the right one succeeds and resets it. */
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = 2 });
	sim_run(t.sim);
	n = drain(&b, ev, 32);
	cr_assert_eq(n, 1);
	cr_assert_eq(ev[0].rc, C_RC_NO_MATCH);
	cr_assert_eq(ev[0].sc.state, C_PTLTE_DISABLED);
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = 3 });
	sim_run(t.sim);
	n = drain(&b, ev, 32);
	cr_assert_eq(ev[0].rc, C_RC_OK);
	cr_assert_eq(ev[0].sc.state, C_PTLTE_ENABLED);
	nic_pte_status(b.nic, b.ptn, &st);
	cr_assert_eq(st.drop_count, 0);
	tsim_free(&t);
}

Test(nic_hw, eq_overflow_drops_events_without_flow_control)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep b;
	hwep_open(&b, t.sim, 1, 10, 3, &o, 4);
	static char buf[64];
	for (int i = 0; i < 6; i++)
		tgt(&b, NIC_CMD_TGT_APPEND,
		    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .le_flags = C_LE_OP_PUT, .ctn = NIC_NONE,
					  .start = (uint64_t)(uintptr_t)buf, .length = 64, .match_id = C_MATCH_ID_ANY });
	sim_run(t.sim);
	struct nic_eq_status es;
	nic_eq_status(b.nic, b.eqn, &es);
	/* 4 slots, 1 reserved for flow-control state changes: 3 LINK events fit, 3 are dropped. */
	cr_assert_eq(es.used, 3);
	cr_assert_eq(es.dropped, 3);
	cr_assert_eq(tctr(&t, "nic.1.C_CNTR_EE_EVENTS_DROPPED_ORDINARY_CNTR_0"), 3);
	tsim_free(&t);
}

/* Posts events user_ptr first .. first + n - 1 to b's EQ and lets them land. */
static void eq_write(struct tsim *t, struct hwep *b, uint64_t first, int n)
{
	for (int i = 0; i < n; i++) {
		struct nic_event ev = { .user_ptr = first + (uint64_t)i, .type = C_EVENT_PUT };
		cr_assert(nic_eq_post(b->nic, b->eqn, &ev, 0, false));
	}
	sim_run(t->sim);
}

/* Reads n events (without acknowledging them) and checks they are user_ptr first, first + 1, ... */
static void eq_read(struct hwep *b, uint64_t first, int n)
{
	for (int i = 0; i < n; i++) {
		const struct nic_event *ev = nic_eq_peek(b->nic, b->eqn);
		cr_assert_not_null(ev, "event %d of %d missing", i, n);
		cr_assert_eq(ev->user_ptr, first + (uint64_t)i);
		nic_eq_next(b->nic, b->eqn);
	}
}

/* An EQ's storage starts as one slot in its record, grows while events are unacknowledged and comes back
 * when they are: through every change the events read back complete and in order, and an
 * unacknowledged event keeps its slot (it counts as used) until the acknowledgement. */
Test(nic_hw, eq_keeps_every_event_in_order_as_its_ring_grows_and_returns)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep b;
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	const struct nic_eq *q = nic_table_at(&b.nic->eqs, b.eqn);
	struct nic_eq_status es;
	uint64_t next = 100;
	for (int round = 0; round < 3; round++) {
		eq_write(&t, &b, next, 1); /* one at a time: the record's own slot */
		cr_assert_eq(q->ring, &q->inl);
		eq_read(&b, next++, 1);
		nic_eq_ack(b.nic, b.eqn);
		eq_write(&t, &b, next, 3); /* a burst grows the ring ... */
		cr_assert_neq(q->ring, &q->inl);
		eq_read(&b, next, 2);
		nic_eq_ack(b.nic, b.eqn); /* ... which stays while one event is unread */
		cr_assert_neq(q->ring, &q->inl);
		eq_write(&t, &b, next + 3, 9); /* and grows again, wrapping around the unread one */
		eq_read(&b, next + 2, 5);
		nic_eq_status(b.nic, b.eqn, &es);
		cr_assert_eq(es.used, 10, "read but unacknowledged events keep their slots: %u", es.used);
		cr_assert_eq(es.unread, 5);
		eq_read(&b, next + 7, 5);
		cr_assert_null(nic_eq_peek(b.nic, b.eqn));
		nic_eq_ack(b.nic, b.eqn); /* all acknowledged: back to the record's slot */
		cr_assert_eq(q->ring, &q->inl);
		nic_eq_status(b.nic, b.eqn, &es);
		cr_assert_eq(es.used, 0);
		cr_assert_eq(es.dropped, 0);
		next += 12;
	}
	nic_eq_status(b.nic, b.eqn, &es);
	cr_assert_eq(es.written, 3 * 13);
	tsim_free(&t);
}

static void ct_notify(void *ctx, struct nic *nic, uint32_t ctn)
{
	(void)nic;
	(void)ctn;
	(*(int *)ctx)++;
}

Test(nic_hw, counting_events_count_matches_acks_and_commands)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	uint32_t ct_b, ct_a;
	int notes = 0;
	cr_assert_eq(nic_ct_alloc(b.lni, ct_notify, &notes, &ct_b), 0);
	cr_assert_eq(nic_ct_alloc(a.lni, NULL, NULL, &ct_a), 0);
	static char dst[256], src[100];
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .le_flags = C_LE_OP_PUT | C_LE_EVENT_CT_COMM,
				  .ctn = ct_b, .start = (uint64_t)(uintptr_t)dst, .length = 256,
				  .match_id = C_MATCH_ID_ANY, .ignore_bits = ~0ULL });
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(t.sim);
	for (int i = 0; i < 3; i++) {
		struct nic_cmd cmd = { .op = NIC_CMD_PUT };
		cmd.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = 3, .vni = 10, .length = 100,
						.local_addr = (uint64_t)(uintptr_t)src, .eqn = NIC_NONE, .ctn = ct_a,
						.flags = NIC_DMA_EVENT_CT_ACK | NIC_DMA_EVENT_CT_BYTES, .src_pid = 4 };
		cr_assert_eq(nic_cmdq_emit(a.txq, &cmd), 0);
	}
	nic_cmdq_ring(a.txq);
	sim_run(t.sim);
	uint64_t succ;
	uint32_t fail;
	cr_assert_eq(nic_ct_read(b.nic, ct_b, &succ, &fail), 0);
	cr_assert_eq(succ, 3);
	cr_assert_eq(fail, 0);
	cr_assert_eq(notes, 3);
	cr_assert_eq(nic_ct_read(a.nic, ct_a, &succ, &fail), 0);
	cr_assert_eq(succ, 300, "CT_BYTES counts acknowledged bytes");
	struct nic_cmd inc = { .op = NIC_CMD_CT_INC };
	inc.ct = (struct nic_ct_cmd){ .ctn = ct_a, .success = 5, .failure = 1 };
	cr_assert_eq(nic_cmdq_emit(a.txq, &inc), 0);
	nic_cmdq_ring(a.txq);
	sim_run(t.sim);
	nic_ct_read(a.nic, ct_a, &succ, &fail);
	cr_assert_eq(succ, 305);
	cr_assert_eq(fail, 1);
	/* A target command on a queue of the wrong kind is refused at emit. */
	cr_assert_eq(nic_cmdq_emit(b.txq, &(struct nic_cmd){ .op = NIC_CMD_TGT_UNLINK }), -EINVAL);
	cr_assert_eq(nic_cmdq_emit(a.txq, &(struct nic_cmd){ .op = NIC_CMD_IDC_PUT, .dma = { .length = 193 } }), -EINVAL);
	tsim_free(&t);
}

Test(nic_hw, search_and_delete_reports_headers_then_no_match)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	static char oflow[8192], src[32];
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_OVERFLOW, .le_flags = C_LE_OP_PUT | C_LE_MANAGE_LOCAL, .ctn = NIC_NONE,
				  .start = (uint64_t)(uintptr_t)oflow, .length = sizeof(oflow), .min_free = 64,
				  .match_id = C_MATCH_ID_ANY, .ignore_bits = ~0ULL });
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(t.sim);
	for (uint64_t i = 0; i < 3; i++)
		put(&a, 1, 10, src, 32, 100 + i);
	sim_run(t.sim);
	struct nic_event ev[16];
	drain(&b, ev, 16);
	tgt(&b, NIC_CMD_TGT_SEARCH, (struct nic_tgt_cmd){ .list = C_PTL_LIST_UNEXPECTED, .match_bits = 101,
							  .match_id = C_MATCH_ID_ANY, .le_flags = C_LE_USE_ONCE,
							  .buffer_id = 77 });
	sim_run(t.sim);
	int n = drain(&b, ev, 16);
	cr_assert_eq(n, 1);
	cr_assert_eq(ev[0].type, C_EVENT_SEARCH);
	cr_assert_eq(ev[0].rc, C_RC_OK);
	cr_assert_eq(ev[0].match_bits, 101);
	cr_assert_eq(ev[0].buffer_id, 77);
	tgt(&b, NIC_CMD_TGT_SEARCH_AND_DELETE,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_UNEXPECTED, .ignore_bits = ~0ULL, .match_id = C_MATCH_ID_ANY });
	sim_run(t.sim);
	n = drain(&b, ev, 16);
	cr_assert_eq(n, 4);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(ev[i].type, C_EVENT_PUT_OVERFLOW);
		cr_assert_eq(ev[i].match_bits, 100 + (uint64_t)i, "oldest first");
		cr_assert_eq(ev[i].start, (uint64_t)(uintptr_t)oflow + 32 * (uint64_t)i);
	}
	cr_assert_eq(ev[3].type, C_EVENT_SEARCH);
	cr_assert_eq(ev[3].rc, C_RC_NO_MATCH);
	struct nic_pte_status st;
	nic_pte_status(b.nic, b.ptn, &st);
	cr_assert_eq(st.ule_count, 0);
	tsim_free(&t);
}

/* Three initiators burst 20 Puts each at a target whose PCT holds 4 request states (trs_entries): requests
 * beyond them are NACKed (C_CNTR_PCT_NO_TRS_NACKS) and resent by the initiators' retry handlers, so every
 * Put lands exactly once, each initiator sees one ACK per Put, and no more than 4 states were ever held. */
Test(nic_hw, full_trs_nacks_and_the_retry_handler_resends)
{
	struct tsim t = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 4},"
				 " \"nic\": {\"trs_entries\": 4, \"rh_retry_us\": 2}}", 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep src[3], dstep;
	hwep_open(&dstep, t.sim, 3, 10, 3, &o, 1024);
	static char land[60][64];
	static char data[3][20][64];
	memset(land, 0, sizeof(land));
	for (int i = 0; i < 60; i++)
		tgt(&dstep, NIC_CMD_TGT_APPEND,
		    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = (uint16_t)(i + 1),
					  .le_flags = C_LE_OP_PUT | C_LE_USE_ONCE, .ctn = NIC_NONE,
					  .start = (uint64_t)(uintptr_t)land[i], .length = 64, .match_id = C_MATCH_ID_ANY,
					  .match_bits = 42 });
	tgt(&dstep, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(t.sim);
	for (int s = 0; s < 3; s++) {
		hwep_open(&src[s], t.sim, (uint32_t)s, 10, 4, &o, 256);
		for (int k = 0; k < 20; k++) {
			memset(data[s][k], s * 20 + k + 1, 64);
			put(&src[s], 3, 10, data[s][k], 64, 42);
		}
	}
	sim_run(t.sim);
	uint64_t nacks = tctr(&t, "nic.3.C_CNTR_PCT_NO_TRS_NACKS");
	uint64_t retries = tctr(&t, "nic.0.sim.rh_retries") + tctr(&t, "nic.1.sim.rh_retries") + tctr(&t, "nic.2.sim.rh_retries");
	cr_assert_gt(nacks, 0, "a burst of 60 against 4 request states must be NACKed");
	cr_assert_eq(retries, nacks, "every NACK is resent once by the initiator's retry handler");
	cr_assert_leq(tctr(&t, "nic.3.sim.trs_high_water"), 4);
	/* Every Put landed exactly once: each payload value 1..60 appears in exactly one buffer. */
	int seen[61] = { 0 };
	for (int i = 0; i < 60; i++) {
		unsigned char v = (unsigned char)land[i][0];
		cr_assert(v >= 1 && v <= 60, "buffer %d holds %u", i, v);
		for (int b = 0; b < 64; b++)
			cr_assert_eq((unsigned char)land[i][b], v);
		seen[v]++;
	}
	for (int v = 1; v <= 60; v++)
		cr_assert_eq(seen[v], 1, "payload %d delivered %d times", v, seen[v]);
	static struct nic_event ev[256];
	cr_assert_eq(count_type(ev, drain(&dstep, ev, 256), C_EVENT_PUT), 60);
	for (int s = 0; s < 3; s++) {
		int n = drain(&src[s], ev, 256);
		cr_assert_eq(count_type(ev, n, C_EVENT_ACK), 20, "initiator %d", s);
		for (int i = 0; i < n; i++)
			if (ev[i].type == C_EVENT_ACK)
				cr_assert_eq(ev[i].rc, C_RC_OK);
	}
	tsim_free(&t);
}

/* LE pools are made when first configured or used (64 per NIC, most never touched): an untouched pool
 * reports the defaults, reservations of untouched pools still count against a PE's shared LEs, and a
 * refusal is counted by the refusing pool's own counter (nic.<n>.le_pool.<index>.alloc_fail). */
Test(nic_hw, le_pools_made_on_use_keep_defaults_reservations_and_counters)
{
	/* Per PE: 64 LEs; pool 1 reserves 20, the other 15 pools 1 each: 29 shared, so pool 0 takes 1 + 29. */
	struct tsim t = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2},"
				 " \"nic\": {\"pe_les\": 64, \"le_pool_reserved\": 1,"
				 " \"le_pools\": [{\"pool\": 1, \"reserved\": 20}]}}",
				 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep other, b;
	hwep_open(&other, t.sim, 1, 10, 5, &o, 16); /* b's PtlTE on another PE than the first pool's */
	hwep_open(&b, t.sim, 1, 10, 3, &o, 128);
	struct nic_pte_status st;
	cr_assert_eq(nic_pte_status(b.nic, b.ptn, &st), 0);
	cr_assert_neq(st.le_pool, 0);
	struct nic_le_pool_status ps;
	unsigned untouched = st.le_pool + 2;
	cr_assert_eq(nic_le_pool_status(b.nic, untouched, &ps), 0);
	cr_assert(ps.used == 0 && ps.high_water == 0 && ps.alloc_fail == 0 && ps.reserved == 1);
	cr_assert_eq(ps.max_alloc, C_LES_PER_PE);
	cr_assert_eq(nic_le_pool_status(b.nic, st.le_pool + 1, &ps), 0);
	cr_assert_eq(ps.reserved, 20, "configured before any use");
	static char buf[64];
	for (int i = 0; i < 40; i++)
		tgt(&b, NIC_CMD_TGT_APPEND,
		    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = (uint16_t)i, .le_flags = C_LE_OP_PUT,
					  .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)buf, .length = 64,
					  .match_id = C_MATCH_ID_ANY, .match_bits = (uint64_t)i });
	sim_run(t.sim);
	struct nic_event ev[64];
	int n = drain(&b, ev, 64), ok = 0, nospace = 0;
	for (int i = 0; i < n; i++) {
		ok += ev[i].type == C_EVENT_LINK && ev[i].rc == C_RC_OK;
		nospace += ev[i].type == C_EVENT_LINK && ev[i].rc == C_RC_NO_SPACE;
	}
	cr_assert_eq(ok, 30, "%d linked", ok);
	cr_assert_eq(nospace, 10);
	cr_assert_eq(nic_le_pool_status(b.nic, st.le_pool, &ps), 0);
	cr_assert(ps.used == 30 && ps.high_water == 30 && ps.alloc_fail == 10);
	cr_assert_eq(tctr(&t, "nic.1.le_pool.%u.alloc_fail", st.le_pool), 10);
	cr_assert_eq(tctr(&t, "nic.1.le_pool.%u.alloc_fail", st.le_pool + 1), 0);
	cr_assert_eq(tctr(&t, "nic.1.le_pool.%u.alloc_fail", (st.le_pool + 16) % C_LE_POOLS), 0);
	cr_assert_eq(tctr(&t, "nic.1.le_pool.0.alloc_fail"), 0);
	cr_assert_eq(tctr(&t, "nic.1.C_CNTR_LPE_ERR_NO_SPACE_APPEND"), 10);
	cr_assert_eq(tctr(&t, "nic.1.sim.limit_hits"), 10);
	cr_assert_eq(nic_le_pool_status(b.nic, untouched, &ps), 0);
	cr_assert(ps.used == 0 && ps.high_water == 0 && ps.alloc_fail == 0 && ps.reserved == 1);
	tsim_free(&t);
}

/* A command queue's ring grows with a burst (a client endpoint's start: its receives and buffers at once)
 * and gives the memory back once the NIC has fetched it, keeping 4 entries; every command of a burst is
 * processed, in order, before and after. */
static void append_burst(struct hwep *b, uint16_t first, int n, uint64_t *bytes_at_4)
{
	static char buf[64];
	for (int i = 0; i < n; i++) {
		if (i == 4 && bytes_at_4)
			*bytes_at_4 = nic_cmdqs_bytes(b->nic, b->lni, NULL);
		struct nic_cmd cmd = { .op = NIC_CMD_TGT_APPEND };
		cmd.tgt = (struct nic_tgt_cmd){ .ptn = b->ptn, .list = C_PTL_LIST_PRIORITY, .buffer_id = (uint16_t)(first + i),
						.le_flags = C_LE_OP_PUT, .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)buf,
						.length = 64, .match_id = C_MATCH_ID_ANY, .match_bits = (uint64_t)(first + i) };
		cr_assert_eq(nic_cmdq_emit(b->tgq, &cmd), 0);
	}
}

static void check_links(struct hwep *b, uint16_t first, int n)
{
	struct nic_event ev[64];
	int got = drain(b, ev, 64), k = 0;
	for (int i = 0; i < got; i++) {
		if (ev[i].type != C_EVENT_LINK)
			continue;
		cr_assert_eq(ev[i].rc, C_RC_OK);
		cr_assert_eq(ev[i].buffer_id, first + k, "LINK %d: buffer %u", k, ev[i].buffer_id);
		k++;
	}
	cr_assert_eq(k, n);
}

Test(nic_hw, cmdq_ring_gives_a_burst_back)
{
	struct tsim t = tsim_new(TWO_NICS, 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep b;
	hwep_open(&b, t.sim, 1, 10, 3, &o, 256);
	uint64_t at4, burst;
	append_burst(&b, 0, 16, &at4);
	burst = nic_cmdqs_bytes(b.nic, b.lni, NULL);
	cr_assert_gt(burst, at4, "the ring grew with the burst");
	nic_cmdq_ring(b.tgq);
	sim_run(t.sim);
	check_links(&b, 0, 16);
	cr_assert_eq(nic_cmdqs_bytes(b.nic, b.lni, NULL), at4, "drained: back to 4 entries");
	append_burst(&b, 100, 20, NULL);
	nic_cmdq_ring(b.tgq);
	sim_run(t.sim);
	check_links(&b, 100, 20);
	cr_assert_eq(nic_cmdqs_bytes(b.nic, b.lni, NULL), at4);
	tsim_free(&t);
}
