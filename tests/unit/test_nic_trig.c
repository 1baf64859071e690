/* The trigger list (trig.c): triggered commands held against a CT fire when its count reaches their
 * threshold, not before; in threshold order, equal thresholds in queue order; one trig_release_ns apart;
 * at once when the count is already past; limits of the NIC (nic.tles) and of a service (limits.tle);
 * CT_CANCEL drops what is held; misuse is refused with an errno. */
#include <criterion/criterion.h>
#include <errno.h>

#include "nic_hwlib.h"

struct fired {
	int n;
	uint64_t thr[64];
	int tag[64];
	int rc[64];
	simtime_t at[64];
	struct sim *sim;
};

struct tag {
	struct fired *f;
	int tag;
};

static void on_fire(void *ctx, struct nic *nic, uint32_t ctn, uint64_t threshold, int rc)
{
	(void)nic;
	(void)ctn;
	struct tag *t = ctx;
	struct fired *f = t->f;
	f->thr[f->n] = threshold;
	f->tag[f->n] = t->tag;
	f->rc[f->n] = rc;
	f->at[f->n] = sim_now(f->sim);
	f->n++;
}

static void ct_cmd(struct hwep *e, uint8_t op, uint32_t ctn, uint64_t v)
{
	struct nic_cmd c = { .op = op };
	c.ct = (struct nic_ct_cmd){ .ctn = ctn, .success = v };
	cr_assert_eq(nic_cmdq_emit(e->txq, &c), 0);
	nic_cmdq_ring(e->txq);
}

static uint64_t ct_val(struct hwep *e, uint32_t ctn)
{
	uint64_t s = 0;
	cr_assert_eq(nic_ct_read(e->nic, ctn, &s, NULL), 0);
	return s;
}

#define TRIG_NIC(extra) "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2}, \"nic\": {\"trig_release_ns\": 100" extra "}}"

/* A simulation of two NICs, one endpoint on NIC 0 with a CT. */
static struct tsim one_ep(const char *json, struct hwep *a, uint32_t *ct)
{
	struct tsim t = tsim_new(json, 1);
	struct nic_pte_opts o = { .is_matching = true };
	hwep_open(a, t.sim, 0, 10, 4, &o, 64);
	cr_assert_eq(nic_ct_alloc(a->lni, NULL, NULL, ct), 0);
	return t;
}

/* A triggered Put moves no data until the count reaches its threshold, and moves it then. */
Test(nic_trig, put_fires_exactly_at_its_threshold)
{
	struct tsim t = tsim_new(TRIG_NIC(""), 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	static char dst[64], src[64] = "triggered";
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .le_flags = C_LE_OP_PUT, .ctn = NIC_NONE,
				  .start = (uint64_t)(uintptr_t)dst, .length = 64, .match_id = C_MATCH_ID_ANY,
				  .ignore_bits = ~0ULL });
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	uint32_t ct;
	cr_assert_eq(nic_ct_alloc(a.lni, NULL, NULL, &ct), 0);
	struct nic_cmd p = { .op = NIC_CMD_PUT };
	p.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = 3, .vni = 10, .length = 10,
				      .local_addr = (uint64_t)(uintptr_t)src, .eqn = NIC_NONE, .ctn = NIC_NONE,
				      .src_pid = 4, .user_ptr = 9 };
	cr_assert_eq(nic_cmdq_emit_triggered(a.txq, &p, ct, 3), 0);
	nic_cmdq_ring(a.txq);
	sim_run(t.sim);
	cr_assert_eq(dst[0], 0, "held: threshold 3, count 0");
	cr_assert_eq(nic_ct_tles(a.nic, ct), 1);
	cr_assert_eq(nic_tles_used(a.nic), 1);
	ct_cmd(&a, NIC_CMD_CT_INC, ct, 2);
	sim_run(t.sim);
	cr_assert_eq(ct_val(&a, ct), 2);
	cr_assert_eq(dst[0], 0, "count 2 < 3: still held");
	struct nic_event ev[8];
	cr_assert_eq(count_type(ev, drain(&a, ev, 8), C_EVENT_ACK), 0);
	ct_cmd(&a, NIC_CMD_CT_INC, ct, 1);
	sim_run(t.sim);
	cr_assert_str_eq(dst, "triggered", "count 3: released, the Put delivered");
	int n = drain(&a, ev, 8);
	cr_assert_eq(count_type(ev, n, C_EVENT_ACK), 1);
	cr_assert_eq(find_type(ev, n, C_EVENT_ACK)->user_ptr, 9);
	cr_assert_eq(nic_ct_tles(a.nic, ct), 0);
	cr_assert_eq(nic_tles_used(a.nic), 0, "the entry is given back when released");
	cr_assert_eq(tctr(&t, "nic.0.C_CNTR_TOU_NUM_TRIG_CMDS_0"), 1);
	cr_assert_eq(tctr(&t, "nic.0.sim.tle_high_water"), 1);
	tsim_free(&t);
}

