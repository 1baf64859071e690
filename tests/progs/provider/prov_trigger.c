/* Triggered operations and deferred work.  A passive target exposes 4 KiB (RMA and atomics) and posts a
 * tagged receive; the initiator:
 *  - FI_TRIGGER writes (fi_writemsg, struct fi_triggered_context): nothing moves at threshold - 1, the
 *    data moves at the threshold, and it is the buffer's content when the trigger fires (not when posted);
 *  - three triggered writes to one word with thresholds 3, 1, 2 and the counter set to 3 at once: completions
 *    in threshold order, the last value written is threshold 3's;
 *  - fi_ep_alias(FI_TRANSMIT | FI_TRIGGER), made before the endpoint is enabled, as fabtests'
 *    fi_rdm_rma_trigger: a triggered write on the write counter's next value lands after the plain write
 *    that reaches it;
 *  - deferred work (fi_control(FI_QUEUE_WORK)): RMA write, tagged send, atomic, fetching atomic counted in
 *    the completion counter, counter add/set chained on thresholds, a threshold-0 receive;
 *  - FI_FLUSH_WORK: the work held is dropped (nothing moves, nothing completes); FI_CANCEL_WORK -FI_EINVAL;
 *  - misuse codes, a full trigger list (2048 entries) stalling the trigger queue (2040 more wait, then
 *    -FI_EAGAIN; stalled entries run once TLEs come back), alias rules. */
#include <rdma/fi_atomic.h>
#include <rdma/fi_trigger.h>

#include "common.h"

#define TSIZE 4096
#define TAG 0x77

struct keyinfo {
	char name[8];
	uint64_t key;
};

static uint64_t caps(void)
{
	return FI_RMA | FI_ATOMIC | FI_TAGGED | FI_MSG | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
	       FI_SEND | FI_RECV | FI_TRIGGER;
}

