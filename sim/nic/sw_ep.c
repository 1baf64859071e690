/* Provider software: endpoints.  Opening an endpoint allocates what libfabric's cxi provider allocates on a
 * real NIC (an LNI, TX/RX/control EQs, a transmit and a target command queue, the receive, control and
 * rendezvous-source PtlTEs), and progress reads the EQs and hands each event to the object named by its
 * user_ptr. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../mem.h"
#include "../pool.h"
#include "../stats.h"
#include "../util.h"
#include "sw_impl.h"

/* ---------------------------------------------------------------- lists */

void sw_req_list_push(struct sw_req_list *l, struct sw_req *r)
{
	sw_req_unlist(r);
	r->next = NULL;
	r->prev = l->tail;
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	l->len++;
	r->on = l;
}

void sw_req_list_remove(struct sw_req_list *l, struct sw_req *r)
{
	if (r->on == l)
		sw_req_unlist(r);
}

void sw_req_unlist(struct sw_req *r)
{
	struct sw_req_list *l = r->on;
	if (!l)
		return;
	if (r->prev)
		r->prev->next = r->next;
	else
		l->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	else
		l->tail = r->prev;
	r->next = r->prev = NULL;
	l->len--;
	r->on = NULL;
}

/* ---------------------------------------------------------------- LE buffer ids */

/* Cassini unlinks an LE by its buffer id, so every LE software may unlink needs one no other live LE of
 * the endpoint has (upstream allocates request ids the same way).  Id 0 is left to the LEs that are never
 * unlinked.  Released ids are reused; memory grows with the most ids ever live, not with 2^16. */
int sw_id_alloc(struct sw_ep *ep, uint16_t *id)
{
	if (ep->nfree_ids) {
		*id = ep->free_ids[--ep->nfree_ids];
		return 0;
	}
	if (ep->next_id >= 0xffff)
		return -FI_EAGAIN;
	*id = (uint16_t)++ep->next_id;
	return 0;
}

void sw_id_free(struct sw_ep *ep, uint16_t id)
{
	if (!id)
		return;
	if (ep->nfree_ids == ep->free_ids_cap) {
		ep->free_ids_cap = ep->free_ids_cap ? 2 * ep->free_ids_cap : 16;
		ep->free_ids = xrealloc(ep->free_ids, ep->free_ids_cap * sizeof(*ep->free_ids));
	}
	ep->free_ids[ep->nfree_ids++] = id;
}

void sw_ux_push(struct sw_ux_list *l, struct sw_ux *u)
{
	u->on = l;
	u->next = NULL;
	u->prev = l->tail;
	if (l->tail)
		l->tail->next = u;
	else
		l->head = u;
	l->tail = u;
	l->len++;
}

void sw_ux_remove(struct sw_ux_list *l, struct sw_ux *u)
{
	if (u->prev)
		u->prev->next = u->next;
	else
		l->head = u->next;
	if (u->next)
		u->next->prev = u->prev;
	else
		l->tail = u->prev;
	u->next = u->prev = NULL;
	u->on = NULL;
	l->len--;
}

/* ---------------------------------------------------------------- memory */

/* Provider-private buffers are one contiguous tagged range per endpoint, backed only when the endpoint
 * carries real data, and then only where something was written: overflow and request buffers of many
 * simulated endpoints (12 MiB each by default) cost memory only for the bytes that land in them. */
#define SW_PRIV_CHUNK (64 * 1024)

uint64_t sw_priv_alloc(struct sw_ep *ep, uint64_t size)
{
	size = (size + 4095) & ~4095ULL;
	uint64_t addr = SW_PRIV_BASE + ep->priv_used;
	ep->priv_used += size;
	uint64_t need = (ep->priv_used + SW_PRIV_CHUNK - 1) / SW_PRIV_CHUNK;
	if (ep->attr.mem && need > ep->priv_chunks) {
		ep->priv = xrealloc(ep->priv, need * sizeof(*ep->priv));
		memset(ep->priv + ep->priv_chunks, 0, (need - ep->priv_chunks) * sizeof(*ep->priv));
		ep->priv_chunks = need;
	}
	return addr;
}

