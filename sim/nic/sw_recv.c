/* Provider software: receive requests (FI_PROTO_CXI).
 *
 * A receive is matched first against the software unexpected list, then offloaded to the PtlTE's PRIORITY
 * list (hardware matching) or, on a software-managed PtlTE, kept for software matching against messages
 * that land in request buffers (sw_rxc.c owns the RX state machine that decides which).
 *
 * Life of a request.  The NIC names a receive by the LE's user_ptr in its events, so a request lives until
 * software has reported its last completion *and* the NIC can no longer name it:
 *   - a message that matched a receive is reported from its PUT (or PUT_OVERFLOW + data, or rendezvous
 *     PUT/RENDEZVOUS/REPLY) events; the request then leaves the posted list for `inflight`;
 *   - a cancel unlinks the LE (buffer ids are unique per endpoint); the UNLINK event says whether it took
 *     the LE off the list (FI_ECANCELED) or found nothing because a message won the race (that message's
 *     completion is the last one).  Until the UNLINK event the request stays allocated even if a message
 *     completed it: the event still refers to it.
 * Multi-receive buffers: each message has its own completion pointing into the buffer.  The buffer leaves
 * the list when less than its min_free is left (the NIC's auto-unlink, or software's check), or when a
 * cancel unlinks it; that point (unlink_end, an offset in the buffer) is known from the retiring event.
 * PUT events of one LE may arrive out of order (each waits for its own DMA), so the buffer is finished only
 * once the bytes of the messages reported reach unlink_end and no rendezvous is still in flight: the
 * completion that finishes it carries FI_MULTI_RECV, or, after a cancel, a separate FI_ECANCELED |
 * FI_MULTI_RECV completion follows the last message.  A message larger than what is left is truncated to
 * the space left (FI_ETRUNC with olen, unless FI_CXI_TRUNC_OK), as upstream does: the receive LE is not
 * no_truncate. */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "sw_impl.h"

#define HYBRID_RECV_CHECK_INTERVAL 64

/* ---------------------------------------------------------------- matching and completion */

bool sw_recv_matches(const struct sw_req *r, uint64_t match_bits, uint32_t initiator)
{
	if ((r->match_bits ^ match_bits) & ~r->ignore_bits)
		return false;
	return r->match_id == C_MATCH_ID_ANY || r->match_id == initiator;
}

void sw_recv_free(struct sw_ep *ep, struct sw_req *r)
{
	sw_req_unlist(r);
	while (r->rmsgs) {
		struct sw_rmsg *m = r->rmsgs;
		r->rmsgs = m->next;
		sw_rmsg_free(ep, m);
	}
	if (ep->rx_outstanding)
		ep->rx_outstanding--;
	sw_id_free(ep, r->id);
	sw_req_free(ep, r);
}

/* The last completion of r has been reported: free it, unless its cancel's UNLINK is still to come. */
static void recv_release(struct sw_ep *ep, struct sw_req *r)
{
	r->done = true;
	if (r->unlink_pending)
		sw_req_list_push(&ep->inflight, r);
	else
		sw_recv_free(ep, r);
}

static bool mrecv_finished(const struct sw_req *r)
{
	return r->unlink_end != UINT64_MAX && r->mrecv_bytes >= r->unlink_end && r->children == 0;
}

static void recv_report_canceled(struct sw_ep *ep, struct sw_req *r)
{
	struct sw_comp c = { 0 };
	c.op_context = r->context;
	c.flags = FI_RECV | (r->tagged ? FI_TAGGED : FI_MSG) | (r->multi ? FI_MULTI_RECV : 0);
	c.err = FI_ECANCELED;
	c.buf = r->buf;
	sw_complete(ep, &c);
	recv_release(ep, r);
}

/* A cancelled multi-receive buffer reports FI_ECANCELED after the last message placed in it. */
static void mrecv_check_canceled(struct sw_ep *ep, struct sw_req *r)
{
	if (!r->done && r->cancel_unlinked && mrecv_finished(r))
		recv_report_canceled(ep, r);
}

