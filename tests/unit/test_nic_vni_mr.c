/* VNI checks and memory registration through the provider software layer. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

#define THREE_NICS "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 3}, \"nic\": {}}"

static void vni5(struct sw_ep_attr *a)
{
	a->vnis[0] = 5;
}

static void vni7(struct sw_ep_attr *a)
{
	a->vnis[0] = 7;
}

static void vni57(struct sw_ep_attr *a)
{
	a->num_vnis = 2;
	a->vnis[0] = 5;
	a->vnis[1] = 7;
}

Test(nic_vni, mismatch_is_vni_not_found_and_nothing_delivered)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, vni5), 0);
	cr_assert_eq(tep_open(&b, &s, 1, vni7), 0);
	static uint8_t src[64], dst[64];
	memset(src, 1, sizeof(src));
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)dst, sizeof(dst), NULL, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	struct sw_addr to = sw_ep_addr(b.ep);
	to.vni = 5; /* the sender's own VNI */
	cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src, sizeof(src), NULL, to, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(a.comps[0].c.err, FI_ENOTCONN);
	cr_assert_eq(a.comps[0].c.prov_errno, C_RC_VNI_NOT_FOUND);
	cr_assert_eq(b.n, 0);
	cr_assert_eq(dst[0], 0);
	cr_assert_eq(tctr(&s, "nic.1.C_CNTR_LPE_PUT_CMDS"), 0, "no PtlTE ever saw it");
	cr_assert_eq(tctr(&s, "nic.1.sim.vni_not_found"), 1);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_vni, server_accepting_5_and_7_receives_from_both)
{
	struct tsim s = tsim_new(THREE_NICS, 1);
	struct tep c5, c7, srv;
	cr_assert_eq(tep_open(&c5, &s, 0, vni5), 0);
	cr_assert_eq(tep_open(&c7, &s, 2, vni7), 0);
	cr_assert_eq(tep_open(&srv, &s, 1, vni57), 0);
	static uint8_t d[2][16], s5[16] = "from vni 5", s7[16] = "from vni 7";
	for (int i = 0; i < 2; i++)
		cr_assert_eq(sw_recv(srv.ep, (uint64_t)(uintptr_t)d[i], 16, NULL, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	struct sw_addr to = sw_ep_addr(srv.ep);
	to.vni = 5;
	cr_assert_eq(sw_send(c5.ep, (uint64_t)(uintptr_t)s5, 16, NULL, to, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	to.vni = 7;
	cr_assert_eq(sw_send(c7.ep, (uint64_t)(uintptr_t)s7, 16, NULL, to, 0, 0, FI_MSG, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(srv.n, 2);
	cr_assert_eq(srv.comps[0].c.err, 0);
	cr_assert_eq(srv.comps[1].c.err, 0);
	cr_assert_eq(srv.comps[0].c.src.vni, 5);
	cr_assert_eq(srv.comps[0].c.src.nic, 0);
	cr_assert_eq(srv.comps[1].c.src.vni, 7);
	cr_assert_eq(srv.comps[1].c.src.nic, 2);
	cr_assert_str_eq((char *)d[0], "from vni 5");
	cr_assert_str_eq((char *)d[1], "from vni 7");
	cr_assert_eq(c5.comps[0].c.err, 0);
	cr_assert_eq(c7.comps[0].c.err, 0);
	tep_close(&c5);
	tep_close(&c7);
	tep_close(&srv);
	tsim_free(&s);
}

static void svc2_vni9(struct sw_ep_attr *a)
{
	a->svc_id = 2;
	a->vnis[0] = 9;
}

static void svc2_vni7(struct sw_ep_attr *a)
{
	a->svc_id = 2;
	a->vnis[0] = 7;
}

Test(nic_vni, service_restricts_vnis)
{
	struct tsim s = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2},"
				 " \"nic\": {\"services\": [{\"vnis\": [5, 7]}]}}",
				 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, svc2_vni9), -FI_EPERM);
	cr_assert_eq(tep_open(&b, &s, 0, svc2_vni7), 0);
	const struct nic_svc_desc *d = nic_svc_get(nic_get(s.sim, 0), 2);
	cr_assert_not_null(d);
	cr_assert_eq(d->num_vnis, 2);
	tep_close(&b);
	tsim_free(&s);
}

/* ---------------------------------------------------------------- MRs */

struct mr_wait {
	simtime_t t;
	int ret;
	int calls;
	uint64_t matched, completed;
};

static struct sim *g_sim;

static void mr_done_t(void *ctx, struct sw_mr *mr, int ret)
{
	struct mr_wait *w = ctx;
	w->t = sim_now(g_sim);
	w->ret = ret;
	w->calls++;
	sw_mr_events(mr, &w->matched, &w->completed);
}

static void no_cache(struct sw_ep_attr *a)
{
	a->env.prov_key_cache = false;
}

static void match_events(struct sw_ep_attr *a)
{
	a->env.prov_key_cache = false;
	a->env.mr_match_events = true;
}

Test(nic_mr, write_after_close_without_cache_fails_and_memory_unchanged)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, no_cache), 0);
	cr_assert_eq(tep_open(&b, &s, 1, no_cache), 0);
	static uint8_t target[4096], src[256];
	memset(src, 0x42, sizeof(src));
	struct sw_mr *mr;
	struct mr_wait w = { 0 };
	cr_assert_eq(sw_mr_reg(b.ep, (uint64_t)(uintptr_t)target, sizeof(target), FI_REMOTE_WRITE, 200, 0, mr_done_t, &w,
			       &mr),
		     0);
	cr_assert_not(sw_mr_is_optimized(mr));
	sim_run(s.sim);
	cr_assert_eq(w.calls, 1);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 256, sw_ep_addr(b.ep), 100, 200, 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.comps[0].c.err, 0);
	cr_assert(a.comps[0].c.flags & FI_WRITE);
	cr_assert_eq(target[100], 0x42);
	cr_assert_eq(target[99], 0);
	cr_assert_eq(sw_mr_close(mr, mr_done_t, &w), 0);
	sim_run(s.sim);
	cr_assert_eq(w.calls, 2);
	memset(src, 0x77, sizeof(src));
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 256, sw_ep_addr(b.ep), 1000, 200, 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.n, 2);
	cr_assert_eq(a.comps[1].c.err, FI_EIO);
	cr_assert_eq(target[1000], 0, "target memory unchanged");
	cr_assert_eq(sw_ep_stats(b.ep)->mr_hazards, 0);
	/* Unknown key: same error. */
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 8, sw_ep_addr(b.ep), 0, 4242, 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.comps[2].c.err, FI_EIO);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_mr, cached_key_stays_exposed_and_counts_hazard)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t target[4096], src[256];
	memset(src, 0x42, sizeof(src));
	struct sw_mr *mr;
	struct mr_wait w = { 0 };
	cr_assert_eq(sw_mr_reg(b.ep, (uint64_t)(uintptr_t)target, sizeof(target), FI_REMOTE_WRITE | FI_REMOTE_READ, 0,
			       SW_MR_PROV_KEY, mr_done_t, &w, &mr),
		     0);
	uint64_t key = sw_mr_key(mr);
	sim_run(s.sim);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 256, sw_ep_addr(b.ep), 0, key, 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.comps[0].c.err, 0);
	cr_assert_eq(sw_ep_stats(b.ep)->mr_hazards, 0);
	cr_assert_eq(sw_mr_close(mr, mr_done_t, &w), 0);
	sim_run(s.sim);
	memset(src, 0x99, sizeof(src));
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 256, sw_ep_addr(b.ep), 512, key, 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.comps[1].c.err, 0, "the closed region is still exposed");
	cr_assert_eq(target[512], 0x99);
	cr_assert_eq(sw_ep_stats(b.ep)->mr_hazards, 1);
	static uint8_t back[64];
	cr_assert_eq(sw_read(a.ep, (uint64_t)(uintptr_t)back, 64, sw_ep_addr(b.ep), 512, key, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.comps[2].c.err, 0);
	cr_assert(a.comps[2].c.flags & FI_READ);
	cr_assert_eq(back[0], 0x99);
	cr_assert_eq(sw_ep_stats(b.ep)->mr_hazards, 2);
	cr_assert_eq(tctr(&s, "nic.1.ep.%u.mr_hazards", sw_ep_addr(b.ep).pid), 2);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_mr, match_events_close_waits_for_completion)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, match_events), 0);
	cr_assert_eq(tep_open(&b, &s, 1, match_events), 0);
	size_t len = 1 << 20;
	uint8_t *target = calloc(1, len), *src = malloc(len);
	memset(src, 0x11, len);
	struct sw_mr *mr;
	struct mr_wait w = { 0 };
	cr_assert_eq(sw_mr_reg(b.ep, (uint64_t)(uintptr_t)target, len, FI_REMOTE_WRITE, 300, 0, mr_done_t, &w, &mr), 0);
	sim_run(s.sim);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, len, sw_ep_addr(b.ep), 0, 300, 0, 0, NULL), 0);
	/* Close while the write is being matched and its data written (1 MiB takes ~40 us over the wire; its
	 * packets are written to host memory as they land, so the access event follows the match event by
	 * one packet's write). */
	simtime_t t = sim_now(s.sim);
	while (w.calls == 1) {
		t += SIM_NS(100);
		sim_run_until(s.sim, t);
		uint64_t m;
		sw_mr_events(mr, &m, NULL);
		if (m) {
			cr_assert_eq(sw_mr_close(mr, mr_done_t, &w), 0);
			break;
		}
	}
	simtime_t closed_at = sim_now(s.sim);
	sim_run(s.sim);
	cr_assert_eq(w.calls, 2);
	cr_assert_eq(w.matched, 1);
	cr_assert_eq(w.completed, 1, "close completes only once pending == completed");
	cr_assert_gt(w.t, closed_at, "close waited for the access event");
	cr_assert_eq(a.comps[0].c.err, 0);
	free(target);
	free(src);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

