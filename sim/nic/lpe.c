/* The list-processing engine (LPE): target-side matching.
 *
 * Each of the four PEs serves, one at a time and in arrival order, the network requests (Put, Get) and
 * target commands (Append, Unlink, Search, SetState) of the PtlTEs it owns (ptn % 4).  A request's cost is
 * match_base plus match_per_le per LE walked; the outputs (events, ACK/NACK, Get reply) leave when the
 * request is done.  Matching decisions see the lists as they are when the request starts.
 *
 * Exhaustion handling follows Cassini:
 *   - flow-control PtlTE (en_flowctrl): disable [reason], count the drop, NACK C_RC_PT_DISABLED;
 *   - hybrid PtlTE (en_sw_transition): out of LEs -> SOFTWARE_MANAGED [SM_*], message goes to REQUEST;
 *   - neither: NACK C_RC_ENTRY_NOT_FOUND (the RNR protocol relies on this) and stay enabled.
 * The target commands are in lpe_tgt.c.
 */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

/* ---------------------------------------------------------------- PE queue */

static void pe_run(struct sim *sim, void *obj, uint64_t arg);

/* Moves the FIFO (qlen items from qhead) to a ring of ncap slots, the PE's own when ncap is NIC_PE_INLINE. */
static void pe_fifo_move(struct nic_pe *pe, uint32_t ncap)
{
	struct nic_work **nq = ncap <= NIC_PE_INLINE ? pe->inl : xmalloc(ncap * sizeof(*nq));
	if (nq != pe->q)
		for (uint32_t i = 0; i < pe->qlen; i++)
			nq[i] = pe->q[(pe->qhead + i) & (pe->qcap - 1)];
	if (pe->q != pe->inl)
		free(pe->q);
	pe->q = nq;
	pe->qcap = ncap;
	pe->qhead = 0;
}

void nic_pe_submit(struct nic *nic, unsigned pe_idx, struct nic_work *w)
{
	struct nic_pe *pe = &nic->pe[pe_idx];
	if (pe->qlen == pe->qcap)
		pe_fifo_move(pe, pe->qcap < 64 ? 64 : pe->qcap * 2);
	pe->q[(pe->qhead + pe->qlen++) & (pe->qcap - 1)] = w; /* qcap: a power of two (a mask, not a division) */
	if (!pe->busy) {
		pe->busy = true;
		sim_schedule(nic->sim, 0, pe_run, nic, pe_idx);
	}
}

/* ---------------------------------------------------------------- helpers */


void nic_post_target_event(struct nic *nic, struct nic_pte *pte, struct nic_event *ev, simtime_t delay)
{
	ev->ptlte_index = (uint16_t)pte->ptn;
	ev->pe = pte->pe;
	nic_eq_post(nic, pte->eqn, ev, delay, false);
}

void nic_event_from_le(struct nic_event *ev, uint8_t type, const struct nic_le *le)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->rc = C_RC_OK;
	ev->user_ptr = le->user_ptr;
	ev->buffer_id = le->buffer_id;
	ev->ptl_list = le->list;
}

void nic_event_hdr(struct nic_event *ev, const struct nic_ule *hdr)
{
	ev->match_bits = hdr->le.match_bits;
	ev->header_data = hdr->le.header_data;
	ev->initiator = hdr->initiator;
	ev->vni = hdr->vni;
	ev->remote_offset = hdr->le.remote_offset;
	ev->rlength = hdr->rlength;
	ev->rendezvous_id = hdr->rendezvous_id;
	if (hdr->rendezvous)
		ev->flags |= NIC_EVF_RENDEZVOUS;
}

/* The NIC changes a PtlTE's state on its own (flow control or a hybrid switch). */
void nic_pte_auto_state(struct nic *nic, struct nic_pte *pte, uint8_t state, uint8_t reason, simtime_t delay)
{
	pte->state = state;
	struct nic_event ev = { 0 };
	ev.type = C_EVENT_STATE_CHANGE;
	ev.rc = C_RC_OK;
	ev.sc.state = state;
	ev.sc.reason = reason;
	ev.flags = NIC_EVF_SC_NIC_AUTO;
	ev.ptlte_index = (uint16_t)pte->ptn;
	ev.pe = pte->pe;
	nic_eq_post(nic, pte->eqn, &ev, delay, true);
	if (reason < 7)
		NIC_C(nic, fc_transitions[reason])++;
	nic_count_limit(nic);
}

static void lpe_drop(struct nic *nic, struct nic_pte *pte, const struct nic_pkt *p, simtime_t delay)
{
	pte->drop_count++;
	NIC_C(nic, pt_disabled_drops)++;
	nic_send_ack(nic, p, C_RC_PT_DISABLED, 0, 0, delay);
}

static void hdr_from_pkt(struct nic_ule *h, const struct nic_pkt *p)
{
	memset(h, 0, sizeof(*h));
	h->le.ule = true;
	h->initiator = p->initiator;
	h->le.match_bits = p->match_bits;
	h->le.header_data = p->header_data;
	h->le.remote_offset = p->remote_offset;
	h->rlength = p->rlength;
	h->mlength = p->payload_len;
	h->vni = p->msg.vni;
	h->rendezvous_id = p->rendezvous_id;
	h->rendezvous = (p->flags & PKTF_RENDEZVOUS) != 0;
}

