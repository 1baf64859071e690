/* rpc_server: Mercury-like RPC servers (DAOS engines / targets), one serial thread per endpoint.
 *
 * A server node runs `engines_per_node` engines, engine e on NIC e of the node; each engine runs
 * `threads_per_engine` threads, each with its own cxi endpoint and receive resources (seed 000 section 2.2;
 * a DAOS target).  Seed 000 Fig 5 is one node, one engine, one thread.
 *
 * Receive strategies (seed 000 section 3, Mercury 2.4's hg_core):
 *  - standard: `post_init` handles, each a receive of `recv_bytes` (R_u), are posted at start.  A handle
 *    leaves the posted set when its request completes and is reposted when the RPC is released (response
 *    sent).  When a request completes and no handle is left posted, `post_incr` new handles are created and
 *    posted at once (Mercury's pool extension): under load, posted receives grow towards the NIC's LE
 *    limits, where the provider goes to software matching (hybrid) or flow control (hardware).
 *  - multi_recv: `multi_recv_buffers` buffers of `multi_recv_bytes` posted with FI_MULTI_RECV.  Each
 *    request holds a reference on its buffer until released; a buffer the NIC has retired (FI_MULTI_RECV
 *    completion) is reposted when its last reference goes.  Copy fallback: when at most `copy_threshold`
 *    buffers are still posted, the payload is copied out and the reference dropped at once.
 *
 * The thread reads completions in order (a FIFO fed by the endpoint), paying for each: reading the CQ, the
 * source lookup (FI_SOURCE + FI_AV_USER_ID, FI_SOURCE with an AV lookup, or parsing the source out of the
 * header), the handler (`service_ns`, calibrated: see docs/workloads.md), posting the response, reposting.
 * Bulk requests (bulk.c) add an RMA before the response.
 */
#include <stdlib.h>
#include <string.h>

#include "../mem.h"
#include "../model.h"
#include "../pool.h"
#include "../timeseries.h"
#include "../util.h"
#include "bulk.h"
#include "rpc.h"
#include "rpc_server.h"

static const struct param server_params[] = {
	{ "nodes", "count", 1, 1, 1024, "seed 000 Fig 4/10: 1 or 2 server nodes" },
	{ "engines_per_node", "count", 1, 1, 8, "seed 000 2.2: 2 engines per Aurora server node (Fig 5: 1)" },
	{ "threads_per_engine", "count", 1, 1, 256, "seed 000 2.2: 16 targets per engine (Fig 5: 1)" },
	{ "nics_per_node", "count", 2, 1, 16, "seed 000 2.1: 2 Slingshot NICs per DAOS server node" },
	{ "first_nic", "addr", 0, 0, FABRIC_MAX_NICS - 1, "placement (scenario)" },
	{ "node_stride", "count", 0, 0, FABRIC_MAX_NICS, "placement: NIC addresses between nodes (0: nics_per_node)" },
	{ "post_init", "count", 512, 1, 65536, "Mercury 2.4 HG_CORE_POST_INIT; seed 000 3.2.2: 512 buffers" },
	{ "post_incr", "count", 512, 0, 65536, "Mercury 2.4 HG_CORE_POST_INCR (0: never extend)" },
	{ "recv_bytes", "bytes", 4096, 64, 1 << 24, "seed 000 3.2.2: R_u = 4 KB" },
	{ "multi_recv_buffers", "count", 4, 1, 64, "Mercury 2.4 HG_CORE_MULTI_RECV_OP_COUNT; seed 000 3.2.2: 4" },
	{ "multi_recv_bytes", "bytes", 2097152, 4096, 1ULL << 32, "seed 000 3.2.2: 2 MB buffers" },
	{ "copy_threshold", "count", 1, 0, 64, "seed 000 3.2.1: copy when one buffer is left (DAOS setting)" },
	{ "response_bytes", "bytes", 64, 0, 1 << 24, "assumed: Mercury response header, empty output" },
	{ "service_ns", "ns", 309, 0, 1e9,
	  "CALIBRATED on seed 000 Fig 5 multi-recv single-thread rate, 1.3 M ops/s (docs/workloads.md)" },
	{ "cq_event_ns", "ns", 100, 0, 1e6, "assumed: fi_cq_read of one entry + NA/HG callback dispatch" },
	{ "respond_ns", "ns", 250, 0, 1e6, "assumed: HG_Respond encode + fi_tsend (IDC command, MMIO doorbell)" },
	{ "post_recv_ns", "ns", 250, 0, 1e6, "assumed: handle reset + fi_recv (LE append command, MMIO doorbell)" },
	{ "src_user_id_ns", "ns", 10, 0, 1e6, "assumed: FI_SOURCE + FI_AV_USER_ID, no lookup" },
	{ "src_av_lookup_ns", "ns", 60, 0, 1e6, "assumed: FI_SOURCE, reverse AV hash lookup" },
	{ "src_header_ns", "ns", 180, 0, 1e6, "assumed: unpack source address from header + AV lookup/insert" },
	{ "copy_base_ns", "ns", 40, 0, 1e6, "assumed: memcpy call and buffer bookkeeping" },
	{ "copy_gbps", "GB/s", 10, 0.1, 1000, "assumed: single-core memcpy bandwidth" },
	{ "map_lock_ns", "ns", 150, 0, 1e6,
	  "assumed: MR-cache search that cxi does under libfabric's process-wide mm_lock for every posted buffer" },
	{ "map_lock_handoff_ns", "ns", 350, 0, 1e6,
	  "CALIBRATED on seed 000 Fig 4b standard receives, ~8 M ops/s: extra hold when the lock and the cache's "
	  "lines come from another thread's core" },
	{ "prov_unexpected_ns", "ns", 400, 0, 1e6,
	  "assumed: provider work per receive the provider completed from a hardware unexpected header (overflow "
	  "PUT and PUT_OVERFLOW events, list bookkeeping), as sw.h counts it; the copy is priced separately" },
	{ "prov_sw_match_ns", "ns", 300, 0, 1e6,
	  "assumed: provider work per message it matched in software (request buffers, onloaded headers), as "
	  "sw.h counts it; the copy is priced separately" },
	{ "eagain_retry_ns", "ns", 1000, 1, 1e9, "assumed: retry delay after -FI_EAGAIN" },
};
enum {
	P_NODES, P_ENGINES, P_THREADS, P_NICS_PER_NODE, P_FIRST_NIC, P_NODE_STRIDE, P_POST_INIT, P_POST_INCR,
	P_RECV_BYTES, P_MR_BUFS, P_MR_BYTES, P_COPY_THRESH, P_RESP_BYTES, P_SERVICE, P_CQ_EVENT, P_RESPOND,
	P_POST_RECV, P_SRC_UID, P_SRC_AV, P_SRC_HDR, P_COPY_BASE, P_COPY_GBPS, P_MAP_LOCK, P_MAP_HANDOFF, P_PROV_UX, P_PROV_SW, P_EAGAIN,
};