static int target(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct t_ep t;
	t_open(&t, caps());
	uint64_t *buf = aligned_alloc(4096, TSIZE);
	memset(buf, 0, TSIZE);
	struct fid_mr *mr;
	T_OK(fi_mr_reg(t.dom, buf, TSIZE, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	T_OK(fi_mr_bind(mr, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr));
	char msg[64] = { 0 };
	T_OK(fi_trecv(t.ep, msg, sizeof(msg), NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	struct keyinfo ki;
	memcpy(ki.name, t.name, 8);
	ki.key = fi_mr_key(mr);
	t_send(c, &ki, sizeof(ki));
	/* The deferred tagged send arrives while the initiator goes on. */
	struct fi_cq_tagged_entry e;
	t_cq_expect(t.cq, &e, "deferred tagged send received");
	T_CHECK(e.tag == TAG && e.len == 24 && !strcmp(msg, "deferred tagged send"), "tagged message %zu B: %s",
		e.len, msg);
	char go;
	t_recv(c, &go, 1);
	T_OK(fi_close(&mr->fid));
	t_close(&t);
	free(buf);
	return 0;
}

static struct fid_cntr *cntr_open(struct t_ep *t)
{
	struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *c;
	T_OK(fi_cntr_open(t->dom, &a, &c, NULL));
	return c;
}

static struct t_ep t;
static fi_addr_t peer;
static uint64_t rkey;
static int stray; /* other completions seen while waiting for a read's */

/* Read `len` bytes at the target's offset with a plain (untriggered) read. */
static void rread(void *dst, size_t len, uint64_t off)
{
	static struct fi_context rctx;
	struct fi_cq_tagged_entry e;
	T_OK(fi_read(t.ep, dst, len, NULL, peer, off, rkey, &rctx));
	for (;;) {
		t_cq_expect(t.cq, &e, "read");
		if (e.op_context == &rctx)
			return;
		stray++;
	}
}

static ssize_t trig_write(struct fid_ep *ep, const void *buf, size_t len, uint64_t off,
			  struct fi_triggered_context *tc, struct fid_cntr *cntr, uint64_t threshold)
{
	tc->event_type = FI_TRIGGER_THRESHOLD;
	tc->trigger.threshold.cntr = cntr;
	tc->trigger.threshold.threshold = threshold;
	struct iovec v = { (void *)buf, len };
	struct fi_rma_iov r = { .addr = off, .len = len, .key = rkey };
	struct fi_msg_rma m = { .msg_iov = &v, .iov_count = 1, .addr = peer, .rma_iov = &r, .rma_iov_count = 1,
				.context = tc };
	return fi_writemsg(ep, &m, FI_TRIGGER | FI_COMPLETION);
}

static void flag_triggered_writes(void)
{
	struct fid_cntr *c = cntr_open(&t);
	static char src[64];
	static struct fi_triggered_context tc[4];
	strcpy(src, "posted content");
	T_OK(trig_write(t.ep, src, 32, 0, &tc[0], c, 2));
	strcpy(src, "content when the trigger fires");
	T_OK(fi_cntr_add(c, 1));
	char got[32];
	rread(got, 32, 0);
	T_CHECK(got[0] == 0, "count 1 < threshold 2: nothing written yet");
	struct fi_cq_tagged_entry e;
	T_CHECK(fi_cq_read(t.cq, &e, 1) == -FI_EAGAIN, "and no completion");
	T_OK(fi_cntr_add(c, 1));
	t_cq_expect(t.cq, &e, "triggered write");
	T_CHECK(e.op_context == &tc[0] && (e.flags & (FI_RMA | FI_WRITE)) == (FI_RMA | FI_WRITE),
		"completion of the triggered write, its fi_triggered_context as op_context");
	rread(got, 32, 0);
	T_CHECK(!strcmp(got, "content when the trigger fires"), "written at the threshold, the buffer as it was then: %s",
		got);
	/* Order: thresholds 3, 1, 2 on a fresh counter, then the count jumps to 3. */
	struct fid_cntr *d = cntr_open(&t);
	static uint64_t v[3] = { 3, 1, 2 };
	for (int i = 0; i < 3; i++)
		T_OK(trig_write(t.ep, &v[i], 8, 64, &tc[1 + i], d, v[i]));
	T_OK(fi_cntr_set(d, 3));
	for (int i = 0; i < 3; i++) {
		t_cq_expect(t.cq, &e, "ordered triggered write");
		uint64_t th = ((struct fi_triggered_context *)e.op_context)->trigger.threshold.threshold;
		T_CHECK(th == (uint64_t)i + 1, "completion %d is threshold %" PRIu64 "'s", i + 1, th);
	}
	uint64_t word;
	rread(&word, 8, 64);
	T_CHECK(word == 3, "the word holds threshold 3's value (written last): %" PRIu64, word);
	T_OK(fi_close(&c->fid));
	T_OK(fi_close(&d->fid));
}

/* fabtests fi_rdm_rma_trigger's sequence, through an alias carrying FI_TRIGGER. */
static void alias_trigger(struct fid_cntr *wcntr, struct fid_ep *alias)
{
	uint64_t flags = FI_TRANSMIT;
	T_OK(fi_control(&alias->fid, FI_GETOPSFLAG, &flags));
	T_CHECK(flags & FI_TRIGGER, "the alias's transmit op flags carry FI_TRIGGER");
	T_CHECK(fi_close(&t.ep->fid) == -FI_EBUSY, "the endpoint cannot close before its alias");
	static char text[] = "Hello1 from Client!Hello2 from Client!";
	uint64_t start = fi_cntr_read(wcntr);
	static struct fi_triggered_context tc;
	tc.event_type = FI_TRIGGER_THRESHOLD;
	tc.trigger.threshold.cntr = wcntr;
	tc.trigger.threshold.threshold = start + 1;
	T_OK(fi_write(alias, text + 19, 19, NULL, peer, 128, rkey, &tc));
	static struct fi_context ctx;
	T_OK(fi_write(t.ep, text, 19, NULL, peer, 128, rkey, &ctx));
	T_OK(fi_cntr_wait(wcntr, start + 2, 10000));
	struct fi_cq_tagged_entry e;
	int seen = 0;
	for (int i = 0; i < 2; i++) {
		t_cq_expect(t.cq, &e, "alias writes");
		seen |= (e.op_context == &tc ? 1 : 0) | (e.op_context == &ctx ? 2 : 0);
	}
	T_CHECK(seen == 3, "both writes completed in the CQ");
	char got[20] = { 0 };
	rread(got, 19, 128);
	T_CHECK(!strcmp(got, "Hello2 from Client!"), "the triggered write landed after the plain one: %s", got);
	/* Settings made after the alias (upstream: op flags and message order are each fid's own, copied when the
	 * alias is made; what lives in the shared endpoint object -- min_multi_recv, the RNR time, enable -- is
	 * one for both fids). */
	size_t mmr = 1234, got_mmr = 0, len = sizeof(got_mmr);
	T_OK(fi_setopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &mmr, sizeof(mmr)));
	T_CHECK(fi_getopt(&alias->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got_mmr, &len) == 0 && got_mmr == 1234,
		"min_multi_recv set on the endpoint afterwards is the alias's too: %zu", got_mmr);
	mmr = 64;
	T_OK(fi_setopt(&alias->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &mmr, sizeof(mmr)));
	len = sizeof(got_mmr);
	T_CHECK(fi_getopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got_mmr, &len) == 0 && got_mmr == 64,
		"and set through the alias, the endpoint's: %zu", got_mmr);
	uint64_t epf = FI_TRANSMIT, nf = FI_TRANSMIT | FI_INJECT_COMPLETE;
	T_OK(fi_control(&t.ep->fid, FI_GETOPSFLAG, &epf));
	T_OK(fi_control(&t.ep->fid, FI_SETOPSFLAG, &nf));
	flags = FI_TRANSMIT;
	T_OK(fi_control(&alias->fid, FI_GETOPSFLAG, &flags));
	T_CHECK((flags & FI_TRIGGER) && !(flags & FI_INJECT_COMPLETE),
		"op flags set on the endpoint afterwards do not reach the alias (its own, as upstream): 0x%" PRIx64, flags);
	epf |= FI_TRANSMIT;
	T_OK(fi_control(&t.ep->fid, FI_SETOPSFLAG, &epf));
	uint64_t order = FI_ORDER_SAS;
	T_CHECK(fi_set_val(&alias->fid, FI_OPT_CXI_SET_MSG_ORDER, &order) == 0, "FI_SET_VAL message order on the alias");
	order = 1ULL << 62;
	T_CHECK(fi_set_val(&alias->fid, FI_OPT_CXI_SET_MSG_ORDER, &order) == -FI_EINVAL, "a bad one: -FI_EINVAL");
	T_CHECK(fi_control(&alias->fid, FI_ENABLE, NULL) == 0, "FI_ENABLE through the alias (the endpoint's, enabled)");
	T_CHECK(fi_control(&alias->fid, FI_ALIAS, NULL) == -FI_EINVAL, "FI_ALIAS without an fi_alias: -FI_EINVAL");
	struct fid_ep *a3 = NULL;
	T_CHECK(fi_ep_alias(alias, &a3, FI_RECV) == 0 && a3, "an alias of an alias (of the endpoint)");
	T_OK(fi_close(&a3->fid));
	T_OK(fi_close(&alias->fid));
	struct fid_ep *a2;
	T_CHECK(fi_ep_alias(t.ep, &a2, FI_TRANSMIT | FI_RECV) == -FI_EINVAL, "alias with both directions: -FI_EINVAL");
}

static void deferred_work(void)
{
	struct fid_cntr *trig = cntr_open(&t), *comp = cntr_open(&t), *chain = cntr_open(&t);
	stray = 0;
	static uint64_t payload = 0x1122334455667788ULL;
	struct iovec v = { &payload, 8 };
	struct fi_rma_iov r = { .addr = 256, .len = 8, .key = rkey };
	struct fi_op_rma rma = { .ep = t.ep,
				 .msg = { .msg_iov = &v, .iov_count = 1, .addr = peer, .rma_iov = &r, .rma_iov_count = 1 },
				 .flags = 0 };
	struct fi_deferred_work w = { .threshold = 1, .triggering_cntr = trig, .completion_cntr = comp,
				      .op_type = FI_OP_WRITE };
	w.op.rma = &rma;
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &w));
	/* Tagged send at threshold 2. */
	static char text[] = "deferred tagged send";
	struct iovec tv = { text, 24 };
	struct fi_op_tagged ts = { .ep = t.ep, .msg = { .msg_iov = &tv, .iov_count = 1, .addr = peer, .tag = TAG } };
	struct fi_deferred_work w2 = { .threshold = 2, .triggering_cntr = trig, .completion_cntr = comp,
				       .op_type = FI_OP_TSEND };
	w2.op.tagged = &ts;
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &w2));
	/* Atomic sum and fetching sum at threshold 3 on the word at 320. */
	static uint64_t one = 5, fetched = 99;
	struct fi_ioc ioc = { &one, 1 }, fioc = { &fetched, 1 };
	struct fi_rma_ioc rioc = { .addr = 320, .count = 1, .key = rkey };
	struct fi_op_atomic am = { .ep = t.ep, .msg = { .msg_iov = &ioc, .iov_count = 1, .addr = peer, .rma_iov = &rioc,
							.rma_iov_count = 1, .datatype = FI_UINT64, .op = FI_SUM } };
	struct fi_deferred_work w3 = { .threshold = 3, .triggering_cntr = trig, .completion_cntr = comp,
				       .op_type = FI_OP_ATOMIC };
	w3.op.atomic = &am;
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &w3));
	struct fi_op_fetch_atomic fa = { .ep = t.ep, .msg = am.msg, .fetch = { .msg_iov = &fioc, .iov_count = 1 } };
	struct fi_deferred_work w4 = { .threshold = 3, .triggering_cntr = trig, .completion_cntr = comp,
				       .op_type = FI_OP_FETCH_ATOMIC };
	w4.op.fetch_atomic = &fa;
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &w4));
	/* Counter work: at 4, add 5 to chain; at chain's 5, set comp to 100. */
	struct fi_op_cntr add = { .cntr = chain, .value = 5 }, set = { .cntr = comp, .value = 100 };
	struct fi_deferred_work w5 = { .threshold = 4, .triggering_cntr = trig, .op_type = FI_OP_CNTR_ADD };
	w5.op.cntr = &add;
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &w5));
	struct fi_deferred_work w6 = { .threshold = 5, .triggering_cntr = chain, .op_type = FI_OP_CNTR_SET };
	w6.op.cntr = &set;
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &w6));

	T_CHECK(fi_cntr_wait(comp, 1, 200) == -FI_ETIMEDOUT, "nothing done before the trigger counter moves");
	T_OK(fi_cntr_add(trig, 1));
	T_OK(fi_cntr_wait(comp, 1, 10000));
	uint64_t word = 0;
	rread(&word, 8, 256);
	T_CHECK(word == payload, "deferred write at threshold 1: 0x%" PRIx64, word);
	T_CHECK(fi_cntr_read(comp) == 1, "counted in the completion counter only once so far");
	T_OK(fi_cntr_add(trig, 1));
	T_OK(fi_cntr_wait(comp, 2, 10000));
	T_OK(fi_cntr_add(trig, 1));
	T_OK(fi_cntr_wait(comp, 4, 10000));
	rread(&word, 8, 320);
	T_CHECK(word == 10, "two deferred sums of 5 at threshold 3: %" PRIu64, word);
	T_CHECK(fetched == 0 || fetched == 5, "the fetching one returned the value before it: %" PRIu64, fetched);
	T_CHECK(fi_cntr_read(chain) == 0, "counter work waits for its own threshold (4)");
	T_OK(fi_cntr_add(trig, 1));
	T_OK(fi_cntr_wait(comp, 100, 10000));
	T_CHECK(fi_cntr_read(chain) == 5 && fi_cntr_read(comp) == 100,
		"FI_OP_CNTR_ADD at 4 (chain = 5) released FI_OP_CNTR_SET on chain (comp = 100)");
	/* The deferred operations completed in the CQ too (the ops did not ask for no completion). */
	struct fi_cq_tagged_entry e;
	int n = 0;
	while (fi_cq_read(t.cq, &e, 1) == 1)
		n++;
	T_CHECK(n + stray == 4, "4 deferred operations completed in the CQ: %d", n + stray);
	/* A receive as deferred work: threshold 0 only. */
	static char rbuf[8];
	struct iovec rv = { rbuf, 8 };
	static struct fi_context rctx;
	struct fi_op_msg rm = { .ep = t.ep,
				.msg = { .msg_iov = &rv, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = &rctx } };
	struct fi_deferred_work wr = { .threshold = 1, .triggering_cntr = trig, .op_type = FI_OP_RECV };
	wr.op.msg = &rm;
	T_CHECK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &wr) == -FI_EINVAL, "receive with threshold 1: -FI_EINVAL");
	wr.threshold = 0;
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &wr));
	T_OK(fi_cancel(&t.ep->fid, &rctx));
	struct fi_cq_err_entry err;
	int cr = t_cq_wait(t.cq, &e, NULL, &err, 10.0);
	T_CHECK(cr == 0 && err.err == FI_ECANCELED && err.op_context == &rctx,
		"the threshold-0 receive was posted (cancelled: FI_ECANCELED): %d err %d ctx %p/%p (rctx %p)", cr,
		cr == 0 ? err.err : 0, cr == 0 ? err.op_context : NULL, cr == 1 ? e.op_context : NULL, (void *)&rctx);

	/* Flush: held work is dropped. */
	struct fid_cntr *t2 = cntr_open(&t), *c2 = cntr_open(&t);
	static uint64_t never = 0xdead;
	struct iovec nv = { &never, 8 };
	struct fi_rma_iov nr = { .addr = 512, .len = 8, .key = rkey };
	struct fi_op_rma nrma = { .ep = t.ep,
				  .msg = { .msg_iov = &nv, .iov_count = 1, .addr = peer, .rma_iov = &nr, .rma_iov_count = 1 } };
	struct fi_deferred_work wf = { .threshold = 100, .triggering_cntr = t2, .completion_cntr = c2, .op_type = FI_OP_WRITE };
	wf.op.rma = &nrma;
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &wf));
	T_OK(fi_control(&t.dom->fid, FI_FLUSH_WORK, NULL));
	T_OK(fi_cntr_set(t2, 200));
	T_CHECK(fi_cntr_wait(c2, 1, 200) == -FI_ETIMEDOUT, "flushed work never completes");
	rread(&word, 8, 512);
	T_CHECK(word == 0, "and never wrote");
	T_CHECK(fi_cq_read(t.cq, &e, 1) == -FI_EAGAIN, "and left no completion");

	/* Misuse. */
	T_CHECK(fi_control(&t.dom->fid, FI_CANCEL_WORK, &wf) == -FI_EINVAL, "FI_CANCEL_WORK: -FI_EINVAL (as upstream)");
	T_CHECK(fi_control(&t.dom->fid, FI_QUEUE_WORK, NULL) == -FI_EINVAL, "FI_QUEUE_WORK without work: -FI_EINVAL");
	struct fi_deferred_work bad = wf;
	bad.triggering_cntr = NULL;
	T_CHECK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &bad) == -FI_EINVAL, "no triggering counter: -FI_EINVAL");
	bad = w5;
	bad.completion_cntr = comp;
	T_CHECK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &bad) == -FI_EINVAL,
		"counter work with a completion counter: -FI_EINVAL");
	bad = wf;
	bad.op_type = (enum fi_op_type)77;
	T_CHECK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &bad) == -FI_EINVAL, "unknown op type: -FI_EINVAL");
	static struct fi_triggered_context xpu;
	xpu.event_type = FI_TRIGGER_XPU;
	struct fi_rma_iov xr = { .addr = 0, .len = 8, .key = rkey };
	struct fi_msg_rma xm = { .msg_iov = &nv, .iov_count = 1, .addr = peer, .rma_iov = &xr, .rma_iov_count = 1,
				 .context = &xpu };
	T_CHECK(fi_writemsg(t.ep, &xm, FI_TRIGGER) == -FI_EOPNOTSUPP, "FI_TRIGGER_XPU: -FI_EOPNOTSUPP");
	xm.context = NULL;
	T_CHECK(fi_writemsg(t.ep, &xm, FI_TRIGGER) == -FI_EINVAL, "FI_TRIGGER without a context: -FI_EINVAL");

	struct fi_cxi_dom_ops *dops;
	size_t depth = 0;
	T_OK(fi_open_ops(&t.dom->fid, FI_CXI_DOM_OPS_5, 0, (void **)&dops, NULL));
	T_CHECK(dops->get_dwq_depth(&t.dom->fid, &depth) == 0 && depth == 2040,
		"dwq depth %zu: 2048 TLEs less upstream's 8 reserved", depth);
	/* The NIC's trigger list holds 2048 entries (C_NUM_TLES); past them the trigger queue stalls (as a
	 * Cassini command queue does; upstream, without FI_CXI_ENABLE_TRIG_OP_LIMIT, returns success): 2040 more
	 * wait (the queue's depth: upstream sizes it to the dwq depth), then -FI_EAGAIN (queue full).  A flush
	 * drops held and waiting entries alike. */
	struct fid_cntr *t3 = cntr_open(&t);
	wf.triggering_cntr = t3;
	int queued = 0, ret = 0;
	while (queued < 5000 && (ret = fi_control(&t.dom->fid, FI_QUEUE_WORK, &wf)) == 0)
		queued++;
	T_CHECK(queued == 2048 + 2040 && ret == -FI_EAGAIN, "%d entries (2048 held, 2040 stalled), then %d (-FI_EAGAIN)",
		queued, ret);
	T_OK(fi_control(&t.dom->fid, FI_FLUSH_WORK, NULL));
	T_OK(fi_cntr_set(t3, 200));
	T_CHECK(fi_cntr_wait(c2, 1, 200) == -FI_ETIMEDOUT, "none of the flushed (held or stalled) work completes");
	/* Stalled entries take the TLEs given back as held ones are released, in order: all of them run. */
	struct fid_cntr *t4 = cntr_open(&t), *sum = cntr_open(&t);
	struct fi_op_cntr add1 = { .cntr = sum, .value = 1 };
	struct fi_deferred_work wa = { .threshold = 1, .triggering_cntr = t4, .op_type = FI_OP_CNTR_ADD };
	wa.op.cntr = &add1;
	int bad_q = 0;
	for (int i = 0; i < 2048 + 100; i++)
		bad_q += fi_control(&t.dom->fid, FI_QUEUE_WORK, &wa) != 0;
	T_CHECK(bad_q == 0 && fi_cntr_read(sum) == 0, "2148 counter adds queued (%d refused), none run yet", bad_q);
	T_OK(fi_cntr_add(t4, 1));
	T_CHECK(fi_cntr_wait(sum, 2148, 20000) == 0, "all 2148 ran once the trigger counter moved (100 had stalled): %" PRIu64,
		fi_cntr_read(sum));
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &wf));
	T_OK(fi_control(&t.dom->fid, FI_FLUSH_WORK, NULL));
	T_OK(fi_close(&t4->fid));
	T_OK(fi_close(&sum->fid));
	T_OK(fi_close(&t3->fid));
	T_OK(fi_close(&t2->fid));
	T_OK(fi_close(&c2->fid));
	T_OK(fi_close(&trig->fid));
	T_OK(fi_close(&comp->fid));
	T_OK(fi_close(&chain->fid));
}

