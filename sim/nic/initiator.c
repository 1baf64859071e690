/* The initiator side: executing transmit commands (Put, IDC Put, rendezvous Put, Get, CT ops), building
 * packets, and completing transactions when their ACK or Get reply comes back.  The transmit engine is one
 * server per NIC: each command costs tx_cmd (plus idc_per_64b per extra IDC slot).  A DMA Put reads its
 * payload over PCIe before the first byte leaves; its SEND event (local completion) follows that read. */
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

struct nic_pkt *nic_pkt_new(struct nic *nic)
{
	struct nic_pkt *p = pool_get(&nic->rec->pkt_ule);
	memset(p, 0, sizeof(*p));
	p->msg.ctx = p;
	return p;
}

void nic_pkt_free(struct nic *nic, struct nic_pkt *p)
{
	nic_payload_free(p->payload);
	p->payload = NULL;
	/* Packets are allocated by the sender and freed by the receiver: pools are per NIC, so a packet
	 * returns to the receiving NIC's pool (the pools only hold equal-sized records). */
	pool_put(&nic->rec->pkt_ule, p);
}

static void send_now(struct sim *sim, void *obj, uint64_t arg)
{
	struct nic *nic = obj;
	struct nic_pkt *p = (struct nic_pkt *)(uintptr_t)arg;
	NIC_C(nic, pkts_tx)++;
	NIC_C(nic, tx_bytes) += p->msg.bytes;
	if ((p->type == PKT_PUT || p->type == PKT_GET || p->type == PKT_AMO) && nic_pct_sct_use(nic, p) &&
	    nic->p->pct_conn) {
		/* The connection's open and later close handshake occupy the transmit engine (pct_conn_ns). */
		simtime_t now = sim_now(sim);
		nic->tx_free = (nic->tx_free > now ? nic->tx_free : now) + nic->p->pct_conn;
		NIC_C(nic, tx_busy_ps) += nic->p->pct_conn;
	}
	fabric_send(sim, nic->fabric, &p->msg);
}

void nic_send_pkt(struct nic *nic, struct nic_pkt *p, simtime_t delay)
{
	sim_schedule(nic->sim, delay, send_now, nic, (uint64_t)(uintptr_t)p);
}

void nic_send_ack(struct nic *nic, const struct nic_pkt *req, uint8_t rc, uint8_t list, uint32_t mlength,
		  simtime_t delay)
{
	struct nic_pkt *a = nic_pkt_new(nic);
	a->type = PKT_ACK;
	a->rc = rc;
	a->list = list;
	a->mlength = mlength;
	a->op = req->op;
	a->initiator = req->initiator;
	a->match_bits = req->match_bits;
	a->msg.src = nic->addr;
	a->msg.dst = req->msg.src;
	a->msg.vni = req->msg.vni;
	a->msg.tc = req->msg.tc;
	a->msg.flags = FABRIC_ORDERED;
	a->msg.bytes = 0;
	nic_send_pkt(nic, a, delay + nic->p->ack_gen);
}

/* A request the target cannot take (no TRS left): it goes back to its initiator as a NACK, header only;
 * the initiator's retry handler resends it whole (nic_initiator_rx). */
void nic_send_nack(struct nic *nic, struct nic_pkt *req)
{
	struct nic_pkt *n = nic_pkt_new(nic);
	*n = *req;
	req->payload = NULL; /* the bytes travel back with the NACK (the initiator still has them) */
	n->msg.ctx = n;
	n->msg.sent = n->msg.first_arrival = 0;
	n->orig_type = req->type;
	n->orig_bytes = req->msg.bytes;
	n->type = PKT_NACK;
	n->msg.src = req->msg.dst;
	n->msg.dst = req->msg.src;
	n->msg.bytes = 0;
	n->msg.flags = FABRIC_ORDERED;
	nic_pkt_free(nic, req);
	nic_send_pkt(nic, n, nic->p->ack_gen);
}