/* Context kinds: the first byte of every object handed to the endpoint as an operation context. */
enum { CTX_HANDLE = 1, CTX_MRECV, CTX_REQ };

struct srv_handle {
	uint8_t kind;
	bool posted;
	uint32_t idx;
	struct srv_thread *t;
};

struct mrecv_buf {
	uint8_t kind;
	bool posted, retired;
	uint32_t idx;
	uint32_t refs;
	uint64_t addr;
	struct srv_thread *t;
};

/* A request between its arrival and its release (response send completed). */
struct srv_req {
	uint8_t kind;
	uint8_t stage;  /* REQ_RMA: waiting for the bulk RMA; REQ_RESP: waiting for the response send */
	bool holds_buf; /* multi-recv: still references its buffer */
	bool failed;
	uint32_t handle; /* standard: handle index; multi-recv: buffer index */
	bool bulk;
	uint64_t hdr;
	struct sw_addr src;
	struct srv_thread *t;
	struct srv_req *next_retry;
	struct bulk_desc desc;
};
enum { REQ_RMA = 1, REQ_RESP, REQ_RMA_WAIT, REQ_RESP_WAIT };

/* One completion as the thread will read it.  A saturated server's backlog holds thousands of these per
 * thread (1.1 M clients at 1 ms: 2,157), so only what the thread reads is kept: of the flags, whether the
 * multi-recv buffer was released; the error code in 16 bits (fi_errno values are below 2^15: checked on
 * entry); a bulk request's descriptor goes to a side chunk (srv_qchunk.desc), made at the chunk's first
 * bulk request.  32 bytes, not 88. */
struct srv_comp {
	void *ctx;
	uint64_t data;
	struct sw_addr src;
	uint32_t len;
	int16_t err;
	bool src_valid : 1;
	bool bulk : 1;
	bool mrecv_released : 1; /* FI_MULTI_RECV: the buffer is released */
};
_Static_assert(sizeof(struct srv_comp) == 32, "a backlog entry is 32 bytes");

/* A thread's completion FIFO is a list of chunks from the server's pool (s->qchunks), filled at the tail
 * and drained at the head; a drained chunk goes back to the pool, where the next one needed is taken from.
 * A backlog that grows is never copied (a ring that grew by copying cost 0.1 L3 misses per event while the
 * clients of a large run join), and holds at most one chunk it does not use. */
#define SRV_QCHUNK_N 63
struct srv_qchunk {
	struct srv_comp c[SRV_QCHUNK_N];
	struct srv_qchunk *next;
	struct bulk_desc *desc; /* SRV_QCHUNK_N descriptors from s->qdescs, at the chunk's first bulk entry */
};
_Static_assert(sizeof(struct srv_qchunk) <= 2048, "a FIFO chunk fits in 2 KiB");

/* An engine process: its threads share libfabric's process-wide MR-cache lock, taken on every receive post
 * (cxi maps the posted buffer through the cache), so concurrent reposts of its threads serialize. */
struct srv_engine {
	simtime_t lock_free;
	uint32_t last_holder; /* thread index + 1; 0: none yet */
	uint64_t lock_wait_ps, lock_acq, handoffs;
};

struct srv_thread {
	struct rpc_server *srv;
	struct srv_engine *engine;
	simtime_t step_now; /* start of the work item being costed (posts within it happen later) */
	struct sw_ep *ep;
	uint32_t index;
	struct host_core core;
	/* Completions not yet read, FIFO: entries [qhead, SRV_QCHUNK_N) of qh, ..., [0, qtail) of qt. */
	struct srv_qchunk *qh, *qt;
	uint32_t qhead, qtail, qlen;
	bool stepping;
	struct srv_comp cur; /* being processed */
	struct bulk_desc cur_desc; /* its descriptor when cur.bulk */
	/* standard */
	struct srv_handle **handles;
	uint32_t nhandles, hcap, posted, in_use;
	/* multi-recv */
	struct mrecv_buf *bufs;
	uint32_t bufs_posted;
	/* retries after -FI_EAGAIN */
	struct srv_req *retry_head, *retry_tail;
	uint32_t *repost_list, nrepost, repost_cap; /* handles whose repost got -FI_EAGAIN */
	bool retry_armed;
	uint64_t next_addr;
};

static struct rpc_server_cfg *cfg_of(struct srv_thread *t) { return &t->srv->cfg; }

/* ---------------------------------------------------------------------------------------- completion FIFO */

static void q_push(struct srv_thread *t, const struct srv_comp *c, const struct bulk_desc *desc)
{
	struct rpc_server *s = t->srv;
	if (!t->qt || t->qtail == SRV_QCHUNK_N) {
		struct srv_qchunk *k = pool_get(&s->qchunks);
		k->next = NULL;
		k->desc = NULL;
		if (t->qt)
			t->qt->next = k;
		else
			t->qh = k, t->qhead = 0;
		t->qt = k;
		t->qtail = 0;
	}
	struct srv_qchunk *k = t->qt;
	k->c[t->qtail] = *c;
	if (c->bulk) {
		if (!k->desc)
			k->desc = pool_get(&s->qdescs);
		k->desc[t->qtail] = *desc;
	}
	t->qtail++;
	t->qlen++;
	s->st.backlog_now++;
	if (t->qlen > s->st.cq_backlog_max)
		s->st.cq_backlog_max = t->qlen;
}