/* Copies between provider-private memory at off and buf, chunk by chunk (write: allocating chunks). */
static int priv_access(struct sw_ep *ep, uint64_t off, void *buf, size_t len, bool write)
{
	if (!ep->priv || off + len > ep->priv_used || off + len < off)
		return -EFAULT;
	uint8_t *p = buf;
	while (len) {
		uint64_t c = off / SW_PRIV_CHUNK, at = off % SW_PRIV_CHUNK;
		size_t n = SW_PRIV_CHUNK - at < len ? (size_t)(SW_PRIV_CHUNK - at) : len;
		if (write) {
			if (!ep->priv[c])
				ep->priv[c] = xcalloc(1, SW_PRIV_CHUNK);
			memcpy(ep->priv[c] + at, p, n);
		} else if (ep->priv[c]) {
			memcpy(p, ep->priv[c] + at, n);
		} else {
			memset(p, 0, n);
		}
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static void priv_free(struct sw_ep *ep)
{
	for (uint64_t c = 0; c < ep->priv_chunks; c++)
		free(ep->priv[c]);
	free(ep->priv);
	ep->priv = NULL;
	ep->priv_chunks = 0;
}

static int ep_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	struct sw_ep *ep = ctx;
	if (addr >= SW_PRIV_BASE)
		return priv_access(ep, addr - SW_PRIV_BASE, dst, len, false);
	return ep->attr.mem->read(ep->attr.mem_ctx, addr, dst, len);
}

static int ep_write(void *ctx, uint64_t addr, const void *src, size_t len)
{
	struct sw_ep *ep = ctx;
	if (addr >= SW_PRIV_BASE)
		return priv_access(ep, addr - SW_PRIV_BASE, (void *)src, len, true);
	return ep->attr.mem->write(ep->attr.mem_ctx, addr, src, len);
}

/* Software copy (e.g. unexpected eager data from an overflow buffer into the user's buffer). */
void sw_copy(struct sw_ep *ep, uint64_t dst, uint64_t src, uint64_t len)
{
	if (!len)
		return;
	ep->host.copies++;
	ep->host.copy_bytes += len;
	if (!ep->attr.mem)
		return;
	uint8_t tmp[4096];
	while (len) {
		size_t n = len < sizeof(tmp) ? (size_t)len : sizeof(tmp);
		if (ep_read(ep, src, tmp, n) || ep_write(ep, dst, tmp, n))
			return;
		src += n;
		dst += n;
		len -= n;
	}
}

void sw_ep_take_host_work(struct sw_ep *ep, struct sw_host_work *out)
{
	*out = ep->host;
	memset(&ep->host, 0, sizeof(ep->host));
}

/* ---------------------------------------------------------------- state shared by all endpoints */

/* Per simulation: the pids in use on every NIC, and the pools every endpoint takes its per-message
 * records from -- requests (receives, sends, RMA operations, peeks), unexpected messages, rendezvous
 * messages being received -- so no message calls malloc and a leak shows as a live count that does not
 * come back (each type keeps its own count).  Requests and unexpected messages share one pool of slots the
 * size of the larger: a client's send request completes when its message has landed at the server, where
 * it waits as an unexpected message; with separate pools the whole machine's 4.4 M send requests of the
 * start burst left 0.8 GB of request slabs behind while 4.4 M unexpected records took as many again. */
#define SW_WORLD_KEY "cxi.sw" /* sim_world_get name of the state below */

struct sw_world {
	uint32_t n;
	uint8_t (*used)[C_PID_ANY];
	struct pool req_ux, rmsgs, bufs;
	uint64_t reqs_live, uxs_live;
	struct sw_env **envs;   /* the distinct environments of the endpoints opened, shared read-only */
	uint32_t nenvs;
	struct sw_ep *eps;  /* open endpoints */
};

static void sw_world_free(void *p)
{
	struct sw_world *w = p;
	free(w->used);
	pool_free_all(&w->req_ux);
	pool_free_all(&w->rmsgs);
	pool_free_all(&w->bufs);
	for (uint32_t i = 0; i < w->nenvs; i++)
		free(w->envs[i]);
	free(w->envs);
	free(w);
}

/* Records on the free list are poisoned under ASan: a stale pointer, or a second return, is reported. */
static void record_pool_init(struct pool *p, size_t size)
{
	pool_init(p, size, 64);
	p->poison = true;
}

static struct sw_world *sw_world(struct sim *sim)
{
	struct sw_world *w = sim_world_get(sim, SW_WORLD_KEY);
	if (!w) {
		w = xcalloc(1, sizeof(*w));
		w->n = nic_count(sim);
		w->used = xcalloc(w->n ? w->n : 1, sizeof(*w->used));
		record_pool_init(&w->req_ux, sizeof(struct sw_req) > sizeof(struct sw_ux) ? sizeof(struct sw_req)
												   : sizeof(struct sw_ux));
		record_pool_init(&w->rmsgs, sizeof(struct sw_rmsg));
		record_pool_init(&w->bufs, sizeof(struct sw_buf));
		sim_world_set(sim, SW_WORLD_KEY, w);
		sim_on_destroy(sim, sw_world_free, w);
	}
	return w;
}

/* The shared copy of environment e (its bytes: every endpoint of a scenario is opened with a copy of the
 * same one).  The newest copies are looked at first and only a few of them, so an endpoint opened with a
 * new environment costs what it did before this was shared, never a search through thousands. */
static const struct sw_env *env_shared(struct sw_world *w, const struct sw_env *e)
{
	for (uint32_t i = w->nenvs, k = 0; i-- > 0 && k < 16; k++)
		if (!memcmp(w->envs[i], e, sizeof(*e)))
			return w->envs[i];
	w->envs = xrealloc(w->envs, (w->nenvs + 1) * sizeof(*w->envs));
	struct sw_env *c = xmalloc(sizeof(*c));
	memcpy(c, e, sizeof(*c));
	w->envs[w->nenvs++] = c;
	return c;
}

static uint8_t *pid_row(struct sim *sim, uint32_t nic)
{
	return sw_world(sim)->used[nic];
}

struct sw_req *sw_req_new(struct sw_ep *ep, uint8_t kind)
{
	struct sw_req *r = pool_get(ep->req_ux);
	ep->w->reqs_live++;
	memset(r, 0, sizeof(*r));
	r->obj.kind = kind;
	r->ep = ep;
	return r;
}

void sw_req_free(struct sw_ep *ep, struct sw_req *r)
{
	if (sw_req_is_tx(r)) { /* the other kinds' bytes there are a receive's fields */
		sim_timer_cancel(ep->sim, &r->rnr_timer);
		nic_payload_free(r->inject);
	}
	ep->w->reqs_live--;
	pool_put(ep->req_ux, r);
}

struct sw_ux *sw_ux_new(struct sw_ep *ep)
{
	struct sw_ux *u = pool_get(ep->req_ux);
	ep->w->uxs_live++;
	memset(u, 0, sizeof(*u));
	return u;
}

void sw_ux_free(struct sw_ep *ep, struct sw_ux *u)
{
	ep->w->uxs_live--;
	pool_put(ep->req_ux, u);
}

struct sw_rmsg *sw_rmsg_new(struct sw_ep *ep)
{
	struct sw_rmsg *m = pool_get(ep->rmsgs);
	memset(m, 0, sizeof(*m));
	m->obj.kind = SWK_RMSG;
	return m;
}

void sw_rmsg_free(struct sw_ep *ep, struct sw_rmsg *m)
{
	pool_put(ep->rmsgs, m);
}

struct sw_buf *sw_buf_new(struct sw_ep *ep)
{
	struct sw_buf *b = pool_get(&sw_world(ep->sim)->bufs);
	memset(b, 0, sizeof(*b));
	return b;
}

void sw_buf_free(struct sw_ep *ep, struct sw_buf *b)
{
	pool_put(&sw_world(ep->sim)->bufs, b);
}

uint64_t sw_reqs_live(struct sim *sim)
{
	struct sw_world *w = sim_world_get(sim, SW_WORLD_KEY);
	return w ? w->reqs_live : 0;
}

uint64_t sw_ux_live(struct sim *sim)
{
	struct sw_world *w = sim_world_get(sim, SW_WORLD_KEY);
	return w ? w->uxs_live : 0;
}

/* The endpoint's provider-side state: the record and what hangs off it (not pooled records, not the NIC). */
static uint64_t ep_own_bytes(const struct sw_ep *ep)
{
	uint64_t b = sizeof(*ep) + ep->priv_chunks * sizeof(*ep->priv) + (uint64_t)ep->free_ids_cap * sizeof(*ep->free_ids);
	for (uint64_t c = 0; c < ep->priv_chunks; c++)
		if (ep->priv[c])
			b += SW_PRIV_CHUNK;
	b += (uint64_t)ep->ux_map_cap * sizeof(*ep->ux_map) + (uint64_t)ep->closed_cap * sizeof(*ep->closed);
	b += (uint64_t)ep->rdzv_cap * (sizeof(*ep->rdzv_reqs) + sizeof(*ep->rdzv_free));
	for (const struct sw_buf *x = ep->oflow; x; x = x->next)
		b += sizeof(*x);
	for (const struct sw_buf *x = ep->reqbuf; x; x = x->next)
		b += sizeof(*x);
	for (const struct sw_fc_peer *x = ep->fc_peers; x; x = x->next)
		b += sizeof(*x);
	for (const struct sw_fc_drops *x = ep->fc_drops; x; x = x->next)
		b += sizeof(*x);
	for (const struct sw_ctrl_msg *x = ep->ctrl_msgs; x; x = x->next)
		b += sizeof(*x);
	for (const struct sw_mr *x = ep->mrs; x; x = x->next)
		b += sizeof(*x);
	if (ep->fatal)
		b += strlen(ep->fatal) + 1;
	return b;
}

uint64_t sw_ep_bytes(const struct sw_ep *ep)
{
	uint64_t reqs = ep->posted.len + ep->replay.len + ep->inflight.len + ep->peeks.len + ep->msg_queue.len +
			ep->rma_queue.len + ep->rnr_wait.len;
	uint64_t uxs = ep->ux.len + ep->pending_ux.len + ep->ux_map_n;
	return ep_own_bytes(ep) + (reqs + uxs) * ep->req_ux->obj_size + nic_lni_bytes(ep->lni);
}

void sw_memory(struct sim *sim, struct mem_report *r)
{
	struct sw_world *w = sim_world_get(sim, SW_WORLD_KEY);
	if (!w)
		return;
	uint64_t n = 0, b = 0;
	for (const struct sw_ep *ep = w->eps; ep; ep = ep->w_next, n++)
		b += ep_own_bytes(ep);
	mem_add(r, "sw.endpoint", n, b + (uint64_t)w->nenvs * (sizeof(*w->envs) + sizeof(**w->envs)));
	mem_add(r, "sw.records", w->req_ux.allocated + w->rmsgs.allocated,
		pool_bytes(&w->req_ux) + pool_bytes(&w->rmsgs) + sizeof(*w) +
			(uint64_t)w->n * sizeof(*w->used));
	mem_pool(r, "sw.req_ux", w->req_ux.obj_size, w->req_ux.allocated, w->req_ux.live, pool_bytes(&w->req_ux));
	mem_pool(r, "sw.rmsg", w->rmsgs.obj_size, w->rmsgs.allocated, w->rmsgs.live, pool_bytes(&w->rmsgs));
}

uint64_t sw_rmsgs_live(struct sim *sim)
{
	struct sw_world *w = sim_world_get(sim, SW_WORLD_KEY);
	return w ? w->rmsgs.live : 0;
}

/* ---------------------------------------------------------------- helpers */

void sw_fatal(struct sw_ep *ep, const char *fmt, ...)
{
	if (ep->fatal)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ep->fatal = xstrdup(buf);
	if (ep->attr.on_fatal) {
		ep->attr.on_fatal(ep->attr.fatal_ctx, ep, ep->fatal);
	} else {
		fprintf(stderr, "cxisim: nic %u pid %u: fatal: %s", nic_addr(ep->nic), ep->pid, ep->fatal);
		sim_stop(ep->sim);
	}
}

static struct sw_backlog **backlog_of(struct sw_ep *ep, struct nic_cmdq *q)
{
	return &ep->backlog[q == ep->tgq];
}

/* Slots kept free for internal commands: an application request (a receive, a send, an RMA, a peek) and
 * its completion issue a handful of them (append, unlink, search, rendezvous Get, flow-control steps). */
#define SW_CMDQ_RESERVE 16

bool sw_cmdq_room(struct sw_ep *ep, struct nic_cmdq *q)
{
	struct sw_backlog *b = *backlog_of(ep, q);
	return (!b || !b->n) && nic_cmdq_free_slots(q) > SW_CMDQ_RESERVE;
}

/* An application request's command: -FI_EAGAIN when the queue has no room for it, as upstream's
 * fi_send/fi_recv/fi_read return when the command queue is full; the caller progresses and retries. */
int sw_emit(struct sw_ep *ep, struct nic_cmdq *q, const struct nic_cmd *c)
{
	if (ep->closing)
		return -FI_EINVAL;
	if (!sw_cmdq_room(ep, q))
		return -FI_EAGAIN;
	int rc = nic_cmdq_emit(q, c);
	if (rc == 0)
		nic_cmdq_ring(q);
	return rc == -ENOSPC ? -FI_EAGAIN : rc;
}

static void backlog_push(struct sw_backlog **bp, const struct nic_cmd *c)
{
	struct sw_backlog *b = *bp ? *bp : (*bp = xcalloc(1, sizeof(**bp)));
	if (b->n == b->cap) {
		uint32_t cap = b->cap ? 2 * b->cap : 64;
		struct nic_cmd *cmds = xmalloc(cap * sizeof(*cmds));
		for (uint32_t i = 0; i < b->n; i++)
			cmds[i] = b->cmds[(b->head + i) & (b->cap - 1)];
		free(b->cmds);
		b->cmds = cmds;
		b->cap = cap;
		b->head = 0;
	}
	b->cmds[(b->head + b->n++) & (b->cap - 1)] = *c; /* cap: 64 << k (a mask, not a division) */
}

/* A command the software layer issues on its own: never lost, never reordered.  With no room it waits
 * in the queue's backlog until the NIC has fetched (sw_cmdq_space). */
void sw_emit_internal(struct sw_ep *ep, struct nic_cmdq *q, const struct nic_cmd *c)
{
	if (ep->closing) {
		sw_fatal(ep, "internal command issued while closing (op %u)\n", c->op);
		return;
	}
	struct sw_backlog **bp = backlog_of(ep, q);
	int rc = *bp && (*bp)->n ? -ENOSPC : nic_cmdq_emit(q, c);
	if (rc == 0) {
		nic_cmdq_ring(q);
		return;
	}
	if (rc != -ENOSPC) {
		sw_fatal(ep, "internal command refused by the NIC (op %u): %d\n", c->op, rc);
		return;
	}
	backlog_push(bp, c);
	ep->st.cmdq_backlogged++;
}

/* The NIC fetched from a queue that was full: move waiting internal commands in, in order. */
void sw_cmdq_space(void *ctx, struct nic_cmdq *q)
{
	struct sw_ep *ep = ctx;
	struct sw_backlog *b = *backlog_of(ep, q);
	if (!b || ep->closing)
		return;
	bool emitted = false;
	while (b->n && nic_cmdq_emit(q, &b->cmds[b->head]) == 0) {
		b->head = (b->head + 1) & (b->cap - 1);
		b->n--;
		emitted = true;
	}
	if (emitted)
		nic_cmdq_ring(q);
}

static void emit_internal(struct sw_ep *ep, struct nic_cmdq *q, const struct nic_cmd *c)
{
	sw_emit_internal(ep, q, c);
}

void sw_append(struct sw_ep *ep, uint32_t ptn, uint8_t list, uint16_t buffer_id, uint32_t flags, uint64_t start,
	       uint64_t length, uint32_t min_free, uint32_t match_id, uint64_t mb, uint64_t ib, void *user_ptr)
{
	struct nic_cmd c = { .op = NIC_CMD_TGT_APPEND };
	c.tgt = (struct nic_tgt_cmd){ .ptn = ptn, .list = list, .buffer_id = buffer_id, .le_flags = flags,
				      .ctn = NIC_NONE, .start = start, .length = length, .min_free = min_free,
				      .match_id = match_id, .match_bits = mb, .ignore_bits = ib,
				      .user_ptr = (uint64_t)(uintptr_t)user_ptr };
	emit_internal(ep, ep->tgq, &c);
}

void sw_unlink(struct sw_ep *ep, uint32_t ptn, uint8_t list, uint16_t buffer_id, void *user_ptr)
{
	struct nic_cmd c = { .op = NIC_CMD_TGT_UNLINK };
	c.tgt = (struct nic_tgt_cmd){ .ptn = ptn, .list = list, .buffer_id = buffer_id, .ctn = NIC_NONE,
				      .user_ptr = (uint64_t)(uintptr_t)user_ptr };
	emit_internal(ep, ep->tgq, &c);
}

void sw_setstate(struct sw_ep *ep, uint32_t ptn, uint8_t state, uint32_t drop_count)
{
	struct nic_cmd c = { .op = NIC_CMD_TGT_SETSTATE };
	c.tgt = (struct nic_tgt_cmd){ .ptn = ptn, .state = state, .drop_count = drop_count, .ctn = NIC_NONE,
				      .user_ptr = (uint64_t)(uintptr_t)&ep->state_obj };
	emit_internal(ep, ep->tgq, &c);
}

void sw_complete(struct sw_ep *ep, const struct sw_comp *c)
{
	if (ep->attr.comp)
		ep->attr.comp(ep->attr.comp_ctx, ep, c);
}

/* Cassini return codes as libfabric errors (cassini-reference: VNI and authorization keys). */
int sw_rc_to_errno(uint8_t rc)
{
	switch (rc) {
	case C_RC_OK: return 0;
	case C_RC_VNI_NOT_FOUND: return FI_ENOTCONN;
	case C_RC_UNDELIVERABLE: return FI_EHOSTUNREACH;
	default: return FI_EIO;
	}
}

/* The provider's FI_CXI_CQ_FILL_PERCENT check: a status writeback since the last drain means saturated. */
bool sw_eq_saturated(struct sw_ep *ep, uint32_t eqn)
{
	struct nic_eq_status st;
	if (nic_eq_status(ep->nic, eqn, &st))
		return false;
	return (uint64_t)st.used * 100 >= (uint64_t)ep->env->cq_fill_percent * st.slots;
}

/* ---------------------------------------------------------------- progress */

static void dispatch(struct sw_ep *ep, uint32_t eqn, const struct nic_event *ev)
{
	struct sw_obj *o = (struct sw_obj *)(uintptr_t)ev->user_ptr;
	if (ev->type == C_EVENT_STATE_CHANGE) {
		if (ev->ptlte_index == ep->rx_ptn)
			sw_rxc_state_change(ep, ev);
		return;
	}
	if (ev->type == C_EVENT_COMMAND_FAILURE) {
		sw_fatal(ep, "command failure: %s\n", c_rc_name(ev->rc));
		return;
	}
	if (!o) {
		sw_fatal(ep, "event %s without a request on EQ %u\n", c_event_type_name(ev->type), eqn);
		return;
	}
	switch (o->kind) {
	case SWK_RECV:
	case SWK_RMSG:
	case SWK_SEARCH:
	case SWK_FLUSH:
	case SWK_PEEK:
	case SWK_DISCARD: sw_rxc_event(ep, o, ev); break;
	case SWK_OFLOW:
	case SWK_REQBUF: sw_buf_event(ep, (struct sw_buf *)o, ev); break;
	case SWK_SEND:
	case SWK_RMA:
	case SWK_CTRL_MSG:
	case SWK_RDZV_SRC: sw_txc_event(ep, o, ev); break;
	case SWK_CTRL_LE: sw_ctrl_event(ep, ev); break;
	case SWK_MR:
	case SWK_MR_WD: sw_mr_event(ep, o, ev); break;
	case SWK_STATE: break;
	default: sw_fatal(ep, "event %s for unknown object\n", c_event_type_name(ev->type));
	}
}

static void progress_eq(struct sw_ep *ep, uint32_t eqn)
{
	const struct nic_event *e;
	while (!ep->fatal && (e = nic_eq_peek(ep->nic, eqn))) {
		struct nic_event ev = *e;
		nic_eq_next(ep->nic, eqn);
		nic_eq_ack(ep->nic, eqn);
		dispatch(ep, eqn, &ev);
	}
	struct nic_eq_status st;
	if (!ep->fatal && nic_eq_status(ep->nic, eqn, &st) == 0 && st.dropped)
		sw_fatal(ep, "H/W Event Queue overflow detected.\n");
}

void sw_ep_post_prefetch(const struct sw_ep *ep, unsigned stage)
{
	if (stage == 0) {
		/* the lines sw_recv and sw_send read before they queue (the record's first lines, then the
		 * attributes they check) */
		__builtin_prefetch(&ep->nic);
		__builtin_prefetch(&ep->eq_tx);
		__builtin_prefetch(&ep->posted);
		__builtin_prefetch(&ep->attr.progress);
		__builtin_prefetch(&ep->attr.tx_size);
		__builtin_prefetch(&ep->attr.comp);
		return;
	}
	nic_eq_prefetch(ep->nic, ep->eq_rx, stage - 1);
	if (stage > 1)
		nic_eq_prefetch(ep->nic, ep->eq_tx, stage - 1);
}

void sw_ep_progress(struct sw_ep *ep)
{
	if (!ep || ep->closing)
		return;
	progress_eq(ep, ep->eq_ctrl);
	progress_eq(ep, ep->eq_rx);
	progress_eq(ep, ep->eq_tx);
}

static void eq_notify(void *ctx, struct nic *nic, uint32_t eqn)
{
	struct sw_ep *ep = ctx;
	(void)nic;
	if (ep->attr.progress == SW_PROGRESS_AUTO && !ep->closing)
		progress_eq(ep, eqn);
}

/* ---------------------------------------------------------------- open / close */

void sw_ep_attr_defaults(struct sw_ep_attr *a)
{
	memset(a, 0, sizeof(*a));
	sw_env_defaults(&a->env);
	a->proto = SW_PROTO_CXI;
	a->progress = SW_PROGRESS_AUTO;
	a->pid = C_PID_ANY;
	a->svc_id = NIC_SVC_DEFAULT;
	a->num_vnis = 1;
	a->vnis[0] = (uint16_t)a->env.default_vni;
	a->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_MULTI_RECV | FI_SOURCE | FI_DIRECTED_RECV;
	a->tx_size = 1024;
	a->rx_size = 1024;
	a->min_multi_recv = 64;
}

static int ep_eq(struct sw_ep *ep, uint32_t slots, uint32_t reserved, uint32_t *eqn)
{
	struct nic_eq_attr ea = { .slots = slots, .reserved_fc = reserved, .status_thresh_pct = ep->env->cq_fill_percent,
				  .notify = eq_notify, .notify_ctx = ep };
	return nic_eq_alloc(ep->lni, &ea, eqn);
}

static int ep_pte(struct sw_ep *ep, uint32_t eqn, struct nic_pte_opts o, const uint32_t *indexes, unsigned nidx,
		  uint32_t *ptn)
{
	int rc = nic_pte_alloc(ep->lni, eqn, &o, ptn);
	if (rc)
		return rc;
	for (unsigned v = 0; v < ep->attr.num_vnis; v++)
		for (unsigned i = 0; i < nidx; i++)
			if ((rc = nic_pte_map(ep->lni, *ptn, ep->attr.vnis[v], ep->pid, indexes[i])))
				return rc;
	return 0;
}

/* Per-endpoint counters: one block per endpoint ("nic.<n>.ep.<pid>.<name>"). */
static void ep_counters(struct sw_ep *ep)
{
	static const char *const names[] = { "total_rnr_nacks", "total_retries", "fc_transitions", "sw_transitions",
					     "mr_hazards", "onloaded", "fc_notify_sent", "fc_resume_sent" };
	uint64_t *v = stats_counter_block(sim_stats(ep->sim), names, ARRAY_SIZE(names), "nic.%u.ep.%u",
					  nic_addr(ep->nic), ep->pid);
	uint64_t **slot[] = { &ep->c_rnr_nacks, &ep->c_retries, &ep->c_fc,      &ep->c_sw_trans,
			      &ep->c_hazards,   &ep->c_onloaded, &ep->c_notify, &ep->c_resume };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		*slot[i] = &v[i];
}

static void ep_unlist(struct sw_ep *ep)
{
	struct sw_world *w = sim_world_get(ep->sim, SW_WORLD_KEY);
	if (!w)
		return; /* torn down already: the list went with it */
	if (ep->w_prev)
		ep->w_prev->w_next = ep->w_next;
	else if (w->eps == ep)
		w->eps = ep->w_next;
	if (ep->w_next)
		ep->w_next->w_prev = ep->w_prev;
	ep->w_next = ep->w_prev = NULL;
}

static int ep_validate(const struct sw_ep_attr *a)
{
	if (a->num_vnis == 0 || a->num_vnis > NIC_SVC_MAX_VNIS)
		return -FI_EINVAL;
	if (a->tx_size == 0 || a->tx_size > 16384 || a->rx_size == 0 || a->rx_size > 15360)
		return -FI_EINVAL;
	if (a->pid != C_PID_ANY && a->pid >= C_PID_ANY)
		return -FI_EINVAL;
	return 0;
}

int sw_ep_open(struct nic *nic, const struct sw_ep_attr *attr, struct sw_ep **out)
{
	if (!nic || !attr || !out)
		return -FI_EINVAL;
	int rc = ep_validate(attr);
	if (rc)
		return rc;
	struct sim *sim = nic_sim(nic);
	uint8_t *pids = pid_row(sim, nic_addr(nic));
	uint32_t pid = attr->pid;
	if (pid == C_PID_ANY) {
		for (pid = 0; pid < C_PID_ANY && pids[pid]; pid++)
			;
		if (pid == C_PID_ANY)
			return -FI_ENOSPC;
	} else if (pids[pid]) {
		return -FI_EADDRINUSE;
	}
	struct sw_ep *ep = xcalloc_lines(1, sizeof(*ep));
	ep->nic = nic;
	ep->sim = sim;
	memcpy(&ep->attr, (const char *)attr + offsetof(struct sw_ep_attr, proto), sizeof(ep->attr));
	struct sw_env env;
	memcpy(&env, &attr->env, sizeof(env));
	if (env.rx_match_mode == SW_MATCH_SOFTWARE)
		env.msg_offload = false;
	if (!env.req_buf_max_count)
		env.req_buf_max_count = 8 * env.req_buf_min_posted;
	ep->pid = pid;
	struct sw_world *w = sw_world(sim);
	ep->env = env_shared(w, &env);
	ep->w = w;
	ep->req_ux = &w->req_ux;
	ep->rmsgs = &w->rmsgs;
	ep->rnr_max_us = ep->env->rnr_max_timeout_us;
	ep->state_obj.kind = SWK_STATE;
	ep->rdzv_src_obj.kind = SWK_RDZV_SRC;
	ep->ctrl_le_obj.kind = SWK_CTRL_LE;
	ep->cache_le_obj.kind = SWK_STATE;
	ep->memops = (struct nic_mem_ops){ ep_read, ep_write };
	rc = nic_lni_alloc(nic, attr->svc_id, attr->mem ? &ep->memops : NULL, ep, &ep->lni);
	if (rc) {
		free(ep);
		return rc == -ENOENT ? -FI_EINVAL : -FI_ENOSPC;
	}
	pids[pid] = 1;
	ep->w_next = w->eps;
	if (w->eps)
		w->eps->w_prev = ep;
	w->eps = ep;
	ep_counters(ep);
	uint32_t cq = attr->cq_size ? attr->cq_size : ep->env->default_cq_size;
	const struct sw_costs *k = sw_costs(sim);
	struct nic_cmdq_attr qa = { .target = false, .slots = 4 * (attr->tx_size + 256), .eqn = NIC_NONE,
				    .on_space = sw_cmdq_space, .space_ctx = ep };
	if ((rc = ep_eq(ep, cq + 2, 0, &ep->eq_tx)) || (rc = ep_eq(ep, cq + 2, 2, &ep->eq_rx)) ||
	    (rc = ep_eq(ep, k->ctrl_eq_slots, 1, &ep->eq_ctrl)))
		goto fail;
	qa.eqn = ep->eq_tx;
	if ((rc = nic_cmdq_alloc(ep->lni, &qa, &ep->txq)))
		goto fail;
	qa.target = true;
	qa.slots = 4 * (attr->rx_size + 1024);
	qa.eqn = ep->eq_rx;
	if ((rc = nic_cmdq_alloc(ep->lni, &qa, &ep->tgq)))
		goto fail;
	/* Control PtlTE: FC messages and standard MRs (write and read indexes). */
	struct nic_pte_opts co = { .is_matching = true, .en_event_match = ep->env->mr_match_events };
	static const uint32_t ctrl_idx[] = { SW_PTL_IDX_WRITE_MR_STD, SW_PTL_IDX_READ_MR_STD };
	if ((rc = ep_pte(ep, ep->eq_ctrl, co, ctrl_idx, 2, &ep->ctrl_ptn)))
		goto fail;
	sw_append(ep, ep->ctrl_ptn, C_PTL_LIST_PRIORITY, 0, C_LE_OP_PUT | C_LE_EVENT_LINK_DISABLE, 0, 0, 0,
		  C_MATCH_ID_ANY, SW_CTRL_FLAG, ~SW_CTRL_FLAG, &ep->ctrl_le_obj);
	sw_setstate(ep, ep->ctrl_ptn, C_PTLTE_ENABLED, NIC_IGNORE_DROPS);
	nic_pte_set_access_hook(nic, ep->ctrl_ptn, sw_mr_access_hook, ep);
	if ((rc = sw_txc_init(ep)))
		goto fail;
	rc = attr->proto == SW_PROTO_CXI_RNR ? sw_rnr_rxc_init(ep) : sw_rxc_init(ep);
	if (rc)
		goto fail;
	*out = ep;
	return 0;
fail:
	ep_unlist(ep);
	pids[pid] = 0;
	nic_lni_free(ep->lni);
	priv_free(ep);
	free(ep);
	return rc == -ENOSPC ? -FI_ENOSPC : (rc == -EPERM ? -FI_EPERM : (rc == -EADDRINUSE ? -FI_EADDRINUSE : rc));
}

void sw_ep_close(struct sw_ep *ep)
{
	if (!ep)
		return;
	ep->closing = true;
	sw_rxc_fini(ep);
	sw_txc_fini(ep);
	sw_mr_fini(ep);
	nic_lni_free(ep->lni);
	ep_unlist(ep);
	pid_row(ep->sim, nic_addr(ep->nic))[ep->pid] = 0;
	priv_free(ep);
	free(ep->closed);
	free(ep->fatal);
	free(ep->free_ids);
	for (unsigned i = 0; i < 2; i++)
		if (ep->backlog[i]) {
			free(ep->backlog[i]->cmds);
			free(ep->backlog[i]);
		}
	free(ep);
}

struct sw_addr sw_ep_addr(const struct sw_ep *ep)
{
	return (struct sw_addr){ .nic = nic_addr(ep->nic), .pid = (uint16_t)ep->pid, .vni = ep->attr.vnis[0] };
}

enum sw_rxc_state sw_ep_rxc_state(const struct sw_ep *ep)
{
	return ep->state;
}

const char *sw_ep_fatal(const struct sw_ep *ep)
{
	return ep->fatal;
}

uint32_t sw_ep_rx_ptn(const struct sw_ep *ep)
{
	return ep->rx_ptn;
}

struct nic *sw_ep_nic(const struct sw_ep *ep)
{
	return ep->nic;
}

void sw_ep_set_rnr_max_timeout_us(struct sw_ep *ep, uint64_t us)
{
	ep->rnr_max_us = us;
}

const struct sw_ep_stats *sw_ep_stats(const struct sw_ep *ep)
{
	return &ep->st;
}

const char *sw_rxc_state_name(enum sw_rxc_state s)
{
	switch (s) {
	case RXC_DISABLED: return "RXC_DISABLED";
	case RXC_ENABLED: return "RXC_ENABLED";
	case RXC_PENDING_PTLTE_SOFTWARE_MANAGED: return "RXC_PENDING_PTLTE_SOFTWARE_MANAGED";
	case RXC_ENABLED_SOFTWARE: return "RXC_ENABLED_SOFTWARE";
	case RXC_PENDING_PTLTE_DISABLE: return "RXC_PENDING_PTLTE_DISABLE";
	case RXC_ONLOAD_FLOW_CONTROL: return "RXC_ONLOAD_FLOW_CONTROL";
	case RXC_ONLOAD_FLOW_CONTROL_REENABLE: return "RXC_ONLOAD_FLOW_CONTROL_REENABLE";
	case RXC_FLOW_CONTROL: return "RXC_FLOW_CONTROL";
	}
	return "RXC_UNKNOWN";
}