static void access_note(struct nic_pte *pte, const struct nic_le *le, uint64_t addr, uint64_t len, bool write)
{
	if (pte->access_fn)
		pte->access_fn(pte->access_ctx, pte->ptn, le->user_ptr, addr, len, write);
}

static void le_ct(struct nic *nic, const struct nic_le *le, uint64_t bytes, bool ok)
{
	if (le->ctn == NIC_NONE || !(le->flags & (C_LE_EVENT_CT_COMM | C_LE_EVENT_CT_BYTES)))
		return;
	if (!ok)
		nic_ct_add(nic, le->ctn, 0, 1);
	else
		nic_ct_add(nic, le->ctn, (le->flags & C_LE_EVENT_CT_BYTES) ? bytes : 1, 0);
}

/* The NIC reports an explicit unlink of an LE only after the events of the requests that used it (as a
 * Portals entry is released once the operations referencing it complete), so software never sees an
 * event naming an entry it has already let go of. */
static void le_busy(struct nic *nic, struct nic_le *le, simtime_t delay)
{
	simtime_t t = sim_now(nic->sim) + delay;
	if (t > le->busy_until)
		le->busy_until = t;
}

/* After a match consumed space: should a locally managed or use-once LE leave the list? */
static bool le_retire(const struct nic_le *le)
{
	if (le->flags & C_LE_USE_ONCE)
		return true;
	return (le->flags & C_LE_MANAGE_LOCAL) && nic_le_space(le) < le->min_free;
}

static void post_auto_unlink(struct nic *nic, struct nic_pte *pte, const struct nic_le *le, simtime_t delay)
{
	if (le->flags & (C_LE_EVENT_UNLINK_DISABLE | C_LE_USE_ONCE))
		return;
	struct nic_event ev;
	nic_event_from_le(&ev, C_EVENT_UNLINK, le);
	ev.flags |= NIC_EVF_AUTO_UNLINKED;
	ev.start = le->start + le->offset;
	nic_post_target_event(nic, pte, &ev, delay);
}

/* ---------------------------------------------------------------- delivery of a Put into an LE */

/* Deliver the message described by hdr into `le`: a receive (PUT, or PUT_OVERFLOW when an append found
 * the header on the UNEXPECTED list, the eager bytes then staying in the overflow buffer for software to
 * copy) or an overflow/request buffer (`landing`: only the eager part is taken, no rendezvous Get).  The
 * eager bytes arrived in packet `p` (NULL for a PUT_OVERFLOW: nothing arrives; p->payload NULL: no real
 * data). */
void nic_deliver_put(struct nic *nic, struct nic_pte *pte, struct nic_le *le, const struct nic_ule *hdr,
		     const struct nic_pkt *p, uint8_t ev_type, simtime_t delay, bool landing, bool *retired)
{
	const uint8_t *payload = p ? p->payload : NULL;
	uint64_t offset = (le->flags & C_LE_MANAGE_LOCAL) ? le->offset : hdr->le.remote_offset;
	uint64_t space = le->length > offset ? le->length - offset : 0;
	uint32_t want = landing ? hdr->mlength : hdr->rlength;
	uint32_t mlength = want < space ? want : (uint32_t)space;
	uint32_t have = hdr->mlength < mlength ? hdr->mlength : mlength; /* eager bytes that land now */
	uint64_t dst = le->start + offset;
	if (have && payload && ev_type == C_EVENT_PUT)
		nic_mem_write(pte->lni, dst, payload, have);
	/* A PUT_OVERFLOW moves no data (software copies the eager bytes out of the overflow buffer), so its
	 * events are written as the append is processed and keep the order of the matches: software tracks
	 * a multi-receive buffer's offset with them.  PUT events wait for their DMA and may overtake each
	 * other.  The eager bytes are written packet by packet as they land once the header has matched
	 * (dma.c), so a multi-packet Put's event follows its last packet's write, not a whole message's
	 * write after its last byte; a single packet is written after the match, as before. */
	simtime_t dma = ev_type == C_EVENT_PUT_OVERFLOW ? delay : delay + nic_dma_write_stream(nic, &p->msg, have);
	if (mlength < want)
		NIC_C(nic, num_truncated[pte->pe])++;
	if (le->flags & C_LE_MANAGE_LOCAL)
		le->offset += mlength;
	*retired = le_retire(le);

	if (pte->opts.en_event_match) {
		struct nic_event mev;
		nic_event_from_le(&mev, C_EVENT_MATCH, le);
		nic_event_hdr(&mev, hdr);
		mev.start = dst;
		nic_post_target_event(nic, pte, &mev, delay);
	}
	if (*retired)
		post_auto_unlink(nic, pte, le, delay);
	access_note(pte, le, dst, mlength, true);

	struct nic_event ev;
	nic_event_from_le(&ev, ev_type, le);
	nic_event_hdr(&ev, hdr);
	ev.start = dst;
	ev.mlength = ev_type == C_EVENT_PUT_OVERFLOW ? hdr->mlength : mlength;
	if (ev_type == C_EVENT_PUT_OVERFLOW)
		ev.start = hdr->le.start; /* where the unexpected data sits (overflow buffer) */
	if (*retired)
		ev.flags |= NIC_EVF_AUTO_UNLINKED;
	bool rdzv_get = !landing && hdr->rendezvous && mlength > have;
	le_busy(nic, le, dma);
	if (!(le->flags & C_LE_EVENT_COMM_DISABLE) && !(le->flags & C_LE_EVENT_SUCCESS_DISABLE))
		nic_post_target_event(nic, pte, &ev, dma);
	le_ct(nic, le, mlength, true);
	if (hdr->rendezvous && !landing) {
		NIC_C(nic, rndzv_puts[pte->pe])++;
		struct nic_event rev;
		nic_event_from_le(&rev, C_EVENT_RENDEZVOUS, le);
		nic_event_hdr(&rev, hdr);
		rev.start = dst + have;
		rev.mlength = have;
		if (rdzv_get) {
			rev.flags |= NIC_EVF_GET_ISSUED;
			NIC_C(nic, rndzv_puts_offloaded[pte->pe])++;
		}
		nic_post_target_event(nic, pte, &rev, dma);
		if (rdzv_get)
			nic_issue_hw_rdzv_get(nic, pte, le, dst + have, mlength - have, hdr, dma);
	}
}

