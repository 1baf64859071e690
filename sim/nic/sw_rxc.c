/* Provider software: the receive context (FI_PROTO_CXI).
 *
 * Receives are matched first against the software unexpected list, then offloaded to the PtlTE's
 * PRIORITY list (hardware matching) or, on a software-managed PtlTE, kept for software matching against
 * messages that land in request buffers.  The RX context follows the upstream state machine:
 *
 *   ENABLED --(NIC disables PtlTE / append fails)--> ONLOAD_FLOW_CONTROL[_REENABLE] --onload done-->
 *     FLOW_CONTROL --(peer drop counts match)--> ENABLED or ENABLED_SOFTWARE
 *   ENABLED --(hybrid: NIC goes software-managed)--> PENDING_PTLTE_SOFTWARE_MANAGED --onload--> ENABLED_SOFTWARE
 *
 * Recovery: flush appends, onload the hardware unexpected list (SEARCH_AND_DELETE), replenish buffers,
 * replay failed receives in order, then wait until the drops reported by peers (FC_NOTIFY) equal the
 * PtlTE's drop count, re-enable and send FC_RESUME to each peer. */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "sw_impl.h"

#define FC_SW_INITIATED (-1)
#define FC_SW_ONLOAD_MSG_FATAL \
	"LE resources not recovered during flow control. FI_CXI_RX_MATCH_MODE=[hybrid|software] is required\n"
#define FC_SW_LE_MSG_FATAL "LE exhaustion during flow control, FI_CXI_RX_MATCH_MODE=[hybrid|software] is required\n"
#define HYBRID_RECV_CHECK_INTERVAL 64

static struct sw_obj search_obj = { SWK_SEARCH };
static struct sw_obj flush_obj = { SWK_FLUSH };

static void recv_queue(struct sw_ep *ep, struct sw_req *r);
static void onload_complete(struct sw_ep *ep);
static void replay(struct sw_ep *ep);

/* ---------------------------------------------------------------- matching and completion */

bool sw_recv_matches(const struct sw_req *r, uint64_t match_bits, uint32_t initiator)
{
	if ((r->match_bits ^ match_bits) & ~r->ignore_bits)
		return false;
	return r->match_id == C_MATCH_ID_ANY || r->match_id == initiator;
}

static void recv_free(struct sw_ep *ep, struct sw_req *r)
{
	if (ep->rx_outstanding)
		ep->rx_outstanding--;
	free(r);
}

/* One completion for a message received into r.  `final` retires a multi-receive buffer. */
static void recv_report(struct sw_ep *ep, struct sw_req *r, uint64_t buf, uint64_t len, uint64_t rlength,
			uint64_t mb, uint64_t hdata, uint32_t initiator, uint16_t vni, uint8_t rc)
{
	bool final = !r->multi || (r->retired && r->children == 0);
	struct sw_comp c = { 0 };
	c.op_context = r->context;
	c.flags = FI_RECV | (r->tagged ? FI_TAGGED : FI_MSG);
	if (mb & SW_MB_CQ_DATA)
		c.flags |= FI_REMOTE_CQ_DATA;
	if (r->multi && final)
		c.flags |= FI_MULTI_RECV;
	c.len = len;
	c.buf = buf;
	c.data = hdata;
	c.tag = r->tagged ? (mb & SW_TAG_MASK) : 0;
	c.src = (struct sw_addr){ .nic = C_MATCH_ID_NIC(initiator), .pid = (uint16_t)C_MATCH_ID_PID(initiator),
				  .vni = vni };
	c.src_valid = true;
	if (rc != C_RC_OK) {
		c.err = sw_rc_to_errno(rc);
		c.prov_errno = rc;
	} else if (rlength > len && !ep->env->trunc_ok) {
		c.err = FI_ETRUNC;
		c.olen = rlength - len;
	}
	sw_complete(ep, &c);
	if (final) {
		sw_req_list_remove(&ep->posted, r);
		if (r->canceled && r->hw_offloaded)
			r->completed = true; /* the cancel's UNLINK event still refers to r */
		else
			recv_free(ep, r);
	}
}

/* ---------------------------------------------------------------- rendezvous messages */

static struct sw_rmsg *rmsg_new(struct sw_req *r, uint64_t buf, uint64_t mb, uint64_t hdata, uint32_t initiator,
				uint32_t rlength, uint32_t data_len, uint16_t vni, uint8_t rdzv_id)
{
	struct sw_rmsg *m = xcalloc(1, sizeof(*m));
	m->obj.kind = SWK_RMSG;
	m->recv = r;
	m->buf = buf;
	m->match_bits = mb;
	m->header_data = hdata;
	m->initiator = initiator;
	m->rlength = rlength;
	m->data_len = data_len;
	m->vni = vni;
	m->rendezvous_id = rdzv_id;
	m->needed = 0xff;
	m->rc = C_RC_OK;
	m->next = r->rmsgs;
	r->rmsgs = m;
	r->children++;
	return m;
}

