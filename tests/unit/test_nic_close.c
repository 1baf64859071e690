/* Closing an endpoint with operations in flight: RMA reads and writes (and sends) whose ACK or REPLY has not
 * come back yet.  The close returns every request record to the pool exactly once, the responses that
 * arrive afterwards are dropped (no completion for the closed endpoint, and none misdelivered to a new
 * endpoint that took over its pid and queues), and the new endpoint works. */
#include <criterion/criterion.h>

#include "nic_swlib.h"

enum { NW = 3, NR = 3, LEN = 32768, SENTINEL = 0xee };

struct rig {
	struct tsim s;
	struct tep a, b;
	struct sw_mr *std, *opt;
	uint64_t base; /* sw_reqs_live once both endpoints are open and the MRs registered */
};

static uint8_t g_mem[NW + NR][LEN], g_src[NW][LEN], g_rd[NR][LEN];
static uint32_t g_pid;

static void reg_done(void *ctx, struct sw_mr *mr, int ret)
{
	(void)mr;
	cr_assert_eq(ret, 0);
	(*(int *)ctx)++;
}

static struct sw_mr *reg(struct rig *r, uint64_t key)
{
	struct sw_mr *mr;
	int calls = 0;
	cr_assert_eq(sw_mr_reg(r->b.ep, (uint64_t)(uintptr_t)g_mem, sizeof(g_mem), FI_REMOTE_READ | FI_REMOTE_WRITE, key,
			       0, reg_done, &calls, &mr),
		     0);
	sim_run(r->s.sim);
	cr_assert_eq(calls, 1);
	return mr;
}

static void rig_open(struct rig *r)
{
	r->s = tsim_new(TWO_NICS, 1);
	cr_assert_eq(tep_open(&r->a, &r->s, 0, NULL), 0);
	cr_assert_eq(tep_open(&r->b, &r->s, 1, NULL), 0);
	r->std = reg(r, 500);
	r->opt = reg(r, 7);
	cr_assert_not(sw_mr_is_optimized(r->std));
	cr_assert(sw_mr_is_optimized(r->opt));
	for (int i = 0; i < NW + NR; i++)
		memset(g_mem[i], 0x10 + i, LEN);
	for (int i = 0; i < NW; i++)
		memset(g_src[i], 0x60 + i, LEN);
	memset(g_rd, SENTINEL, sizeof(g_rd));
	r->base = sw_reqs_live(r->s.sim);
}

static void rig_close(struct rig *r)
{
	tep_close(&r->a);
	tep_close(&r->b);
	tsim_free(&r->s);
}

static uint64_t key_of(struct rig *r, int i)
{
	return sw_mr_key(i % 2 ? r->opt : r->std);
}

/* NW writes into g_mem[0..NW) and NR reads of g_mem[NW..NW+NR), alternating standard and optimized MRs;
 * contexts 100+i (writes) and 200+i (reads). */
static void post_rma(struct rig *r, struct sw_ep *ep)
{
	struct sw_addr dst = sw_ep_addr(r->b.ep);
	for (int i = 0; i < NW; i++)
		cr_assert_eq(sw_write(ep, (uint64_t)(uintptr_t)g_src[i], LEN, dst, (uint64_t)i * LEN, key_of(r, i), 0, 0,
				      (void *)(uintptr_t)(100 + i)),
			     0);
	for (int i = 0; i < NR; i++)
		cr_assert_eq(sw_read(ep, (uint64_t)(uintptr_t)g_rd[i], LEN, dst, (uint64_t)(NW + i) * LEN, key_of(r, i + 1),
				     0, (void *)(uintptr_t)(200 + i)),
			     0);
}

/* Times from posting the operations to each of their completions (ascending), from an identical run. */
static void completion_delays(simtime_t *d)
{
	struct rig r;
	rig_open(&r);
	simtime_t t0 = sim_now(r.s.sim);
	post_rma(&r, r.a.ep);
	sim_run(r.s.sim);
	cr_assert_eq(r.a.n, NW + NR);
	for (size_t i = 0; i < r.a.n; i++) {
		cr_assert_eq(r.a.comps[i].c.err, 0);
		d[i] = r.a.comps[i].t - t0;
		cr_assert(i == 0 || d[i] >= d[i - 1]);
	}
	cr_assert_eq(memcmp(g_rd[0], g_mem[NW], LEN), 0);
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base);
	rig_close(&r);
}

