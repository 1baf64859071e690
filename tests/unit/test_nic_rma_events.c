/* RMA in the NIC model and the provider software layer: bounds of MRs, target-side events (FI_RMA_EVENT
 * MRs, endpoints with remote counters, fi_writedata's remote CQ data), MR close with accesses in flight, and
 * the NIC reporting an LE's unlink after the events of the requests that used it. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

static struct sim *g_sim;

static void reg_done(void *ctx, struct sw_mr *mr, int ret)
{
	int *calls = ctx;
	(void)mr;
	cr_assert_eq(ret, 0);
	(*calls)++;
}

static struct sw_mr *reg(struct tsim *s, struct tep *t, void *buf, uint64_t len, uint64_t key, uint64_t flags,
			 int *calls)
{
	struct sw_mr *mr;
	cr_assert_eq(sw_mr_reg(t->ep, (uint64_t)(uintptr_t)buf, len, FI_REMOTE_READ | FI_REMOTE_WRITE, key, flags, reg_done,
			       calls, &mr),
		     0);
	sim_run(s->sim);
	return mr;
}

static void no_cache(struct sw_ep_attr *a)
{
	a->env.prov_key_cache = false;
}

static void no_cache_no_opt(struct sw_ep_attr *a)
{
	a->env.prov_key_cache = false;
	a->env.optimized_mrs = false;
}

static void writedata(struct sw_ep_attr *a)
{
	a->env.enable_writedata = true;
}

static void mr_events_ep(struct sw_ep_attr *a)
{
	a->mr_events = true;
}

/* Last completion of t (after the simulation ran). */
static const struct sw_comp *last(const struct tep *t)
{
	cr_assert_gt(t->n, 0);
	return &t->comps[t->n - 1].c;
}

/* ---------------------------------------------------------------- bounds */

static void bounds_case(void (*mode)(struct sw_ep_attr *), uint64_t key, uint64_t flags, bool expect_opt)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, mode), 0);
	cr_assert_eq(tep_open(&b, &s, 1, mode), 0);
	enum { LEN = 4096 };
	static uint8_t mem[LEN + 4096], src[512], rd[512];
	memset(mem, 0x11, sizeof(mem));
	memset(src, 0x22, sizeof(src));
	int calls = 0;
	struct sw_mr *mr = reg(&s, &b, mem, LEN, key, flags, &calls);
	cr_assert_eq(sw_mr_is_optimized(mr), expect_opt);
	uint64_t k = sw_mr_key(mr);
	struct sw_addr dst = sw_ep_addr(b.ep);
	/* Exactly up to the end: fine. */
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 64, dst, LEN - 64, k, 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(last(&a)->err, 0);
	cr_assert_eq(mem[LEN - 1], 0x22);
	/* Past the end: the whole access fails, nothing moves. */
	static const struct {
		uint64_t off, len;
	} bad[] = { { LEN - 8, 64 }, { LEN, 1 }, { LEN + 100, 8 }, { LEN - 511, 512 } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(src, 0x33 + (int)i, sizeof(src));
		cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, bad[i].len, dst, bad[i].off, k, 0, 0, NULL), 0);
		sim_run(s.sim);
		cr_assert_eq(last(&a)->err, FI_EIO, "write %zu", i);
		cr_assert_eq(last(&a)->prov_errno, C_RC_ADDR_OUT_OF_RANGE);
		cr_assert_eq(last(&a)->len, 0);
		memset(rd, 0x77, sizeof(rd));
		cr_assert_eq(sw_read(a.ep, (uint64_t)(uintptr_t)rd, bad[i].len, dst, bad[i].off, k, 0, NULL), 0);
		sim_run(s.sim);
		cr_assert_eq(last(&a)->err, FI_EIO, "read %zu", i);
		for (size_t j = 0; j < bad[i].len; j++)
			cr_assert_eq(rd[j], 0x77, "read buffer untouched");
	}
	for (size_t j = 0; j < LEN - 64; j++)
		cr_assert_eq(mem[j], 0x11, "byte %zu of the MR untouched", j);
	for (size_t j = LEN - 64; j < LEN; j++)
		cr_assert_eq(mem[j], 0x22, "byte %zu: only the exact-fit write landed", j);
	for (size_t j = LEN; j < sizeof(mem); j++)
		cr_assert_eq(mem[j], 0x11, "byte %zu past the MR untouched", j);
	cr_assert_eq(tctr(&s, "nic.1.sim.le_bounds_errors"), 8);
	cr_assert_null(sw_ep_fatal(b.ep));
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_rma, bounds_standard_client_key) { bounds_case(NULL, 500, 0, false); }
Test(nic_rma, bounds_optimized_client_key) { bounds_case(NULL, 7, 0, true); }
Test(nic_rma, bounds_standard_provider_key) { bounds_case(no_cache_no_opt, 0, SW_MR_PROV_KEY, false); }
Test(nic_rma, bounds_optimized_provider_key) { bounds_case(no_cache, 0, SW_MR_PROV_KEY, true); }

