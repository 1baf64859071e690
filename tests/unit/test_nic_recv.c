/* Receive requests of the provider software layer: multi-receive buffers when a message does not fit or
 * events come out of order, cancel racing a message, cancel naming the right receive, FI_OPT_MIN_MULTI_RECV
 * after enable. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

#define THREE_NICS "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 3}, \"nic\": {}}"

static uint32_t xs = 2463534242u;
static uint32_t xr(void)
{
	xs ^= xs << 13;
	xs ^= xs >> 17;
	xs ^= xs << 5;
	return xs;
}

/* A message names itself: 4-byte index, then bytes derived from it. */
static void msg_fill(uint8_t *b, uint32_t i, size_t len)
{
	for (size_t k = 0; k < len; k++)
		b[k] = (uint8_t)(i * 13 + k * 7);
	if (len >= 4)
		memcpy(b, &i, 4);
}

static bool msg_ok(const uint8_t *b, uint32_t i, size_t len)
{
	for (size_t k = 4; k < len; k++)
		if (b[k] != (uint8_t)(i * 13 + k * 7))
			return false;
	return true;
}

static void hw(struct sw_ep_attr *a)
{
	a->min_multi_recv = 64;
}

static void sw(struct sw_ep_attr *a)
{
	a->min_multi_recv = 64;
	a->env.rx_match_mode = SW_MATCH_SOFTWARE;
	a->env.msg_offload = false;
}

static void hybrid(struct sw_ep_attr *a)
{
	a->min_multi_recv = 64;
	a->env.rx_match_mode = SW_MATCH_HYBRID;
}

/* Consume a tep's completions for two multi-receive buffers [buf, buf + size) with contexts 0 and 1: every
 * message exactly once (whole, or truncated with FI_ETRUNC and olen = what did not fit), the buffer use
 * tiled from offset 0, FI_MULTI_RECV on its last completion only and with less than min_free left.  Retired
 * buffers are reposted.  Returns the number of messages reported so far. */
struct mrx {
	struct tep *t;
	uint8_t *buf[2];
	size_t size, min_free;
	const uint32_t *len;
	uint32_t n;
	bool *seen;
	size_t next;        /* completions consumed */
	uint64_t used[2];   /* bytes reported in the current use of each buffer */
	uint32_t got, truncated, retired, reordered;
	uint64_t last_off[2];
};

static void mrx_post(struct mrx *m, int b)
{
	cr_assert_eq(sw_recv(m->t->ep, (uint64_t)(uintptr_t)m->buf[b], m->size, NULL, 0, 0, FI_MULTI_RECV,
			     (void *)(uintptr_t)b),
		     0);
	m->used[b] = 0;
	m->last_off[b] = 0;
}

static void mrx_consume(struct mrx *m, bool repost)
{
	while (m->next < m->t->n) {
		const struct sw_comp *c = &m->t->comps[m->next++].c;
		int b = (int)(uintptr_t)c->op_context;
		cr_assert(b == 0 || b == 1);
		cr_assert(c->err == 0 || c->err == FI_ETRUNC, "completion error %d", c->err);
		if (c->len) {
			uint64_t off = c->buf - (uint64_t)(uintptr_t)m->buf[b];
			cr_assert_leq(off + c->len, m->size);
			cr_assert_geq(c->len, 4, "a placed message gets at least min_free bytes");
			uint32_t i;
			memcpy(&i, (void *)(uintptr_t)c->buf, 4);
			cr_assert_lt(i, m->n);
			cr_assert(!m->seen[i], "message %u reported twice", i);
			m->seen[i] = true;
			cr_assert(msg_ok((void *)(uintptr_t)c->buf, i, c->len), "message %u bytes", i);
			if (c->err == FI_ETRUNC) {
				m->truncated++;
				cr_assert_eq(c->len + c->olen, m->len[i], "message %u: len %llu + olen %llu", i,
					     (unsigned long long)c->len, (unsigned long long)c->olen);
			} else {
				cr_assert_eq(c->len, m->len[i]);
			}
			if (off < m->last_off[b])
				m->reordered++;
			m->last_off[b] = off;
			m->used[b] += c->len;
			m->got++;
		}
		if (c->flags & FI_MULTI_RECV) {
			cr_assert_lt(m->size - m->used[b], m->min_free, "retired with less than min_free left");
			m->retired++;
			if (repost)
				mrx_post(m, b);
		}
	}
}