static struct sw_rmsg *rmsg_find(struct sw_req *r, const struct nic_event *ev)
{
	for (struct sw_rmsg *m = r->rmsgs; m; m = m->next)
		if (m->initiator == ev->initiator && m->rendezvous_id == ev->rendezvous_id &&
		    m->match_bits == ev->match_bits)
			return m;
	return NULL;
}

static void rmsg_done(struct sw_ep *ep, struct sw_rmsg *m)
{
	struct sw_req *r = m->recv;
	for (struct sw_rmsg **pp = &r->rmsgs; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	}
	r->children--;
	struct sw_rmsg c = *m;
	free(m);
	recv_report(ep, r, c.buf, c.data_len, c.rlength, c.match_bits, c.header_data, c.initiator, c.vni, c.rc);
}

static void rmsg_count(struct sw_ep *ep, struct sw_rmsg *m)
{
	if (++m->events >= m->needed)
		rmsg_done(ep, m);
}

static void sw_get_issue(struct sw_ep *ep, struct sw_rmsg *m)
{
	ep->sw_gets_out++;
	ep->st.sw_rdzv_gets++;
	struct sw_addr src = { .nic = C_MATCH_ID_NIC(m->initiator), .pid = (uint16_t)C_MATCH_ID_PID(m->initiator),
			       .vni = m->vni };
	if (sw_issue_get(ep, src, m->remote_offset + m->eager, m->match_bits, m->rendezvous_id, m->buf + m->eager,
			 m->data_len - m->eager, m, SW_PTL_IDX_RDZV_SRC, 0))
		sw_fatal(ep, "cannot issue rendezvous Get\n");
}

/* Fetch the rest of a software-matched rendezvous message; at most FI_CXI_SW_RX_TX_INIT_MAX in flight,
 * the others wait in order. */
static void sw_get_start(struct sw_ep *ep, struct sw_rmsg *m)
{
	if (ep->sw_gets_out >= ep->env->sw_rx_tx_init_max) {
		m->sw_get_pending = true;
		m->wait_next = NULL;
		if (ep->sw_get_wait_tail)
			ep->sw_get_wait_tail->wait_next = m;
		else
			ep->sw_get_wait = m;
		ep->sw_get_wait_tail = m;
		return;
	}
	sw_get_issue(ep, m);
}

static void sw_get_kick(struct sw_ep *ep)
{
	while (ep->sw_get_wait && ep->sw_gets_out < ep->env->sw_rx_tx_init_max) {
		struct sw_rmsg *m = ep->sw_get_wait;
		ep->sw_get_wait = m->wait_next;
		if (!ep->sw_get_wait)
			ep->sw_get_wait_tail = NULL;
		m->sw_get_pending = false;
		sw_get_issue(ep, m);
	}
}

/* ---------------------------------------------------------------- delivering software-known messages */

static void ux_free(struct sw_ep *ep, struct sw_ux *u)
{
	if (u->buf)
		sw_buf_consume(ep, u->buf, u->mlength);
	free(u);
}

/* Software match of receive r with unexpected message u (eager data in a provider buffer). */
static void ux_deliver(struct sw_ep *ep, struct sw_req *r, struct sw_ux *u)
{
	uint64_t space = r->ulen - r->start_offset;
	uint64_t dst = r->buf + r->start_offset;
	uint32_t data_len = u->rlength < space ? u->rlength : (uint32_t)space;
	uint32_t have = u->mlength < data_len ? u->mlength : data_len;
	sw_copy(ep, dst, u->data, have);
	if (r->multi) {
		r->start_offset += data_len;
		if (r->ulen - r->start_offset < ep->attr.min_multi_recv)
			r->retired = true;
	}
	if (u->rendezvous && data_len > have) {
		struct sw_rmsg *m = rmsg_new(r, dst, u->match_bits, u->header_data, u->initiator, u->rlength, data_len,
					     u->vni, u->rendezvous_id);
		m->needed = 1;
		m->eager = have;
		m->remote_offset = u->remote_offset;
		ux_free(ep, u);
		sw_get_start(ep, m);
		return;
	}
	uint64_t mb = u->match_bits, hd = u->header_data;
	uint32_t init = u->initiator, rlen = u->rlength;
	uint16_t vni = u->vni;
	ux_free(ep, u);
	recv_report(ep, r, dst, data_len, rlen, mb, hd, init, vni, C_RC_OK);
}

/* Match a new receive against the software unexpected list.  Returns true if it was consumed. */
static bool ux_match_recv(struct sw_ep *ep, struct sw_req *r)
{
	struct sw_ux *u = ep->ux.head;
	while (u) {
		struct sw_ux *next = u->next;
		if (u->data_ready && sw_recv_matches(r, u->match_bits, u->initiator)) {
			sw_ux_remove(&ep->ux, u);
			bool single = !r->multi;
			ux_deliver(ep, r, u);
			if (single || r->retired)
				return true;
		}
		u = next;
	}
	return false;
}