static void opt(struct sw_ep_attr *a)
{
	a->env.prov_key_cache = false;
}

static simtime_t reg_cost(struct tsim *s, struct tep *b, uint64_t key, uint64_t flags, simtime_t *dereg)
{
	static uint8_t buf[4096];
	struct sw_mr *mr;
	struct mr_wait w = { 0 };
	simtime_t t0 = sim_now(s->sim);
	cr_assert_eq(sw_mr_reg(b->ep, (uint64_t)(uintptr_t)buf, sizeof(buf), FI_REMOTE_WRITE, key, flags, mr_done_t, &w,
			       &mr),
		     0);
	sim_run(s->sim);
	simtime_t reg = w.t - t0;
	t0 = sim_now(s->sim);
	cr_assert_eq(sw_mr_close(mr, mr_done_t, &w), 0);
	sim_run(s->sim);
	*dereg = w.t - t0;
	return reg;
}

Test(nic_mr, registration_costs_follow_seed_000_fig9)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep nc, me, ca;
	cr_assert_eq(tep_open(&nc, &s, 0, opt), 0);
	cr_assert_eq(tep_open(&me, &s, 1, match_events), 0);
	cr_assert_eq(tep_open(&ca, &s, 1, NULL), 0);
	simtime_t opt_d, std_d, me_d, ca_d;
	simtime_t opt_r = reg_cost(&s, &nc, 5, 0, &opt_d);
	simtime_t std_r = reg_cost(&s, &nc, 500, 0, &std_d);
	simtime_t me_r = reg_cost(&s, &me, 501, 0, &me_d);
	/* The first cached registration links the shared LE; steady state is what Fig 9 measures. */
	simtime_t ca_r = reg_cost(&s, &ca, 0, SW_MR_PROV_KEY, &ca_d);
	ca_r = reg_cost(&s, &ca, 0, SW_MR_PROV_KEY, &ca_d);
	/* Optimized: kernel on both; standard: cheap reg, costly dereg; the key cache makes both cheap; match
	 * events avoid the kernel on dereg but reg + dereg stays ~2 us, an order of magnitude above the cache. */
	cr_assert_gt(opt_r, std_r);
	cr_assert_gt(std_d, std_r);
	cr_assert_gt(opt_d, me_d);
	cr_assert_gt(std_d, me_d);
	cr_assert_lt(ca_r, std_r);
	cr_assert_lt(ca_d, me_d);
	cr_assert_geq(me_r + me_d, 5 * (ca_r + ca_d));
	cr_assert_geq(me_r + me_d, SIM_US(1));
	cr_assert_leq(me_r + me_d, SIM_US(3));
	tep_close(&nc);
	tep_close(&me);
	tep_close(&ca);
	tsim_free(&s);
}