static void mrecv_oversized(void (*mode)(struct sw_ep_attr *), bool unexpected)
{
	struct tsim s = tsim_new(THREE_NICS, 1);
	struct tep a, c, r;
	cr_assert_eq(tep_open(&a, &s, 0, mode), 0);
	cr_assert_eq(tep_open(&c, &s, 2, mode), 0);
	cr_assert_eq(tep_open(&r, &s, 1, mode), 0);
	enum { N = 400, SIZE = 8192 };
	static uint8_t src[N][6000];
	static uint32_t len[N];
	static bool seen[N];
	memset(seen, 0, sizeof(seen));
	uint8_t *mem = malloc(2 * SIZE);
	struct mrx m = { .t = &r, .buf = { mem, mem + SIZE }, .size = SIZE, .min_free = 64, .len = len, .n = N,
			 .seen = seen };
	if (!unexpected) {
		mrx_post(&m, 0);
		mrx_post(&m, 1);
		sim_run(s.sim);
	}
	/* Two senders, sizes up to 6000 B into 8 KiB buffers: many messages do not fit in what is left. */
	for (uint32_t i = 0; i < N; i++) {
		len[i] = 4 + xr() % 5997;
		msg_fill(src[i], i, len[i]);
		struct tep *snd = i % 2 ? &c : &a;
		int rc;
		while ((rc = sw_send(snd->ep, (uint64_t)(uintptr_t)src[i], len[i], NULL, sw_ep_addr(r.ep), 0, 0, FI_MSG,
				     NULL)) == -FI_EAGAIN)
			sim_run(s.sim);
		cr_assert_eq(rc, 0);
		if (!unexpected && i % 8 == 7) {
			sim_run(s.sim);
			mrx_consume(&m, true);
		}
	}
	sim_run(s.sim);
	if (unexpected) {
		cr_assert_eq(r.n, 0, "nothing received before a buffer is posted");
		mrx_post(&m, 0);
		mrx_post(&m, 1);
	}
	for (int round = 0; round < 10000 && m.got < N; round++) {
		sim_run(s.sim);
		mrx_consume(&m, true);
	}
	cr_assert_null(sw_ep_fatal(r.ep), "fatal: %s", r.fatal);
	cr_assert_eq(m.got, N, "every message reported (%u)", m.got);
	cr_assert_gt(m.truncated, 0, "some messages did not fit in what was left");
	cr_assert_gt(m.retired, 10);
	for (uint32_t i = 0; i < N; i++)
		cr_assert(seen[i]);
	cr_assert_eq(tsw_msg_records(s.sim), 0, "every unexpected record went back with its message");
	/* The endpoint still works: cancel both buffers. */
	size_t before = r.n;
	cr_assert_eq(sw_cancel(r.ep, (void *)0), 0);
	cr_assert_eq(sw_cancel(r.ep, (void *)1), 0);
	sim_run(s.sim);
	cr_assert_eq(r.n, before + 2);
	for (size_t k = before; k < r.n; k++)
		cr_assert(r.comps[k].c.err == FI_ECANCELED && (r.comps[k].c.flags & FI_MULTI_RECV));
	free(mem);
	cr_assert_eq(tsw_records(s.sim), 0);
	tep_close(&a);
	tep_close(&c);
	tep_close(&r);
	tsim_free(&s);
}

Test(nic_recv, multi_recv_oversized_expected_hardware) { mrecv_oversized(hw, false); }
Test(nic_recv, multi_recv_oversized_unexpected_hardware) { mrecv_oversized(hw, true); }
Test(nic_recv, multi_recv_oversized_expected_software) { mrecv_oversized(sw, false); }
Test(nic_recv, multi_recv_oversized_unexpected_software) { mrecv_oversized(sw, true); }
Test(nic_recv, multi_recv_oversized_unexpected_hybrid) { mrecv_oversized(hybrid, true); }

/* PUT events of one LE may overtake each other (each waits for its own DMA): a small message that retires
 * the buffer can be reported before a large one placed ahead of it.  The buffer is finished only when every
 * byte below its retirement point has been reported: FI_MULTI_RECV goes on the last completion.  Packets
 * are written to host memory as they land, so the large message's writes lag its arrival only when PCIe is
 * slower than the link: here 50 Gb/s, 2.9 us of writes for 0.7 us on the wire. */