/* The provider key cache's one LE spans the address space: the NIC cannot bound an access to one region
 * (the same exposure as upstream), so a write past the end succeeds. */
Test(nic_rma, bounds_not_enforced_through_the_key_cache)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t mem[8192], src[64];
	memset(src, 0x44, sizeof(src));
	int calls = 0;
	struct sw_mr *mr = reg(&s, &b, mem, 4096, 0, SW_MR_PROV_KEY, &calls);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 64, sw_ep_addr(b.ep), 4096 - 8, sw_mr_key(mr), 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(last(&a)->err, 0);
	cr_assert_eq(mem[4096 + 10], 0x44);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

/* ---------------------------------------------------------------- target events */

static size_t count_target(const struct tep *t, uint64_t flag, int err)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		n += t->comps[i].c.mr && (t->comps[i].c.flags & flag) && t->comps[i].c.err == err;
	return n;
}

Test(nic_rma, rma_event_mr_reports_each_access_plain_mr_none)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t m1[4096], m2[4096], src[256], rd[256];
	int calls = 0;
	struct sw_mr *ev = reg(&s, &b, m1, sizeof(m1), 0, SW_MR_PROV_KEY | FI_RMA_EVENT, &calls);
	struct sw_mr *plain = reg(&s, &b, m2, sizeof(m2), 0, SW_MR_PROV_KEY, &calls);
	cr_assert_not(sw_mr_is_optimized(ev), "a provider-key MR that reports is not optimized");
	struct sw_addr dst = sw_ep_addr(b.ep);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 100, dst, 64 * (uint64_t)i, sw_mr_key(ev), 0, 0, NULL), 0);
		cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 100, dst, 0, sw_mr_key(plain), 0, 0, NULL), 0);
	}
	cr_assert_eq(sw_read(a.ep, (uint64_t)(uintptr_t)rd, 200, dst, 8, sw_mr_key(ev), 0, NULL), 0);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 64, dst, 4090, sw_mr_key(ev), 0, 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(count_target(&b, FI_REMOTE_WRITE, 0), 3);
	cr_assert_eq(count_target(&b, FI_REMOTE_READ, 0), 1);
	cr_assert_eq(count_target(&b, FI_REMOTE_WRITE, FI_EIO), 1, "the write past the end is reported as failed");
	cr_assert_eq(b.n, 5, "nothing for the plain MR");
	for (size_t i = 0; i < b.n; i++) {
		const struct sw_comp *c = &b.comps[i].c;
		cr_assert_eq(c->mr, ev);
		cr_assert_eq(c->op_context, &calls);
		cr_assert(c->flags & FI_RMA);
		cr_assert_not(c->flags & FI_REMOTE_CQ_DATA);
		cr_assert(c->src_valid && c->src.pid == sw_ep_addr(a.ep).pid);
		if (c->err == 0)
			cr_assert_eq(c->len, (c->flags & FI_REMOTE_READ) ? 200u : 100u);
	}
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_rma, endpoint_mr_events_report_every_mr)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, mr_events_ep), 0);
	static uint8_t m1[4096], m2[4096], src[64];
	int calls = 0;
	struct sw_mr *p = reg(&s, &b, m1, sizeof(m1), 0, SW_MR_PROV_KEY, &calls); /* would be cached otherwise */
	struct sw_mr *c = reg(&s, &b, m2, sizeof(m2), 9, 0, &calls);             /* optimized client key */
	cr_assert(sw_mr_is_optimized(c));
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 64, sw_ep_addr(b.ep), 0, sw_mr_key(p), 0, 0, NULL), 0);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 64, sw_ep_addr(b.ep), 0, sw_mr_key(c), 0, 0, NULL), 0);
	cr_assert_eq(sw_read(a.ep, (uint64_t)(uintptr_t)src, 64, sw_ep_addr(b.ep), 0, sw_mr_key(c), 0, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(count_target(&b, FI_REMOTE_WRITE, 0), 2);
	cr_assert_eq(count_target(&b, FI_REMOTE_READ, 0), 1);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

Test(nic_rma, writedata_target_completion)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, writedata), 0);
	cr_assert_eq(tep_open(&b, &s, 1, writedata), 0);
	static uint8_t m[4096], src[128];
	memset(src, 0x5c, sizeof(src));
	int calls = 0;
	struct sw_mr *mr = reg(&s, &b, m, sizeof(m), 0, SW_MR_PROV_KEY, &calls);
	cr_assert_not(sw_mr_is_optimized(mr));
	uint64_t k = sw_mr_key(mr);
	struct sw_addr dst = sw_ep_addr(b.ep);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 128, dst, 256, k, 0xabcdef, FI_REMOTE_CQ_DATA, (void *)1), 0);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 128, dst, 512, k, 0x1234, 0, (void *)2), 0);
	sim_run(s.sim);
	cr_assert_eq(a.n, 2);
	cr_assert_eq(a.comps[0].c.err, 0);
	cr_assert_eq(b.n, 1, "only the write with remote CQ data reports at the target");
	const struct sw_comp *c = &b.comps[0].c;
	cr_assert_eq(c->flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
	cr_assert_eq(c->data, 0xabcdef);
	cr_assert_eq(c->len, 128);
	cr_assert_eq(c->buf, (uint64_t)(uintptr_t)m + 256);
	cr_assert_eq(c->op_context, &calls);
	cr_assert_eq(c->mr, mr);
	cr_assert_eq(m[256], 0x5c);
	cr_assert_eq(m[512], 0x5c);
	/* Keys that cannot report: client keys; and without FI_CXI_ENABLE_WRITEDATA at the initiator. */
	struct sw_mr *cl = reg(&s, &b, m, sizeof(m), 300, 0, &calls);
	cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 8, dst, 0, sw_mr_key(cl), 1, FI_REMOTE_CQ_DATA, NULL),
		     -FI_EINVAL);
	struct tep x;
	cr_assert_eq(tep_open(&x, &s, 0, NULL), 0);
	cr_assert_eq(sw_write(x.ep, (uint64_t)(uintptr_t)src, 8, dst, 0, k, 1, FI_REMOTE_CQ_DATA, NULL), -FI_EOPNOTSUPP);
	tep_close(&x);
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