/* A message that landed in a request buffer: match it against the receives kept for software matching. */
static void ux_arrived_sw(struct sw_ep *ep, struct sw_ux *u)
{
	for (struct sw_req *r = ep->posted.head; r; r = r->next) {
		if (r->hw_offloaded || r->retired || !sw_recv_matches(r, u->match_bits, u->initiator))
			continue;
		ux_deliver(ep, r, u);
		return;
	}
	sw_ux_push(&ep->ux, u);
}

/* Called by the buffer code when an unexpected message's data has landed in a request buffer. */
void sw_rxc_request_arrival(struct sw_ep *ep, struct sw_ux *u);
void sw_rxc_request_arrival(struct sw_ep *ep, struct sw_ux *u)
{
	u->onloaded = true;
	u->data_ready = true;
	if (ep->state == RXC_PENDING_PTLTE_SOFTWARE_MANAGED || ep->state == RXC_ONLOAD_FLOW_CONTROL ||
	    ep->state == RXC_ONLOAD_FLOW_CONTROL_REENABLE)
		sw_ux_push(&ep->pending_ux, u);
	else
		ux_arrived_sw(ep, u);
}

/* ---------------------------------------------------------------- hardware-matched unexpected messages */

/* A PUT_OVERFLOW (receive r matched a hardware unexpected header) whose data event has been seen. */
static void ovf_deliver(struct sw_ep *ep, struct sw_req *r, struct sw_ux *u, const struct nic_event *ev)
{
	uint64_t space = r->ulen - r->start_offset;
	uint64_t dst = r->buf + r->start_offset;
	uint32_t data_len = ev->rlength < space ? ev->rlength : (uint32_t)space;
	uint32_t have = ev->mlength < data_len ? ev->mlength : data_len;
	if (u)
		sw_copy(ep, dst, u->data, have);
	if (r->multi) {
		r->start_offset += data_len;
		if (ev->flags & NIC_EVF_AUTO_UNLINKED)
			r->retired = true;
	} else {
		sw_req_list_remove(&ep->posted, r);
	}
	if (u)
		ux_free(ep, u);
	if (ev->flags & NIC_EVF_RENDEZVOUS) {
		struct sw_rmsg *m = rmsg_find(r, ev);
		if (!m)
			m = rmsg_new(r, dst, ev->match_bits, ev->header_data, ev->initiator, ev->rlength, data_len, ev->vni,
				     ev->rendezvous_id);
		m->eager = have;
		m->remote_offset = ev->remote_offset;
		m->buf = dst;
		m->data_len = data_len;
		rmsg_count(ep, m);
		return;
	}
	recv_report(ep, r, dst, data_len, ev->rlength, ev->match_bits, ev->header_data, ev->initiator, ev->vni, C_RC_OK);
}

/* The data event (PUT into an overflow buffer) of a hardware unexpected header. */
void sw_rxc_overflow_arrival(struct sw_ep *ep, struct sw_ux *u);
void sw_rxc_overflow_arrival(struct sw_ep *ep, struct sw_ux *u)
{
	if (u->waiting) {
		struct sw_req *r = u->waiting;
		u->waiting = NULL;
		u->data_ready = true;
		ovf_deliver(ep, r, u, &u->ovf_ev);
		return;
	}
	if (u->onloaded) {
		u->data_ready = true;
		if (ep->puts_pending && --ep->puts_pending == 0 && ep->onload_search_done)
			onload_complete(ep);
		return;
	}
	u->data_ready = true;
	ep->hw_ule_cnt++;
	sw_ux_map_put(ep, u->data, u);
}

static void recv_put_overflow(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	if (ep->hw_ule_cnt)
		ep->hw_ule_cnt--;
	if (ev->mlength == 0) {
		ovf_deliver(ep, r, NULL, ev);
		return;
	}
	struct sw_ux *u = sw_ux_map_take(ep, ev->start);
	if (u) {
		ovf_deliver(ep, r, u, ev);
		return;
	}
	/* The data event has not been processed yet: wait for it. */
	u = xcalloc(1, sizeof(*u));
	u->data = ev->start;
	u->mlength = ev->mlength;
	u->waiting = r;
	u->ovf_ev = *ev;
	sw_ux_map_put(ep, ev->start, u);
}

/* ---------------------------------------------------------------- events on receives */

