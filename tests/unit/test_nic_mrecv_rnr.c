/* Multi-recv semantics and the RNR protocol. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

static struct rng_state {
	uint64_t s;
} rs = { 88172645463325252ULL };

static uint32_t xr(void)
{
	rs.s ^= rs.s << 13;
	rs.s ^= rs.s >> 7;
	rs.s ^= rs.s << 17;
	return (uint32_t)rs.s;
}

static void big_min_free(struct sw_ep_attr *a)
{
	a->min_multi_recv = 320; /* FI_OPT_MIN_MULTI_RECV at least the largest message: nothing truncates */
}

Test(nic_mrecv, thousand_mixed_messages_into_two_buffers)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, big_min_free), 0);
	enum { N = 1000, BUF = 96 * 1024, GUARD = 4096 };
	/* Two multi-recv buffers inside one guarded allocation: any byte outside them would show. */
	uint8_t *mem = malloc(2 * BUF + 3 * GUARD);
	memset(mem, 0xA5, 2 * BUF + 3 * GUARD);
	uint8_t *b0 = mem + GUARD, *b1 = mem + 2 * GUARD + BUF;
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)b0, BUF, NULL, 0, 0, FI_MULTI_RECV, (void *)0), 0);
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)b1, BUF, NULL, 0, 0, FI_MULTI_RECV, (void *)1), 0);
	sim_run(s.sim);
	static uint8_t src[N][300];
	uint32_t len[N];
	uint64_t total = 0;
	for (int i = 0; i < N; i++) {
		len[i] = 1 + xr() % 300;
		total += len[i];
		for (uint32_t k = 0; k < len[i]; k++)
			src[i][k] = (uint8_t)(i + k * 3);
		int rc;
		while ((rc = sw_send(a.ep, (uint64_t)(uintptr_t)src[i], len[i], NULL, sw_ep_addr(b.ep), 0, 0, FI_MSG, NULL)) ==
		       -FI_EAGAIN)
			sim_run(s.sim);
		cr_assert_eq(rc, 0);
	}
	sim_run(s.sim);
	cr_assert_lt(total, 2 * BUF, "the test sizes must fit in two buffers");
	cr_assert_eq(b.n, N);
	/* Completions: in order, each pointing exactly where the previous one ended; FI_MULTI_RECV only on the
	 * last completion of a buffer (the one that left less than min_multi_recv). */
	uint8_t *expect = b0;
	int buf_idx = 0, mr_flags = 0;
	for (int i = 0; i < N; i++) {
		const struct sw_comp *c = &b.comps[i].c;
		cr_assert_eq(c->err, 0);
		cr_assert_eq(c->len, len[i], "message %d: len %llu expected %u", i, (unsigned long long)c->len, len[i]);
		if ((uint8_t *)(uintptr_t)c->buf != expect) {
			cr_assert_eq(buf_idx, 0, "message %d: only one buffer switch", i);
			cr_assert_eq(mr_flags, 1, "the first buffer retired before the switch");
			buf_idx = 1;
			expect = b1;
		}
		cr_assert_eq((uint8_t *)(uintptr_t)c->buf, expect, "message %d lands right after the previous one", i);
		cr_assert_eq(memcmp((void *)(uintptr_t)c->buf, src[i], len[i]), 0, "message %d bytes", i);
		cr_assert_eq(c->op_context, (void *)(uintptr_t)buf_idx);
		expect += len[i];
		if (c->flags & FI_MULTI_RECV) {
			mr_flags++;
			cr_assert_lt((uint64_t)(b0 + BUF - expect), 320, "retired with less than min_multi_recv left");
		}
	}
	cr_assert_eq(mr_flags, 1, "only the first buffer retired (%d)", mr_flags);
	for (int g = 0; g < GUARD; g++) {
		cr_assert_eq(mem[g], 0xA5);
		cr_assert_eq(mem[GUARD + BUF + g], 0xA5);
		cr_assert_eq(mem[2 * GUARD + 2 * BUF + g], 0xA5);
	}
	for (uint8_t *p = expect; p < b1 + BUF; p++)
		cr_assert_eq(*p, 0xA5, "no byte past the last message");
	/* Cancel retires the second buffer with FI_ECANCELED | FI_MULTI_RECV. */
	cr_assert_eq(sw_cancel(b.ep, (void *)1), 0);
	sim_run(s.sim);
	cr_assert_eq(b.n, N + 1);
	cr_assert_eq(b.comps[N].c.err, FI_ECANCELED);
	cr_assert(b.comps[N].c.flags & FI_MULTI_RECV);
	free(mem);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_mrecv, multi_recv_is_untagged_only)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep b;
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t buf[4096];
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)buf, sizeof(buf), NULL, 0, 0, FI_MULTI_RECV | FI_TAGGED, NULL),
		     -FI_EINVAL);
	tep_close(&b);
	tsim_free(&s);
}

static void rnr(struct sw_ep_attr *a)
{
	a->proto = SW_PROTO_CXI_RNR;
}