/* Closing a reporting MR while accesses' events are still on their way: close completes after them (every
 * access before the close is reported), and nothing names the MR afterwards. */
static int close_calls;
static size_t reported_at_close;
static struct tep *g_target;

static void close_done(void *ctx, struct sw_mr *mr, int ret)
{
	(void)ctx;
	(void)mr;
	cr_assert_eq(ret, 0);
	close_calls++;
	reported_at_close = g_target->n;
}

Test(nic_rma, close_waits_for_access_events_in_flight)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	g_sim = s.sim;
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	g_target = &b;
	static uint8_t m[1 << 20], src[1 << 20];
	int calls = 0;
	struct sw_mr *mr = reg(&s, &b, m, sizeof(m), 0, SW_MR_PROV_KEY | FI_RMA_EVENT, &calls);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(sw_write(a.ep, (uint64_t)(uintptr_t)src, 256 * 1024, sw_ep_addr(b.ep), 256 * 1024 * (uint64_t)i,
				      sw_mr_key(mr), 0, 0, NULL),
			     0);
	/* Close as soon as the NIC has matched the first write: its event waits for a 256 KiB DMA. */
	for (int i = 0; i < 1000000 && tctr(&s, "nic.1.C_CNTR_LPE_PUT_CMDS") < 1; i++)
		sim_run_until(s.sim, sim_now(s.sim) + SIM_NS(1));
	cr_assert_eq(b.n, 0);
	close_calls = 0;
	cr_assert_eq(sw_mr_close(mr, close_done, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(close_calls, 1);
	cr_assert_geq(reported_at_close, 1, "the access that matched before the close was reported before it completed");
	cr_assert_eq(b.n, reported_at_close, "nothing after the close");
	cr_assert_null(sw_ep_fatal(b.ep));
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}

/* ---------------------------------------------------------------- the NIC: unlink after an LE's events */

struct hwq {
	struct nic *nic;
	struct nic_lni *lni;
	uint32_t eqn, ptn;
	struct nic_cmdq *txq, *tgq;
};

static void hwq_open(struct hwq *e, struct sim *sim, uint32_t addr)
{
	e->nic = nic_get(sim, addr);
	cr_assert_eq(nic_lni_alloc(e->nic, NIC_SVC_DEFAULT, &nic_mem_host, NULL, &e->lni), 0);
	struct nic_eq_attr ea = { .slots = 256, .reserved_fc = 1 };
	cr_assert_eq(nic_eq_alloc(e->lni, &ea, &e->eqn), 0);
	struct nic_pte_opts o = { .is_matching = true };
	cr_assert_eq(nic_pte_alloc(e->lni, e->eqn, &o, &e->ptn), 0);
	cr_assert_eq(nic_pte_map(e->lni, e->ptn, 10, 3, 0), 0);
	struct nic_cmdq_attr qa = { .target = false, .slots = 256, .eqn = e->eqn };
	cr_assert_eq(nic_cmdq_alloc(e->lni, &qa, &e->txq), 0);
	qa.target = true;
	cr_assert_eq(nic_cmdq_alloc(e->lni, &qa, &e->tgq), 0);
}

static void hwq_tgt(struct hwq *e, uint8_t op, struct nic_tgt_cmd c)
{
	struct nic_cmd cmd = { .op = op };
	c.ptn = e->ptn;
	cmd.tgt = c;
	cr_assert_eq(nic_cmdq_emit(e->tgq, &cmd), 0);
	nic_cmdq_ring(e->tgq);
}

Test(nic_rma, unlink_event_comes_after_the_les_put_events)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct hwq a, b;
	hwq_open(&a, s.sim, 0);
	hwq_open(&b, s.sim, 1);
	static uint8_t buf[1 << 20], src[1 << 19];
	hwq_tgt(&b, NIC_CMD_TGT_APPEND,
		(struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = 9, .le_flags = C_LE_OP_PUT | C_LE_MANAGE_LOCAL,
				      .ctn = NIC_NONE, .start = (uint64_t)(uintptr_t)buf, .length = sizeof(buf),
				      .match_id = C_MATCH_ID_ANY, .match_bits = 1 });
	hwq_tgt(&b, NIC_CMD_TGT_SETSTATE, (struct nic_tgt_cmd){ .state = C_PTLTE_ENABLED, .drop_count = NIC_IGNORE_DROPS });
	sim_run(s.sim);
	while (nic_eq_peek(b.nic, b.eqn))
		nic_eq_next(b.nic, b.eqn);
	nic_eq_ack(b.nic, b.eqn);
	struct nic_cmd cmd = { .op = NIC_CMD_PUT };
	cmd.dma = (struct nic_dma_cmd){ .dst_nic = 1, .dst_pid = 3, .index = 0, .vni = 10,
					.local_addr = (uint64_t)(uintptr_t)src, .length = sizeof(src), .match_bits = 1,
					.eqn = NIC_NONE, .ctn = NIC_NONE, .src_pid = 4 };
	cr_assert_eq(nic_cmdq_emit(a.txq, &cmd), 0);
	nic_cmdq_ring(a.txq);
	for (int i = 0; i < 1000000 && tctr(&s, "nic.1.C_CNTR_LPE_PUT_CMDS") < 1; i++)
		sim_run_until(s.sim, sim_now(s.sim) + SIM_NS(1));
	/* The Put matched; its event waits for a 512 KiB DMA.  Unlink the LE now. */
	hwq_tgt(&b, NIC_CMD_TGT_UNLINK, (struct nic_tgt_cmd){ .list = C_PTL_LIST_PRIORITY, .buffer_id = 9 });
	sim_run(s.sim);
	uint8_t order[4];
	int n = 0;
	const struct nic_event *ev;
	while ((ev = nic_eq_peek(b.nic, b.eqn)) && n < 4) {
		order[n++] = ev->type;
		if (ev->type == C_EVENT_UNLINK)
			cr_assert_eq(ev->mlength, sizeof(src), "the unlink reports what the LE took");
		nic_eq_next(b.nic, b.eqn);
	}
	cr_assert_eq(n, 2);
	cr_assert_eq(order[0], C_EVENT_PUT);
	cr_assert_eq(order[1], C_EVENT_UNLINK);
	tsim_free(&s);
}

