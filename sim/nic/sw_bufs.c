/* Provider software: overflow and request buffers (the upstream "PtlTE list buffers").
 *
 * Overflow buffers (hardware and hybrid modes, FI_CXI_OFLOW_BUF_SIZE x FI_CXI_OFLOW_BUF_MIN_POSTED) catch the
 * eager data of unexpected messages while the NIC keeps their headers.  Request buffers (software and hybrid
 * modes, FI_CXI_REQ_BUF_SIZE, at least FI_CXI_REQ_BUF_MIN_POSTED linked, at most FI_CXI_REQ_BUF_MAX_COUNT
 * allocated) take every message of a software-managed PtlTE.  Both are locally managed LEs the NIC retires
 * when less than the largest eager message fits; a retired buffer is reused once software has consumed every
 * message in it, and a fresh one is linked at once to keep the posted count. */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "sw_impl.h"

/* ---------------------------------------------------------------- unexpected headers keyed by data address */

static uint32_t slot_of(uint64_t key, uint32_t cap)
{
	key ^= key >> 29;
	key *= 0xbf58476d1ce4e5b9ULL;
	key ^= key >> 32;
	return (uint32_t)(key & (cap - 1));
}

static void map_grow(struct sw_ep *ep)
{
	uint32_t ocap = ep->ux_map_cap;
	struct sw_ux **old = ep->ux_map;
	ep->ux_map_cap = ocap ? ocap * 2 : 64;
	ep->ux_map = xcalloc(ep->ux_map_cap, sizeof(*ep->ux_map));
	ep->ux_map_n = 0;
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i])
			sw_ux_map_put(ep, old[i]->data, old[i]);
	free(old);
}

void sw_ux_map_put(struct sw_ep *ep, uint64_t key, struct sw_ux *u)
{
	if ((ep->ux_map_n + 1) * 2 > ep->ux_map_cap)
		map_grow(ep);
	u->data = key;
	uint32_t i = slot_of(key, ep->ux_map_cap);
	while (ep->ux_map[i])
		i = (i + 1) & (ep->ux_map_cap - 1);
	ep->ux_map[i] = u;
	u->in_map = true;
	ep->ux_map_n++;
}

struct sw_ux *sw_ux_map_take(struct sw_ep *ep, uint64_t key)
{
	if (!ep->ux_map_cap)
		return NULL;
	uint32_t mask = ep->ux_map_cap - 1, i = slot_of(key, ep->ux_map_cap);
	while (ep->ux_map[i] && ep->ux_map[i]->data != key)
		i = (i + 1) & mask;
	struct sw_ux *u = ep->ux_map[i];
	if (!u)
		return NULL;
	ep->ux_map[i] = NULL;
	ep->ux_map_n--;
	u->in_map = false;
	for (uint32_t j = (i + 1) & mask; ep->ux_map[j]; j = (j + 1) & mask) {
		struct sw_ux *v = ep->ux_map[j];
		ep->ux_map[j] = NULL;
		uint32_t h = slot_of(v->data, ep->ux_map_cap);
		while (ep->ux_map[h])
			h = (h + 1) & mask;
		ep->ux_map[h] = v;
	}
	return u;
}

void sw_ux_map_fini(struct sw_ep *ep)
{
	for (uint32_t i = 0; i < ep->ux_map_cap; i++) {
		struct sw_ux *u = ep->ux_map[i];
		if (!u)
			continue;
		ep->ux_map[i] = NULL;
		u->in_map = false;
		if (!u->on)
			sw_ux_free(ep, u);
	}
	ep->ux_map_n = 0;
}

/* ---------------------------------------------------------------- buffers */

static uint32_t max_eager(const struct sw_ep *ep)
{
	return ep->env->rdzv_threshold + ep->env->rdzv_get_min;
}

/* A buffer's size (the environment is the endpoint's for its life). */
static uint64_t buf_size(const struct sw_ep *ep, uint8_t list)
{
	return list == C_PTL_LIST_OVERFLOW ? ep->env->oflow_buf_size : ep->env->req_buf_size;
}

static struct sw_buf **pool_head(struct sw_ep *ep, uint8_t list)
{
	return list == C_PTL_LIST_OVERFLOW ? &ep->oflow : &ep->reqbuf;
}

static uint32_t *linked_count(struct sw_ep *ep, uint8_t list)
{
	return list == C_PTL_LIST_OVERFLOW ? &ep->oflow_linked : &ep->req_linked;
}

static void buf_link(struct sw_ep *ep, struct sw_buf *b)
{
	uint32_t flags = C_LE_OP_PUT | C_LE_MANAGE_LOCAL | C_LE_NO_TRUNCATE | C_LE_EVENT_UNLINK_DISABLE |
			 C_LE_EVENT_LINK_DISABLE;
	if (b->list == C_PTL_LIST_OVERFLOW && ep->env->hybrid_preemptive)
		flags &= ~C_LE_EVENT_LINK_DISABLE;
	b->linked = true;
	b->unlink_length = UINT64_MAX;
	b->consumed = 0;
	(*linked_count(ep, b->list))++;
	ep->host.buf_appends++;
	sw_append(ep, ep->rx_ptn, b->list, b->id, flags, b->addr, buf_size(ep, b->list), max_eager(ep), C_MATCH_ID_ANY, 0, ~0ULL, b);
}