static void recv_link_failed(struct sw_ep *ep, struct sw_req *r, uint8_t rc)
{
	sw_req_list_remove(&ep->posted, r);
	r->hw_offloaded = false;
	sw_req_list_push(&ep->replay, r);
	if (ep->attr.proto == SW_PROTO_CXI_RNR) {
		/* No flow control on the RNR PtlTE: retry the append later. */
		sw_rnr_append_retry(ep);
		return;
	}
	/* Hardware match mode: software disables the PtlTE itself to recover LEs. */
	if (rc == C_RC_NO_SPACE && (ep->state == RXC_ENABLED || ep->state == RXC_ENABLED_SOFTWARE))
		sw_rxc_pending_disable(ep, false);
}

static void recv_put(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	uint64_t dst = ev->start;
	if (r->multi) {
		r->start_offset = ev->start - r->buf + ev->mlength;
		if (ev->flags & NIC_EVF_AUTO_UNLINKED)
			r->retired = true;
	} else {
		sw_req_list_remove(&ep->posted, r);
	}
	if (ev->flags & NIC_EVF_RENDEZVOUS) {
		struct sw_rmsg *m = rmsg_find(r, ev);
		if (!m)
			m = rmsg_new(r, dst, ev->match_bits, ev->header_data, ev->initiator, ev->rlength, ev->mlength,
				     ev->vni, ev->rendezvous_id);
		m->buf = dst;
		m->data_len = ev->mlength;
		m->remote_offset = ev->remote_offset;
		rmsg_count(ep, m);
		return;
	}
	recv_report(ep, r, dst, ev->mlength, ev->rlength, ev->match_bits, ev->header_data, ev->initiator, ev->vni,
		    ev->rc);
}

static void recv_rendezvous(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	struct sw_rmsg *m = rmsg_find(r, ev);
	if (!m)
		m = rmsg_new(r, ev->start - ev->mlength, ev->match_bits, ev->header_data, ev->initiator, ev->rlength,
			     ev->rlength, ev->vni, ev->rendezvous_id);
	m->eager = ev->mlength;
	if (ev->flags & NIC_EVF_GET_ISSUED) {
		ep->st.hw_rdzv_gets++;
		m->needed = 3;
	} else {
		m->needed = 2;
	}
	rmsg_count(ep, m);
}

static void recv_event(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	switch (ev->type) {
	case C_EVENT_LINK:
		if (ev->rc == C_RC_OK) {
			if (ep->env->rx_match_mode == SW_MATCH_HYBRID && ep->env->hybrid_recv_preemptive &&
			    ev->mlength > ev->rlength / 2 && ep->state == RXC_ENABLED)
				sw_rxc_pending_disable(ep, false);
			return;
		}
		recv_link_failed(ep, r, ev->rc);
		return;
	case C_EVENT_PUT: recv_put(ep, r, ev); return;
	case C_EVENT_PUT_OVERFLOW: recv_put_overflow(ep, r, ev); return;
	case C_EVENT_RENDEZVOUS: recv_rendezvous(ep, r, ev); return;
	case C_EVENT_REPLY: {
		struct sw_rmsg *m = rmsg_find(r, ev);
		if (!m) {
			sw_fatal(ep, "rendezvous reply for an unknown message\n");
			return;
		}
		if (ev->rc != C_RC_OK)
			m->rc = ev->rc;
		rmsg_count(ep, m);
		return;
	}
	case C_EVENT_UNLINK:
		if (!r->canceled)
			return;
		if (r->completed) { /* the message won the race with the cancel */
			recv_free(ep, r);
			return;
		}
		sw_req_list_remove(&ep->posted, r);
		{
			struct sw_comp c = { 0 };
			c.op_context = r->context;
			c.flags = FI_RECV | (r->tagged ? FI_TAGGED : FI_MSG) | (r->multi ? FI_MULTI_RECV : 0);
			c.err = FI_ECANCELED;
			c.buf = r->buf;
			sw_complete(ep, &c);
		}
		recv_free(ep, r);
		return;
	default: sw_fatal(ep, "unexpected event %s on a receive\n", c_event_type_name(ev->type));
	}
}

/* ---------------------------------------------------------------- posting */

static void recv_append(struct sw_ep *ep, struct sw_req *r)
{
	uint32_t flags = C_LE_OP_PUT | C_LE_MANAGE_LOCAL | C_LE_EVENT_UNLINK_DISABLE | C_LE_EVENT_LINK_DISABLE;
	if (ep->env->rx_match_mode == SW_MATCH_HYBRID && ep->env->hybrid_recv_preemptive &&
	    ++ep->recv_appends % HYBRID_RECV_CHECK_INTERVAL == 0)
		flags &= ~C_LE_EVENT_LINK_DISABLE;
	if (!r->multi)
		flags |= C_LE_USE_ONCE;
	r->hw_offloaded = true;
	sw_req_list_push(&ep->posted, r);
	sw_append(ep, ep->rx_ptn, C_PTL_LIST_PRIORITY, r->id, flags, r->buf + r->start_offset, r->ulen - r->start_offset,
		  r->multi ? (uint32_t)ep->attr.min_multi_recv : 0, r->match_id, r->match_bits, r->ignore_bits, r);
}