/* The oldest completion into t->cur (and its descriptor into t->cur_desc); a drained chunk goes back. */
static void q_pop(struct srv_thread *t)
{
	struct rpc_server *s = t->srv;
	struct srv_qchunk *k = t->qh;
	t->cur = k->c[t->qhead];
	if (t->cur.bulk)
		t->cur_desc = k->desc[t->qhead];
	t->qhead++;
	t->qlen--;
	s->st.backlog_now--;
	if (t->qhead == SRV_QCHUNK_N || !t->qlen) { /* drained (the last chunk when the FIFO is empty) */
		t->qh = k->next;
		if (!t->qlen)
			t->qt = NULL;
		t->qhead = 0;
		if (k->desc)
			pool_put(&s->qdescs, k->desc);
		pool_put(&s->qchunks, k);
	}
}

static void thread_step(struct sim *sim, void *obj, uint64_t arg);

static void thread_kick(struct sim *sim, struct srv_thread *t)
{
	if (t->stepping || !t->qlen)
		return;
	t->stepping = true;
	simtime_t now = sim_now(sim);
	sim_schedule_at(sim, t->core.free_at > now ? t->core.free_at : now, thread_step, t, 0);
}

static void on_comp(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct srv_thread *t = ctx;
	(void)ep;
	if (c->err != (int16_t)c->err)
		die("rpc_server: completion error %d out of range on thread %u", c->err, t->index);
	struct srv_comp sc = {
		.ctx = c->op_context, .data = c->data, .len = (uint32_t)c->len, .err = (int16_t)c->err,
		.src = c->src, .src_valid = c->src_valid, .mrecv_released = (c->flags & FI_MULTI_RECV) != 0,
	};
	struct bulk_desc desc;
	uint8_t kind = *(const uint8_t *)c->op_context;
	if ((kind == CTX_HANDLE || kind == CTX_MRECV) && !c->err && t->srv->bulk)
		sc.bulk = bulk_snapshot(t->srv, c->data, &desc);
	q_push(t, &sc, &desc);
	thread_kick(nic_sim(t->srv->any_nic), t);
}

/* ---------------------------------------------------------------------------------------- posting */

static void arm_retry(struct sim *sim, struct srv_thread *t);

/* memcpy on this core: `copies` calls moving `bytes` in all. */
static simtime_t copy_cost(const struct rpc_server_cfg *c, uint64_t copies, uint64_t bytes)
{
	return (simtime_t)copies * c->copy_base + (simtime_t)((double)bytes * c->copy_ps_per_byte + 0.5);
}

/* Provider work done on this thread's behalf since it last looked (sw.h host-work account): receives
 * completed from a hardware unexpected header (the overflow PUT and PUT_OVERFLOW events), messages matched
 * in software, the copies out of overflow and request buffers, and the steps of flow-control recovery and
 * hybrid transitions (priced by the provider's cost table).  The thread pays it at its next step, as
 * progress runs inside its own fi_cq_read and fi_recv calls. */
static simtime_t provider_work(struct srv_thread *t)
{
	const struct rpc_server_cfg *c = cfg_of(t);
	struct sw_host_work w;
	sw_ep_take_host_work(t->ep, &w);
	struct sw_host_price p = sw_host_work_price(nic_sim(t->srv->any_nic), &w);
	t->srv->st.ux_posts += w.ux_matches;
	t->srv->st.sw_matched += w.sw_matches;
	t->srv->st.fc_host_ps += p.fc;
	t->srv->st.rnr_host_ps += p.rnr;
	t->srv->st.kernel_calls += w.kernel_calls;
	return (simtime_t)w.ux_matches * c->prov_ux + (simtime_t)w.sw_matches * c->prov_sw +
	       copy_cost(c, w.copies, w.copy_bytes) + p.fc + p.rnr;
}

/* Thread time of one receive post issued `so_far` into the current work item: the provider call, then the
 * buffer mapping under the engine's MR-cache lock (waiting while another thread of the engine holds it). */
static simtime_t recv_post_cost(struct srv_thread *t, simtime_t so_far)
{
	const struct rpc_server_cfg *c = cfg_of(t);
	struct srv_engine *e = t->engine;
	simtime_t at = t->step_now + so_far + c->post_recv;
	simtime_t start = e->lock_free > at ? e->lock_free : at;
	simtime_t hold = c->map_lock;
	if (e->last_holder && e->last_holder != t->index + 1) {
		hold += c->map_handoff;
		e->handoffs++;
	}
	e->last_holder = t->index + 1;
	e->lock_free = start + hold;
	e->lock_wait_ps += start - at;
	e->lock_acq++;
	return c->post_recv + (start - at) + hold;
}

static bool post_handle(struct srv_thread *t, struct srv_handle *h, simtime_t *cost)
{
	struct rpc_server_cfg *c = cfg_of(t);
	*cost += recv_post_cost(t, *cost);
	int rc = sw_recv(t->ep, (uint64_t)h->idx * c->recv_bytes + 0x10000000ULL, c->recv_bytes, NULL, 0, 0, 0, h);
	*cost += provider_work(t);
	if (rc == -FI_EAGAIN)
		return false;
	if (rc)
		die("rpc_server: fi_recv on thread %u failed: %d", t->index, rc);
	h->posted = true;
	t->posted++;
	t->srv->st.posted_now++;
	t->srv->st.posts++;
	if (t->posted > t->srv->st.posted_max)
		t->srv->st.posted_max = t->posted;
	return true;
}

static void repost_later(struct sim *sim, struct srv_thread *t, struct srv_handle *h)
{
	if (t->nrepost == t->repost_cap) {
		t->repost_cap = t->repost_cap ? t->repost_cap * 2 : 64;
		t->repost_list = xrealloc(t->repost_list, t->repost_cap * sizeof(*t->repost_list));
	}
	t->repost_list[t->nrepost++] = h->idx;
	t->srv->st.eagain++;
	arm_retry(sim, t);
}