/* A process that dies with work held and being released takes nothing down with it. */
static int dying(void *arg)
{
	(void)arg;
	struct t_ep d;
	t_open(&d, caps());
	fi_addr_t self = t_insert(&d, d.name);
	struct fid_cntr *trig = cntr_open(&d), *comp = cntr_open(&d);
	static char text[] = "to myself";
	struct iovec v = { text, sizeof(text) };
	struct fi_op_tagged ts = { .ep = d.ep, .msg = { .msg_iov = &v, .iov_count = 1, .addr = self, .tag = 1 } };
	for (uint64_t i = 1; i <= 20; i++) {
		struct fi_deferred_work w = { .threshold = i, .triggering_cntr = trig, .completion_cntr = comp,
					      .op_type = FI_OP_TSEND };
		w.op.tagged = &ts;
		T_OK(fi_control(&d.dom->fid, FI_QUEUE_WORK, &w));
	}
	T_OK(fi_cntr_add(trig, 10));
	_exit(0); /* no close, no cleanup: 10 entries held, some being released */
}

int main(void)
{
	pid_t dp = t_fork(dying, NULL, "dying");
	t_join(dp, "dying");
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(target, &l, "target");
	struct t_chan c = t_link_a(&l);
	t_who = "initiator";
	struct fi_info *h = t_hints(caps());
	t_open_with(&t, h, NULL, false);
	fi_freeinfo(h);
	T_CHECK(t.info->caps & FI_TRIGGER, "FI_TRIGGER offered");
	/* An alias made before the endpoint is enabled (as upstream allows) works once it is. */
	struct fid_ep *early = NULL;
	T_OK(fi_ep_alias(t.ep, &early, FI_TRANSMIT | FI_TRIGGER));
	static char one[8];
	T_CHECK(fi_write(early, one, 8, NULL, 0, 0, 0, NULL) == -FI_EOPBADSTATE,
		"an operation on the alias before the endpoint is enabled: -FI_EOPBADSTATE");
	struct fid_cntr *wcntr = cntr_open(&t);
	T_OK(fi_ep_bind(t.ep, &wcntr->fid, FI_WRITE));
	T_OK(fi_enable(t.ep));
	struct keyinfo ki;
	t_recv(c, &ki, sizeof(ki));
	peer = t_insert(&t, ki.name);
	rkey = ki.key;
	flag_triggered_writes();
	alias_trigger(wcntr, early);
	deferred_work();
	char go = 'g';
	t_send(c, &go, 1);
	t_join(p, "target");
	T_OK(fi_close(&t.ep->fid));
	t.ep = NULL;
	T_OK(fi_close(&wcntr->fid));
	t_close(&t);
	struct t_ep again;
	t_open(&again, caps());
	t_close(&again);
	T_CHECK(1, "the daemon outlived a process that died with triggered work held");
	return t_finish("prov_trigger");
}