static uint32_t hw_posted(const struct sw_ep *ep)
{
	uint32_t n = 0;
	for (const struct sw_req *r = ep->posted.head; r; r = r->next)
		n += r->hw_offloaded;
	return n;
}

static void recv_queue(struct sw_ep *ep, struct sw_req *r)
{
	if (ep->ux.len && ux_match_recv(ep, r))
		return;
	if (ep->msg_offload) {
		/* FI_CXI_HYBRID_POSTED_RECV_PREEMPTIVE: too many receives in hardware -> go software. */
		if (ep->env->rx_match_mode == SW_MATCH_HYBRID && ep->env->hybrid_posted_recv_preemptive &&
		    ep->state == RXC_ENABLED && hw_posted(ep) >= ep->attr.rx_size) {
			sw_rxc_pending_disable(ep, false);
			sw_req_list_push(&ep->replay, r);
			return;
		}
		recv_append(ep, r);
	} else {
		r->hw_offloaded = false;
		sw_req_list_push(&ep->posted, r);
	}
}

int sw_recv(struct sw_ep *ep, uint64_t buf, uint64_t len, const struct sw_addr *src, uint64_t tag, uint64_t ignore,
	    uint64_t flags, void *context)
{
	if (!ep || ep->closing)
		return -FI_EINVAL;
	if (ep->fatal)
		return -FI_EOTHER;
	bool multi = (flags & FI_MULTI_RECV) != 0, tagged = (flags & FI_TAGGED) != 0;
	if (multi && tagged)
		return -FI_EINVAL;
	if (ep->state != RXC_ENABLED && ep->state != RXC_ENABLED_SOFTWARE)
		return -FI_EAGAIN;
	/* rx_attr.size does not bound posted receives (the provider only pushes back on a saturated EQ); it
	 * is the threshold of the hybrid pre-emptive checks. */
	if (sw_eq_saturated(ep, ep->eq_rx))
		return -FI_EAGAIN;
	struct sw_req *r = xcalloc(1, sizeof(*r));
	r->obj.kind = SWK_RECV;
	r->ep = ep;
	r->context = context;
	r->flags = flags;
	r->buf = buf;
	r->ulen = len;
	r->tagged = tagged;
	r->multi = multi;
	r->match_bits = tagged ? (SW_MB_TAGGED | (tag & SW_TAG_MASK)) : 0;
	r->ignore_bits = SW_MB_RECV_IGNORE | (tagged ? (ignore & SW_TAG_MASK) : SW_TAG_MASK);
	r->match_id = (src && (ep->attr.caps & FI_DIRECTED_RECV)) ? C_MATCH_ID(src->nic, src->pid) : C_MATCH_ID_ANY;
	r->id = (uint16_t)(ep->recv_appends & 0xffff);
	ep->rx_outstanding++;
	recv_queue(ep, r);
	return 0;
}

int sw_cancel(struct sw_ep *ep, void *context)
{
	if (!ep)
		return -FI_EINVAL;
	for (struct sw_req *r = ep->posted.head; r; r = r->next) {
		if (r->context != context || r->canceled)
			continue;
		r->canceled = true;
		if (r->hw_offloaded) {
			sw_unlink(ep, ep->rx_ptn, C_PTL_LIST_PRIORITY, r->id, r);
		} else {
			struct sw_comp c = { 0 };
			c.op_context = r->context;
			c.flags = FI_RECV | (r->tagged ? FI_TAGGED : FI_MSG) | (r->multi ? FI_MULTI_RECV : 0);
			c.err = FI_ECANCELED;
			c.buf = r->buf;
			sw_req_list_remove(&ep->posted, r);
			sw_complete(ep, &c);
			recv_free(ep, r);
		}
		return 0;
	}
	return -FI_ENOENT;
}

/* ---------------------------------------------------------------- flow control */

/* Software asks the PtlTE to disable (LE exhaustion noticed by software, or a hybrid preemptive switch). */
void sw_rxc_pending_disable(struct sw_ep *ep, bool check_fc)
{
	(void)check_fc;
	if (ep->state != RXC_ENABLED && ep->state != RXC_ENABLED_SOFTWARE)
		return;
	ep->state = RXC_PENDING_PTLTE_DISABLE;
	sw_setstate(ep, ep->rx_ptn, C_PTLTE_DISABLED, 0);
}