Test(nic_mr, client_key_errors_and_optimized_keys)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, opt), 0);
	cr_assert_eq(tep_open(&b, &s, 1, opt), 0);
	static uint8_t target[1024], src[64];
	memset(src, 0x5e, sizeof(src));
	struct sw_mr *mr, *dup;
	struct mr_wait w = { 0 };
	cr_assert_eq(sw_mr_reg(b.ep, (uint64_t)(uintptr_t)target, 1024, 0, 1ULL << 32, 0, mr_done_t, &w, &mr),
		     -FI_EKEYREJECTED);
	cr_assert_eq(sw_mr_reg(b.ep, (uint64_t)(uintptr_t)target, 1024, 0, 7, 0, mr_done_t, &w, &mr), 0);
	cr_assert_eq(sw_mr_reg(b.ep, (uint64_t)(uintptr_t)target, 1024, 0, 7, 0, mr_done_t, &w, &dup), -FI_ENOKEY);
	cr_assert(sw_mr_is_optimized(mr));
	sim_run(s.sim);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 64, sw_ep_addr(b.ep), 10, 7, 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.comps[0].c.err, 0);
	cr_assert_eq(target[10], 0x5e);
	cr_assert_eq(target[74], 0);
	cr_assert_eq(sw_mr_close(mr, mr_done_t, &w), 0);
	sim_run(s.sim);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 64, sw_ep_addr(b.ep), 200, 7, 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(a.comps[1].c.err, FI_EIO, "optimized MR gone: its PtlTE no longer exists");
	cr_assert_eq(a.comps[1].c.prov_errno, C_RC_PTLTE_NOT_FOUND);
	cr_assert_eq(target[200], 0);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