/* ---------------------------------------------------------------- bounds of remotely addressed LEs */

/* An LE whose offsets come from the initiator (not locally managed: memory regions) is accessed only
 * inside [start, start + length).  A request that reaches past its end fails as a whole -- nothing is
 * read or written -- rather than being truncated: the initiator's ACK or reply, and the target event,
 * carry the error (upstream prov/cxi reports it as FI_EIO at the initiator).  Locally managed LEs
 * (receives, overflow and request buffers) truncate instead. */
static bool le_out_of_bounds(const struct nic_le *le, uint64_t offset, uint64_t len)
{
	return !(le->flags & C_LE_MANAGE_LOCAL) && (offset > le->length || len > le->length - offset);
}

static void le_bounds_fail(struct nic *nic, struct nic_pte *pte, struct nic_le *le, const struct nic_ule *hdr,
			   uint8_t ev_type, simtime_t delay)
{
	NIC_C(nic, le_bounds_errors)++;
	le_busy(nic, le, delay);
	if (pte->opts.en_event_match) {
		struct nic_event mev;
		nic_event_from_le(&mev, C_EVENT_MATCH, le);
		nic_event_hdr(&mev, hdr);
		mev.start = le->start + hdr->le.remote_offset;
		nic_post_target_event(nic, pte, &mev, delay);
	}
	struct nic_event ev;
	nic_event_from_le(&ev, ev_type, le);
	nic_event_hdr(&ev, hdr);
	ev.rc = C_RC_ADDR_OUT_OF_RANGE;
	ev.start = le->start + hdr->le.remote_offset;
	ev.mlength = 0;
	if (!(le->flags & C_LE_EVENT_COMM_DISABLE))
		nic_post_target_event(nic, pte, &ev, delay);
	le_ct(nic, le, 0, false);
}

/* ---------------------------------------------------------------- network Put */

/* The first LE of the list that takes the request, and (*walked) the LEs the walk visits to find it: the
 * index's answer for long lists (le_index.c), the same as the walk's. */
static struct nic_le *search_list(struct nic_le_list *l, uint64_t match_bits, uint32_t initiator, uint32_t op_flag,
				  uint64_t need, uint64_t *walked)
{
	struct nic_le *found;
	uint64_t n;
	if (nic_le_index_search(l, match_bits, initiator, op_flag, need, &found, &n)) {
		*walked += n;
		return found;
	}
	for (struct nic_le *le = l->head; le; le = le->next) {
		(*walked)++;
		if (!(le->flags & op_flag))
			continue;
		if (!nic_le_matches(le, match_bits, initiator))
			continue;
		if ((le->flags & C_LE_NO_TRUNCATE) && nic_le_space(le) < need)
			continue;
		return le;
	}
	return NULL;
}

/* Unlink and free an LE that a match retired. */
static void le_remove(struct nic *nic, struct nic_pte *pte, struct nic_le *le)
{
	nic_le_list_remove(&pte->lists[le->list], le);
	nic_le_free(nic, le);
}

/* Land the message in the first request buffer (software-managed PtlTE). */
static void put_to_request(struct nic *nic, struct nic_pte *pte, struct nic_pkt *p, const struct nic_ule *hdr,
			   simtime_t cost)
{
	uint64_t walked = 0;
	struct nic_le *le = search_list(&pte->lists[C_PTL_LIST_REQUEST], p->match_bits, p->initiator, C_LE_OP_PUT,
					p->payload_len, &walked);
	cost += walked * nic->p->match_per_le;
	NIC_C(nic, les_searched) += walked;
	if (!le) {
		if (pte->opts.en_flowctrl) {
			NIC_C(nic, err_pt_disabled_req_empty)++;
			nic_pte_auto_state(nic, pte, C_PTLTE_DISABLED, C_SC_FC_REQUEST_FULL, cost);
			lpe_drop(nic, pte, p, cost);
		} else {
			NIC_C(nic, err_entry_not_found_req_empty)++;
			nic_send_ack(nic, p, C_RC_ENTRY_NOT_FOUND, 0, 0, cost);
		}
		return;
	}
	NIC_C(nic, net_match_request[pte->pe])++;
	NIC_C(nic, net_match_success[pte->pe])++;
	/* A request buffer keeps only the eager part: software fetches the rest. */
	bool retired;
	nic_deliver_put(nic, pte, le, hdr, p, C_EVENT_PUT, cost, true, &retired);
	nic_send_ack(nic, p, C_RC_OK, C_PTL_LIST_REQUEST, p->payload_len, cost + nic->p->ack_gen);
	if (retired)
		le_remove(nic, pte, le);
}