static void flush_appends(struct sw_ep *ep)
{
	/* A search behind every append already queued: when its event comes back, they have all been
	 * processed.  Nothing can match ~0 (receive match bits never set the rendezvous bits). */
	struct nic_cmd c = { .op = NIC_CMD_TGT_SEARCH };
	c.tgt = (struct nic_tgt_cmd){ .ptn = ep->rx_ptn, .list = C_PTL_LIST_PRIORITY, .le_flags = C_LE_USE_ONCE,
				      .ctn = NIC_NONE, .match_id = C_MATCH_ID_ANY, .match_bits = ~0ULL,
				      .user_ptr = (uint64_t)(uintptr_t)&flush_obj };
	if (sw_emit(ep, ep->tgq, &c))
		sw_fatal(ep, "cannot queue the append flush\n");
}

static void onload_start(struct sw_ep *ep)
{
	ep->onload_search_done = false;
	ep->puts_pending = 0;
	struct nic_cmd c = { .op = NIC_CMD_TGT_SEARCH_AND_DELETE };
	c.tgt = (struct nic_tgt_cmd){ .ptn = ep->rx_ptn, .list = C_PTL_LIST_UNEXPECTED, .ctn = NIC_NONE,
				      .match_id = C_MATCH_ID_ANY, .ignore_bits = ~0ULL,
				      .user_ptr = (uint64_t)(uintptr_t)&search_obj };
	if (sw_emit(ep, ep->tgq, &c))
		sw_fatal(ep, "cannot queue the unexpected-list onload\n");
}

/* One onloaded header (PUT_OVERFLOW from SEARCH_AND_DELETE). */
static void onload_entry(struct sw_ep *ep, const struct nic_event *ev)
{
	if (ep->hw_ule_cnt)
		ep->hw_ule_cnt--;
	ep->st.onloaded++;
	(*ep->c_onloaded)++;
	struct sw_ux *u = ev->mlength ? sw_ux_map_take(ep, ev->start) : NULL;
	if (!u) {
		u = xcalloc(1, sizeof(*u));
		u->data = ev->start;
		u->data_ready = ev->mlength == 0;
		if (!u->data_ready) {
			/* Its data event is still to come. */
			ep->puts_pending++;
			sw_ux_map_put(ep, ev->start, u);
		}
	}
	u->match_bits = ev->match_bits;
	u->header_data = ev->header_data;
	u->remote_offset = ev->remote_offset;
	u->initiator = ev->initiator;
	u->rlength = ev->rlength;
	u->mlength = ev->mlength;
	u->vni = ev->vni;
	u->rendezvous_id = ev->rendezvous_id;
	u->rendezvous = (ev->flags & NIC_EVF_RENDEZVOUS) != 0;
	u->onloaded = true;
	sw_ux_push(&ep->ux, u);
	/* A hardware header was freed: the LE resource recovered, re-enable will be possible. */
	if (ep->state == RXC_ONLOAD_FLOW_CONTROL)
		ep->state = RXC_ONLOAD_FLOW_CONTROL_REENABLE;
}

static void onload_search_done(struct sw_ep *ep)
{
	if (ep->new_state == RXC_ENABLED_SOFTWARE && ep->state == RXC_ONLOAD_FLOW_CONTROL)
		ep->state = RXC_ONLOAD_FLOW_CONTROL_REENABLE;
	if (ep->state == RXC_ONLOAD_FLOW_CONTROL) {
		sw_fatal(ep, FC_SW_ONLOAD_MSG_FATAL);
		return;
	}
	ep->onload_search_done = true;
	if (!ep->puts_pending)
		onload_complete(ep);
}

void sw_rxc_replay(struct sw_ep *ep);
void sw_rxc_replay(struct sw_ep *ep)
{
	replay(ep);
}

static void replay(struct sw_ep *ep)
{
	struct sw_req_list l = ep->replay;
	ep->replay = (struct sw_req_list){ 0 };
	while (l.head) {
		struct sw_req *r = l.head;
		sw_req_list_remove(&l, r);
		recv_queue(ep, r);
	}
}

static void send_resumes(struct sw_ep *ep)
{
	ep->drop_count = 0;
	while (ep->fc_drops) {
		struct sw_fc_drops *d = ep->fc_drops;
		ep->fc_drops = d->next;
		struct sw_ctrl_msg *m = xcalloc(1, sizeof(*m));
		m->obj.kind = SWK_CTRL_MSG;
		m->ep = ep;
		m->dst = d->addr;
		m->type = SW_CTRL_RESUME;
		m->drops = d->drops;
		ep->st.fc_resume_sent++;
		(*ep->c_resume)++;
		sw_ctrl_send(ep, m);
		free(d);
	}
}

/* Try to leave FLOW_CONTROL: only once every dropped message has been reported by its sender. */
static int reenable(struct sw_ep *ep)
{
	struct nic_pte_status st;
	nic_pte_status(ep->nic, ep->rx_ptn, &st);
	if (ep->drop_count != st.drop_count)
		return -FI_EAGAIN;
	if (ep->new_state == RXC_ENABLED_SOFTWARE) {
		int rc = nic_pte_transition_sm(ep->lni, ep->rx_ptn, ep->drop_count);
		return rc ? -FI_EAGAIN : 0;
	}
	sw_setstate(ep, ep->rx_ptn, C_PTLTE_ENABLED, ep->drop_count);
	return 0;
}