Test(nic_recv, multi_recv_put_events_out_of_order)
{
	struct tsim s = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 3}, \"nic\": {\"pcie_gbps\": 50}}",
				 1);
	struct tep a, c, r;
	cr_assert_eq(tep_open(&a, &s, 0, hw), 0);
	cr_assert_eq(tep_open(&c, &s, 2, hw), 0);
	cr_assert_eq(tep_open(&r, &s, 1, hw), 0);
	enum { SIZE = 20000 };
	static uint8_t big[18000], small[1990], mem[2 * SIZE];
	static bool seen[2];
	uint32_t len[2] = { sizeof(big), sizeof(small) };
	msg_fill(big, 0, sizeof(big));
	msg_fill(small, 1, sizeof(small));
	uint32_t reordered = 0;
	for (int trial = 0; trial < 40; trial++) {
		memset(seen, 0, sizeof(seen));
		struct mrx m = { .t = &r, .buf = { mem, mem + SIZE }, .size = SIZE, .min_free = 64, .len = len, .n = 2,
				 .seen = seen, .next = r.n };
		mrx_post(&m, 0);
		sim_run(s.sim);
		/* The big message, then the small one from another NIC a little later: it is matched right after
		 * the big one and retires the buffer (10 bytes left < 64). */
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)big, sizeof(big), NULL, sw_ep_addr(r.ep), 0, 0, FI_MSG,
				     NULL),
			     0);
		sim_run_until(s.sim, sim_now(s.sim) + SIM_NS(500 + 20 * (uint64_t)trial));
		cr_assert_eq(sw_send(c.ep, (uint64_t)(uintptr_t)small, sizeof(small), NULL, sw_ep_addr(r.ep), 0, 0, FI_MSG,
				     NULL),
			     0);
		size_t first = r.n;
		sim_run(s.sim);
		cr_assert_null(sw_ep_fatal(r.ep), "fatal: %s", r.fatal);
		cr_assert_eq(r.n, first + 2);
		cr_assert(!(r.comps[first].c.flags & FI_MULTI_RECV), "FI_MULTI_RECV only on the last completion");
		cr_assert(r.comps[first + 1].c.flags & FI_MULTI_RECV);
		reordered += r.comps[first].c.len == sizeof(small);
		mrx_consume(&m, false);
		cr_assert_eq(m.got, 2);
		cr_assert_eq(m.retired, 1);
	}
	cr_assert_gt(reordered, 0, "the small message's event overtook the big one's in some trials");
	tep_close(&a);
	tep_close(&c);
	tep_close(&r);
	tsim_free(&s);
}

/* Run until the NIC has matched `n` messages on r's PtlTE priority list (or more). */
static void run_until_matched(struct tsim *s, struct tep *r, uint64_t n)
{
	unsigned pe = sw_ep_rx_ptn(r->ep) % 4;
	uint32_t addr = nic_addr(sw_ep_nic(r->ep));
	for (int i = 0; i < 1000000 && tctr(s, "nic.%u.C_CNTR_LPE_NET_MATCH_PRIORITY_%u", addr, pe) < n; i++)
		sim_run_until(s->sim, sim_now(s->sim) + SIM_NS(1));
	cr_assert_geq(tctr(s, "nic.%u.C_CNTR_LPE_NET_MATCH_PRIORITY_%u", addr, pe), n);
}

/* A cancel that arrives after a message matched the receive, before software saw the PUT: the message
 * completes the receive, the cancel's UNLINK finds nothing, and the request lives until that UNLINK. */
Test(nic_recv, cancel_after_match_completes_with_the_message)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, r;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&r, &s, 1, NULL), 0);
	static uint8_t src[16000], dst[16384];
	msg_fill(src, 7, sizeof(src));
	for (int trial = 0; trial < 2; trial++) {
		size_t before = r.n;
		cr_assert_eq(sw_recv(r.ep, (uint64_t)(uintptr_t)dst, sizeof(dst), NULL, 0, 0, FI_MSG, (void *)9), 0);
		sim_run(s.sim);
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, sizeof(src), NULL, sw_ep_addr(r.ep), 0, 0, FI_MSG,
				     NULL),
			     0);
		run_until_matched(&s, &r, (uint64_t)trial + 1);
		cr_assert_eq(r.n, before, "the PUT event has not been seen yet");
		cr_assert_eq(sw_cancel(r.ep, (void *)9), 0, "still cancellable as far as software knows");
		sim_run(s.sim);
		cr_assert_null(sw_ep_fatal(r.ep), "fatal: %s", r.fatal);
		cr_assert_eq(r.n, before + 1, "one completion");
		cr_assert_eq(r.comps[before].c.err, 0, "the message, not FI_ECANCELED");
		cr_assert_eq(r.comps[before].c.len, sizeof(src));
		cr_assert(msg_ok(dst, 7, sizeof(src)));
		cr_assert_eq(sw_cancel(r.ep, (void *)9), -FI_ENOENT, "nothing left to cancel");
	}
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}

/* Cancel a multi-receive buffer while messages it took are still being written: their completions come
 * first, then FI_ECANCELED | FI_MULTI_RECV, then nothing. */
