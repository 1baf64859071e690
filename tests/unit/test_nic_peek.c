/* FI_PEEK, FI_CLAIM and FI_DISCARD in the provider software layer: the search of unexpected messages,
 * in each match mode, and across a hybrid switch to software matching. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

static void hw(struct sw_ep_attr *a)
{
	(void)a;
}

static void sw(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_SOFTWARE;
	a->env.msg_offload = false;
}

static void hybrid(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_HYBRID;
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 5 + seed);
}

static const struct sw_comp *last(const struct tep *t)
{
	cr_assert_gt(t->n, 0);
	return &t->comps[t->n - 1].c;
}

/* One peek; returns its completion (after running the simulation). */
static const struct sw_comp *peek(struct tsim *s, struct tep *r, uint64_t tag, uint64_t flags, uint64_t key,
				  void *ctx)
{
	size_t n = r->n;
	cr_assert_eq(sw_peek(r->ep, NULL, tag, 0, FI_TAGGED | flags, key, ctx), 0);
	sim_run(s->sim);
	cr_assert_eq(r->n, n + 1, "one completion per peek");
	cr_assert_eq(last(r)->op_context, ctx);
	return last(r);
}

static void send_tagged(struct tsim *s, struct tep *a, struct tep *r, const void *buf, size_t len, uint64_t tag,
			uint64_t data, void *ctx)
{
	uint64_t f = FI_TAGGED | (data ? FI_REMOTE_CQ_DATA : 0);
	cr_assert_eq(sw_send(a->ep, (uint64_t)(uintptr_t)buf, len, NULL, sw_ep_addr(r->ep), tag, data, f, ctx), 0);
	sim_run(s->sim);
}

static void peek_claim_discard(void (*mode)(struct sw_ep_attr *))
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, r;
	cr_assert_eq(tep_open(&a, &s, 0, mode), 0);
	cr_assert_eq(tep_open(&r, &s, 1, mode), 0);
	static uint8_t m1[100], m2[40000], m3[5000], m4[64], m5[30000], d2[40000], d4[64], other[256];
	fill(m1, sizeof(m1), 1);
	fill(m2, sizeof(m2), 2);
	fill(m4, sizeof(m4), 4);
	const struct sw_comp *c = peek(&s, &r, 1, 0, 0, (void *)1);
	cr_assert_eq(c->err, FI_ENOMSG);
	cr_assert_eq(c->tag, 1);
	send_tagged(&s, &a, &r, m1, sizeof(m1), 1, 0x11, (void *)101);
	send_tagged(&s, &a, &r, m2, sizeof(m2), 2, 0, (void *)102); /* rendezvous */
	send_tagged(&s, &a, &r, m3, sizeof(m3), 3, 0, (void *)103);
	send_tagged(&s, &a, &r, NULL, 0, 4, 0, (void *)104);         /* zero bytes */
	send_tagged(&s, &a, &r, m5, sizeof(m5), 5, 0, (void *)105); /* rendezvous */
	cr_assert_eq(r.n, 1, "everything unexpected");
	/* Found, not consumed, with length, tag, data and source. */
	for (int k = 0; k < 2; k++) {
		c = peek(&s, &r, 1, 0, 0, (void *)2);
		cr_assert_eq(c->err, 0);
		cr_assert_eq(c->len, sizeof(m1));
		cr_assert_eq(c->tag, 1);
		cr_assert(c->flags & FI_REMOTE_CQ_DATA);
		cr_assert_eq(c->data, 0x11);
		cr_assert(c->src_valid && c->src.nic == 0 && c->src.pid == sw_ep_addr(a.ep).pid);
	}
	c = peek(&s, &r, 9, 0, 0, (void *)3);
	cr_assert_eq(c->err, FI_ENOMSG);
	/* Claim the rendezvous message: invisible to peeks and receives; the claim receive gets its bytes. */
	c = peek(&s, &r, 2, FI_CLAIM, 77, (void *)4);
	cr_assert_eq(c->err, 0);
	cr_assert_eq(c->len, sizeof(m2));
	cr_assert_eq(peek(&s, &r, 2, 0, 0, (void *)5)->err, FI_ENOMSG);
	cr_assert_eq(sw_recv(r.ep, (uint64_t)(uintptr_t)other, sizeof(other), NULL, 2, 0, FI_TAGGED, (void *)6), 0);
	sim_run(s.sim);
	size_t n = r.n;
	cr_assert_eq(n, 6, "the ordinary receive did not take the claimed message");
	cr_assert_eq(sw_recv_claimed(r.ep, (uint64_t)(uintptr_t)d2, sizeof(d2), 76, 0, (void *)7), -FI_EINVAL);
	cr_assert_eq(sw_recv_claimed(r.ep, (uint64_t)(uintptr_t)d2, sizeof(d2), 77, 0, (void *)7), 0);
	sim_run(s.sim);
	cr_assert_eq(r.n, n + 1);
	c = last(&r);
	cr_assert_eq(c->op_context, (void *)7);
	cr_assert_eq(c->err, 0);
	cr_assert_eq(c->len, sizeof(m2));
	cr_assert_eq(memcmp(d2, m2, sizeof(m2)), 0, "claimed rendezvous message's bytes");
	/* Discard an eager and a rendezvous message: gone, and the rendezvous sender completes. */
	c = peek(&s, &r, 3, FI_DISCARD, 0, (void *)8);
	cr_assert_eq(c->err, 0);
	cr_assert_eq(c->len, sizeof(m3));
	cr_assert_eq(peek(&s, &r, 3, 0, 0, (void *)9)->err, FI_ENOMSG);
	c = peek(&s, &r, 5, FI_DISCARD, 0, (void *)10);
	cr_assert_eq(c->len, sizeof(m5));
	bool sent5 = false, sent2 = false;
	for (size_t k = 0; k < a.n; k++) {
		sent5 |= a.comps[k].c.op_context == (void *)105 && a.comps[k].c.err == 0;
		sent2 |= a.comps[k].c.op_context == (void *)102 && a.comps[k].c.err == 0;
	}
	cr_assert(sent2, "the claimed rendezvous send completed");
	cr_assert(sent5, "the discarded rendezvous send completed");
	/* Zero-byte message: claim, then discard it through the claim receive. */
	c = peek(&s, &r, 4, FI_CLAIM, 88, (void *)11);
	cr_assert_eq(c->err, 0);
	cr_assert_eq(c->len, 0);
	n = r.n;
	cr_assert_eq(sw_recv_claimed(r.ep, (uint64_t)(uintptr_t)d4, sizeof(d4), 88, FI_DISCARD, (void *)12), 0);
	sim_run(s.sim);
	cr_assert_eq(r.n, n + 1);
	cr_assert_eq(last(&r)->op_context, (void *)12);
	cr_assert_eq(peek(&s, &r, 4, 0, 0, (void *)13)->err, FI_ENOMSG);
	/* Still a working endpoint: the message for the posted tag-2 receive. */
	send_tagged(&s, &a, &r, m4, sizeof(m4), 2, 0, (void *)106);
	bool got6 = false;
	for (size_t k = 0; k < r.n; k++)
		got6 |= r.comps[k].c.op_context == (void *)6 && r.comps[k].c.len == sizeof(m4);
	cr_assert(got6);
	cr_assert_null(sw_ep_fatal(r.ep));
	cr_assert_eq(sw_ux_live(s.sim), 1, "the message only peeked at is still held");
	cr_assert_eq(sw_rmsgs_live(s.sim), 0);
	tep_close(&a);
	tep_close(&r);
	cr_assert_eq(tsw_records(s.sim), 0, "the close returned it");
	tsim_free(&s);
}