static void rh_resend(struct nic *nic, struct nic_pkt *nack)
{
	struct nic_pkt *p = nic_pkt_new(nic);
	*p = *nack;
	nack->payload = NULL;
	p->msg.ctx = p;
	p->msg.sent = p->msg.first_arrival = 0;
	p->type = p->orig_type;
	p->msg.src = nack->msg.dst;
	p->msg.dst = nack->msg.src;
	p->msg.bytes = p->orig_bytes;
	nic_pkt_free(nic, nack);
	NIC_C(nic, rh_retries)++;
	nic_send_pkt(nic, p, nic->p->rh_retry);
}

/* ---------------------------------------------------------------- command execution */

static void init_event(struct nic *nic, const struct nic_op *op, uint8_t type, uint8_t rc, uint32_t mlength,
		       simtime_t delay)
{
	if (op->eqn == NIC_NONE || !op->lni->live)
		return;
	struct nic_event ev = { 0 };
	ev.type = type;
	ev.rc = rc;
	ev.user_ptr = op->user_ptr;
	ev.mlength = mlength;
	ev.rlength = op->length;
	ev.match_bits = op->match_bits;
	ev.rendezvous_id = op->rendezvous_id;
	if (op->cmd_op == NIC_CMD_RENDEZVOUS_PUT)
		ev.flags |= NIC_EVF_RENDEZVOUS;
	nic_eq_post(nic, op->eqn, &ev, delay, false);
}

static void op_ct(struct nic *nic, const struct nic_op *op, uint32_t flag, uint32_t bytes, bool ok)
{
	if (op->ctn == NIC_NONE || !(op->flags & flag))
		return;
	if (!ok)
		nic_ct_add(nic, op->ctn, 0, 1);
	else
		nic_ct_add(nic, op->ctn, (op->flags & NIC_DMA_EVENT_CT_BYTES) ? bytes : 1, 0);
}

/* The EQ a command's initiator events go to: its own, else its command queue's. */
static uint32_t work_eqn(const struct nic_work *w)
{
	return w->cmd.dma.eqn != NIC_NONE ? w->cmd.dma.eqn : w->q_eqn;
}

static struct nic_op *op_new(struct nic *nic, struct nic_work *w)
{
	const struct nic_dma_cmd *d = &w->cmd.dma;
	struct nic_op *op = pool_get(&nic->rec->op);
	memset(op, 0, sizeof(*op));
	/* A fetching AMO completes like a Get (REPLY with data), a plain one like a Put (ACK). */
	op->kind = w->cmd.op == NIC_CMD_GET || (w->cmd.op == NIC_CMD_AMO && w->cmd.dma.amo_fetch) ? OP_GET : OP_PUT;
	op->cmd_op = w->cmd.op;
	op->flags = d->flags;
	op->lni = w->lni;
	op->eqn = work_eqn(w);
	op->ctn = d->ctn;
	op->user_ptr = d->user_ptr;
	op->local_addr = d->local_addr;
	op->match_bits = d->match_bits;
	op->length = d->length;
	op->rendezvous_id = d->rendezvous_id;
	return op;
}

static struct nic_pkt *pkt_from_cmd(struct nic *nic, const struct nic_dma_cmd *d, uint8_t type)
{
	struct nic_pkt *p = nic_pkt_new(nic);
	p->type = type;
	p->dst_pid = d->dst_pid;
	p->index = d->index;
	p->initiator = C_MATCH_ID(nic->addr, d->src_pid);
	p->rlength = d->length;
	p->match_bits = d->match_bits;
	p->header_data = d->header_data;
	p->remote_offset = d->remote_offset;
	p->rendezvous_id = d->rendezvous_id;
	p->msg.src = nic->addr;
	p->msg.dst = d->dst_nic;
	p->msg.vni = d->vni;
	p->msg.tc = d->tc;
	p->msg.flags = (d->flags & NIC_DMA_NOMATCH) ? FABRIC_BULK : FABRIC_ORDERED;
	if (d->flags & NIC_DMA_NOMATCH)
		p->flags |= PKTF_NOMATCH;
	if (d->flags & NIC_DMA_RESTRICTED)
		p->flags |= PKTF_RESTRICTED;
	return p;
}

/* Packets leave in command order (the provider relies on send-after-send ordering): a Put waiting for its
 * payload read holds back the commands behind it. */