/* Thresholds 5, 2, 4, 2, 4, 3 queued in that order; the count jumps 0 -> 3 -> 10.  Released: the two 2s in
 * queue order and the 3, then the 4s in queue order and the 5; each trig_release_ns after the previous. */
Test(nic_trig, threshold_order_then_queue_order_one_release_time_apart)
{
	struct hwep a;
	uint32_t ct;
	struct tsim t = one_ep(TRIG_NIC(""), &a, &ct);
	struct fired f = { .sim = t.sim };
	static const uint64_t thr[] = { 5, 2, 4, 2, 4, 3 };
	struct tag tags[6];
	for (int i = 0; i < 6; i++) {
		tags[i] = (struct tag){ &f, i };
		cr_assert_eq(nic_trig_append(a.lni, ct, thr[i], on_fire, &tags[i]), 0);
	}
	cr_assert_eq(nic_ct_tles(a.nic, ct), 6);
	ct_cmd(&a, NIC_CMD_CT_SET, ct, 3);
	sim_run(t.sim);
	cr_assert_eq(f.n, 3);
	cr_assert_eq(f.tag[0], 1);
	cr_assert_eq(f.tag[1], 3);
	cr_assert_eq(f.tag[2], 5);
	cr_assert_eq(f.at[1] - f.at[0], 100000, "one trig_release_ns (100 ns) apart");
	cr_assert_eq(f.at[2] - f.at[1], 100000);
	ct_cmd(&a, NIC_CMD_CT_INC, ct, 7);
	sim_run(t.sim);
	cr_assert_eq(f.n, 6);
	cr_assert_eq(f.tag[3], 2);
	cr_assert_eq(f.tag[4], 4);
	cr_assert_eq(f.tag[5], 0);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(f.rc[i], C_RC_OK);
	for (int i = 1; i < 6; i++)
		cr_assert_geq(f.thr[i], f.thr[i - 1], "never a higher threshold before a lower one");
	tsim_free(&t);
}

/* An entry whose threshold the count already reached is released at once (after trig_release_ns), also
 * threshold 0; a CT_SET that lowers the count releases nothing. */
Test(nic_trig, count_already_past_releases_at_once)
{
	struct hwep a;
	uint32_t ct;
	struct tsim t = one_ep(TRIG_NIC(""), &a, &ct);
	ct_cmd(&a, NIC_CMD_CT_SET, ct, 10);
	sim_run(t.sim);
	struct fired f = { .sim = t.sim };
	struct tag t0 = { &f, 0 }, t1 = { &f, 1 }, t2 = { &f, 2 };
	simtime_t now = sim_now(t.sim);
	cr_assert_eq(nic_trig_append(a.lni, ct, 7, on_fire, &t0), 0);
	cr_assert_eq(nic_trig_append(a.lni, ct, 0, on_fire, &t1), 0);
	cr_assert_eq(nic_ct_tles(a.nic, ct), 0, "nothing held");
	cr_assert_eq(nic_tles_used(a.nic), 2, "both in the trigger engine");
	sim_run(t.sim);
	cr_assert_eq(f.n, 2);
	cr_assert_eq(f.at[0], now + 100000);
	cr_assert_eq(f.at[1], now + 200000);
	cr_assert_eq(nic_trig_append(a.lni, ct, 20, on_fire, &t2), 0);
	ct_cmd(&a, NIC_CMD_CT_SET, ct, 5);
	sim_run(t.sim);
	cr_assert_eq(f.n, 2, "a lower count releases nothing");
	ct_cmd(&a, NIC_CMD_CT_SET, ct, 20);
	sim_run(t.sim);
	cr_assert_eq(f.n, 3);
	tsim_free(&t);
}