static struct srv_handle *new_handle(struct srv_thread *t)
{
	if (t->nhandles == t->hcap) {
		t->hcap = t->hcap ? t->hcap * 2 : 1024;
		t->handles = xrealloc(t->handles, t->hcap * sizeof(*t->handles));
	}
	struct srv_handle *h = xcalloc(1, sizeof(*h));
	h->kind = CTX_HANDLE;
	h->idx = t->nhandles;
	h->t = t;
	t->handles[t->nhandles++] = h;
	return h;
}

/* Create and post n handles (Mercury's pool creation and extension). */
static void extend_pool(struct sim *sim, struct srv_thread *t, uint32_t n, simtime_t *cost)
{
	for (uint32_t i = 0; i < n; i++) {
		struct srv_handle *h = new_handle(t);
		if (!post_handle(t, h, cost))
			repost_later(sim, t, h);
	}
}

static bool post_mrecv(struct srv_thread *t, struct mrecv_buf *b, simtime_t *cost)
{
	struct rpc_server_cfg *c = cfg_of(t);
	*cost += recv_post_cost(t, *cost);
	int rc = sw_recv(t->ep, b->addr, c->mr_bytes, NULL, 0, 0, FI_MULTI_RECV, b);
	if (rc == -FI_EAGAIN)
		return false;
	if (rc)
		die("rpc_server: multi-recv fi_recv on thread %u failed: %d", t->index, rc);
	b->posted = true;
	b->retired = false;
	t->bufs_posted++;
	t->srv->st.posted_now++;
	t->srv->st.posts++;
	return true;
}

static bool send_response(struct srv_thread *t, struct srv_req *r)
{
	struct rpc_server_cfg *c = cfg_of(t);
	int rc = sw_send(t->ep, 0x20000000ULL, c->resp_bytes, NULL, r->src, rpc_resp_tag(r->hdr), r->failed ? 1 : 0,
			 FI_TAGGED | FI_REMOTE_CQ_DATA | FI_COMPLETION, r);
	if (rc == -FI_EAGAIN)
		return false;
	if (rc)
		die("rpc_server: response send on thread %u failed: %d", t->index, rc);
	r->stage = REQ_RESP;
	return true;
}

static void queue_retry(struct sim *sim, struct srv_thread *t, struct srv_req *r);

static void respond(struct sim *sim, struct srv_thread *t, struct srv_req *r)
{
	if (send_response(t, r))
		return;
	r->stage = REQ_RESP_WAIT;
	queue_retry(sim, t, r);
}

static void retry_fire(struct sim *sim, void *obj, uint64_t arg)
{
	struct srv_thread *t = obj;
	(void)arg;
	t->retry_armed = false;
	while (t->retry_head) {
		struct srv_req *r = t->retry_head;
		if (r->stage == REQ_RMA_WAIT) {
			int rc = bulk_server_start(sim, t->srv, t->ep, &r->desc, r->src, r);
			if (rc == -FI_EAGAIN)
				break;
			if (rc == 0) {
				r->stage = REQ_RMA;
			} else {
				r->failed = true;
				if (!send_response(t, r)) {
					r->stage = REQ_RESP_WAIT;
					break;
				}
			}
		} else if (!send_response(t, r)) {
			break;
		}
		t->retry_head = r->next_retry;
		if (!t->retry_head)
			t->retry_tail = NULL;
	}
	simtime_t cost = 0;
	t->step_now = sim_now(sim);
	while (t->nrepost) {
		struct srv_handle *h = t->handles[t->repost_list[t->nrepost - 1]];
		if (!post_handle(t, h, &cost))
			break;
		t->nrepost--;
	}
	if (cost)
		host_core_charge(&t->core, sim_now(sim), cost);
	if (t->retry_head || t->nrepost)
		arm_retry(sim, t);
}

static void arm_retry(struct sim *sim, struct srv_thread *t)
{
	if (t->retry_armed)
		return;
	t->retry_armed = true;
	sim_schedule(sim, t->srv->cfg.eagain_retry, retry_fire, t, 0);
}

/* ---------------------------------------------------------------------------------------- processing */

/* Release the request's receive resources (Mercury: handle destroyed after the response completed). */
static void release_req(struct sim *sim, struct srv_thread *t, struct srv_req *r, simtime_t *cost)
{
	struct rpc_server_cfg *c = cfg_of(t);
	if (c->strategy == RPC_STANDARD) {
		struct srv_handle *h = t->handles[r->handle];
		t->in_use--;
		t->srv->st.in_use_now--;
		if (!post_handle(t, h, cost))
			repost_later(sim, t, h);
	} else if (r->holds_buf) {
		struct mrecv_buf *b = &t->bufs[r->handle];
		if (--b->refs == 0 && b->retired) {
			if (!post_mrecv(t, b, cost))
				die("rpc_server: multi-recv repost refused (thread %u)", t->index);
		}
	}
	pool_put(&t->srv->req_pool, r);
}

static simtime_t src_cost(const struct rpc_server_cfg *c)
{
	switch (c->src_lookup) {
	case RPC_SRC_FI_SOURCE_USER_ID: return c->src_uid;
	case RPC_SRC_FI_SOURCE: return c->src_av;
	default: return c->src_hdr;
	}
}

/* Exactly-once check: attempts of one client slot carry increasing generations and are sent only after
 * the previous attempt's send completed, so a generation not above the last one seen is a duplicate. */
static void note_delivery(struct rpc_server *s, uint64_t hdr)
{
	struct rpc_client_set *cs = s->world.clients;
	if (!s->last_gen && cs) {
		s->gen_w = rpc_client_window(cs);
		s->gen_n = rpc_client_count(cs);
		s->last_gen = xcalloc((size_t)s->gen_n * s->gen_w, sizeof(*s->last_gen));
	}
	uint32_t c = rpc_hdr_client(hdr), sl = rpc_hdr_slot(hdr), g = rpc_hdr_gen(hdr);
	if (!s->last_gen || c >= s->gen_n || sl >= s->gen_w) {
		s->st.foreign++;
		return;
	}
	uint32_t *last = &s->last_gen[(size_t)c * s->gen_w + sl];
	if (g <= *last)
		s->st.duplicates++;
	else
		*last = g;
}