/* PUT_OVERFLOW events of one append come in match order (they move no data), whatever their sizes. */
Test(nic_rma, put_overflow_events_in_match_order)
{
	struct tsim s = tsim_new(TWO_NICS, 1);
	struct tep a, b;
	cr_assert_eq(tep_open(&a, &s, 0, NULL), 0);
	cr_assert_eq(tep_open(&b, &s, 1, NULL), 0);
	static uint8_t src[4][16000], mem[65536];
	static const size_t len[4] = { 16000, 8, 12000, 100 };
	for (int i = 0; i < 4; i++) {
		memset(src[i], i + 1, len[i]);
		cr_assert_eq(sw_send(a.ep, (uint64_t)(uintptr_t)src[i], len[i], NULL, sw_ep_addr(b.ep), 0, 0, FI_MSG, NULL), 0);
	}
	sim_run(s.sim);
	cr_assert_eq(sw_recv(b.ep, (uint64_t)(uintptr_t)mem, sizeof(mem), NULL, 0, 0, FI_MULTI_RECV, NULL), 0);
	sim_run(s.sim);
	cr_assert_eq(b.n, 4);
	uint64_t off = 0;
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(b.comps[i].c.len, len[i], "message %d reported in order", i);
		cr_assert_eq(b.comps[i].c.buf, (uint64_t)(uintptr_t)mem + off);
		cr_assert_eq(mem[off], i + 1);
		off += len[i];
	}
	tep_close(&a);
	tep_close(&b);
	tsim_free(&s);
}