static void lpe_put_unexpected(struct nic *nic, struct nic_pte *pte, struct nic_pkt *p, struct nic_ule *hdr,
			       simtime_t cost);

static simtime_t lpe_put(struct nic *nic, struct nic_pte *pte, struct nic_pkt *p)
{
	const struct nic_params *np = nic->p;
	simtime_t cost = np->match_base;
	NIC_C(nic, put_cmds)++;
	if (p->flags & PKTF_RENDEZVOUS)
		NIC_C(nic, rendezvous_put_cmds)++;
	NIC_C(nic, net_match_requests[pte->pe])++;

	if (pte->state != C_PTLTE_ENABLED && pte->state != C_PTLTE_SOFTWARE_MANAGED) {
		lpe_drop(nic, pte, p, cost);
		return cost;
	}
	if (!nic_eq_has_room(nic, pte->eqn)) {
		if (pte->opts.en_flowctrl) {
			NIC_C(nic, err_pt_disabled_eq_full)++;
			nic_pte_auto_state(nic, pte, C_PTLTE_DISABLED, C_SC_FC_EQ_FULL, cost);
			lpe_drop(nic, pte, p, cost);
		} else {
			NIC_C(nic, err_entry_not_found_eq_full)++;
			nic_send_ack(nic, p, C_RC_ENTRY_NOT_FOUND, 0, 0, cost);
		}
		return cost;
	}
	struct nic_ule hdr;
	hdr_from_pkt(&hdr, p);
	uint64_t walked = 0;
	struct nic_le *le;
	if (!pte->opts.is_matching) {
		for (le = pte->lists[C_PTL_LIST_PRIORITY].head; le && !(le->flags & C_LE_OP_PUT); le = le->next)
			walked++;
	} else {
		le = search_list(&pte->lists[C_PTL_LIST_PRIORITY], p->match_bits, p->initiator, C_LE_OP_PUT,
				 p->rlength, &walked);
	}
	cost += walked * np->match_per_le;
	NIC_C(nic, les_searched) += walked;
	if (le && le_out_of_bounds(le, p->remote_offset, p->rlength)) {
		le_bounds_fail(nic, pte, le, &hdr, C_EVENT_PUT, cost);
		nic_send_ack(nic, p, C_RC_ADDR_OUT_OF_RANGE, C_PTL_LIST_PRIORITY, 0, cost + np->ack_gen);
		return cost;
	}
	if (le) {
		NIC_C(nic, net_match_priority[pte->pe])++;
		NIC_C(nic, net_match_success[pte->pe])++;
		if (le->flags & C_LE_USE_ONCE)
			NIC_C(nic, net_match_useonce[pte->pe])++;
		bool retired;
		nic_deliver_put(nic, pte, le, &hdr, p, C_EVENT_PUT, cost, false, &retired);
		nic_send_ack(nic, p, C_RC_OK, C_PTL_LIST_PRIORITY, p->rlength, cost + np->ack_gen);
		if (retired)
			le_remove(nic, pte, le);
		return cost;
	}
	if (!pte->opts.is_matching) {
		nic_send_ack(nic, p, C_RC_ENTRY_NOT_FOUND, 0, 0, cost);
		return cost;
	}
	if (pte->state == C_PTLTE_SOFTWARE_MANAGED) {
		put_to_request(nic, pte, p, &hdr, cost);
		return cost;
	}
	lpe_put_unexpected(nic, pte, p, &hdr, cost);
	return cost;
}