/* A request arrived (standard handle or multi-recv buffer).  Returns the thread time it takes; the
 * response (or bulk RMA) is issued when that time has elapsed (finish_request). */
static simtime_t take_request(struct sim *sim, struct srv_thread *t, const struct srv_comp *sc, struct srv_req **out)
{
	struct rpc_server *s = t->srv;
	struct rpc_server_cfg *c = &s->cfg;
	simtime_t cost = c->cq_event + provider_work(t);
	struct srv_req *r = pool_get(&s->req_pool);
	memset(r, 0, sizeof(*r));
	r->kind = CTX_REQ;
	r->t = t;
	r->hdr = sc->data;
	if (c->strategy == RPC_STANDARD) {
		struct srv_handle *h = sc->ctx;
		h->posted = false;
		t->posted--;
		t->in_use++;
		s->st.posted_now--;
		s->st.in_use_now++;
		r->handle = h->idx;
		/* Mercury: all pre-posted handles consumed or in use -> post post_incr more. */
		if (t->posted == 0 && c->post_incr > 0) {
			s->st.pool_extensions++;
			extend_pool(sim, t, c->post_incr, &cost);
		}
	} else {
		struct mrecv_buf *b = sc->ctx;
		bool copy = t->bufs_posted <= c->copy_threshold;
		b->refs++;
		r->handle = b->idx;
		r->holds_buf = true;
		if (sc->mrecv_released) {
			b->retired = true;
			b->posted = false;
			t->bufs_posted--;
			s->st.posted_now--;
			s->st.mrecv_retired++;
		}
		if (copy) {
			s->st.mrecv_copies++;
			cost += copy_cost(c, 1, sc->len);
			r->holds_buf = false;
			if (--b->refs == 0 && b->retired) {
				if (!post_mrecv(t, b, &cost))
					die("rpc_server: multi-recv repost refused (thread %u)", t->index);
			}
		}
	}
	cost += src_cost(c);
	if (c->src_lookup == RPC_SRC_HEADER || !sc->src_valid) {
		if (!s->world.client_addr_of || !s->world.client_addr_of(s->world.clients, rpc_hdr_client(r->hdr), &r->src))
			die("rpc_server: request from unknown client %u", rpc_hdr_client(r->hdr));
	} else {
		r->src = sc->src;
	}
	s->st.requests++;
	note_delivery(s, r->hdr);
	if (rpc_in_window(&s->world, sim_now(sim))) {
		if (!s->st.requests_in_window++)
			bm_init(&s->st.rate, s->world.win_start, s->world.win_end);
		bm_add(&s->st.rate, sim_now(sim));
	}
	cost += c->service;
	r->bulk = sc->bulk;
	if (r->bulk) {
		r->desc = t->cur_desc;
		cost += bulk_server_issue_cost(s);
	} else {
		cost += c->respond;
	}
	*out = r;
	return cost;
}

static void queue_retry(struct sim *sim, struct srv_thread *t, struct srv_req *r)
{
	r->next_retry = NULL;
	if (t->retry_tail)
		t->retry_tail->next_retry = r;
	else
		t->retry_head = r;
	t->retry_tail = r;
	t->srv->st.eagain++;
	arm_retry(sim, t);
}

static void finish_request(struct sim *sim, struct srv_thread *t, struct srv_req *r)
{
	if (r->bulk) {
		int rc = bulk_server_start(sim, t->srv, t->ep, &r->desc, r->src, r);
		if (rc == 0) {
			r->stage = REQ_RMA;
			return;
		}
		if (rc == -FI_EAGAIN) {
			r->stage = REQ_RMA_WAIT;
			queue_retry(sim, t, r);
			return;
		}
		/* Deadline passed or the RMA could not start: respond at once with an error status. */
		r->failed = true;
	}
	respond(sim, t, r);
}

static void thread_done(struct sim *sim, void *obj, uint64_t arg);

static void thread_step(struct sim *sim, void *obj, uint64_t arg)
{
	struct srv_thread *t = obj;
	struct rpc_server *s = t->srv;
	struct rpc_server_cfg *c = &s->cfg;
	(void)arg;
	t->step_now = sim_now(sim);
	q_pop(t);
	struct srv_comp *sc = &t->cur;
	uint8_t kind = *(uint8_t *)sc->ctx;
	simtime_t cost;
	struct srv_req *r = NULL;
	uint64_t what = 0;
	if (kind == CTX_REQ) {
		r = sc->ctx;
		cost = c->cq_event;
		if (sc->err)
			s->st.op_errors++;
		if (r->stage == REQ_RMA) {
			if (sc->err)
				r->failed = true;
			bulk_server_done(s, sc->err);
			cost += c->respond;
			what = 1;
		} else {
			/* Response sent: release the RPC. */
			s->st.responses++;
			release_req(sim, t, r, &cost);
			what = 2;
		}
	} else if (sc->err == FI_ECANCELED) {
		s->st.canceled++;
		cost = c->cq_event;
		what = 3;
	} else {
		if (sc->err)
			s->st.recv_errors++;
		cost = take_request(sim, t, sc, &r);
		what = 4;
	}
	sc->ctx = r;
	host_core_charge(&t->core, sim_now(sim), cost);
	sim_schedule_at(sim, t->core.free_at, thread_done, t, what);
}

static void thread_done(struct sim *sim, void *obj, uint64_t what)
{
	struct srv_thread *t = obj;
	struct srv_req *r = t->cur.ctx;
	if (what == 1)
		respond(sim, t, r);
	else if (what == 4)
		finish_request(sim, t, r);
	t->stepping = false;
	thread_kick(sim, t);
}

/* ---------------------------------------------------------------------------------------- build */

/* A condition the provider treats as fatal: remember the first message (metrics.json) and stop the run. */
void rpc_on_fatal(void *ctx, struct sw_ep *ep, const char *msg)
{
	struct rpc_fatal *f = ctx;
	if (!f->count++)
		snprintf(f->msg, sizeof(f->msg), "%s", msg);
	sim_stop(nic_sim(sw_ep_nic(ep)));
}