static void same_pid(struct sw_ep_attr *a)
{
	a->pid = g_pid;
}

/* The endpoint that replaces the closed one: nothing stale reaches it, and its own RMA completes. */
static void check_new_endpoint(struct rig *r, struct tep *n)
{
	cr_assert_eq(n->n, 0, "no completion of the closed endpoint reached the new one");
	cr_assert_null(sw_ep_fatal(n->ep));
	static uint8_t src[256], rd[256];
	memset(src, 0x5a, sizeof(src));
	memset(rd, 0, sizeof(rd));
	struct sw_addr dst = sw_ep_addr(r->b.ep);
	uint64_t live = sw_reqs_live(r->s.sim);
	cr_assert_eq(sw_write(n->ep, (uint64_t)(uintptr_t)src, sizeof(src), dst, 0, key_of(r, 0), 0, 0, (void *)1), 0);
	cr_assert_eq(sw_read(n->ep, (uint64_t)(uintptr_t)rd, sizeof(rd), dst, (uint64_t)NW * LEN, key_of(r, 1), 0,
			     (void *)2),
		     0);
	cr_assert_eq(sw_reqs_live(r->s.sim), live + 2);
	sim_run(r->s.sim);
	cr_assert_eq(n->n, 2);
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(n->comps[i].c.err, 0);
		cr_assert_eq(n->comps[i].c.flags, FI_RMA | (n->comps[i].c.op_context == (void *)1 ? FI_WRITE : FI_READ));
	}
	cr_assert_neq(n->comps[0].c.op_context, n->comps[1].c.op_context);
	cr_assert_eq(g_mem[0][0], 0x5a);
	cr_assert_eq(memcmp(rd, g_mem[NW], sizeof(rd)), 0);
	cr_assert_eq(sw_reqs_live(r->s.sim), live);
}

struct cut_result {
	size_t done_before; /* completions delivered before the close */
	uint64_t rx_before;  /* responses NIC 0 had received by then */
};

/* Close at one point of the operations' life; `cut` is the virtual time run after posting them. */
static struct cut_result close_with_rma_in_flight(simtime_t cut)
{
	struct rig r;
	rig_open(&r);
	uint64_t rx0 = tctr(&r.s, "nic.0.sim.pkts_rx");
	simtime_t t0 = sim_now(r.s.sim);
	post_rma(&r, r.a.ep);
	/* A posted receive goes back to the same pool through the same close. */
	static uint8_t rbuf[64];
	cr_assert_eq(sw_recv(r.a.ep, (uint64_t)(uintptr_t)rbuf, sizeof(rbuf), NULL, 0, 0, 0, (void *)300), 0);
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base + NW + NR + 1);
	if (cut)
		sim_run_until(r.s.sim, t0 + cut);
	struct cut_result res = { r.a.n, tctr(&r.s, "nic.0.sim.pkts_rx") - rx0 };
	cr_assert_lt(res.done_before, NW + NR, "cut %llu ps: some operation still in flight", (unsigned long long)cut);
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base + (NW + NR - res.done_before) + 1,
		     "cut %llu ps: one record per operation in flight", (unsigned long long)cut);

	g_pid = sw_ep_addr(r.a.ep).pid;
	sw_ep_close(r.a.ep);
	r.a.ep = NULL;
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base, "cut %llu ps: the close returned every record",
		     (unsigned long long)cut);
	/* A new endpoint on the same NIC, same pid, before the responses come back: it gets the freed queues. */
	struct tep n;
	cr_assert_eq(tep_open(&n, &r.s, 0, same_pid), 0);
	cr_assert_eq(sw_ep_addr(n.ep).pid, g_pid);
	sim_run(r.s.sim);

	cr_assert_eq(r.a.n, res.done_before, "cut %llu ps: no completion after the close", (unsigned long long)cut);
	/* Commands still in the queue die with it; anything that had left is answered. */
	cr_assert_eq(tctr(&r.s, "nic.0.sim.pkts_rx") - rx0, cut ? NW + NR : 0, "cut %llu ps: responses at NIC 0",
		     (unsigned long long)cut);
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base, "cut %llu ps: no response freed a record twice",
		     (unsigned long long)cut);
	if (!cut) {
		for (int i = 0; i < NR; i++)
			for (size_t j = 0; j < LEN; j++)
				cr_assert_eq(g_rd[i][j], SENTINEL, "read %d byte %zu", i, j);
	}
	cr_assert_null(sw_ep_fatal(r.b.ep));
	check_new_endpoint(&r, &n);
	tep_close(&n);
	rig_close(&r);
	return res;
}