/* No receive matched an enabled PtlTE: land the message in an overflow buffer and remember its header. */
static void lpe_put_unexpected(struct nic *nic, struct nic_pte *pte, struct nic_pkt *p, struct nic_ule *hdr,
			       simtime_t cost)
{
	uint64_t walked = 0;
	struct nic_le *ob = search_list(&pte->lists[C_PTL_LIST_OVERFLOW], p->match_bits, p->initiator, C_LE_OP_PUT,
					p->payload_len, &walked);
	cost += walked * nic->p->match_per_le;
	NIC_C(nic, les_searched) += walked;
	if (!ob) {
		if (pte->opts.en_flowctrl) {
			NIC_C(nic, err_pt_disabled_no_match_in_overflow)++;
			nic_pte_auto_state(nic, pte, C_PTLTE_DISABLED, C_SC_FC_NO_MATCH, cost);
			lpe_drop(nic, pte, p, cost);
		} else {
			NIC_C(nic, err_entry_not_found_no_match_in_overflow)++;
			nic_send_ack(nic, p, C_RC_ENTRY_NOT_FOUND, 0, 0, cost);
		}
		return;
	}
	if (!nic_le_alloc(nic, pte)) {
		NIC_C(nic, err_no_space_net)++;
		if (pte->opts.en_sw_transition) {
			nic_pte_auto_state(nic, pte, C_PTLTE_SOFTWARE_MANAGED, C_SC_SM_UNEXPECTED_FAIL, cost);
			put_to_request(nic, pte, p, hdr, cost);
		} else if (pte->opts.en_flowctrl) {
			NIC_C(nic, err_pt_disabled_cant_alloc_unexpected)++;
			nic_pte_auto_state(nic, pte, C_PTLTE_DISABLED, C_SC_FC_UNEXPECTED_FAIL, cost);
			lpe_drop(nic, pte, p, cost);
		} else {
			NIC_C(nic, err_entry_not_found_cant_alloc_unexpected)++;
			nic_send_ack(nic, p, C_RC_ENTRY_NOT_FOUND, 0, 0, cost);
		}
		return;
	}
	NIC_C(nic, net_match_overflow[pte->pe])++;
	NIC_C(nic, net_match_success[pte->pe])++;
	/* The overflow buffer takes the eager bytes; the header goes on the UNEXPECTED list. */
	struct nic_ule *u = pool_get(&nic->rec->pkt_ule);
	*u = *hdr;
	struct nic_le *ule = &u->le;
	ule->pte = pte;
	ule->list = C_PTL_LIST_UNEXPECTED;
	ule->flags = 0;
	ule->ctn = NIC_NONE;
	ule->start = ob->start + ob->offset;
	ule->buffer_id = ob->buffer_id;
	ule->user_ptr = ob->user_ptr;
	bool retired; /* the overflow buffer holds the eager part only */
	nic_deliver_put(nic, pte, ob, hdr, p, C_EVENT_PUT, cost, true, &retired);
	nic_le_list_append(&pte->lists[C_PTL_LIST_UNEXPECTED], ule);
	nic_send_ack(nic, p, C_RC_OK, C_PTL_LIST_OVERFLOW, p->rlength, cost + nic->p->ack_gen);
	if (retired)
		le_remove(nic, pte, ob);
}

/* ---------------------------------------------------------------- network Get */

static simtime_t lpe_get(struct nic *nic, struct nic_pte *pte, struct nic_pkt *p)
{
	const struct nic_params *np = nic->p;
	simtime_t cost = np->match_base;
	NIC_C(nic, get_cmds)++;
	NIC_C(nic, net_match_requests[pte->pe])++;
	struct nic_pkt *r = nic_pkt_new(nic);
	r->type = PKT_REPLY;
	r->op = p->op;
	r->msg.src = nic->addr;
	r->msg.dst = p->msg.src;
	r->msg.vni = p->msg.vni;
	r->msg.tc = p->msg.tc;
	r->msg.flags = FABRIC_BULK;
	r->initiator = p->initiator;
	r->match_bits = p->match_bits;
	if (pte->state != C_PTLTE_ENABLED && pte->state != C_PTLTE_SOFTWARE_MANAGED) {
		r->rc = C_RC_PT_DISABLED;
		nic_send_pkt(nic, r, cost + np->ack_gen);
		return cost;
	}
	uint64_t walked = 0;
	struct nic_le *le;
	if (!pte->opts.is_matching) {
		for (le = pte->lists[C_PTL_LIST_PRIORITY].head; le && !(le->flags & C_LE_OP_GET); le = le->next)
			walked++;
	} else {
		le = search_list(&pte->lists[C_PTL_LIST_PRIORITY], p->match_bits, p->initiator, C_LE_OP_GET, 0,
				 &walked);
	}
	cost += walked * np->match_per_le;
	NIC_C(nic, les_searched) += walked;
	if (!le) {
		r->rc = C_RC_ENTRY_NOT_FOUND;
		nic_send_pkt(nic, r, cost + np->ack_gen);
		return cost;
	}
	if (le_out_of_bounds(le, p->remote_offset, p->rlength)) {
		struct nic_ule hdr;
		hdr_from_pkt(&hdr, p);
		le_bounds_fail(nic, pte, le, &hdr, C_EVENT_GET, cost);
		r->rc = C_RC_ADDR_OUT_OF_RANGE;
		nic_send_pkt(nic, r, cost + np->ack_gen);
		return cost;
	}
	NIC_C(nic, net_match_priority[pte->pe])++;
	NIC_C(nic, net_match_success[pte->pe])++;
	uint64_t offset = (le->flags & C_LE_MANAGE_LOCAL) ? le->offset : p->remote_offset;
	uint64_t space = le->length > offset ? le->length - offset : 0;
	uint32_t mlength = p->rlength < space ? p->rlength : (uint32_t)space;
	uint64_t src = le->start + offset;
	r->rc = C_RC_OK;
	r->payload_len = mlength;
	r->mlength = mlength;
	r->msg.bytes = mlength;
	if (mlength && pte->lni->mem) {
		r->payload = nic_payload_alloc(mlength);
		if (nic_mem_read(pte->lni, src, r->payload, mlength) != 0) {
			nic_payload_free(r->payload);
			r->payload = NULL;
			r->rc = C_RC_PERM_VIOLATION;
		}
	}
	if (le->flags & C_LE_MANAGE_LOCAL)
		le->offset += mlength;
	bool retired = le_retire(le);
	access_note(pte, le, src, mlength, false);
	simtime_t read_done;
	simtime_t dma = nic_dma_read(nic, mlength, cost, &read_done);
	le_busy(nic, le, read_done);
	struct nic_ule hdr;
	hdr_from_pkt(&hdr, p);
	hdr.rlength = p->rlength;
	if (pte->opts.en_event_match) {
		struct nic_event mev;
		nic_event_from_le(&mev, C_EVENT_MATCH, le);
		nic_event_hdr(&mev, &hdr);
		mev.start = src;
		nic_post_target_event(nic, pte, &mev, cost);
	}
	if (retired)
		post_auto_unlink(nic, pte, le, cost);
	struct nic_event ev;
	nic_event_from_le(&ev, C_EVENT_GET, le);
	nic_event_hdr(&ev, &hdr);
	ev.rc = r->rc;
	ev.start = src;
	ev.mlength = mlength;
	if (retired)
		ev.flags |= NIC_EVF_AUTO_UNLINKED;
	if (!(le->flags & C_LE_EVENT_COMM_DISABLE) && !((le->flags & C_LE_EVENT_SUCCESS_DISABLE) && r->rc == C_RC_OK))
		nic_post_target_event(nic, pte, &ev, read_done);
	le_ct(nic, le, mlength, r->rc == C_RC_OK);
	nic_send_pkt(nic, r, dma);
	if (retired)
		le_remove(nic, pte, le);
	return cost;
}