Test(nic_rnr, late_receive_retries_on_schedule)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, rnr), 0);
	cr_assert_eq(tep_open(&b, &s, 1, rnr), 0);
	static uint8_t src[100], dst[100];
	memset(src, 0x3c, sizeof(src));
	sim_run(s.sim);
	simtime_t t0 = sim_now(s.sim);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, sizeof(src), NULL, sw_ep_addr(b.ep), 5, 0, FI_TAGGED, NULL),
		     0);
	/* Post the receive after ~900 us: the sender has been NACKed at 1, 11, 81, 271, 641 us intervals. */
	sim_run_until(s.sim, t0 + SIM_US(900));
	cr_assert_eq(a.n, 0);
	const struct sw_ep_stats *st = sw_ep_stats(a.ep);
	cr_assert_eq(st->total_rnr_nacks, 5, "nacks %llu retries %llu", (unsigned long long)st->total_rnr_nacks,
		     (unsigned long long)st->total_retries);
	cr_assert_eq(st->total_retries, 4);
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst, sizeof(dst), NULL, 5, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(a.comps[0].c.err, 0);
	cr_assert_eq(b.n, 1);
	cr_assert_eq(memcmp(src, dst, sizeof(src)), 0);
	cr_assert_eq(st->total_rnr_nacks, 5, "nacks %llu retries %llu at %llu", (unsigned long long)st->total_rnr_nacks,
		     (unsigned long long)st->total_retries, (unsigned long long)(a.comps[0].t - t0));
	cr_assert_eq(st->total_retries, 5);
	cr_assert_eq(tctr(&s, "nic.0.ep.%u.total_rnr_nacks", sw_ep_addr(a.ep).pid), 5);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

/* Retry i is sent exactly 1 + i^3 * 10 us (i capped at 4) after the NACK that caused it. */
struct nack_log {
	simtime_t t[32];
	int n;
};

static struct nack_log *g_log;

static void log_acks(void *ctx, struct nic *nic, uint32_t eqn);

Test(nic_rnr, retry_intervals_are_exact)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, rnr), 0);
	cr_assert_eq(tep_open(&b, &s, 1, rnr), 0);
	sim_run(s.sim);
	static uint8_t src[8];
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, 8, NULL, sw_ep_addr(b.ep), 1, 0, FI_TAGGED, NULL), 0);
	/* Sample the retry counter in 100 ns steps and record when each NACK and each retry happened. */
	const struct sw_ep_stats *st = sw_ep_stats(a.ep);
	simtime_t nack_at[8] = { 0 }, retry_at[8] = { 0 };
	uint64_t nacks = 0, retries = 0;
	simtime_t t = sim_now(s.sim);
	while (retries < 7 && t < SIM_MS(5)) {
		t += SIM_NS(10);
		sim_run_until(s.sim, t);
		while (nacks < st->total_rnr_nacks && nacks < 8)
			nack_at[nacks++] = t;
		while (retries < st->total_retries && retries < 8)
			retry_at[retries++] = t;
	}
	static const unsigned expect_us[] = { 1, 11, 81, 271, 641, 641, 641 };
	for (int i = 0; i < 7; i++) {
		simtime_t d = retry_at[i] - nack_at[i];
		cr_assert_eq(d, SIM_US(expect_us[i]), "retry %d: %llu ps after its NACK", i, (unsigned long long)d);
	}
	(void)g_log;
	(void)log_acks;
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

static void log_acks(void *ctx, struct nic *nic, uint32_t eqn)
{
	(void)ctx;
	(void)nic;
	(void)eqn;
}

static void rnr_short(struct sw_ep_attr *a)
{
	a->proto = SW_PROTO_CXI_RNR;
	a->env.rnr_max_timeout_us = 300;
}

Test(nic_rnr, timeout_fails_with_eio_and_prov_errno_18)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, rnr_short), 0);
	cr_assert_eq(tep_open(&b, &s, 1, rnr_short), 0);
	sim_run(s.sim);
	static uint8_t src[8];
	simtime_t t0 = sim_now(s.sim);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, 8, NULL, sw_ep_addr(b.ep), 1, 0, FI_TAGGED, (void *)7), 0);
	sim_run(s.sim);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(a.comps[0].c.err, FI_EIO);
	cr_assert_eq(a.comps[0].c.prov_errno, 18);
	cr_assert_eq(a.comps[0].c.op_context, (void *)7);
	/* Retries at +1, +11, +81 us fit in 300 us; the next (+271) would not. */
	cr_assert_eq(sw_ep_stats(a.ep)->total_retries, 3);
	cr_assert_eq(sw_ep_stats(a.ep)->total_rnr_nacks, 4);
	cr_assert_lt(a.comps[0].t - t0, SIM_US(300));
	cr_assert_eq(b.n, 0);
	/* FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME = 0: fail on the first NACK. */
	sw_ep_set_rnr_max_timeout_us(a.ep, 0);
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, 8, NULL, sw_ep_addr(b.ep), 1, 0, FI_TAGGED, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.n, 2);
	cr_assert_eq(a.comps[1].c.err, FI_EIO);
	cr_assert_eq(sw_ep_stats(a.ep)->total_retries, 3);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}