static void try_reenable(struct sw_ep *ep)
{
	int rc = reenable(ep);
	if (rc == 0 && ep->new_state == RXC_ENABLED_SOFTWARE) {
		send_resumes(ep);
		ep->state = RXC_ENABLED_SOFTWARE;
	}
}

static void onload_complete(struct sw_ep *ep)
{
	ep->onload_search_done = false;
	while (ep->pending_ux.head) {
		struct sw_ux *u = ep->pending_ux.head;
		sw_ux_remove(&ep->pending_ux, u);
		sw_ux_push(&ep->ux, u);
	}
	if (ep->state == RXC_PENDING_PTLTE_SOFTWARE_MANAGED) {
		sw_bufs_replenish(ep, C_PTL_LIST_REQUEST);
		replay(ep);
		ep->state = RXC_ENABLED_SOFTWARE;
		return;
	}
	if (ep->new_state == RXC_ENABLED_SOFTWARE)
		ep->msg_offload = false;
	if (ep->fc_reason != C_SC_FC_EQ_FULL)
		sw_bufs_replenish(ep, ep->new_state == RXC_ENABLED_SOFTWARE ? C_PTL_LIST_REQUEST : C_PTL_LIST_OVERFLOW);
	if (ep->new_state == RXC_ENABLED)
		ep->msg_offload = true;
	bool recovered = ep->state == RXC_ONLOAD_FLOW_CONTROL_REENABLE;
	/* Replayed receives must not re-enter the flow-control path while it is being resolved. */
	ep->state = RXC_FLOW_CONTROL;
	replay(ep);
	if (!recovered && ep->new_state != RXC_ENABLED_SOFTWARE) {
		sw_fatal(ep, FC_SW_ONLOAD_MSG_FATAL);
		return;
	}
	try_reenable(ep);
}

void sw_rxc_process_drops(struct sw_ep *ep, struct sw_addr src, uint32_t drops)
{
	struct sw_fc_drops *d = xcalloc(1, sizeof(*d));
	d->addr = src;
	d->drops = drops;
	struct sw_fc_drops **pp = &ep->fc_drops;
	while (*pp)
		pp = &(*pp)->next;
	*pp = d;
	ep->drop_count += drops;
	ep->st.fc_drops_replayed += drops;
	if (ep->state == RXC_FLOW_CONTROL)
		try_reenable(ep);
}

static void enter_flow_control(struct sw_ep *ep, const struct nic_event *ev)
{
	int reason = (ev->flags & NIC_EVF_SC_NIC_AUTO) ? ev->sc.reason : FC_SW_INITIATED;
	ep->prev_state = ep->state;
	ep->new_state = ep->state;
	ep->state = RXC_ONLOAD_FLOW_CONTROL;
	switch (reason) {
	case FC_SW_INITIATED:
		/* Hybrid mode resumes software-managed to relieve the LE pool. */
		if (ep->env->rx_match_mode == SW_MATCH_HYBRID)
			ep->new_state = RXC_ENABLED_SOFTWARE;
		break;
	case C_SC_FC_EQ_FULL:
	case C_SC_FC_NO_MATCH:
	case C_SC_FC_REQUEST_FULL: ep->state = RXC_ONLOAD_FLOW_CONTROL_REENABLE; break;
	case C_SC_FC_UNEXPECTED_FAIL: break;
	default: sw_fatal(ep, "Invalid disable PTE c_sc_reason: %d\n", reason); return;
	}
	if (ep->new_state == RXC_PENDING_PTLTE_DISABLE)
		ep->new_state = ep->msg_offload ? RXC_ENABLED : RXC_ENABLED_SOFTWARE;
	ep->fc_reason = reason;
	ep->st.fc_transitions++;
	(*ep->c_fc)++;
	flush_appends(ep);
}