/* ---------------------------------------------------------------- network AMO */

/* An atomic: matched like a Put (a fetching one like a Get: upstream addresses it to the MR's read index),
 * then applied by the NIC's AMO unit.  The unit takes one atomic at a time in arrival order (amo_unit_ns
 * each), after the element's host read (a PCIe round trip); the element is written back and the previous
 * value returned in the reply.  The read-modify-write happens here, at one instant of simulated time, so
 * concurrent atomics on one element from any number of initiators give the serialised result. */
static simtime_t lpe_amo(struct nic *nic, struct nic_pte *pte, struct nic_pkt *p)
{
	const struct nic_params *np = nic->p;
	simtime_t cost = np->match_base;
	bool fetch = p->amo_fetch;
	uint8_t ev_type = fetch ? C_EVENT_FETCH_ATOMIC : C_EVENT_ATOMIC;
	nic->cv[fetch ? nic_cix.fetch_amo_cmds : nic_cix.amo_cmds]++;
	NIC_C(nic, net_match_requests[pte->pe])++;
	uint32_t len = nic_amo_type_size(p->amo_type);
	uint8_t rc = C_RC_OK;
	struct nic_le *le = NULL;
	uint64_t walked = 0;
	uint32_t need = fetch ? C_LE_OP_GET : C_LE_OP_PUT;
	if (pte->state != C_PTLTE_ENABLED && pte->state != C_PTLTE_SOFTWARE_MANAGED) {
		rc = C_RC_PT_DISABLED;
	} else if (!pte->opts.is_matching) {
		for (le = pte->lists[C_PTL_LIST_PRIORITY].head; le && !(le->flags & need); le = le->next)
			walked++;
	} else {
		le = search_list(&pte->lists[C_PTL_LIST_PRIORITY], p->match_bits, p->initiator, need, 0, &walked);
	}
	cost += walked * np->match_per_le;
	NIC_C(nic, les_searched) += walked;
	if (rc == C_RC_OK && !le)
		rc = C_RC_ENTRY_NOT_FOUND;
	uint64_t offset = le && (le->flags & C_LE_MANAGE_LOCAL) ? le->offset : p->remote_offset;
	if (rc == C_RC_OK && le_out_of_bounds(le, offset, len)) {
		struct nic_ule hdr;
		hdr_from_pkt(&hdr, p);
		hdr.rlength = len;
		le_bounds_fail(nic, pte, le, &hdr, ev_type, cost);
		rc = C_RC_ADDR_OUT_OF_RANGE;
		le = NULL;
	}
	uint8_t old[C_AMO_OPERAND_BYTES] = { 0 };
	simtime_t done = cost;
	if (le) {
		NIC_C(nic, net_match_priority[pte->pe])++;
		NIC_C(nic, net_match_success[pte->pe])++;
		/* The AMO unit: in arrival order, one at a time, after the element's host read. */
		simtime_t now = sim_now(nic->sim);
		simtime_t start = now + cost + 2 * np->pcie_latency;
		if (start < nic->amo_free)
			start = nic->amo_free;
		nic->amo_free = start + np->amo_unit;
		done = nic->amo_free - now;
		uint64_t addr = le->start + offset;
		if (pte->lni->mem && p->payload) {
			uint8_t elem[C_AMO_OPERAND_BYTES];
			if (nic_mem_read(pte->lni, addr, elem, len) != 0) {
				rc = C_RC_PERM_VIOLATION;
			} else {
				memcpy(old, elem, len);
				nic_amo_apply(p->amo_op, p->amo_cswap, p->amo_type, elem, p->payload,
					      p->payload + C_AMO_OPERAND_BYTES);
				if (nic_mem_write(pte->lni, addr, elem, len) != 0)
					rc = C_RC_PERM_VIOLATION;
			}
		}
		access_note(pte, le, addr, len, true);
		bool retired = le_retire(le);
		struct nic_ule hdr;
		hdr_from_pkt(&hdr, p);
		hdr.rlength = len;
		if (pte->opts.en_event_match) {
			struct nic_event mev;
			nic_event_from_le(&mev, C_EVENT_MATCH, le);
			nic_event_hdr(&mev, &hdr);
			mev.start = addr;
			nic_post_target_event(nic, pte, &mev, cost);
		}
		if (retired)
			post_auto_unlink(nic, pte, le, cost);
		/* The target event follows the element's write back. */
		simtime_t written = done + nic_dma_time(nic, len);
		le_busy(nic, le, written);
		struct nic_event ev;
		nic_event_from_le(&ev, ev_type, le);
		nic_event_hdr(&ev, &hdr);
		ev.rc = rc;
		ev.start = addr;
		ev.mlength = rc == C_RC_OK ? len : 0;
		if (retired)
			ev.flags |= NIC_EVF_AUTO_UNLINKED;
		if (!(le->flags & C_LE_EVENT_COMM_DISABLE) && !((le->flags & C_LE_EVENT_SUCCESS_DISABLE) && rc == C_RC_OK))
			nic_post_target_event(nic, pte, &ev, written);
		le_ct(nic, le, len, rc == C_RC_OK);
		if (retired)
			le_remove(nic, pte, le);
	}
	if (!fetch) {
		nic_send_ack(nic, p, rc, C_PTL_LIST_PRIORITY, rc == C_RC_OK ? len : 0, done);
		return cost;
	}
	struct nic_pkt *r = nic_pkt_new(nic);
	r->type = PKT_REPLY;
	r->op = p->op;
	r->rc = rc;
	r->msg.src = nic->addr;
	r->msg.dst = p->msg.src;
	r->msg.vni = p->msg.vni;
	r->msg.tc = p->msg.tc;
	r->msg.flags = FABRIC_ORDERED;
	r->initiator = p->initiator;
	r->match_bits = p->match_bits;
	if (rc == C_RC_OK) {
		r->payload_len = r->mlength = r->msg.bytes = len;
		r->payload = nic_payload_alloc(len);
		memcpy(r->payload, old, len);
	}
	nic_send_pkt(nic, r, done + np->ack_gen);
	return cost;
}