void rpc_put_fatal(FILE *f, const struct rpc_fatal *fa)
{
	fprintf(f, "\"fatal\": %llu, \"fatal_message\": \"", (unsigned long long)fa->count);
	for (const char *p = fa->msg; *p; p++)
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if ((unsigned char)*p >= 0x20)
			fputc(*p, f);
	fputs("\"", f);
}

static void open_thread(struct sim *sim, struct rpc_server *s, struct srv_thread *t, struct nic *nic)
{
	struct rpc_server_cfg *c = &s->cfg;
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	a.env = c->env;
	a.proto = c->proto;
	a.progress = SW_PROGRESS_AUTO;
	a.num_vnis = c->num_vnis;
	memcpy(a.vnis, c->vnis, sizeof(a.vnis));
	a.caps = FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_SOURCE |
		 (c->strategy == RPC_MULTI_RECV ? FI_MULTI_RECV : 0);
	a.rx_size = c->rx_size;
	a.cq_size = c->cq_size;
	a.comp = on_comp;
	a.comp_ctx = t;
	a.on_fatal = rpc_on_fatal;
	a.fatal_ctx = &s->fatal;
	int rc = sw_ep_open(nic, &a, &t->ep);
	if (rc)
		cfg_fail(c->section, "nodes", "cannot open server endpoint %u on NIC %u: error %d", t->index, nic_addr(nic), rc);
	simtime_t cost = 0;
	t->step_now = 0;
	if (c->strategy == RPC_STANDARD) {
		extend_pool(sim, t, c->post_init, &cost);
	} else {
		t->bufs = xcalloc(c->mr_bufs, sizeof(*t->bufs));
		for (uint32_t i = 0; i < c->mr_bufs; i++) {
			struct mrecv_buf *b = &t->bufs[i];
			b->kind = CTX_MRECV;
			b->idx = i;
			b->t = t;
			b->addr = 0x40000000ULL + (uint64_t)i * c->mr_bytes;
			if (!post_mrecv(t, b, &cost))
				cfg_fail(c->section, "multi_recv_buffers", "multi-recv buffer %u could not be posted", i);
		}
	}
	/* The server set up before its clients started: the initial posts cost nothing in the run. */
	struct sw_host_work setup;
	sw_ep_take_host_work(t->ep, &setup);
	t->engine->lock_free = 0;
	t->engine->last_holder = 0;
	t->engine->lock_wait_ps = 0;
	t->engine->lock_acq = 0;
	t->engine->handoffs = 0;
}

static void read_cfg(struct sim *sim, struct rpc_server *s, const struct cfg *sec)
{
	struct rpc_server_cfg *c = &s->cfg;
	static const char *const strategies[] = { "standard", "multi_recv", NULL };
	static const char *const lookups[] = { "fi_source_user_id", "fi_source", "header", NULL };
	static const char *const protos[] = { "cxi", "cxi_rnr", NULL };
	const struct param *P = server_params;
	c->section = sec;
	c->strategy = cfg_enum(sec, "strategy", RPC_MULTI_RECV, strategies);
	c->src_lookup = cfg_enum(sec, "source_lookup", RPC_SRC_FI_SOURCE_USER_ID, lookups);
	c->proto = cfg_enum(sec, "protocol", SW_PROTO_CXI, protos) == 1 ? SW_PROTO_CXI_RNR : SW_PROTO_CXI;
	c->nodes = param_get_u64(sec, &P[P_NODES]);
	c->engines = param_get_u64(sec, &P[P_ENGINES]);
	c->threads = param_get_u64(sec, &P[P_THREADS]);
	c->nics_per_node = param_get_u64(sec, &P[P_NICS_PER_NODE]);
	c->first_nic = param_get_u64(sec, &P[P_FIRST_NIC]);
	c->node_stride = param_get_u64(sec, &P[P_NODE_STRIDE]);
	if (!c->node_stride)
		c->node_stride = c->nics_per_node;
	c->post_init = param_get_u64(sec, &P[P_POST_INIT]);
	c->post_incr = param_get_u64(sec, &P[P_POST_INCR]);
	c->recv_bytes = param_get_u64(sec, &P[P_RECV_BYTES]);
	c->mr_bufs = param_get_u64(sec, &P[P_MR_BUFS]);
	c->mr_bytes = param_get_u64(sec, &P[P_MR_BYTES]);
	c->copy_threshold = param_get_u64(sec, &P[P_COPY_THRESH]);
	if (c->copy_threshold > c->mr_bufs)
		cfg_fail(sec, "copy_threshold", "cannot exceed multi_recv_buffers (%u)", c->mr_bufs);
	c->resp_bytes = param_get_u64(sec, &P[P_RESP_BYTES]);
	c->service = ns_to_ps(param_get(sec, &P[P_SERVICE]));
	c->cq_event = ns_to_ps(param_get(sec, &P[P_CQ_EVENT]));
	c->respond = ns_to_ps(param_get(sec, &P[P_RESPOND]));
	c->post_recv = ns_to_ps(param_get(sec, &P[P_POST_RECV]));
	c->src_uid = ns_to_ps(param_get(sec, &P[P_SRC_UID]));
	c->src_av = ns_to_ps(param_get(sec, &P[P_SRC_AV]));
	c->src_hdr = ns_to_ps(param_get(sec, &P[P_SRC_HDR]));
	c->copy_base = ns_to_ps(param_get(sec, &P[P_COPY_BASE]));
	c->copy_ps_per_byte = 1000.0 / param_get(sec, &P[P_COPY_GBPS]); /* 1 GB/s = 1 byte/ns */
	c->map_lock = ns_to_ps(param_get(sec, &P[P_MAP_LOCK]));
	c->map_handoff = ns_to_ps(param_get(sec, &P[P_MAP_HANDOFF]));
	c->prov_ux = ns_to_ps(param_get(sec, &P[P_PROV_UX]));
	c->prov_sw = ns_to_ps(param_get(sec, &P[P_PROV_SW]));
	c->eagain_retry = ns_to_ps(param_get(sec, &P[P_EAGAIN]));
	c->rx_size = (uint32_t)cfg_u64(sec, "rx_size", 1024, 1, 15360);
	c->cq_size = (uint32_t)cfg_u64(sec, "cq_size", 0, 0, 1u << 24); /* 0: FI_CXI_DEFAULT_CQ_SIZE */
	int nv = cfg_array_len(sec, "vnis");
	if (nv > NIC_SVC_MAX_VNIS)
		cfg_fail(sec, "vnis", "at most %d VNIs per endpoint (max_ep_auth_key)", NIC_SVC_MAX_VNIS);
	sw_env_scenario(sim, &c->env); /* the scenario's cxi.env, then this section's overrides */
	struct cfg cx = cfg_section(sec, "cxi");
	sw_env_from_cfg(&c->env, &cx);
	c->num_vnis = nv > 0 ? (uint8_t)nv : 1;
	c->vnis[0] = (uint16_t)c->env.default_vni;
	for (int i = 0; i < nv; i++)
		c->vnis[i] = (uint16_t)cfg_array_u64(sec, "vnis", i, 1, 65535);
	bulk_server_read_cfg(s, sec);
}