Test(nic_peek, hardware_mode) { peek_claim_discard(hw); }
Test(nic_peek, software_mode) { peek_claim_discard(sw); }
Test(nic_peek, hybrid_mode) { peek_claim_discard(hybrid); }

/* In hardware matching a peek is a SEARCH of the PtlTE's unexpected list: no receive is posted and
 * cancelled, and nothing is onloaded. */
Test(nic_peek, hardware_peek_searches_the_nic_list)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, r;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&r, &s, 1, NULL), 0);
	static uint8_t m[64];
	send_tagged(&s, &a, &r, m, sizeof(m), 5, 0, NULL);
	unsigned pe = sw_ep_rx_ptn(r.ep) % 4;
	uint64_t appends = tctr(&s, "nic.1.C_CNTR_LPE_APPEND_CMDS_%u", pe);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(peek(&s, &r, 5, 0, 0, NULL)->len, 64);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_SEARCH_CMDS"), 3);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_SEARCH_SUCCESS"), 3);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_APPEND_CMDS_%u", pe), appends, "no receive appended");
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_UNLINK_CMDS"), 0, "nothing cancelled");
	struct nic_pte_status st;
	nic_pte_status(sw_ep_nic(r.ep), sw_ep_rx_ptn(r.ep), &st);
	cr_assert_eq(st.ule_count, 1, "the message is still on the NIC's unexpected list");
	/* A claim takes it off (SEARCH_AND_DELETE of the first match). */
	cr_assert_eq(peek(&s, &r, 5, FI_CLAIM, 1, NULL)->len, 64);
	nic_pte_status(sw_ep_nic(r.ep), sw_ep_rx_ptn(r.ep), &st);
	cr_assert_eq(st.ule_count, 0);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_SEARCH_DELETE_CMDS"), 1);
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}