/* ---------------------------------------------------------------- dispatch */

static simtime_t lpe_pkt(struct nic *nic, struct nic_pkt *p)
{
	uint8_t rc = C_RC_OK;
	struct nic_pte *pte = nic_pte_resolve(nic, p->msg.vni, p->dst_pid, p->index, p->msg.src == nic->addr, &rc);
	simtime_t cost = nic->p->match_base;
	if (pte) {
		cost = p->type == PKT_PUT ? lpe_put(nic, pte, p)
		     : p->type == PKT_AMO ? lpe_amo(nic, pte, p)
					  : lpe_get(nic, pte, p);
	} else {
		nic->cv[rc == C_RC_VNI_NOT_FOUND ? nic_cix.vni_not_found : nic_cix.ptlte_not_found]++;
		NIC_C(nic, err_invalid_endpoint)++;
		if (p->type == PKT_PUT || (p->type == PKT_AMO && !p->amo_fetch)) {
			nic_send_ack(nic, p, rc, 0, 0, cost);
		} else {
			struct nic_pkt *r = nic_pkt_new(nic);
			r->type = PKT_REPLY;
			r->rc = rc;
			r->op = p->op;
			r->msg.src = nic->addr;
			r->msg.dst = p->msg.src;
			r->msg.vni = p->msg.vni;
			r->msg.flags = FABRIC_ORDERED;
			nic_send_pkt(nic, r, cost + nic->p->ack_gen);
		}
	}
	nic_pkt_free(nic, p);
	return cost;
}

static void pe_run(struct sim *sim, void *obj, uint64_t arg)
{
	struct nic *nic = obj;
	struct nic_pe *pe = &nic->pe[arg];
	if (!pe->qlen) {
		pe->busy = false;
		return;
	}
	struct nic_work *w = pe->q[pe->qhead];
	pe->qhead = (pe->qhead + 1) & (pe->qcap - 1);
	if (!--pe->qlen) { /* drained: the next item goes to the PE's first own slot */
		if (pe->q != pe->inl)
			pe_fifo_move(pe, NIC_PE_INLINE);
		else
			pe->qhead = 0;
	}
	simtime_t cost;
	if (w->kind == WORK_PKT) {
		nic->trs_used--; /* answered as this work completes (ACK, NACK or reply) */
		cost = lpe_pkt(nic, w->pkt);
		if (w->pct_open)
			cost += nic->p->pct_conn; /* the target connection's open and close handshake */
	} else
		cost = nic_lpe_tgt_cmd(nic, w);
	if (nic->active)
		NIC_C(nic, pe_busy_ps[arg]) += cost;
	pool_put(&nic->rec->le_work, w);
	sim_schedule(sim, cost, pe_run, nic, arg);
}