/* Chained counters: a triggered CT_INC on CT B fires on CT A; a triggered Get then fires on B. */
Test(nic_trig, triggered_counter_commands_chain)
{
	struct tsim t = tsim_new(TRIG_NIC(""), 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	hwep_open(&b, t.sim, 1, 10, 3, &o, 64);
	static char exposed[32] = "remote bytes", land[32];
	tgt(&b, NIC_CMD_TGT_APPEND,
	    (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .le_flags = C_LE_OP_GET, .ctn = NIC_NONE,
				  .start = (uint64_t)(uintptr_t)exposed, .length = 32, .match_id = C_MATCH_ID_ANY,
				  .match_bits = 42 });
	tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	uint32_t ca, cb;
	cr_assert_eq(nic_ct_alloc(a.lni, NULL, NULL, &ca), 0);
	cr_assert_eq(nic_ct_alloc(a.lni, NULL, NULL, &cb), 0);
	struct nic_cmd inc = { .op = NIC_CMD_CT_INC };
	inc.ct = (struct nic_ct_cmd){ .ctn = cb, .success = 4 };
	cr_assert_eq(nic_cmdq_emit_triggered(a.txq, &inc, ca, 1), 0);
	struct nic_cmd g = { .op = NIC_CMD_GET };
	g.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = 3, .vni = 10, .length = 13, .match_bits = 42,
				      .local_addr = (uint64_t)(uintptr_t)land, .eqn = NIC_NONE, .ctn = NIC_NONE,
				      .src_pid = 4 };
	cr_assert_eq(nic_cmdq_emit_triggered(a.txq, &g, cb, 4), 0);
	nic_cmdq_ring(a.txq);
	sim_run(t.sim);
	cr_assert_eq(land[0], 0);
	cr_assert_eq(ct_val(&a, cb), 0);
	ct_cmd(&a, NIC_CMD_CT_INC, ca, 1);
	sim_run(t.sim);
	cr_assert_eq(ct_val(&a, cb), 4, "the triggered CT_INC ran");
	cr_assert_str_eq(land, "remote bytes", "and released the triggered Get");
	cr_assert_eq(tctr(&t, "nic.0.C_CNTR_TOU_NUM_TRIG_CMDS_0"), 2);
	tsim_free(&t);
}