static simtime_t tx_in_order(struct nic *nic, simtime_t delay)
{
	simtime_t at = sim_now(nic->sim) + delay;
	if (at < nic->tx_order)
		at = nic->tx_order;
	nic->tx_order = at;
	return at - sim_now(nic->sim);
}

static void tx_put(struct nic *nic, struct nic_work *w)
{
	const struct nic_dma_cmd *d = &w->cmd.dma;
	struct nic_op *op = op_new(nic, w);
	struct nic_pkt *p = pkt_from_cmd(nic, d, PKT_PUT);
	p->op = op;
	uint32_t carry = d->length;
	if (w->cmd.op == NIC_CMD_RENDEZVOUS_PUT) {
		p->flags |= PKTF_RENDEZVOUS;
		if (d->eager_length < carry)
			carry = d->eager_length;
	}
	p->payload_len = carry;
	p->msg.bytes = carry;
	simtime_t read = 0, send = 0;
	if (w->cmd.op == NIC_CMD_IDC_PUT) {
		p->payload = w->idc;
		w->idc = NULL;
	} else if (carry) {
		/* A put without payload (upstream sends every zero-byte message as an eager DMA put) reads nothing
		 * from the host: its packet is the header the command already holds. */
		send = nic_dma_read(nic, carry, 0, &read);
		if (w->lni->mem) {
			p->payload = nic_payload_alloc(carry);
			if (nic_mem_read(w->lni, d->local_addr, p->payload, carry) != 0) {
				/* The NIC could not read the source: the command fails locally. */
				nic_payload_free(p->payload);
				p->payload = NULL;
				init_event(nic, op, C_EVENT_ACK, C_RC_PERM_VIOLATION, 0, nic->p->pcie_latency);
				op_ct(nic, op, NIC_DMA_EVENT_CT_ACK, 0, false);
				pool_put(&nic->rec->op, op);
				nic_pkt_free(nic, p);
				return;
			}
		}
	}
	if (!(d->flags & NIC_DMA_EVENT_SEND_DISABLE))
		init_event(nic, op, C_EVENT_SEND, C_RC_OK, d->length, read);
	op_ct(nic, op, NIC_DMA_EVENT_CT_SEND, d->length, true);
	nic_send_pkt(nic, p, tx_in_order(nic, send));
}

static void tx_get(struct nic *nic, struct nic_work *w)
{
	const struct nic_dma_cmd *d = &w->cmd.dma;
	struct nic_op *op = op_new(nic, w);
	struct nic_pkt *p = pkt_from_cmd(nic, d, PKT_GET);
	p->op = op;
	p->msg.flags = FABRIC_ORDERED;
	p->msg.bytes = 0;
	nic_send_pkt(nic, p, tx_in_order(nic, 0));
}

/* An AMO carries its operands to the target, whose AMO unit applies it (lpe.c); the operands are in the
 * command, so there is no host read and no SEND event. */
static void tx_amo(struct nic *nic, struct nic_work *w)
{
	const struct nic_dma_cmd *d = &w->cmd.dma;
	struct nic_op *op = op_new(nic, w);
	struct nic_pkt *p = pkt_from_cmd(nic, d, PKT_AMO);
	p->op = op;
	p->msg.flags = FABRIC_ORDERED;
	p->amo_op = d->amo_op;
	p->amo_cswap = d->amo_cswap;
	p->amo_type = d->amo_type;
	p->amo_fetch = d->amo_fetch;
	p->payload = w->idc;
	w->idc = NULL;
	p->payload_len = 2 * C_AMO_OPERAND_BYTES;
	/* On the wire: the element, and the comparand of a compare-and-swap. */
	p->msg.bytes = d->amo_op == C_AMO_OP_CSWAP || d->amo_op == C_AMO_OP_AXOR ? 2 * d->length : d->length;
	nic_send_pkt(nic, p, tx_in_order(nic, 0));
}