static struct sw_buf *buf_new(struct sw_ep *ep, uint8_t list)
{
	struct sw_buf *b = sw_buf_new(ep);
	b->obj.kind = list == C_PTL_LIST_OVERFLOW ? SWK_OFLOW : SWK_REQBUF;
	b->ep = ep;
	b->list = list;
	b->id = ep->next_buf_id++;
	b->addr = sw_priv_alloc(ep, buf_size(ep, list));
	ep->host.kernel_calls++; /* the new buffer is mapped for the NIC */
	b->next = *pool_head(ep, list);
	*pool_head(ep, list) = b;
	if (list == C_PTL_LIST_REQUEST)
		ep->req_allocated++;
	return b;
}

static bool buf_reusable(const struct sw_buf *b)
{
	return !b->linked && (b->unlink_length == UINT64_MAX || b->consumed >= b->unlink_length);
}

static uint32_t min_posted(const struct sw_ep *ep, uint8_t list)
{
	return list == C_PTL_LIST_OVERFLOW ? ep->env->oflow_buf_min_posted : ep->env->req_buf_min_posted;
}

void sw_bufs_replenish(struct sw_ep *ep, uint8_t list)
{
	while (*linked_count(ep, list) < min_posted(ep, list)) {
		struct sw_buf *b;
		for (b = *pool_head(ep, list); b && !buf_reusable(b); b = b->next)
			;
		if (!b) {
			if (list == C_PTL_LIST_REQUEST && ep->req_allocated >= ep->env->req_buf_max_count)
				return;
			b = buf_new(ep, list);
		}
		buf_link(ep, b);
	}
}

void sw_bufs_init(struct sw_ep *ep, uint8_t list)
{
	sw_bufs_replenish(ep, list);
}

void sw_buf_consume(struct sw_ep *ep, struct sw_buf *b, uint64_t bytes)
{
	b->consumed += bytes;
	/* A retired buffer whose last message was consumed can take the place of a missing one. */
	if (buf_reusable(b) && b->unlink_length != UINT64_MAX && *linked_count(ep, b->list) < min_posted(ep, b->list))
		sw_bufs_replenish(ep, b->list);
}

/* The message a PUT into buffer b describes (any earlier content of u is dropped). */
static struct sw_ux *ux_fill(struct sw_ux *u, struct sw_buf *b, const struct nic_event *ev)
{
	memset(u, 0, sizeof(*u));
	u->data = ev->start;
	u->buf = b;
	sw_ux_set_header(u, ev);
	return u;
}

static void buf_put(struct sw_ep *ep, struct sw_buf *b, const struct nic_event *ev)
{
	if (ev->flags & NIC_EVF_AUTO_UNLINKED) {
		b->linked = false;
		b->unlink_length = ev->start - b->addr + ev->mlength;
		(*linked_count(ep, b->list))--;
		sw_bufs_replenish(ep, b->list);
	}
	if (b->list == C_PTL_LIST_REQUEST) {
		sw_rxc_request_arrival(ep, ux_fill(sw_ux_new(ep), b, ev));
		return;
	}
	if (ep->env->rx_match_mode == SW_MATCH_HYBRID && ep->env->hybrid_unexpected_msg_preemptive &&
	    ep->state == RXC_ENABLED && ep->hw_ule_cnt + 1 > ep->attr.rx_size)
		sw_rxc_pending_disable(ep, false);
	/* Zero-byte unexpected messages are fully described by their PUT_OVERFLOW/onload event. */
	if (!ev->mlength)
		return;
	struct sw_ux *u = sw_ux_map_take(ep, ev->start);
	if (!u)
		u = ux_fill(sw_ux_new(ep), b, ev);
	else if (!u->waiting && !u->onloaded && !u->peek)
		ux_fill(u, b, ev); /* nothing waits for it: the record describes this message only */
	else
		u->buf = b;        /* a receive, peek or onload took the header first and waits for the data */
	sw_rxc_overflow_arrival(ep, u);
}

void sw_buf_event(struct sw_ep *ep, struct sw_buf *b, const struct nic_event *ev)
{
	switch (ev->type) {
	case C_EVENT_LINK:
		if (ev->rc == C_RC_OK) {
			if (ep->env->rx_match_mode == SW_MATCH_HYBRID && ep->env->hybrid_preemptive &&
			    ev->mlength > ev->rlength / 2 && ep->state == RXC_ENABLED)
				sw_rxc_pending_disable(ep, false);
			return;
		}
		/* Out of LEs for a buffer: software disables the PtlTE to recover. */
		b->linked = false;
		(*linked_count(ep, b->list))--;
		if (b->list == C_PTL_LIST_OVERFLOW)
			sw_rxc_pending_disable(ep, true);
		return;
	case C_EVENT_PUT: buf_put(ep, b, ev); return;
	case C_EVENT_UNLINK: return;
	default: sw_fatal(ep, "unexpected event %s on a list buffer\n", c_event_type_name(ev->type));
	}
}

void sw_bufs_fini(struct sw_ep *ep)
{
	for (unsigned l = 0; l < 2; l++) {
		struct sw_buf **h = pool_head(ep, l == 0 ? C_PTL_LIST_OVERFLOW : C_PTL_LIST_REQUEST);
		while (*h) {
			struct sw_buf *b = *h;
			*h = b->next;
			sw_buf_free(ep, b);
		}
	}
	free(ep->ux_map);
	ep->ux_map = NULL;
	ep->ux_map_cap = 0;
}