static void server_free(void *p)
{
	struct rpc_server *s = p;
	for (uint32_t i = 0; i < s->nthreads; i++) {
		struct srv_thread *t = &s->threads[i];
		sw_ep_close(t->ep); /* destroy hooks run newest first: the NICs are still there */
		for (uint32_t h = 0; h < t->nhandles; h++)
			free(t->handles[h]);
		free(t->handles);
		free(t->bufs);
		free(t->repost_list);
	}
	free(s->threads);
	free(s->engines);
	free(s->world.targets);
	free(s->last_gen);
	pool_free_all(&s->req_pool);
	pool_free_all(&s->qchunks);
	pool_free_all(&s->qdescs);
	bulk_server_free(s);
	free(s);
}

static void server_build(struct sim *sim, const struct cfg *sec)
{
	struct rpc_server *s = xcalloc(1, sizeof(*s));
	read_cfg(sim, s, sec);
	struct rpc_server_cfg *c = &s->cfg;
	if (c->engines > c->nics_per_node)
		cfg_fail(sec, "engines_per_node", "%u engines but %u NICs per node: each engine uses its own NIC",
			 c->engines, c->nics_per_node);
	s->nthreads = c->nodes * c->engines * c->threads;
	s->engines = xcalloc((size_t)c->nodes * c->engines, sizeof(*s->engines));
	s->threads = xcalloc(s->nthreads, sizeof(*s->threads));
	s->world.ntargets = s->nthreads;
	s->world.targets = xcalloc(s->nthreads, sizeof(*s->world.targets));
	s->world.server = s;
	s->world.win_end = SIM_TIME_MAX;
	pool_init(&s->req_pool, sizeof(struct srv_req), 4096);
	pool_init(&s->qchunks, sizeof(struct srv_qchunk), 32);
	pool_init(&s->qdescs, SRV_QCHUNK_N * sizeof(struct bulk_desc), 32);
	sim_world_set(sim, "rpc", &s->world);
	uint32_t i = 0;
	for (uint32_t n = 0; n < c->nodes; n++)
		for (uint32_t e = 0; e < c->engines; e++) {
			uint32_t addr = rpc_node_nic(c->first_nic, c->node_stride, n, e);
			struct nic *nic = nic_get(sim, addr);
			if (!nic)
				cfg_fail(sec, "first_nic", "server node %u engine %u: no NIC at address %u (fabric too small?)",
					 n, e, addr);
			s->any_nic = nic;
			for (uint32_t th = 0; th < c->threads; th++, i++) {
				struct srv_thread *t = &s->threads[i];
				t->srv = s;
				t->engine = &s->engines[n * c->engines + e];
				t->index = i;
				open_thread(sim, s, t, nic);
				s->world.targets[i] = sw_ep_addr(t->ep);
			}
		}
	bulk_server_build(sim, s);
	/* Registered after the endpoints were opened, so it runs before the provider's own teardown. */
	sim_on_destroy(sim, server_free, s);
	ts_register(sim, "rpc_server.posted", &s->st.posted_now);
	ts_register(sim, "rpc_server.in_use", &s->st.in_use_now);
	ts_register(sim, "rpc_server.cq_backlog", &s->st.backlog_now);
}

static void server_summary(struct sim *sim, FILE *f)
{
	struct rpc_world *w = sim_world_get(sim, "rpc");
	struct rpc_server *s = w->server;
	struct rpc_server_cfg *c = &s->cfg;
	const struct rpc_server_stats *st = &s->st;
	double win_s = w->win_end > w->win_start && w->win_end != SIM_TIME_MAX
			       ? (double)(w->win_end - w->win_start) * 1e-12
			       : (double)sim_now(sim) * 1e-12;
	uint64_t busy = 0, lock_wait = 0, lock_acq = 0;
	for (uint32_t i = 0; i < s->nthreads; i++)
		busy += s->threads[i].core.busy_ps;
	for (uint32_t i = 0; i < c->nodes * c->engines; i++) {
		lock_wait += s->engines[i].lock_wait_ps;
		lock_acq += s->engines[i].lock_acq;
	}
	fprintf(f, "{\"strategy\": \"%s\", \"nodes\": %u, \"engines_per_node\": %u, \"threads_per_engine\": %u, "
		   "\"endpoints\": %u, ",
		c->strategy == RPC_STANDARD ? "standard" : "multi_recv", c->nodes, c->engines, c->threads, s->nthreads);
	fprintf(f, "\"rpc_rate\": %.1f, \"requests_in_window\": %llu, \"requests\": %llu, \"responses\": %llu, ",
		win_s > 0 ? (double)st->requests_in_window / win_s : 0.0, (unsigned long long)st->requests_in_window,
		(unsigned long long)st->requests, (unsigned long long)st->responses);
	fprintf(f, "\"posted_high_water\": %u, \"posts\": %llu, \"pool_extensions\": %llu, \"multi_recv_retired\": %llu, "
		   "\"multi_recv_copies\": %llu, \"cq_backlog_max\": %u, \"eagain\": %llu, \"op_errors\": %llu, "
		   "\"recv_errors\": %llu, \"duplicates\": %llu, \"foreign\": %llu, \"unexpected_posts\": %llu, "
		   "\"software_matched\": %llu, \"map_lock_acquisitions\": %llu, \"map_lock_wait_ns_mean\": %.1f, "
		   "\"thread_utilization\": %.4f, \"fc_host_ns\": %.0f, \"rnr_host_ns\": %.0f, \"kernel_calls\": %llu, ",
		st->posted_max, (unsigned long long)st->posts, (unsigned long long)st->pool_extensions,
		(unsigned long long)st->mrecv_retired, (unsigned long long)st->mrecv_copies, st->cq_backlog_max,
		(unsigned long long)st->eagain, (unsigned long long)st->op_errors, (unsigned long long)st->recv_errors,
		(unsigned long long)st->duplicates, (unsigned long long)st->foreign, (unsigned long long)st->ux_posts,
		(unsigned long long)st->sw_matched, (unsigned long long)lock_acq,
		lock_acq ? (double)lock_wait / (double)lock_acq / 1000.0 : 0.0,
		sim_now(sim) ? (double)busy / ((double)sim_now(sim) * s->nthreads) : 0.0, (double)st->fc_host_ps / 1000.0,
		(double)st->rnr_host_ps / 1000.0, (unsigned long long)st->kernel_calls);
	struct bm_summary bs;
	bm_summarise(&s->st.rate, &bs);
	fputs("\"rpc_rate_steady\": ", f);
	bm_put_json(f, &bs);
	bm_warn("rpc_server.rpc_rate", &bs);
	fputs(", ", f);
	rpc_server_nic_summary(sim, s, f);
	fputs(", ", f);
	rpc_put_fatal(f, &s->fatal);
	fputs(", \"bulk\": ", f);
	bulk_server_summary(s, f, win_s);
	fputs("}", f);
}

