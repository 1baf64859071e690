/* Provider software: FI_PEEK, FI_CLAIM and FI_DISCARD (MPI_Iprobe, MPI_Improbe and MPI_Mrecv over Open MPI's
 * OFI MTL).
 *
 * A peek looks for the oldest unexpected message that matches, without receiving it, and completes with its
 * length, tag, remote CQ data and source, or with FI_ENOMSG.  Messages software already holds (onloaded
 * after flow control, or landed in request buffers) are looked at first: they arrived before anything still
 * on the hardware list.  Then, while the NIC matches (hardware and hybrid modes), the PtlTE's UNEXPECTED
 * list is searched with a SEARCH command (first match only), as upstream does.  Commands of the target
 * queue execute in order, so a receive posted before the peek has already taken its message when the
 * search runs.
 *
 * FI_PEEK | FI_CLAIM takes the message out of matching: a SEARCH_AND_DELETE (first match) removes its
 * hardware header and software keeps it, with the caller's claim key, for the FI_CLAIM receive that names
 * it (sw_recv_claimed); ordinary receives and later peeks pass over it.  FI_DISCARD drops the message: its
 * overflow or request buffer bytes are released, and a rendezvous sender, which waits for the target to
 * fetch the rest, is released by a zero-byte Get.
 *
 * While the RX context is not enabled (flow-control recovery, a hybrid switch to software matching)
 * messages are moving between the hardware and software lists and an answer could be a false "no
 * message": the peek gets -FI_EAGAIN and is retried, as upstream does. */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "sw_impl.h"

static struct sw_obj discard_get_obj = { SWK_DISCARD };

static void peek_report(struct sw_ep *ep, struct sw_req *p, const struct sw_ux *u)
{
	struct sw_comp c = { 0 };
	c.op_context = p->context;
	c.flags = FI_RECV | (p->tagged ? FI_TAGGED : FI_MSG);
	if (!u) {
		c.err = FI_ENOMSG;
		c.tag = p->tag;
	} else {
		if (u->match_bits & SW_MB_CQ_DATA)
			c.flags |= FI_REMOTE_CQ_DATA;
		c.len = u->rlength;
		c.data = u->header_data;
		c.tag = p->tagged ? (u->match_bits & SW_TAG_MASK) : 0;
		c.src = (struct sw_addr){ .nic = C_MATCH_ID_NIC(u->initiator),
					  .pid = (uint16_t)C_MATCH_ID_PID(u->initiator), .vni = u->vni };
		c.src_valid = true;
	}
	sw_req_unlist(p);
	sw_req_free(ep, p);
	sw_complete(ep, &c);
}

/* Drop a message software holds. */
static void ux_discard(struct sw_ep *ep, struct sw_ux *u)
{
	if (u->rendezvous && u->rlength > u->mlength) {
		struct sw_addr src = { .nic = C_MATCH_ID_NIC(u->initiator), .pid = (uint16_t)C_MATCH_ID_PID(u->initiator),
				       .vni = u->vni };
		sw_issue_get(ep, src, u->remote_offset + u->mlength, u->match_bits, u->rendezvous_id, 0, 0,
			     &discard_get_obj, SW_PTL_IDX_RDZV_SRC, 0);
	}
	sw_ux_done(ep, u);
}

/* A message software holds (on the unexpected list, or just taken off the hardware list) was found. */
static void peek_take(struct sw_ep *ep, struct sw_req *p, struct sw_ux *u, bool listed)
{
	if (p->flags & FI_CLAIM) {
		u->claimed = true;
		u->claim_key = p->claim_key;
		u->onloaded = true;
		if (!listed)
			sw_ux_push(&ep->ux, u);
		peek_report(ep, p, u);
		return;
	}
	if (p->flags & FI_DISCARD) {
		struct sw_ux h = *u;
		if (listed)
			sw_ux_remove(&ep->ux, u);
		ux_discard(ep, u);
		peek_report(ep, p, &h);
		return;
	}
	peek_report(ep, p, u);
}

/* SEARCH (peek) or SEARCH_AND_DELETE (claim, discard) on the hardware unexpected list came back. */
void sw_peek_event(struct sw_ep *ep, struct sw_req *p, const struct nic_event *ev)
{
	if (ev->type != C_EVENT_SEARCH && ev->type != C_EVENT_PUT_OVERFLOW) {
		sw_fatal(ep, "unexpected event %s on a peek\n", c_event_type_name(ev->type));
		return;
	}
	if (ev->rc != C_RC_OK) {
		peek_report(ep, p, NULL);
		return;
	}
	if (ev->type == C_EVENT_SEARCH) {
		struct sw_ux h = { 0 };
		sw_ux_set_header(&h, ev);
		peek_report(ep, p, &h);
		return;
	}
	/* The header left the hardware list: software now holds the message. */
	struct sw_ux *u = sw_ux_from_hw(ep, ev, NULL);
	if (!u->data_ready) {
		/* Its eager bytes are still to be seen in the overflow buffer. */
		u->peek = p;
		sw_ux_map_put(ep, ev->start, u);
		return;
	}
	peek_take(ep, p, u, false);
}