/* Transmit-engine time of one command. */
static simtime_t tx_cost(const struct nic *nic, const struct nic_work *w)
{
	simtime_t cost = nic->p->tx_cmd;
	if (w->cmd.op == NIC_CMD_IDC_PUT && w->cmd.dma.length > 0)
		cost += nic->p->idc_per_64b * ((w->cmd.dma.length + 63) / 64);
	if (w->cmd.op == NIC_CMD_AMO)
		cost += nic->p->idc_per_64b; /* the operand slot */
	return cost;
}

static void tx_exec(struct sim *sim, void *obj, uint64_t arg)
{
	struct nic_work *w = obj;
	struct nic *nic = w->nic;
	(void)sim;
	(void)arg;
	/* Busy time is counted as commands complete, so a queue left at the end of a run is not counted. */
	if (nic->active)
		NIC_C(nic, tx_busy_ps) += tx_cost(nic, w);
	switch (w->cmd.op) {
	case NIC_CMD_PUT:
	case NIC_CMD_IDC_PUT:
	case NIC_CMD_RENDEZVOUS_PUT: tx_put(nic, w); break;
	case NIC_CMD_GET: tx_get(nic, w); break;
	case NIC_CMD_AMO: tx_amo(nic, w); break;
	case NIC_CMD_CT_SET: nic_ct_set(nic, w->cmd.ct.ctn, w->cmd.ct.success, w->cmd.ct.failure); break;
	case NIC_CMD_CT_INC: nic_ct_add(nic, w->cmd.ct.ctn, w->cmd.ct.success, w->cmd.ct.failure); break;
	case NIC_CMD_CT_CANCEL: nic_ct_cancel(w->lni, w->cmd.ct.ctn); break;
	default: break;
	}
	nic_payload_free(w->idc);
	pool_put(&nic->rec->le_work, w);
}

void nic_tx_submit(struct nic *nic, struct nic_work *w)
{
	simtime_t now = sim_now(nic->sim);
	simtime_t start = now > nic->tx_free ? now : nic->tx_free;
	simtime_t cost = tx_cost(nic, w);
	nic->tx_free = start + cost;
	sim_schedule_at(nic->sim, start + cost, tx_exec, w, 0);
}

/* ---------------------------------------------------------------- hardware rendezvous Get */

void nic_issue_hw_rdzv_get(struct nic *nic, struct nic_pte *pte, const struct nic_le *le, uint64_t dst_addr,
			   uint32_t len, const struct nic_ule *hdr, simtime_t delay)
{
	struct nic_op *op = pool_get(&nic->rec->op);
	memset(op, 0, sizeof(*op));
	op->kind = OP_HW_RDZV_GET;
	op->lni = pte->lni;
	op->eqn = pte->eqn;
	op->ctn = NIC_NONE;
	op->ptn = pte->ptn;
	op->dst_addr = dst_addr;
	op->le_user_ptr = le->user_ptr;
	op->buffer_id = le->buffer_id;
	op->length = len;
	op->vni = hdr->vni;
	op->initiator = hdr->initiator;
	op->rlength = hdr->rlength;
	op->header_data = hdr->le.header_data;
	op->match_bits = hdr->le.match_bits;
	op->rendezvous_id = hdr->rendezvous_id;
	struct nic_pkt *p = nic_pkt_new(nic);
	p->type = PKT_GET;
	p->flags = PKTF_HW_RDZV_GET;
	p->op = op;
	p->dst_pid = (uint16_t)C_MATCH_ID_PID(hdr->initiator);
	p->index = NIC_RDZV_SRC_INDEX;
	p->initiator = C_MATCH_ID(nic->addr, C_PID_ANY);
	p->rlength = len;
	p->match_bits = hdr->le.match_bits;
	/* The Put carried the initiator's buffer address (use_offset_for_get): fetch what follows the
	 * eager part. */
	p->remote_offset = hdr->le.remote_offset + hdr->mlength;
	p->rendezvous_id = hdr->rendezvous_id;
	p->msg.src = nic->addr;
	p->msg.dst = C_MATCH_ID_NIC(hdr->initiator);
	p->msg.vni = hdr->vni;
	p->msg.flags = FABRIC_ORDERED;
	nic_send_pkt(nic, p, delay + nic->p->ack_gen);
}