static void no_opt(struct sw_ep_attr *a)
{
	a->env.prov_key_cache = false;
	a->env.optimized_mrs = false;
}

/* Replay: a key taken on one endpoint is registered exactly on another (c), whatever c's own provider key
 * settings; an initiator using the key reaches c's region, through the PtlTE the key names.  Client keys
 * mean what the initiator's FI_CXI_OPTIMIZED_MRS says, so c follows it as every endpoint does. */
Test(nic_mr, exact_keys_register_as_peers_see_them)
{
	struct tsim s = tsim_new(THREE_NICS, 1);
	g_sim = s.sim;
	struct tep a, b, bs, bc, c;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, opt), 0);     /* provider keys of optimized MRs */
	cr_assert_eq(tep_open(&bs, &s, 1, no_opt), 0); /* provider keys of standard MRs */
	cr_assert_eq(tep_open(&bc, &s, 1, NULL), 0);   /* the provider key cache */
	cr_assert_eq(tep_open(&c, &s, 2, NULL), 0);    /* the replaying endpoint: key cache on */
	static uint8_t orig[4096], copy[4096], back[5][64];
	memset(orig, 0x11, sizeof(orig));
	for (size_t i = 0; i < sizeof(copy); i++)
		copy[i] = (uint8_t)(i * 7);
	struct mr_wait w = { 0 };
	struct sw_mr *m[5], *x[5], *dup;
	uint64_t o = (uint64_t)(uintptr_t)orig;
	cr_assert_eq(sw_mr_reg(b.ep, o, 4096, 0, 0, SW_MR_PROV_KEY, mr_done_t, &w, &m[0]), 0);
	cr_assert_eq(sw_mr_reg(bs.ep, o, 4096, 0, 0, SW_MR_PROV_KEY, mr_done_t, &w, &m[1]), 0);
	cr_assert_eq(sw_mr_reg(b.ep, o, 4096, 0, 7, 0, mr_done_t, &w, &m[2]), 0);
	cr_assert_eq(sw_mr_reg(b.ep, o, 4096, 0, 300, 0, mr_done_t, &w, &m[3]), 0);
	cr_assert_eq(sw_mr_reg(bc.ep, (uint64_t)(uintptr_t)copy, 4096, 0, 0, SW_MR_PROV_KEY, mr_done_t, &w, &m[4]), 0);
	cr_assert(sw_mr_is_optimized(m[0]) && !sw_mr_is_optimized(m[1]) && sw_mr_is_optimized(m[2]) &&
		  !sw_mr_is_optimized(m[3]));
	sim_run(s.sim);
	uint64_t key[5];
	for (int i = 0; i < 5; i++) {
		key[i] = sw_mr_key(m[i]);
		/* (The cached key carries its address: c exposes that address, the same buffer here.) */
		cr_assert_eq(sw_mr_reg(c.ep, (uint64_t)(uintptr_t)copy, 4096, 0, key[i], SW_MR_EXACT_KEY, mr_done_t, &w,
				       &x[i]),
			     0, "key %d", i);
		cr_assert_eq(sw_mr_key(x[i]), key[i], "registered under the very key %d", i);
		cr_assert_eq(sw_mr_is_optimized(x[i]), sw_mr_is_optimized(m[i]), "the PtlTE the key names (%d)", i);
	}
	cr_assert_eq(sw_mr_reg(c.ep, (uint64_t)(uintptr_t)copy, 64, 0, key[2], SW_MR_EXACT_KEY, mr_done_t, &w, &dup),
		     -FI_ENOKEY);
	cr_assert_eq(sw_mr_reg(c.ep, o, 64, 0, key[4], SW_MR_EXACT_KEY, mr_done_t, &w, &dup), -FI_EKEYREJECTED,
		     "a cached key names another address");
	sim_run(s.sim);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(sw_read(a.ep, (uint64_t)(uintptr_t)back[i], 64, sw_ep_addr(c.ep), 100, key[i], 0, NULL), 0);
	sim_run(s.sim);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(a.comps[i].c.err, 0, "read %d: %d", i, a.comps[i].c.err);
		cr_assert_eq(memcmp(back[i], copy + 100, 64), 0, "read %d got c's bytes", i);
	}
	for (int i = 0; i < 5; i++) {
		sw_mr_close(m[i], mr_done_t, &w);
		sw_mr_close(x[i], mr_done_t, &w);
	}
	sim_run(s.sim);
	tep_close(&a);
	tep_close(&b);
	tep_close(&bs);
	tep_close(&bc);
	tep_close(&c);
	tsim_free(&s);
}