Test(nic_close, rma_in_flight_released_at_every_stage)
{
	simtime_t d[NW + NR];
	completion_delays(d);
	/* Commands still queued, requests on the wire or at the target, responses returning, and events
	 * crossing PCIe to the EQ: just before each completion and half-way from the previous one. */
	close_with_rma_in_flight(0);
	bool late_response = false, event_in_flight = false;
	for (size_t i = 0; i < NW + NR; i++) {
		simtime_t prev = i ? d[i - 1] : 0;
		const simtime_t cuts[2] = { (prev + d[i]) / 2, d[i] - 1 };
		for (int k = 0; k < 2; k++) {
			struct cut_result res = close_with_rma_in_flight(cuts[k]);
			late_response |= res.rx_before < NW + NR;
			event_in_flight |= res.rx_before > res.done_before;
		}
	}
	cr_assert(late_response, "some response reached NIC 0 after the close");
	cr_assert(event_in_flight, "some close came between a response's arrival and its completion");
}

/* Sends share the mechanism: eager sends still queued, and a rendezvous send whose ACK came back and that
 * waits for the target's Get (it is on no list, only its rendezvous id names it). */
Test(nic_close, sends_in_flight_released)
{
	struct rig r;
	rig_open(&r);
	struct sw_addr dst = sw_ep_addr(r.b.ep);
	static uint8_t big[65536], small[4][2000], rbig[65536];
	memset(big, 0x3c, sizeof(big));
	cr_assert_eq(sw_send(r.a.ep, (uint64_t)(uintptr_t)big, sizeof(big), NULL, dst, 77, 0, FI_TAGGED, (void *)1), 0);
	cr_assert_eq(sw_send(r.a.ep, (uint64_t)(uintptr_t)small[0], sizeof(small[0]), NULL, dst, 1, 0, FI_TAGGED,
			     (void *)2),
		     0);
	sim_run(r.s.sim);
	cr_assert_eq(r.a.n, 1, "the eager send completed, the rendezvous one waits for its Get");
	cr_assert_eq(r.a.comps[0].c.op_context, (void *)2);
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base + 1);
	for (int i = 1; i < 4; i++)
		cr_assert_eq(sw_send(r.a.ep, (uint64_t)(uintptr_t)small[i], sizeof(small[i]), NULL, dst, 1, 0, FI_TAGGED,
				     (void *)(uintptr_t)(2 + i)),
			     0);
	post_rma(&r, r.a.ep);
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base + 4 + NW + NR);

	g_pid = sw_ep_addr(r.a.ep).pid;
	sw_ep_close(r.a.ep);
	r.a.ep = NULL;
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base);
	/* The target now pulls the rendezvous data from a pid that is gone: its receive completes once. */
	cr_assert_eq(sw_recv(r.b.ep, (uint64_t)(uintptr_t)rbig, sizeof(rbig), NULL, 77, 0, FI_TAGGED, (void *)9), 0);
	sim_run(r.s.sim);
	cr_assert_eq(r.a.n, 1, "nothing completes on the closed endpoint");
	size_t got = 0;
	for (size_t i = 0; i < r.b.n; i++)
		got += r.b.comps[i].c.op_context == (void *)9;
	cr_assert_eq(got, 1);
	cr_assert_eq(sw_reqs_live(r.s.sim), r.base);
	struct tep n;
	cr_assert_eq(tep_open(&n, &r.s, 0, same_pid), 0);
	check_new_endpoint(&r, &n);
	tep_close(&n);
	rig_close(&r);
}