/* Many peeks in flight at once each get the right answer (no "one peek at a time"). */
Test(nic_peek, concurrent_peeks)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, r;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&r, &s, 1, NULL), 0);
	static uint8_t m[8][32];
	for (uint64_t t = 0; t < 8; t += 2)
		send_tagged(&s, &a, &r, m[t], 10 + t, t, 0, NULL);
	for (uint64_t t = 0; t < 8; t++)
		cr_assert_eq(sw_peek(r.ep, NULL, t, 0, FI_TAGGED, 0, (void *)(uintptr_t)(t + 1)), 0);
	sim_run(s.sim);
	cr_assert_eq(r.n, 8);
	for (size_t k = 0; k < r.n; k++) {
		uint64_t t = (uint64_t)(uintptr_t)r.comps[k].c.op_context - 1;
		if (t % 2)
			cr_assert_eq(r.comps[k].c.err, FI_ENOMSG, "tag %llu", (unsigned long long)t);
		else
			cr_assert(r.comps[k].c.err == 0 && r.comps[k].c.len == 10 + t, "tag %llu", (unsigned long long)t);
	}
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}

/* Hybrid mode running out of LEs for unexpected headers switches to software matching and onloads them:
 * peeks keep finding every waiting message, in arrival order, before and after the switch. */
static void hybrid_small(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_HYBRID;
}

Test(nic_peek, hybrid_switch_keeps_every_message_visible)
{
	struct tsim s = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2},"
				 " \"nic\": {\"le_pools\": [{\"pool\": 0, \"max_alloc\": 40}]}}",
				 1);
	struct tep a, r;
	cr_assert_eq(tep_open(&a, &s, 0, hybrid_small), 0);
	cr_assert_eq(tep_open(&r, &s, 1, hybrid_small), 0);
	enum { N = 80 };
	static uint8_t m[N][48], d[48];
	for (int i = 0; i < N; i++) {
		fill(m[i], sizeof(m[i]), (unsigned)i);
		int rc;
		while ((rc = sw_send(a.ep, (uint64_t)(uintptr_t)m[i], 8 + (size_t)(i % 40), NULL, sw_ep_addr(r.ep), 3, 0,
				     FI_TAGGED, NULL)) == -FI_EAGAIN)
			sim_run(s.sim);
		cr_assert_eq(rc, 0);
	}
	sim_run(s.sim);
	cr_assert_eq(sw_ep_rxc_state(r.ep), RXC_ENABLED_SOFTWARE, "the LE pool ran out: software matching");
	cr_assert_gt(sw_ep_stats(r.ep)->sw_transitions, 0);
	for (int i = 0; i < N; i++) {
		size_t n = r.n;
		int rc;
		while ((rc = sw_peek(r.ep, NULL, 3, 0, FI_TAGGED, 0, NULL)) == -FI_EAGAIN)
			sim_run(s.sim);
		cr_assert_eq(rc, 0);
		sim_run(s.sim);
		cr_assert_eq(r.n, n + 1);
		cr_assert_eq(last(&r)->err, 0, "message %d found", i);
		cr_assert_eq(last(&r)->len, 8 + (size_t)(i % 40), "message %d in order", i);
		cr_assert_eq(sw_recv(r.ep, (uint64_t)(uintptr_t)d, sizeof(d), NULL, 3, 0, FI_TAGGED, NULL), 0);
		sim_run(s.sim);
		cr_assert_eq(last(&r)->len, 8 + (size_t)(i % 40));
		cr_assert_eq(memcmp(d, m[i], last(&r)->len), 0);
	}
	cr_assert_eq(peek(&s, &r, 3, 0, 0, NULL)->err, FI_ENOMSG);
	cr_assert_null(sw_ep_fatal(r.ep));
	cr_assert_eq(tsw_records(s.sim), 0, "every onloaded record went back with its message");
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}

Test(nic_peek, bad_arguments)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep r;
	cr_assert_eq(tep_open(&r, &s, 1, NULL), 0);
	cr_assert_eq(sw_peek(r.ep, NULL, 0, 0, FI_TAGGED | FI_CLAIM | FI_DISCARD, 0, NULL), -FI_EINVAL);
	cr_assert_eq(sw_peek(r.ep, NULL, 0, 0, FI_MULTI_RECV, 0, NULL), -FI_EINVAL);
	cr_assert_eq(sw_recv_claimed(r.ep, 0, 0, 5, 0, NULL), -FI_EINVAL);
	cr_assert_eq(sw_peek(NULL, NULL, 0, 0, FI_TAGGED, 0, NULL), -FI_EINVAL);
	tep_close(&r);
	tsim_free(&s);
}