/* ---------------------------------------------------------------- responses */

static void rx_reply(struct nic *nic, struct nic_pkt *p, struct nic_op *op)
{
	uint32_t len = p->rc == C_RC_OK ? p->payload_len : 0;
	/* A reply's data is written as its packets land (as a matched Put's, see lpe.c), so a large
	 * rendezvous or RMA Get completes one packet's write after its last byte, not a whole message's
	 * write later. */
	simtime_t dma = nic->p->pcie_latency + nic_dma_write_stream(nic, &p->msg, len);
	if (op->kind == OP_HW_RDZV_GET) {
		if (len && p->payload && op->lni->live)
			nic_mem_write(op->lni, op->dst_addr, p->payload, len);
		struct nic_pte *pte = nic_pte_lookup(nic, op->ptn);
		if (pte && pte->lni == op->lni) {
			struct nic_event ev = { 0 };
			ev.type = C_EVENT_REPLY;
			ev.rc = p->rc;
			ev.user_ptr = op->le_user_ptr;
			ev.buffer_id = op->buffer_id;
			ev.mlength = len;
			ev.rlength = op->length;
			ev.match_bits = op->match_bits;
			ev.header_data = op->header_data;
			ev.initiator = op->initiator;
			ev.vni = op->vni;
			ev.rendezvous_id = op->rendezvous_id;
			ev.start = op->dst_addr;
			ev.flags = NIC_EVF_RENDEZVOUS;
			nic_post_target_event(nic, pte, &ev, dma);
		}
		return;
	}
	if (len && p->payload && op->lni->live)
		nic_mem_write(op->lni, op->local_addr, p->payload, len);
	if (!((op->flags & NIC_DMA_EVENT_SUCCESS_DISABLE) && p->rc == C_RC_OK))
		init_event(nic, op, C_EVENT_REPLY, p->rc, len, dma);
	op_ct(nic, op, NIC_DMA_EVENT_CT_REPLY, len, p->rc == C_RC_OK);
}

void nic_initiator_rx(struct nic *nic, struct nic_pkt *p)
{
	struct nic_op *op = p->op;
	if (p->type == PKT_NACK) {
		rh_resend(nic, p);
		return;
	}
	if (p->type == PKT_ACK) {
		if (!((op->flags & NIC_DMA_EVENT_SUCCESS_DISABLE) && p->rc == C_RC_OK) && op->lni->live) {
			struct nic_event ev = { 0 };
			ev.type = C_EVENT_ACK;
			ev.rc = p->rc;
			ev.user_ptr = op->user_ptr;
			ev.mlength = p->mlength;
			ev.rlength = op->length;
			ev.ptl_list = p->list;
			ev.match_bits = op->match_bits;
			ev.rendezvous_id = op->rendezvous_id;
			if (op->cmd_op == NIC_CMD_RENDEZVOUS_PUT)
				ev.flags |= NIC_EVF_RENDEZVOUS;
			if (op->eqn != NIC_NONE)
				nic_eq_post(nic, op->eqn, &ev, nic->p->pcie_latency, false);
		}
		op_ct(nic, op, NIC_DMA_EVENT_CT_ACK, p->mlength, p->rc == C_RC_OK);
	} else {
		rx_reply(nic, p, op);
	}
	pool_put(&nic->rec->op, op);
	nic_pkt_free(nic, p);
}

/* send_now(nic, pkt): the NIC's transmit counters in its counter block. */
static void send_now_prefetch(const void *obj, uint64_t arg)
{
	const struct nic *nic = obj;
	(void)arg;
	__builtin_prefetch(&NIC_C(nic, pkts_tx));
	__builtin_prefetch(&NIC_C(nic, tx_bytes));
	nic_pct_prefetch(nic, (const struct nic_pkt *)(uintptr_t)arg, false, 0);
	fabric_send_prefetch(nic->fabric, &((const struct nic_pkt *)(uintptr_t)arg)->msg, 0);
}

/* ... one pop ahead: the source connection table's lines for this packet (a request opens or refreshes
 * its connection). */