void sw_peek_data_ready(struct sw_ep *ep, struct sw_ux *u)
{
	struct sw_req *p = u->peek;
	u->peek = NULL;
	peek_take(ep, p, u, false);
}

int sw_peek(struct sw_ep *ep, const struct sw_addr *src, uint64_t tag, uint64_t ignore, uint64_t flags,
	    uint64_t claim_key, void *context)
{
	if (!ep || ep->closing)
		return -FI_EINVAL;
	if (ep->fatal)
		return -FI_EOTHER;
	if ((flags & FI_MULTI_RECV) || ((flags & FI_CLAIM) && (flags & FI_DISCARD)))
		return -FI_EINVAL;
	if (ep->state != RXC_ENABLED && ep->state != RXC_ENABLED_SOFTWARE)
		return -FI_EAGAIN;
	if (sw_eq_saturated(ep, ep->eq_rx))
		return -FI_EAGAIN;
	struct sw_req *p = sw_req_new_matching(ep, SWK_PEEK, src, tag, ignore, flags, context);
	p->tag = tag;
	p->claim_key = claim_key;
	for (struct sw_ux *u = ep->ux.head; u; u = u->next) {
		if (u->data_ready && !u->claimed && sw_recv_matches(p, u->match_bits, u->initiator)) {
			peek_take(ep, p, u, true);
			return 0;
		}
	}
	if (!ep->msg_offload) {
		peek_report(ep, p, NULL);
		return 0;
	}
	struct nic_cmd c = { .op = (flags & (FI_CLAIM | FI_DISCARD)) ? NIC_CMD_TGT_SEARCH_AND_DELETE : NIC_CMD_TGT_SEARCH };
	c.tgt = (struct nic_tgt_cmd){ .ptn = ep->rx_ptn, .list = C_PTL_LIST_UNEXPECTED, .le_flags = C_LE_USE_ONCE,
				      .ctn = NIC_NONE, .match_id = p->match_id, .match_bits = p->match_bits,
				      .ignore_bits = p->ignore_bits, .user_ptr = (uint64_t)(uintptr_t)p };
	if (sw_emit(ep, ep->tgq, &c)) {
		sw_req_free(ep, p);
		return -FI_EAGAIN;
	}
	sw_req_list_push(&ep->peeks, p);
	return 0;
}

int sw_recv_claimed(struct sw_ep *ep, uint64_t buf, uint64_t len, uint64_t claim_key, uint64_t flags, void *context)
{
	if (!ep || ep->closing)
		return -FI_EINVAL;
	if (ep->fatal)
		return -FI_EOTHER;
	struct sw_ux *u;
	for (u = ep->ux.head; u; u = u->next)
		if (u->claimed && u->claim_key == claim_key)
			break;
	if (!u)
		return -FI_EINVAL; /* no message was claimed with this key */
	sw_ux_remove(&ep->ux, u);
	bool tagged = (u->match_bits & SW_MB_TAGGED) != 0;
	if (flags & FI_DISCARD) {
		struct sw_comp c = { 0 };
		c.op_context = context;
		c.flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) | ((u->match_bits & SW_MB_CQ_DATA) ? FI_REMOTE_CQ_DATA : 0);
		c.data = u->header_data;
		c.tag = tagged ? (u->match_bits & SW_TAG_MASK) : 0;
		c.src = (struct sw_addr){ .nic = C_MATCH_ID_NIC(u->initiator),
					  .pid = (uint16_t)C_MATCH_ID_PID(u->initiator), .vni = u->vni };
		c.src_valid = true;
		ux_discard(ep, u);
		sw_complete(ep, &c);
		return 0;
	}
	struct sw_req *r = sw_recv_new(ep, buf, len, NULL, 0, 0, tagged ? FI_TAGGED : 0, context);
	sw_ux_deliver(ep, r, u);
	return 0;
}

void sw_peek_fini(struct sw_ep *ep)
{
	while (ep->peeks.head) {
		struct sw_req *p = ep->peeks.head;
		sw_req_unlist(p);
		sw_req_free(ep, p);
	}
}