Test(nic_recv, cancel_multi_recv_with_messages_in_flight)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, r;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&r, &s, 1, hw), 0);
	static uint8_t src[3][16000], mem[65536];
	cr_assert_eq(sw_recv(r.ep, (uint64_t)(uintptr_t)mem, sizeof(mem), NULL, 0, 0, FI_MULTI_RECV, (void *)5), 0);
	sim_run(s.sim);
	for (uint32_t i = 0; i < 3; i++) {
		msg_fill(src[i], i, sizeof(src[i]));
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src[i], sizeof(src[i]), NULL, sw_ep_addr(r.ep), 0, 0, FI_MSG,
				     NULL),
			     0);
	}
	run_until_matched(&s, &r, 3);
	cr_assert_lt(r.n, 3, "some message events still in flight");
	cr_assert_eq(sw_cancel(r.ep, (void *)5), 0);
	sim_run(s.sim);
	cr_assert_null(sw_ep_fatal(r.ep));
	cr_assert_eq(r.n, 4);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(r.comps[i].c.err, 0);
		cr_assert(!(r.comps[i].c.flags & FI_MULTI_RECV));
	}
	cr_assert_eq(r.comps[3].c.err, FI_ECANCELED);
	cr_assert(r.comps[3].c.flags & FI_MULTI_RECV);
	cr_assert_eq(r.comps[3].c.op_context, (void *)5);
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}

/* Each posted receive has its own LE buffer id: cancelling one unlinks that one, not another. */
Test(nic_recv, cancel_unlinks_the_right_receive)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, r;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&r, &s, 1, NULL), 0);
	static uint8_t src[64], dst[3][64];
	for (uint64_t t = 1; t <= 3; t++)
		cr_assert_eq(sw_recv(r.ep, (uint64_t)(uintptr_t)dst[t - 1], 64, NULL, t, 0, FI_TAGGED, (void *)t), 0);
	sim_run(s.sim);
	cr_assert_eq(sw_cancel(r.ep, (void *)2), 0);
	sim_run(s.sim);
	cr_assert_eq(r.n, 1);
	cr_assert_eq(r.comps[0].c.err, FI_ECANCELED);
	cr_assert_eq(r.comps[0].c.op_context, (void *)2);
	msg_fill(src, 1, 64);
	for (uint64_t t = 1; t <= 3; t += 2)
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, 64, NULL, sw_ep_addr(r.ep), t, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(r.n, 3, "receives 1 and 3 still posted and matched");
	cr_assert_eq(r.comps[1].c.err, 0);
	cr_assert_eq(r.comps[2].c.err, 0);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_NET_MATCH_OVERFLOW_%u", sw_ep_rx_ptn(r.ep) % 4), 0);
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}

/* FI_OPT_MIN_MULTI_RECV changed after enable applies to buffers posted afterwards, not to those already
 * posted. */
static void min1000(struct sw_ep_attr *a)
{
	a->min_multi_recv = 1000;
}

Test(nic_recv, min_multi_recv_after_enable_applies_to_later_buffers)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, r;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&r, &s, 1, min1000), 0);
	static uint8_t src[1000], b0[4096], b1[4096];
	cr_assert_eq(sw_recv(r.ep, (uint64_t)(uintptr_t)b0, sizeof(b0), NULL, 0, 0, FI_MULTI_RECV, (void *)0), 0);
	sw_ep_set_min_multi_recv(r.ep, 2000);
	sim_run(s.sim);
	for (int i = 0; i < 7; i++) {
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, 1000, NULL, sw_ep_addr(r.ep), 0, 0, FI_MSG, NULL), 0);
		sim_run(s.sim);
	}
	/* Buffer 0 (posted with min 1000) retires after 4 messages, 96 bytes left; 3 wait unexpected. */
	cr_assert_eq(r.n, 4);
	cr_assert(r.comps[3].c.flags & FI_MULTI_RECV);
	for (int i = 0; i < 3; i++)
		cr_assert(!(r.comps[i].c.flags & FI_MULTI_RECV));
	cr_assert_eq(sw_recv(r.ep, (uint64_t)(uintptr_t)b1, sizeof(b1), NULL, 0, 0, FI_MULTI_RECV, (void *)1), 0);
	sim_run(s.sim);
	/* Buffer 1 (min 2000): 2096 bytes left after two messages, 1096 after the third: retired then. */
	cr_assert_eq(r.n, 7);
	cr_assert(!(r.comps[5].c.flags & FI_MULTI_RECV));
	cr_assert(r.comps[6].c.flags & FI_MULTI_RECV, "retired once less than 2000 bytes were left");
	cr_assert_eq(r.comps[6].c.op_context, (void *)1);
	for (int i = 0; i < 7; i++)
		cr_assert_eq(r.comps[i].c.err, 0);
	tep_close(&a);
	tep_close(&r);
	tsim_free(&s);
}