/* NIC-side figures of the server endpoints: the provider's software statistics and the LE pools. */
void rpc_server_nic_summary(struct sim *sim, struct rpc_server *s, FILE *f)
{
	struct sw_ep_stats sum = { 0 };
	uint32_t sw_state = 0;
	for (uint32_t i = 0; i < s->nthreads; i++) {
		const struct sw_ep_stats *e = sw_ep_stats(s->threads[i].ep);
		sum.total_rnr_nacks += e->total_rnr_nacks;
		sum.total_retries += e->total_retries;
		sum.fc_transitions += e->fc_transitions;
		sum.fc_notify_sent += e->fc_notify_sent;
		sum.fc_resume_sent += e->fc_resume_sent;
		sum.fc_drops_replayed += e->fc_drops_replayed;
		sum.sw_transitions += e->sw_transitions;
		sum.onloaded += e->onloaded;
		sum.mr_hazards += e->mr_hazards;
		if (sw_ep_rxc_state(s->threads[i].ep) == RXC_ENABLED_SOFTWARE)
			sw_state++;
	}
	uint32_t le_hw = 0;
	for (uint32_t n = 0; n < s->cfg.nodes; n++)
		for (uint32_t e = 0; e < s->cfg.engines; e++) {
			struct nic *nic = nic_get(sim, rpc_node_nic(s->cfg.first_nic, s->cfg.node_stride, n, e));
			for (unsigned p = 0; p < C_LE_POOLS; p++) {
				struct nic_le_pool_status ps;
				if (nic_le_pool_status(nic, p, &ps) == 0 && ps.high_water > le_hw)
					le_hw = ps.high_water;
			}
		}
	fprintf(f, "\"le_pool_high_water\": %u, \"fc_transitions\": %llu, \"fc_notify_sent\": %llu, "
		   "\"fc_resume_sent\": %llu, \"fc_drops_replayed\": %llu, \"sw_transitions\": %llu, \"onloaded\": %llu, "
		   "\"endpoints_in_software\": %u, \"rnr_nacks\": %llu, \"rnr_retries\": %llu",
		le_hw, (unsigned long long)sum.fc_transitions, (unsigned long long)sum.fc_notify_sent,
		(unsigned long long)sum.fc_resume_sent, (unsigned long long)sum.fc_drops_replayed,
		(unsigned long long)sum.sw_transitions, (unsigned long long)sum.onloaded, sw_state,
		(unsigned long long)sum.total_rnr_nacks, (unsigned long long)sum.total_retries);
}

/* Memory accounting: the server's own state, and (unit "server_endpoint") all a thread owns: its share
 * of that, its provider endpoint and the NIC-side objects of its LNI. */
static void server_memory(struct sim *sim, struct mem_report *r)
{
	struct rpc_world *w = sim_world_get(sim, "rpc");
	const struct rpc_server *s = w->server;
	uint64_t own = sizeof(*s) + (uint64_t)s->cfg.nodes * s->cfg.engines * sizeof(*s->engines) +
		       (uint64_t)s->nthreads * (sizeof(*s->threads) + sizeof(*s->world.targets)) +
		       pool_bytes(&s->req_pool) + pool_bytes(&s->qchunks) + pool_bytes(&s->qdescs) +
		       (uint64_t)s->gen_n * s->gen_w * sizeof(*s->last_gen);
	uint64_t eps = 0;
	for (uint32_t i = 0; i < s->nthreads; i++) {
		const struct srv_thread *t = &s->threads[i];
		own += (uint64_t)t->hcap * sizeof(*t->handles) +
		       (uint64_t)t->nhandles * sizeof(**t->handles) + (uint64_t)t->repost_cap * sizeof(*t->repost_list);
		if (t->bufs)
			own += (uint64_t)s->cfg.mr_bufs * sizeof(*t->bufs);
		if (t->ep)
			eps += sw_ep_bytes(t->ep);
	}
	mem_add(r, "rpc_server", s->nthreads, own);
	mem_unit(r, "server_endpoint", s->nthreads, own + eps);
}

static struct model server_model = {
	.key = "rpc_server",
	.order = 30,
	.build = server_build,
	.summary = server_summary,
	.memory = server_memory,
	.params = server_params,
	.nparams = ARRAY_SIZE(server_params),
};
MODEL_REGISTER(server_model)