/* nic.tles bounds the NIC; a service's limits.tle bounds its LNIs; entries come back when released. */
Test(nic_trig, limits_of_the_nic_and_of_a_service)
{
	struct tsim t = tsim_new(TRIG_NIC(", \"tles\": 4, \"services\": [{\"limits\": {\"tle\": {\"max\": 2}}}]"), 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	struct nic_lni *l2;
	cr_assert_eq(nic_lni_alloc(a.nic, 2, &nic_mem_host, NULL, &l2), 0);
	uint32_t ct, ct2;
	cr_assert_eq(nic_ct_alloc(a.lni, NULL, NULL, &ct), 0);
	cr_assert_eq(nic_ct_alloc(l2, NULL, NULL, &ct2), 0);
	struct fired f = { .sim = t.sim };
	struct tag tg = { &f, 0 };
	cr_assert_eq(nic_trig_append(l2, ct2, 1, on_fire, &tg), 0);
	cr_assert_eq(nic_trig_append(l2, ct2, 1, on_fire, &tg), 0);
	cr_assert_eq(nic_trig_append(l2, ct2, 1, on_fire, &tg), -ENOSPC, "service 2 allows 2 TLEs");
	cr_assert_eq(nic_trig_append(a.lni, ct, 1, on_fire, &tg), 0);
	cr_assert_eq(nic_trig_append(a.lni, ct, 1, on_fire, &tg), 0);
	cr_assert_eq(nic_trig_append(a.lni, ct, 1, on_fire, &tg), -ENOSPC, "the NIC has 4");
	struct nic_cmd p = { .op = NIC_CMD_PUT };
	p.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = 3, .vni = 10, .eqn = NIC_NONE, .ctn = NIC_NONE };
	uint32_t free_before = nic_cmdq_free_slots(a.txq);
	cr_assert_eq(nic_cmdq_emit_triggered(a.txq, &p, ct, 1), -ENOSPC);
	cr_assert_eq(nic_cmdq_free_slots(a.txq), free_before, "a refused emit takes no slot");
	cr_assert_geq(tctr(&t, "nic.0.sim.limit_hits"), 2);
	ct_cmd(&a, NIC_CMD_CT_INC, ct, 1);
	sim_run(t.sim);
	cr_assert_eq(f.n, 2);
	cr_assert_eq(nic_tles_used(a.nic), 2);
	cr_assert_eq(nic_trig_append(a.lni, ct, 5, on_fire, &tg), 0, "released entries are free again");
	cr_assert_eq(tctr(&t, "nic.0.sim.tle_high_water"), 4);
	tsim_free(&t);
}

/* A full trigger list stalls a software trigger queue instead of refusing: stalled entries take TLEs in
 * queue order as entries are released, behind every entry of their LNI already waiting; beyond the queue's
 * depth -EAGAIN; an LNI whose service is at its limit stays stalled while another LNI goes on; CT_CANCEL
 * and freeing the LNI drop stalled entries with a call.  nic_svc_rsrc_use reads a service's use. */