/* Fabric delivery: responses go to the initiator side; requests queue at the PtlTE's PE. */
void nic_lpe_rx(struct sim *sim, void *nic_obj, struct fabric_msg *m)
{
	struct nic *nic = nic_obj;
	struct nic_pkt *p = (struct nic_pkt *)m;
	(void)sim;
	if (nic->active) {
		NIC_C(nic, pkts_rx)++;
		NIC_C(nic, rx_bytes) += m->bytes;
	} else {
		nic_activate(nic);
		NIC_C(nic, pkts_rx)++;
		NIC_C(nic, rx_bytes) += m->bytes;
	}
	if (p->type == PKT_ACK || p->type == PKT_REPLY || p->type == PKT_NACK) {
		nic_initiator_rx(nic, p);
		return;
	}
	/* A request arrives on a PCT connection (pct.c): with every TCT held by other connections the PCT refuses
	 * it (C_RC_NO_TARGET_CONN) and the initiator's retry handler sends it again. */
	int conn = nic_pct_tct_use(nic, p);
	if (conn < 0) {
		nic_send_nack(nic, p);
		return;
	}
	/* A request holds a target request state (TRS) until it is answered; with none left the PCT refuses
	 * it and the initiator's retry handler sends it again. */
	if (nic->trs_used >= nic->p->trs_entries) {
		NIC_C(nic, no_trs_nacks)++;
		nic_send_nack(nic, p);
		return;
	}
	if (++nic->trs_used > NIC_C(nic, trs_high_water))
		NIC_C(nic, trs_high_water) = nic->trs_used;
	/* The PE is chosen from the mapping; unknown destinations are answered by PE 0. */
	uint8_t rc;
	struct nic_pte *pte = nic_pte_resolve(nic, m->vni, p->dst_pid, p->index, m->src == nic->addr, &rc);
	struct nic_work *w = pool_get(&nic->rec->le_work);
	memset(w, 0, sizeof(*w));
	w->kind = WORK_PKT;
	w->pct_open = conn == 1;
	w->nic = nic;
	w->pkt = p;
	nic_pe_submit(nic, pte ? pte->pe : 0, w);
}

/* pe_run(nic, pe): the PE record (its FIFO's state and first slots) sits hundreds of bytes into the NIC
 * record, away from the line the queue prefetches, and may straddle two lines. */
static void pe_run_prefetch(const void *obj, uint64_t arg)
{
	const struct nic_pe *pe = &((const struct nic *)obj)->pe[arg & (C_PE_COUNT - 1)];
	__builtin_prefetch(pe);
	__builtin_prefetch((const char *)(pe + 1) - 1);
}

/* ... one pop ahead, with the PE's line in cache: the work item at the head of its queue (a packet or a
 * target command, written when it was queued, long before). */
static void pe_run_prefetch_next(const void *obj, uint64_t arg)
{
	const struct nic *nic = obj;
	const struct nic_pe *pe = &nic->pe[arg & (C_PE_COUNT - 1)];
	if (pe->qlen)
		__builtin_prefetch(pe->q[pe->qhead], 1);
}

/* ... and one pop later, with the work item in cache: a request's packet, or a target command's PtlTE
 * table entry. */
static void pe_run_prefetch_last(const void *obj, uint64_t arg)
{
	const struct nic *nic = obj;
	const struct nic_pe *pe = &nic->pe[arg & (C_PE_COUNT - 1)];
	if (!pe->qlen)
		return;
	const struct nic_work *w = pe->q[pe->qhead];
	if (w->kind == WORK_PKT)
		__builtin_prefetch(w->pkt);
	else if (w->cmd.tgt.ptn < nic->ptes.n)
		__builtin_prefetch(&nic->ptes.rec[w->cmd.tgt.ptn]);
}

/* A message about to be delivered (the fabric's fabric_deliver_prefetch, NIC record in cache): the receive
 * counters; for a request, the target connection table and the PtlTE map slot it resolves through, then the
 * PtlTE itself (nic_pte_resolve_prefetch); for a response, the initiator's transaction record. */
static void lpe_rx_prefetch(const void *obj, const struct fabric_msg *m, unsigned stage)
{
	const struct nic *nic = obj;
	const struct nic_pkt *p = (const struct nic_pkt *)m;
	bool response = p->type == PKT_ACK || p->type == PKT_REPLY || p->type == PKT_NACK;
	if (stage == 0) {
		__builtin_prefetch(&NIC_C(nic, pkts_rx), 1);
		if (response)
			__builtin_prefetch(p->op);
	}
	if (response)
		return;
	nic_pte_resolve_prefetch(nic, m->vni, p->dst_pid, p->index, stage);
	/* ... then, a pop apart each, the target connection's table record, slot and FIFO, expiring slot */
	nic_pct_prefetch(nic, p, true, stage);
}

void nic_lpe_prefetch_hooks(struct sim *sim)
{
	struct fabric *f = fabric_of(sim);
	if (f)
		fabric_deliver_prefetch(f, nic_lpe_rx, lpe_rx_prefetch);
	sim_prefetch_hook_stage(sim, pe_run, 2, pe_run_prefetch_last);
	sim_prefetch_hook(sim, pe_run, pe_run_prefetch);
	sim_prefetch_hook_stage(sim, pe_run, 1, pe_run_prefetch_next);
}