/* The buffer stops taking messages at `end` (bytes from its start). */
static void mrecv_retire(struct sw_req *r, uint64_t end)
{
	r->retired = true;
	if (r->unlink_end == UINT64_MAX)
		r->unlink_end = end;
}

/* One completion for a message received into r (`len` bytes of the buffer used). */
static void recv_report(struct sw_ep *ep, struct sw_req *r, uint64_t buf, uint64_t len, uint64_t rlength,
			uint64_t mb, uint64_t hdata, uint32_t initiator, uint16_t vni, uint8_t rc)
{
	bool final = true;
	if (r->multi) {
		r->mrecv_bytes += len;
		final = !r->cancel_unlinked && mrecv_finished(r);
	}
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
	if (final)
		recv_release(ep, r);
	else
		mrecv_check_canceled(ep, r);
}

/* A message matched single receive r: it takes no other message and cannot be cancelled any more. */
static void recv_matched(struct sw_ep *ep, struct sw_req *r)
{
	if (!r->multi)
		sw_req_list_push(&ep->inflight, r);
}

/* ---------------------------------------------------------------- rendezvous messages */

static struct sw_rmsg *rmsg_new(struct sw_req *r, uint64_t buf, uint64_t mb, uint64_t hdata, uint32_t initiator,
				uint32_t rlength, uint32_t data_len, uint16_t vni, uint8_t rdzv_id)
{
	struct sw_rmsg *m = sw_rmsg_new(r->ep);
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
	sw_rmsg_free(ep, m);
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
	sw_issue_get(ep, src, m->remote_offset + m->eager, m->match_bits, m->rendezvous_id, m->buf + m->eager,
		     m->data_len > m->eager ? m->data_len - m->eager : 0, m, SW_PTL_IDX_RDZV_SRC, 0);
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

/* The software Get of a rendezvous message came back. */
void sw_recv_rmsg_event(struct sw_ep *ep, struct sw_rmsg *m, const struct nic_event *ev)
{
	if (ev->type != C_EVENT_REPLY)
		return;
	if (ev->rc != C_RC_OK)
		m->rc = ev->rc;
	if (ep->sw_gets_out)
		ep->sw_gets_out--;
	rmsg_count(ep, m);
	sw_get_kick(ep);
}

/* ---------------------------------------------------------------- delivering software-known messages */

void sw_ux_done(struct sw_ep *ep, struct sw_ux *u)
{
	if (u->buf)
		sw_buf_consume(ep, u->buf, u->mlength);
	sw_ux_free(ep, u);
}

/* Software match of receive r with unexpected message u (eager data in a provider buffer).  Returns true
 * when r takes no further message (it may be gone). */
bool sw_ux_deliver(struct sw_ep *ep, struct sw_req *r, struct sw_ux *u)
{
	uint64_t space = r->ulen - r->start_offset;
	uint64_t dst = r->buf + r->start_offset;
	uint32_t data_len = u->rlength < space ? u->rlength : (uint32_t)space;
	uint32_t have = u->mlength < data_len ? u->mlength : data_len;
	ep->host.sw_matches++;
	sw_copy(ep, dst, u->data, have);
	bool stop = true;
	if (r->multi) {
		r->start_offset += data_len;
		if (r->ulen - r->start_offset < r->min_free)
			mrecv_retire(r, r->start_offset);
		stop = r->retired;
	}
	recv_matched(ep, r);
	/* A multi-receive buffer that a new post filled up here is on no list yet: inflight keeps it (and the
	 * rendezvous messages still coming into it) until its last completion, or the endpoint's close. */
	if (r->multi && stop && !r->on)
		sw_req_list_push(&ep->inflight, r);
	/* A rendezvous sender completes on the Get of its source buffer: issue one even when the eager part
	 * already holds all the receive takes (zero bytes then). */
	if (u->rendezvous) {
		struct sw_rmsg *m = rmsg_new(r, dst, u->match_bits, u->header_data, u->initiator, u->rlength, data_len,
					     u->vni, u->rendezvous_id);
		m->needed = 1;
		m->eager = have;
		m->remote_offset = u->remote_offset;
		sw_ux_done(ep, u);
		sw_get_start(ep, m);
		return stop;
	}
	uint64_t mb = u->match_bits, hd = u->header_data;
	uint32_t init = u->initiator, rlen = u->rlength;
	uint16_t vni = u->vni;
	sw_ux_done(ep, u);
	recv_report(ep, r, dst, data_len, rlen, mb, hd, init, vni, C_RC_OK);
	return stop;
}

/* Match a new receive against the software unexpected list.  Returns true if it was consumed. */
static bool ux_match_recv(struct sw_ep *ep, struct sw_req *r)
{
	struct sw_ux *u = ep->ux.head;
	while (u) {
		struct sw_ux *next = u->next;
		if (u->data_ready && !u->claimed && sw_recv_matches(r, u->match_bits, u->initiator)) {
			sw_ux_remove(&ep->ux, u);
			if (sw_ux_deliver(ep, r, u))
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
		sw_ux_deliver(ep, r, u);
		return;
	}
	sw_ux_push(&ep->ux, u);
}

/* Called by the buffer code when an unexpected message's data has landed in a request buffer. */
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

/* Receive r matched a hardware unexpected header (PUT_OVERFLOW), whose eager data u holds (NULL for a
 * zero-byte message).  dst/data_len were fixed when the event came. */
static void ovf_deliver(struct sw_ep *ep, struct sw_req *r, struct sw_ux *u, const struct nic_event *ev, uint64_t dst,
			uint32_t data_len)
{
	uint32_t have = ev->mlength < data_len ? ev->mlength : data_len;
	ep->host.ux_matches++;
	if (u) {
		sw_copy(ep, dst, u->data, have);
		sw_ux_done(ep, u);
	}
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
void sw_rxc_overflow_arrival(struct sw_ep *ep, struct sw_ux *u)
{
	if (u->waiting) {
		struct sw_req *r = u->waiting;
		u->waiting = NULL;
		u->data_ready = true;
		/* ovf_deliver returns u before it is done with the event: it reads a copy. */
		struct nic_event ev = u->ovf_ev;
		ovf_deliver(ep, r, u, &ev, u->dst, u->dst_len);
		return;
	}
	if (u->peek) {
		u->data_ready = true;
		sw_peek_data_ready(ep, u);
		return;
	}
	if (u->onloaded) {
		u->data_ready = true;
		sw_rxc_onload_data(ep);
		return;
	}
	u->data_ready = true;
	ep->hw_ule_cnt++;
	sw_ux_map_put(ep, u->data, u);
}

/* A hardware unexpected header left the UNEXPECTED list (matched, onloaded or claimed): its eager data,
 * if already seen, is in the map. */
struct sw_ux *sw_hw_ule_take(struct sw_ep *ep, const struct nic_event *ev)
{
	struct sw_ux *u = ev->mlength ? sw_ux_map_take(ep, ev->start) : NULL;
	if (u && u->data_ready && ep->hw_ule_cnt)
		ep->hw_ule_cnt--;
	return u;
}

void sw_ux_set_header(struct sw_ux *u, const struct nic_event *ev)
{
	u->match_bits = ev->match_bits;
	u->header_data = ev->header_data;
	u->remote_offset = ev->remote_offset;
	u->initiator = ev->initiator;
	u->rlength = ev->rlength;
	u->mlength = ev->mlength;
	u->vni = ev->vni;
	u->rendezvous_id = ev->rendezvous_id;
	u->rendezvous = (ev->flags & NIC_EVF_RENDEZVOUS) != 0;
}

struct sw_ux *sw_ux_from_hw(struct sw_ep *ep, const struct nic_event *ev, bool *fresh)
{
	struct sw_ux *u = sw_hw_ule_take(ep, ev);
	if (fresh)
		*fresh = !u;
	if (!u) {
		u = sw_ux_new(ep);
		u->data = ev->start;
		u->data_ready = ev->mlength == 0;
	}
	sw_ux_set_header(u, ev);
	return u;
}

static void recv_put_overflow(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	/* Where the message goes in r is decided now: PUT_OVERFLOW events of one LE come in match order. */
	uint64_t space = r->ulen - r->start_offset;
	uint64_t dst = r->buf + r->start_offset;
	uint32_t data_len = ev->rlength < space ? ev->rlength : (uint32_t)space;
	if (r->multi) {
		r->start_offset += data_len;
		if (ev->flags & NIC_EVF_AUTO_UNLINKED)
			mrecv_retire(r, r->start_offset);
	}
	recv_matched(ep, r);
	struct sw_ux *u = sw_hw_ule_take(ep, ev);
	if (!ev->mlength || u) {
		ovf_deliver(ep, r, u, ev, dst, data_len);
		return;
	}
	/* The data event has not been processed yet: wait for it. */
	u = sw_ux_new(ep);
	u->data = ev->start;
	u->mlength = ev->mlength;
	u->waiting = r;
	u->ovf_ev = *ev;
	u->dst = dst;
	u->dst_len = data_len;
	sw_ux_map_put(ep, ev->start, u);
}

/* ---------------------------------------------------------------- events on receives */

/* The cancel took r off every list: its last completion is FI_ECANCELED, after those of the messages a
 * multi-receive buffer took below offset `end`. */
static void recv_cancel_done(struct sw_ep *ep, struct sw_req *r, uint64_t end)
{
	r->cancel_unlinked = true;
	r->retired = true;
	sw_req_list_push(&ep->inflight, r);
	if (!r->multi) {
		recv_report_canceled(ep, r);
		return;
	}
	mrecv_retire(r, end);
	mrecv_check_canceled(ep, r);
}

/* Complete a cancel that no message can race with any more (the request is not, or no longer, in a
 * hardware list). */
static void recv_cancel_now(struct sw_ep *ep, struct sw_req *r)
{
	recv_cancel_done(ep, r, r->start_offset);
}

static void recv_link_failed(struct sw_ep *ep, struct sw_req *r, uint8_t rc)
{
	r->hw_offloaded = false;
	if (r->canceled) {
		recv_cancel_now(ep, r);
		return;
	}
	if (ep->attr.proto == SW_PROTO_CXI_RNR) {
		/* No flow control on the RNR PtlTE: retry the append, until the upstream timeout makes it fatal. */
		if (sw_rnr_append_failed(ep, r))
			return;
		sw_req_list_push(&ep->replay, r);
		sw_rnr_append_retry(ep);
		return;
	}
	sw_req_list_push(&ep->replay, r);
	/* Hardware match mode: software disables the PtlTE itself to recover LEs. */
	if (rc == C_RC_NO_SPACE && (ep->state == RXC_ENABLED || ep->state == RXC_ENABLED_SOFTWARE))
		sw_rxc_pending_disable(ep, false);
}

static void recv_put(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	uint64_t dst = ev->start;
	if (r->multi) {
		uint64_t end = ev->start - r->buf + ev->mlength;
		if (end > r->start_offset)
			r->start_offset = end;
		if (ev->flags & NIC_EVF_AUTO_UNLINKED)
			mrecv_retire(r, end);
	}
	recv_matched(ep, r);
	if (!r->multi || (ev->flags & NIC_EVF_AUTO_UNLINKED))
		sw_rnr_le_freed(ep);
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
	m->needed = 3; /* PUT, RENDEZVOUS and the Get's REPLY */
	if (ev->flags & NIC_EVF_GET_ISSUED) {
		ep->st.hw_rdzv_gets++;
	} else {
		/* The receive took no more than the eager part (it is that short), so the NIC fetched nothing;
		 * the sender still waits for a Get of its source buffer to complete the send, so software issues
		 * one of zero bytes, as upstream does. */
		m->data_len = ev->mlength;
		m->remote_offset = ev->remote_offset;
		sw_get_start(ep, m);
	}
	rmsg_count(ep, m);
}

/* The UNLINK of a cancel.  rc OK: the LE left the list, nothing more will land in it.  Otherwise a message
 * (or, for a multi-receive buffer, its retirement) got there first and finishes the request. */
static void recv_unlinked(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	if (!r->unlink_pending)
		return;
	r->unlink_pending = false;
	if (r->done) {
		sw_recv_free(ep, r);
		return;
	}
	if (ev->rc != C_RC_OK)
		return;
	recv_cancel_done(ep, r, ev->start - r->buf);
}

void sw_recv_event(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
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
	case C_EVENT_UNLINK: recv_unlinked(ep, r, ev); return;
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
		  r->multi ? r->min_free : 0, r->match_id, r->match_bits, r->ignore_bits, r);
}

static uint32_t hw_posted(const struct sw_ep *ep)
{
	uint32_t n = 0;
	for (const struct sw_req *r = ep->posted.head; r; r = r->next)
		n += r->hw_offloaded;
	return n;
}

void sw_recv_queue(struct sw_ep *ep, struct sw_req *r)
{
	if (r->canceled) {
		recv_cancel_now(ep, r);
		return;
	}
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

struct sw_req *sw_req_new_matching(struct sw_ep *ep, uint8_t kind, const struct sw_addr *src, uint64_t tag,
				   uint64_t ignore, uint64_t flags, void *context)
{
	bool tagged = (flags & FI_TAGGED) != 0;
	struct sw_req *r = sw_req_new(ep, kind);
	r->context = context;
	r->flags = flags;
	r->tagged = tagged;
	r->match_bits = tagged ? (SW_MB_TAGGED | (tag & SW_TAG_MASK)) : 0;
	r->ignore_bits = SW_MB_RECV_IGNORE | (tagged ? (ignore & SW_TAG_MASK) : SW_TAG_MASK);
	r->match_id = (src && (ep->attr.caps & FI_DIRECTED_RECV)) ? C_MATCH_ID(src->nic, src->pid) : C_MATCH_ID_ANY;
	return r;
}

struct sw_req *sw_recv_new(struct sw_ep *ep, uint64_t buf, uint64_t len, const struct sw_addr *src, uint64_t tag,
			   uint64_t ignore, uint64_t flags, void *context)
{
	struct sw_req *r = sw_req_new_matching(ep, SWK_RECV, src, tag, ignore, flags, context);
	r->buf = buf;
	r->ulen = len;
	r->multi = (flags & FI_MULTI_RECV) != 0;
	r->min_free = ep->attr.min_multi_recv > UINT32_MAX ? UINT32_MAX : (uint32_t)ep->attr.min_multi_recv;
	r->unlink_end = UINT64_MAX;
	ep->rx_outstanding++;
	return r;
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
	if (sw_eq_saturated(ep, ep->eq_rx) || !sw_cmdq_room(ep, ep->tgq))
		return -FI_EAGAIN;
	uint16_t id;
	if (sw_id_alloc(ep, &id))
		return -FI_EAGAIN;
	struct sw_req *r = sw_recv_new(ep, buf, len, src, tag, ignore, flags, context);
	r->id = id;
	sw_recv_queue(ep, r);
	return 0;
}

static struct sw_req *find_cancelable(struct sw_req_list *l, void *context)
{
	for (struct sw_req *r = l->head; r; r = r->next)
		if (r->context == context && !r->canceled)
			return r;
	return NULL;
}

int sw_cancel(struct sw_ep *ep, void *context)
{
	if (!ep)
		return -FI_EINVAL;
	struct sw_req *r = find_cancelable(&ep->posted, context);
	if (!r)
		r = find_cancelable(&ep->replay, context);
	if (!r)
		return -FI_ENOENT;
	r->canceled = true;
	if (r->hw_offloaded) {
		r->unlink_pending = true;
		sw_unlink(ep, ep->rx_ptn, C_PTL_LIST_PRIORITY, r->id, r);
		return 0;
	}
	recv_cancel_now(ep, r);
	return 0;
}

void sw_ep_set_min_multi_recv(struct sw_ep *ep, uint64_t min_free)
{
	ep->attr.min_multi_recv = min_free;
}