Test(nic_trig, full_trigger_list_stalls_the_queue)
{
	struct tsim t = tsim_new(TRIG_NIC(", \"tles\": 3, \"services\": [{\"limits\": {\"tle\": {\"max\": 1, \"res\": 1}}}]"), 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	struct nic_lni *l2;
	cr_assert_eq(nic_lni_alloc(a.nic, 2, &nic_mem_host, NULL, &l2), 0);
	uint32_t ct, ct2;
	cr_assert_eq(nic_ct_alloc(a.lni, NULL, NULL, &ct), 0);
	cr_assert_eq(nic_ct_alloc(l2, NULL, NULL, &ct2), 0);
	struct fired f = { .sim = t.sim };
	struct tag tg[8];
	for (int i = 0; i < 8; i++)
		tg[i] = (struct tag){ &f, i };
	cr_assert_eq(nic_trig_append_stall(l2, ct2, 1, on_fire, &tg[6], 4), 0, "service 2's one TLE");
	cr_assert_eq(nic_trig_append_stall(l2, ct2, 1, on_fire, &tg[7], 4), 1, "service 2 at its limit: stalled");
	cr_assert_eq(nic_trig_append_stall(a.lni, ct, 1, on_fire, &tg[0], 2), 0);
	cr_assert_eq(nic_trig_append_stall(a.lni, ct, 1, on_fire, &tg[1], 2), 0);
	cr_assert_eq(nic_trig_append_stall(a.lni, ct, 1, on_fire, &tg[2], 2), 1, "the NIC's 3 in use: stalled");
	cr_assert_eq(nic_trig_append_stall(a.lni, ct, 1, on_fire, &tg[3], 2), 1);
	cr_assert_eq(nic_trig_append_stall(a.lni, ct, 1, on_fire, &tg[4], 2), -EAGAIN, "queue depth 2");
	cr_assert_eq(nic_trig_append(a.lni, ct, 1, on_fire, &tg[4]), -ENOSPC, "a plain append still refuses");
	cr_assert_eq(nic_lni_tles_stalled(a.lni), 2);
	cr_assert_eq(nic_lni_tles_stalled(l2), 1);
	uint32_t use = 0, res = 0;
	cr_assert_eq(nic_svc_rsrc_use(a.nic, 2, NIC_RSRC_TLE, &use, &res), 0);
	cr_assert(use == 1 && res == 1, "service 2: %u in use of %u", use, res);
	cr_assert_eq(nic_svc_rsrc_use(a.nic, NIC_SVC_DEFAULT, NIC_RSRC_TLE, &use, &res), 0);
	cr_assert(use == 2 && res == 3, "default service: %u in use of %u (nic.tles)", use, res);
	cr_assert_eq(nic_svc_rsrc_use(a.nic, 9, NIC_RSRC_TLE, &use, &res), -ENOENT);
	sim_run(t.sim);
	cr_assert_eq(f.n, 0, "nothing before the count moves");
	ct_cmd(&a, NIC_CMD_CT_INC, ct, 1);
	sim_run(t.sim);
	/* 0 and 1 released; each TLE given back goes to the head of a stalled queue: service 2's stays stalled
	 * (its limit), so 2 then 3 take them, are held on a count already reached, and are released in order. */
	cr_assert_eq(f.n, 4, "%d released", f.n);
	for (int i = 0; i < 4; i++)
		cr_assert(f.tag[i] == i && f.rc[i] == C_RC_OK, "release %d is entry %d (rc %d)", i, f.tag[i], f.rc[i]);
	cr_assert(f.at[1] < f.at[2] && f.at[2] < f.at[3]);
	cr_assert_eq(nic_lni_tles_stalled(a.lni), 0);
	cr_assert_eq(nic_lni_tles_stalled(l2), 1, "service 2 still at its limit");
	cr_assert_eq(nic_trig_append_stall(a.lni, ct, 5, on_fire, &tg[4], 2), 0, "free TLEs again: held");
	cr_assert_eq(nic_ct_cancel(l2, ct2), 2, "one held, one stalled");
	cr_assert_eq(f.n, 6);
	cr_assert(f.tag[4] == 7 && f.rc[4] == C_RC_CANCELED, "the stalled one is dropped first");
	cr_assert(f.tag[5] == 6 && f.rc[5] == C_RC_CANCELED);
	cr_assert_eq(nic_lni_tles_stalled(l2), 0);
	cr_assert_eq(nic_trig_append_stall(l2, ct2, 1, on_fire, &tg[6], 4), 0);
	cr_assert_eq(nic_trig_append_stall(l2, ct2, 1, on_fire, &tg[7], 4), 1);
	nic_lni_free(l2);
	cr_assert_eq(f.n, 8, "freeing the LNI drops its held and stalled entries");
	cr_assert_eq(nic_tles_used(a.nic), 1);
	tsim_free(&t);
}

/* CT_CANCEL drops the held entries: nothing runs, callbacks see C_RC_CANCELED, the entries come back; a
 * later count reaching the thresholds releases nothing.  Freeing a CT or its LNI drops its entries too. */
Test(nic_trig, cancel_and_free_drop_held_entries)
{
	struct hwep a;
	uint32_t ct, ct2;
	struct tsim t = one_ep(TRIG_NIC(""), &a, &ct);
	cr_assert_eq(nic_ct_alloc(a.lni, NULL, NULL, &ct2), 0);
	struct fired f = { .sim = t.sim };
	struct tag tg = { &f, 0 };
	struct nic_cmd inc = { .op = NIC_CMD_CT_INC };
	inc.ct = (struct nic_ct_cmd){ .ctn = ct2, .success = 1 };
	cr_assert_eq(nic_cmdq_emit_triggered(a.txq, &inc, ct, 2), 0);
	cr_assert_eq(nic_trig_append(a.lni, ct, 1, on_fire, &tg), 0);
	nic_cmdq_ring(a.txq);
	sim_run(t.sim);
	cr_assert_eq(nic_ct_tles(a.nic, ct), 2);
	ct_cmd(&a, NIC_CMD_CT_CANCEL, ct, 0);
	sim_run(t.sim);
	cr_assert_eq(nic_ct_tles(a.nic, ct), 0);
	cr_assert_eq(nic_tles_used(a.nic), 0);
	cr_assert_eq(f.n, 1);
	cr_assert_eq(f.rc[0], C_RC_CANCELED);
	ct_cmd(&a, NIC_CMD_CT_SET, ct, 10);
	sim_run(t.sim);
	cr_assert_eq(f.n, 1, "nothing left to release");
	cr_assert_eq(ct_val(&a, ct2), 0, "the cancelled CT_INC never ran");
	cr_assert_eq(tctr(&t, "nic.0.sim.trig_canceled"), 2);
	cr_assert_eq(nic_trig_append(a.lni, ct2, 9, on_fire, &tg), 0);
	cr_assert_eq(nic_ct_cancel(a.lni, ct2), 1);
	cr_assert_eq(nic_trig_append(a.lni, ct2, 9, on_fire, &tg), 0);
	cr_assert_eq(nic_ct_free(a.lni, ct2), 0);
	cr_assert_eq(f.n, 3);
	cr_assert_eq(f.rc[2], C_RC_CANCELED, "freeing the CT drops its entries");
	cr_assert_eq(nic_trig_append(a.lni, ct, 99, on_fire, &tg), 0);
	nic_lni_free(a.lni);
	cr_assert_eq(f.n, 4);
	cr_assert_eq(nic_tles_used(a.nic), 0);
	tsim_free(&t);
}

/* Misuse: a CT of another LNI or none, a threshold beyond 48 bits, commands that cannot be triggered, a
 * target queue, no callback. */
Test(nic_trig, misuse_is_refused)
{
	struct tsim t = tsim_new(TRIG_NIC(""), 1);
	struct nic_pte_opts o = { .is_matching = true };
	struct hwep a, b;
	hwep_open(&a, t.sim, 0, 10, 4, &o, 64);
	hwep_open(&b, t.sim, 0, 10, 5, &o, 64);
	uint32_t ct, other;
	cr_assert_eq(nic_ct_alloc(a.lni, NULL, NULL, &ct), 0);
	cr_assert_eq(nic_ct_alloc(b.lni, NULL, NULL, &other), 0);
	struct fired f = { .sim = t.sim };
	struct tag tg = { &f, 0 };
	cr_assert_eq(nic_trig_append(a.lni, other, 1, on_fire, &tg), -ENOENT, "another process's CT");
	cr_assert_eq(nic_trig_append(a.lni, 1999, 1, on_fire, &tg), -ENOENT);
	cr_assert_eq(nic_trig_append(a.lni, ct, 1ULL << 48, on_fire, &tg), -EINVAL);
	cr_assert_eq(nic_trig_append(a.lni, ct, 1, NULL, NULL), -EINVAL);
	cr_assert_eq(nic_ct_cancel(a.lni, other), -ENOENT);
	struct nic_cmd idc = { .op = NIC_CMD_IDC_PUT };
	idc.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = 3, .length = 8, .eqn = NIC_NONE, .ctn = NIC_NONE };
	cr_assert_eq(nic_cmdq_emit_triggered(a.txq, &idc, ct, 1), -EINVAL, "no triggered IDC");
	struct nic_cmd app = { .op = NIC_CMD_TGT_APPEND };
	cr_assert_eq(nic_cmdq_emit_triggered(a.tgq, &app, ct, 1), -EINVAL);
	struct nic_cmd bad = { .op = NIC_CMD_PUT };
	bad.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = C_PID_ANY, .eqn = NIC_NONE, .ctn = NIC_NONE };
	cr_assert_eq(nic_cmdq_emit_triggered(a.txq, &bad, ct, 1), -EINVAL);
	cr_assert_eq(nic_tles_used(a.nic), 0, "nothing taken by refused calls");
	tsim_free(&t);
}