void sw_rxc_state_change(struct sw_ep *ep, const struct nic_event *ev)
{
	bool nic_auto = (ev->flags & NIC_EVF_SC_NIC_AUTO) != 0;
	switch (ev->sc.state) {
	case C_PTLTE_ENABLED:
		if (ep->state == RXC_FLOW_CONTROL) {
			send_resumes(ep);
			ep->state = RXC_ENABLED;
		}
		return;
	case C_PTLTE_DISABLED:
		if (ep->state == RXC_DISABLED)
			return;
		if (ev->rc == C_RC_NO_MATCH)
			return; /* wrong drop count: retried on the next FC_NOTIFY */
		if (ep->state == RXC_PENDING_PTLTE_SOFTWARE_MANAGED) {
			ep->state = RXC_ONLOAD_FLOW_CONTROL_REENABLE;
			return;
		}
		if (ep->state != RXC_ENABLED && ep->state != RXC_ENABLED_SOFTWARE &&
		    ep->state != RXC_PENDING_PTLTE_DISABLE) {
			if (!nic_auto)
				return;
			sw_fatal(ep, FC_SW_LE_MSG_FATAL);
			return;
		}
		enter_flow_control(ep, ev);
		return;
	case C_PTLTE_SOFTWARE_MANAGED:
		if (ep->state == RXC_PENDING_PTLTE_DISABLE || ev->rc == C_RC_NO_MATCH || !nic_auto)
			return;
		if (ev->sc.reason != C_SC_SM_APPEND_FAIL && ev->sc.reason != C_SC_SM_UNEXPECTED_FAIL) {
			sw_fatal(ep, "Invalid PTE c_sc_reason: %d\n", ev->sc.reason);
			return;
		}
		ep->fc_reason = ev->sc.reason;
		ep->prev_state = ep->state;
		ep->new_state = RXC_ENABLED_SOFTWARE;
		ep->msg_offload = false;
		ep->state = RXC_PENDING_PTLTE_SOFTWARE_MANAGED;
		ep->st.sw_transitions++;
		(*ep->c_sw_trans)++;
		flush_appends(ep);
		return;
	default: return;
	}
}

/* ---------------------------------------------------------------- dispatch, init, fini */

void sw_rxc_event(struct sw_ep *ep, struct sw_obj *o, const struct nic_event *ev)
{
	switch (o->kind) {
	case SWK_RECV: recv_event(ep, (struct sw_req *)o, ev); return;
	case SWK_RMSG: {
		struct sw_rmsg *m = (struct sw_rmsg *)o;
		if (ev->type != C_EVENT_REPLY)
			return;
		if (ev->rc != C_RC_OK)
			m->rc = ev->rc;
		if (ep->sw_gets_out)
			ep->sw_gets_out--;
		rmsg_count(ep, m);
		sw_get_kick(ep);
		return;
	}
	case SWK_FLUSH:
		if (ev->type == C_EVENT_SEARCH)
			onload_start(ep);
		return;
	case SWK_SEARCH:
		if (ev->type == C_EVENT_PUT_OVERFLOW)
			onload_entry(ep, ev);
		else if (ev->type == C_EVENT_SEARCH)
			onload_search_done(ep);
		return;
	default: return;
	}
}

int sw_rxc_init(struct sw_ep *ep)
{
	struct nic_pte_opts o = { .is_matching = true, .en_flowctrl = true,
				  .en_sw_transition = ep->env->rx_match_mode == SW_MATCH_HYBRID };
	int rc = nic_pte_alloc(ep->lni, ep->eq_rx, &o, &ep->rx_ptn);
	if (rc)
		return rc;
	for (unsigned v = 0; v < ep->attr.num_vnis; v++)
		if ((rc = nic_pte_map(ep->lni, ep->rx_ptn, ep->attr.vnis[v], ep->pid, SW_PTL_IDX_RXQ)))
			return rc;
	ep->msg_offload = ep->env->msg_offload;
	if (ep->env->rx_match_mode != SW_MATCH_HARDWARE)
		sw_bufs_init(ep, C_PTL_LIST_REQUEST);
	if (ep->msg_offload)
		sw_bufs_init(ep, C_PTL_LIST_OVERFLOW);
	uint8_t st = ep->msg_offload ? C_PTLTE_ENABLED : C_PTLTE_SOFTWARE_MANAGED;
	sw_setstate(ep, ep->rx_ptn, st, NIC_IGNORE_DROPS);
	/* Commands execute in order, so receives posted from now on land behind the enable. */
	ep->state = ep->msg_offload ? RXC_ENABLED : RXC_ENABLED_SOFTWARE;
	return 0;
}

static void free_req_list(struct sw_ep *ep, struct sw_req_list *l)
{
	while (l->head) {
		struct sw_req *r = l->head;
		sw_req_list_remove(l, r);
		while (r->rmsgs) {
			struct sw_rmsg *m = r->rmsgs;
			r->rmsgs = m->next;
			free(m);
		}
		recv_free(ep, r);
	}
}

static void free_ux_list(struct sw_ux_list *l)
{
	while (l->head) {
		struct sw_ux *u = l->head;
		sw_ux_remove(l, u);
		free(u);
	}
}

void sw_rxc_fini(struct sw_ep *ep)
{
	free_req_list(ep, &ep->posted);
	free_req_list(ep, &ep->replay);
	free_ux_list(&ep->ux);
	free_ux_list(&ep->pending_ux);
	while (ep->fc_drops) {
		struct sw_fc_drops *d = ep->fc_drops;
		ep->fc_drops = d->next;
		free(d);
	}
	sw_bufs_fini(ep);
}