static void send_now_prefetch_next(const void *obj, uint64_t arg)
{
	const struct nic *nic = obj;
	const struct nic_pkt *p = (const struct nic_pkt *)(uintptr_t)arg;
	if (p->type == PKT_PUT || p->type == PKT_GET || p->type == PKT_AMO)
		nic_pct_prefetch(nic, p, false, 1);
	fabric_send_prefetch(nic->fabric, &p->msg, 1);
}

/* ... and two more: the connection that expires first, the fabric's next levels (fabric_send_prefetch). */
static void send_now_prefetch_last(const void *obj, uint64_t arg)
{
	const struct nic *nic = obj;
	const struct nic_pkt *p = (const struct nic_pkt *)(uintptr_t)arg;
	if (p->type == PKT_PUT || p->type == PKT_GET || p->type == PKT_AMO)
		nic_pct_prefetch(nic, p, false, 2);
	fabric_send_prefetch(nic->fabric, &p->msg, 2);
}

static void send_now_prefetch_flow(const void *obj, uint64_t arg)
{
	const struct nic *nic = obj;
	fabric_send_prefetch(nic->fabric, &((const struct nic_pkt *)(uintptr_t)arg)->msg, 3);
}

/* tx_exec(work item): the item's second line (the command's DMA fields), the NIC record's lines the command
 * reads and writes (its counter pointer and parameters; the EQ table; the transmit engine's clocks; the
 * record pools), and the issuing LNI.  At the whole machine a client's NIC is cold by the time its command
 * reaches the transmit engine. */
static void tx_exec_prefetch(const void *obj, uint64_t arg)
{
	const struct nic_work *w = obj;
	const struct nic *nic = w->nic;
	(void)arg;
	__builtin_prefetch((const char *)w + 64);
	__builtin_prefetch(nic);
	__builtin_prefetch(&nic->eqs);
	__builtin_prefetch(&nic->tx_free, 1);
	__builtin_prefetch(&nic->rec);
	__builtin_prefetch(w->lni);
}

/* The EQ a Put's SEND event goes to, NIC_NONE for the other commands. */
static uint32_t tx_event_eqn(const struct nic_work *w)
{
	if (w->cmd.op != NIC_CMD_PUT && w->cmd.op != NIC_CMD_IDC_PUT && w->cmd.op != NIC_CMD_RENDEZVOUS_PUT)
		return NIC_NONE;
	return work_eqn(w);
}

/* ... one pop ahead, with those in cache: the counters it adds to and the EQ table's slot of the SEND
 * event's EQ; then that EQ's record. */
static void tx_exec_prefetch_next(const void *obj, uint64_t arg)
{
	const struct nic_work *w = obj;
	const struct nic *nic = w->nic;
	(void)arg;
	uint32_t eqn = tx_event_eqn(w);
	if (nic->active) {
		__builtin_prefetch(&NIC_C(nic, tx_busy_ps), 1);
		if (eqn != NIC_NONE)
			__builtin_prefetch(&NIC_C(nic, events_enqueued), 1);
	}
	if (eqn != NIC_NONE)
		nic_eq_prefetch(nic, eqn, 1);
}

static void tx_exec_prefetch_last(const void *obj, uint64_t arg)
{
	const struct nic_work *w = obj;
	uint32_t eqn = tx_event_eqn(w);
	(void)arg;
	if (eqn != NIC_NONE)
		nic_eq_prefetch(w->nic, eqn, 2);
}

void nic_initiator_prefetch_hooks(struct sim *sim)
{
	sim_prefetch_hook(sim, tx_exec, tx_exec_prefetch);
	sim_prefetch_hook_stage(sim, tx_exec, 1, tx_exec_prefetch_next);
	sim_prefetch_hook_stage(sim, tx_exec, 2, tx_exec_prefetch_last);
	sim_prefetch_hook(sim, send_now, send_now_prefetch);
	sim_prefetch_hook_stage(sim, send_now, 1, send_now_prefetch_next);
	sim_prefetch_hook_stage(sim, send_now, 2, send_now_prefetch_last);
	sim_prefetch_hook_stage(sim, send_now, 3, send_now_prefetch_flow);
}
