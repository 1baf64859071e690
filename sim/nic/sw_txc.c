/* Provider software: the transmit context.
 *
 * Protocol choice (FI_PROTO_CXI): zero bytes -> eager DMA; FI_INJECT or at most 192 B -> IDC; at most
 * FI_CXI_RDZV_THRESHOLD + FI_CXI_RDZV_GET_MIN -> eager DMA; larger -> rendezvous Put carrying
 * FI_CXI_RDZV_EAGER_SIZE bytes, the rest pulled by the target through the rendezvous-source PtlTE (index 255);
 * the send completes on its ACK and the source's GET event.
 *
 * Flow control, sender side: an ACK with C_RC_PT_DISABLED marks the peer disabled and parks every send still
 * queued to it; new sends to it get -FI_EAGAIN.  When none is pending any more, FC_NOTIFY(drops) goes to the
 * peer's control index (117); FC_RESUME from the peer replays the parked sends in order.  A control message
 * that finds no entry (ENTRY_NOT_FOUND) is resent after FI_CXI_FC_RETRY_USEC_DELAY. */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "sw_impl.h"

/* A destination a command can name: a pid of C_PID_ANY or above is no process (the NIC refuses the command,
 * and retrying it can never succeed). */
static bool dst_valid(struct sw_addr dst)
{
	return dst.pid < C_PID_ANY;
}

/* ---------------------------------------------------------------- rendezvous ids */

/* Ids are handed out lowest first and reused last-freed first (a stack that starts as 0, 1, 2, ...), so
 * only ids ever used take memory: the table grows with the most rendezvous sends ever outstanding, which
 * for most endpoints is none. */
static int rdzv_id_alloc(struct sw_ep *ep, struct sw_req *r)
{
	uint32_t id;
	if (ep->rdzv_nfree) {
		id = ep->rdzv_free[--ep->rdzv_nfree];
	} else {
		if (ep->rdzv_next == SW_RDZV_IDS)
			return -1;
		id = ep->rdzv_next++;
		if (id == ep->rdzv_cap) {
			ep->rdzv_cap = ep->rdzv_cap ? 2 * ep->rdzv_cap : 16;
			ep->rdzv_reqs = xrealloc(ep->rdzv_reqs, ep->rdzv_cap * sizeof(*ep->rdzv_reqs));
			ep->rdzv_free = xrealloc(ep->rdzv_free, ep->rdzv_cap * sizeof(*ep->rdzv_free));
		}
	}
	ep->rdzv_reqs[id] = r;
	r->rdzv_id = id;
	return 0;
}

static void rdzv_id_free(struct sw_ep *ep, struct sw_req *r)
{
	ep->rdzv_reqs[r->rdzv_id] = NULL;
	ep->rdzv_free[ep->rdzv_nfree++] = r->rdzv_id;
}

int sw_txc_init(struct sw_ep *ep)
{
	if (ep->attr.proto == SW_PROTO_CXI_RNR)
		return 0;
	/* Rendezvous source: one LE exposing the whole address space for Gets, events to the TX EQ. */
	struct nic_pte_opts o = { .is_matching = true };
	int rc = nic_pte_alloc(ep->lni, ep->eq_tx, &o, &ep->rdzv_ptn);
	if (rc)
		return rc;
	for (unsigned v = 0; v < ep->attr.num_vnis; v++)
		if ((rc = nic_pte_map(ep->lni, ep->rdzv_ptn, ep->attr.vnis[v], ep->pid, SW_PTL_IDX_RDZV_SRC)))
			return rc;
	sw_append(ep, ep->rdzv_ptn, C_PTL_LIST_PRIORITY, 0,
		  C_LE_OP_GET | C_LE_EVENT_UNLINK_DISABLE | C_LE_EVENT_LINK_DISABLE, 0, ~0ULL >> 8, 0, C_MATCH_ID_ANY,
		  0, ~0ULL, &ep->rdzv_src_obj);
	sw_setstate(ep, ep->rdzv_ptn, C_PTLTE_ENABLED, NIC_IGNORE_DROPS);
	return 0;
}

/* ---------------------------------------------------------------- commands */

static void put_cmd(struct sw_ep *ep, struct sw_req *r, struct nic_cmd *cp)
{
	struct nic_cmd c = { 0 };
	uint64_t mb = (r->tagged ? (SW_MB_TAGGED | (r->tag & SW_TAG_MASK)) : 0) |
		      ((r->flags & FI_REMOTE_CQ_DATA) ? SW_MB_CQ_DATA : 0);
	c.dma = (struct nic_dma_cmd){ .dst_nic = r->dst.nic, .dst_pid = r->dst.pid, .index = SW_PTL_IDX_RXQ,
				      .vni = r->dst.vni, .flags = NIC_DMA_EVENT_SEND_DISABLE, .local_addr = r->buf,
				      .length = (uint32_t)r->len, .header_data = r->data,
				      .user_ptr = (uint64_t)(uintptr_t)r, .src_pid = ep->pid, .eqn = NIC_NONE,
				      .ctn = NIC_NONE };
	if (ep->attr.proto == SW_PROTO_CXI_RNR)
		c.dma.index = SW_PTL_IDX_RNR_RXQ;
	switch (r->proto) {
	case SW_SEND_IDC:
		c.op = NIC_CMD_IDC_PUT;
		c.dma.idc_data = r->inject;
		break;
	case SW_SEND_EAGER: c.op = NIC_CMD_PUT; break;
	case SW_SEND_RDZV:
		c.op = NIC_CMD_RENDEZVOUS_PUT;
		mb |= SW_MB_RDZV | ((uint64_t)(r->rdzv_id >> 8) << SW_MB_RDZV_SHIFT);
		c.dma.rendezvous_id = (uint8_t)(r->rdzv_id & 0xff);
		c.dma.eager_length = ep->env->rdzv_eager_size;
		c.dma.remote_offset = r->buf;
		c.dma.flags |= NIC_DMA_USE_OFFSET_FOR_GET;
		break;
	}
	c.dma.match_bits = mb;
	*cp = c;
}

/* An application's send: -FI_EAGAIN when the TX queue has no room. */
static int emit_put(struct sw_ep *ep, struct sw_req *r)
{
	struct nic_cmd c;
	put_cmd(ep, r, &c);
	return sw_emit(ep, ep->txq, &c);
}

/* A send the software layer issues again on its own (flow-control replay, RNR retry): never lost. */
static void emit_put_internal(struct sw_ep *ep, struct sw_req *r)
{
	struct nic_cmd c;
	put_cmd(ep, r, &c);
	sw_emit_internal(ep, ep->txq, &c);
}

void sw_issue_get(struct sw_ep *ep, struct sw_addr src, uint64_t remote_offset, uint64_t mb, uint8_t rdzv_id,
		 uint64_t local, uint32_t len, void *user_ptr, uint32_t index, uint32_t flags)
{
	struct nic_cmd c = { .op = NIC_CMD_GET };
	c.dma = (struct nic_dma_cmd){ .dst_nic = src.nic, .dst_pid = src.pid, .index = (uint16_t)index,
				      .vni = src.vni, .flags = flags, .local_addr = local, .length = len,
				      .remote_offset = remote_offset, .match_bits = mb, .rendezvous_id = rdzv_id,
				      .user_ptr = (uint64_t)(uintptr_t)user_ptr, .src_pid = ep->pid, .eqn = ep->eq_rx,
				      .ctn = NIC_NONE };
	sw_emit_internal(ep, ep->txq, &c);
}

/* ---------------------------------------------------------------- completions */

static void send_report(struct sw_ep *ep, struct sw_req *r, uint8_t rc)
{
	struct sw_comp c = { 0 };
	c.op_context = r->context;
	c.flags = FI_SEND | (r->tagged ? FI_TAGGED : FI_MSG);
	c.len = r->len;
	c.buf = r->buf;
	if (rc != C_RC_OK) {
		c.err = sw_rc_to_errno(rc);
		c.prov_errno = rc;
	}
	if (ep->tx_outstanding)
		ep->tx_outstanding--;
	sw_req_list_remove(&ep->msg_queue, r);
	if (r->proto == SW_SEND_RDZV)
		rdzv_id_free(ep, r);
	bool report = rc != C_RC_OK || !(r->flags & FI_INJECT) || (r->flags & FI_COMPLETION);
	sw_req_free(ep, r);
	if (report)
		sw_complete(ep, &c);
}

/* ---------------------------------------------------------------- flow control (sender side) */

static struct sw_fc_peer *peer_find(struct sw_ep *ep, struct sw_addr a)
{
	for (struct sw_fc_peer *p = ep->fc_peers; p; p = p->next)
		if (p->addr.nic == a.nic && p->addr.pid == a.pid && p->addr.vni == a.vni)
			return p;
	return NULL;
}

static bool addr_eq(struct sw_addr a, struct sw_addr b)
{
	return a.nic == b.nic && a.pid == b.pid && a.vni == b.vni;
}

static void peer_free(struct sw_ep *ep, struct sw_fc_peer *p)
{
	for (struct sw_fc_peer **pp = &ep->fc_peers; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	free(p);
}

/* One fewer send outstanding towards a disabled peer; the last one triggers FC_NOTIFY. */
static void peer_put(struct sw_ep *ep, struct sw_fc_peer *p)
{
	if (--p->pending)
		return;
	p->pending_acks++;
	ep->host.ctrl_tx++;
	ep->st.fc_notify_sent++;
	(*ep->c_notify)++;
	sw_ctrl_post(ep, p->addr, SW_CTRL_NOTIFY, p->dropped, p);
}

static void send_dropped(struct sw_ep *ep, struct sw_req *r)
{
	struct sw_fc_peer *p = peer_find(ep, r->dst);
	if (!p) {
		p = xcalloc(1, sizeof(*p));
		p->addr = r->dst;
		p->next = ep->fc_peers;
		ep->fc_peers = p;
		/* Park every send still in flight to this peer (in order); each is accounted as it completes. */
		struct sw_req *q = ep->msg_queue.head;
		while (q) {
			struct sw_req *next = q->next;
			if (addr_eq(q->dst, r->dst)) {
				sw_req_list_remove(&ep->msg_queue, q);
				sw_req_list_push(&p->queue, q);
				q->fc_peer = p;
				p->pending++;
			}
			q = next;
		}
	}
	p->dropped++;
	ep->host.fc_send_drops++;
	if (r->proto == SW_SEND_RDZV)
		rdzv_id_free(ep, r);
	peer_put(ep, p);
}

/* A send that was parked after its peer got disabled, but was accepted after all. */
static void send_accepted(struct sw_ep *ep, struct sw_req *r)
{
	if (!r->fc_peer)
		return;
	struct sw_fc_peer *p = r->fc_peer;
	sw_req_list_remove(&p->queue, r);
	sw_req_list_push(&ep->msg_queue, r);
	r->fc_peer = NULL;
	peer_put(ep, p);
}

void sw_txc_fc_resume(struct sw_ep *ep, struct sw_addr peer)
{
	struct sw_fc_peer *p = peer_find(ep, peer);
	if (!p) {
		sw_fatal(ep, "Fatal, FC peer not found: NIC: %#x PID: %d\n", peer.nic, peer.pid);
		return;
	}
	/* Replay the dropped sends in their original order. */
	ep->host.ctrl_rx++;
	while (p->queue.head) {
		struct sw_req *r = p->queue.head;
		ep->host.fc_send_replays++;
		sw_req_list_remove(&p->queue, r);
		r->fc_peer = NULL;
		sw_req_list_push(&ep->msg_queue, r);
		if (r->proto == SW_SEND_RDZV && rdzv_id_alloc(ep, r)) {
			sw_fatal(ep, "rendezvous ids exhausted during replay\n");
			return;
		}
		r->rdzv_events = 0;
		emit_put_internal(ep, r);
	}
	if (!p->pending_acks)
		peer_free(ep, p);
	else
		p->replayed = true;
}

/* ---------------------------------------------------------------- control messages */

static void ctrl_send(struct sw_ep *ep, struct sw_ctrl_msg *m);

static void ctrl_retry(struct sim *sim, void *obj, uint64_t arg)
{
	struct sw_ctrl_msg *m = obj;
	(void)sim;
	(void)arg;
	ctrl_send(m->ep, m);
}

static void ctrl_send(struct sw_ep *ep, struct sw_ctrl_msg *m)
{
	struct nic_cmd c = { .op = NIC_CMD_IDC_PUT };
	c.dma = (struct nic_dma_cmd){ .dst_nic = m->dst.nic, .dst_pid = m->dst.pid, .index = SW_PTL_IDX_CTRL,
				      .vni = m->dst.vni, .flags = NIC_DMA_EVENT_SEND_DISABLE,
				      .match_bits = SW_CTRL_FLAG | (m->type << SW_CTRL_TYPE_SHIFT) | (m->drops & 0xffff),
				      .user_ptr = (uint64_t)(uintptr_t)m, .src_pid = ep->pid, .eqn = ep->eq_ctrl,
				      .ctn = NIC_NONE };
	if (!m->in_list) {
		m->in_list = true;
		m->next = ep->ctrl_msgs;
		ep->ctrl_msgs = m;
	}
	if (sw_emit(ep, ep->txq, &c))
		m->retry = sim_timer_start(ep->sim, SIM_US(1), ctrl_retry, m, 0);
}

void sw_ctrl_post(struct sw_ep *ep, struct sw_addr dst, uint64_t type, uint32_t drops, struct sw_fc_peer *peer)
{
	struct sw_ctrl_msg *m = xcalloc(1, sizeof(*m));
	m->obj.kind = SWK_CTRL_MSG;
	m->ep = ep;
	m->dst = dst;
	m->type = type;
	m->drops = drops;
	m->peer = peer;
	ctrl_send(ep, m);
}

static void ctrl_msg_unlink(struct sw_ep *ep, struct sw_ctrl_msg *m)
{
	for (struct sw_ctrl_msg **pp = &ep->ctrl_msgs; *pp; pp = &(*pp)->next) {
		if (*pp == m) {
			*pp = m->next;
			return;
		}
	}
}

static void ctrl_msg_ack(struct sw_ep *ep, struct sw_ctrl_msg *m, const struct nic_event *ev)
{
	if (ev->rc == C_RC_ENTRY_NOT_FOUND) {
		/* The target's control EQ was full: resend after FI_CXI_FC_RETRY_USEC_DELAY, which upstream spends
		 * in usleep() on the thread that progresses the endpoint. */
		m->retries++;
		ep->host.sleep += SIM_US(ep->env->fc_retry_usec_delay);
		m->retry = sim_timer_start(ep->sim, SIM_US(ep->env->fc_retry_usec_delay), ctrl_retry, m, 0);
		return;
	}
	if (ev->rc != C_RC_OK) {
		sw_fatal(ep, "FC message to %#x:%u failed: %s\n", m->dst.nic, m->dst.pid, c_rc_name(ev->rc));
		return;
	}
	if (m->type == SW_CTRL_NOTIFY && m->peer) {
		struct sw_fc_peer *p = m->peer;
		p->pending_acks--;
		if (!p->pending_acks && p->replayed)
			peer_free(ep, p);
	}
	ctrl_msg_unlink(ep, m);
	free(m);
}

/* A control message arrived on our control PtlTE. */
void sw_ctrl_event(struct sw_ep *ep, const struct nic_event *ev)
{
	if (ev->type != C_EVENT_PUT)
		return;
	uint64_t type = (ev->match_bits >> SW_CTRL_TYPE_SHIFT) & 3;
	struct sw_addr src = { .nic = C_MATCH_ID_NIC(ev->initiator), .pid = (uint16_t)C_MATCH_ID_PID(ev->initiator),
			       .vni = ev->vni };
	if (type == SW_CTRL_NOTIFY)
		sw_rxc_process_drops(ep, src, (uint32_t)(ev->match_bits & 0xffff));
	else if (type == SW_CTRL_RESUME)
		sw_txc_fc_resume(ep, src);
}

/* ---------------------------------------------------------------- sends */

static void send_ack(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	if (ep->attr.proto == SW_PROTO_CXI_RNR) {
		sw_rnr_ack(ep, r, ev);
		return;
	}
	if (ev->rc == C_RC_PT_DISABLED) {
		send_dropped(ep, r);
		return;
	}
	send_accepted(ep, r);
	if (ev->rc != C_RC_OK || r->proto != SW_SEND_RDZV) {
		send_report(ep, r, ev->rc);
		return;
	}
	sw_req_list_remove(&ep->msg_queue, r);
	if (++r->rdzv_events == 2)
		send_report(ep, r, C_RC_OK);
}

/* GET on the rendezvous source: the target pulled the rest of a rendezvous send. */
static void rdzv_src_get(struct sw_ep *ep, const struct nic_event *ev)
{
	uint32_t id = (uint32_t)(((ev->match_bits >> SW_MB_RDZV_SHIFT) << 8) | ev->rendezvous_id);
	if (!(ev->match_bits & SW_MB_RDZV) || id >= ep->rdzv_next || !ep->rdzv_reqs[id])
		return;
	struct sw_req *r = ep->rdzv_reqs[id];
	if (ev->rc != C_RC_OK)
		r->rc = ev->rc;
	if (++r->rdzv_events == 2)
		send_report(ep, r, r->rc);
}

static uint32_t max_eager(const struct sw_ep *ep)
{
	return ep->env->rdzv_threshold + ep->env->rdzv_get_min;
}

int sw_send(struct sw_ep *ep, uint64_t buf, uint64_t len, const void *inject_data, struct sw_addr dst, uint64_t tag,
	    uint64_t data, uint64_t flags, void *context)
{
	if (!ep || ep->closing)
		return -FI_EINVAL;
	if (ep->fatal)
		return -FI_EOTHER;
	if (!dst_valid(dst))
		return -FI_EINVAL;
	if (len > UINT32_MAX)
		return -FI_EMSGSIZE;
	if ((flags & FI_INJECT) && len > C_MAX_IDC_PAYLOAD_UNR)
		return -FI_EMSGSIZE;
	if (ep->tx_outstanding >= ep->attr.tx_size || sw_eq_saturated(ep, ep->eq_tx))
		return -FI_EAGAIN;
	if (ep->fc_peers && peer_find(ep, dst)) {
		ep->host.fc_send_eagain++;
		return -FI_EAGAIN;
	}
	struct sw_req *r = sw_req_new(ep, SWK_SEND);
	r->context = context;
	r->flags = flags;
	r->buf = buf;
	r->len = len;
	r->dst = dst;
	r->tag = tag;
	r->data = data;
	r->tagged = (flags & FI_TAGGED) != 0;
	r->rc = C_RC_OK;
	if (ep->attr.proto == SW_PROTO_CXI_RNR) {
		r->proto = len <= C_MAX_IDC_PAYLOAD_UNR && (inject_data || (flags & FI_INJECT)) ? SW_SEND_IDC
												    : SW_SEND_EAGER;
	} else if (len == 0) {
		r->proto = SW_SEND_EAGER;
	} else if ((flags & FI_INJECT) || len <= C_MAX_IDC_PAYLOAD_UNR) {
		r->proto = SW_SEND_IDC;
	} else if (len <= max_eager(ep)) {
		r->proto = SW_SEND_EAGER;
	} else {
		r->proto = SW_SEND_RDZV;
	}
	if (r->proto == SW_SEND_IDC && len) {
		/* Inline data travels in the command: keep a copy so a replay can resend it. */
		if (inject_data || ep->attr.mem) {
			r->inject = nic_payload_alloc((uint32_t)len);
			if (inject_data) {
				memcpy(r->inject, inject_data, len);
			} else if (ep->attr.mem->read(ep->attr.mem_ctx, buf, r->inject, len)) {
				nic_payload_free(r->inject);
				r->inject = NULL;
			}
		}
	}
	if (r->proto == SW_SEND_RDZV && rdzv_id_alloc(ep, r)) {
		sw_req_free(ep, r);
		return -FI_EAGAIN;
	}
	if (ep->attr.proto == SW_PROTO_CXI_RNR) {
		int rc = sw_rnr_send(ep, r);
		if (rc) {
			sw_req_free(ep, r);
			return rc;
		}
		ep->tx_outstanding++;
		return 0;
	}
	sw_req_list_push(&ep->msg_queue, r);
	int rc = emit_put(ep, r);
	if (rc) {
		sw_req_list_remove(&ep->msg_queue, r);
		if (r->proto == SW_SEND_RDZV)
			rdzv_id_free(ep, r);
		sw_req_free(ep, r);
		return rc == -FI_EAGAIN ? -FI_EAGAIN : -FI_EINVAL;
	}
	ep->tx_outstanding++;
	return 0;
}

/* Used by the RNR code to (re)issue a send. */
int sw_txc_emit_send(struct sw_ep *ep, struct sw_req *r);
int sw_txc_emit_send(struct sw_ep *ep, struct sw_req *r)
{
	return emit_put(ep, r);
}

void sw_txc_emit_send_internal(struct sw_ep *ep, struct sw_req *r)
{
	emit_put_internal(ep, r);
}

void sw_txc_report_send(struct sw_ep *ep, struct sw_req *r, uint8_t rc);
void sw_txc_report_send(struct sw_ep *ep, struct sw_req *r, uint8_t rc)
{
	send_report(ep, r, rc);
}

/* ---------------------------------------------------------------- RMA */

/* Where an MR key lives: optimized keys have their own PtlTE; standard and cached keys are LEs on the
 * control PtlTE, matched by key; cached keys carry the region's address. */
static void rma_target(struct sw_ep *ep, uint64_t key, uint64_t addr, bool write, uint16_t *index, uint64_t *mb,
		       uint64_t *off, uint32_t *flags)
{
	*flags = 0;
	if (key & SW_KEY_CACHED) {
		*index = write ? SW_PTL_IDX_WRITE_MR_STD : SW_PTL_IDX_READ_MR_STD;
		*mb = SW_KEY_CACHED;
		*off = (key & SW_KEY_ADDR_MASK) + addr;
		return;
	}
	uint64_t id = key & ~(SW_KEY_PROV | SW_KEY_OPT);
	/* A provider key says whether its MR is optimized; for client keys both sides follow the rule. */
	bool opt = (key & SW_KEY_PROV) ? (key & SW_KEY_OPT) != 0 : key < SW_MR_OPT_KEYS && ep->env->optimized_mrs;
	if (opt) {
		*index = (uint16_t)((write ? SW_PTL_IDX_WRITE_MR_OPT_BASE : SW_PTL_IDX_READ_MR_OPT_BASE) + id);
		*mb = 0;
		*flags = NIC_DMA_NOMATCH;
	} else {
		*index = write ? SW_PTL_IDX_WRITE_MR_STD : SW_PTL_IDX_READ_MR_STD;
		*mb = key;
	}
	*off = addr;
}

/* Checks every RMA operation passes before its own. */
static int rma_admit(struct sw_ep *ep, uint64_t len, struct sw_addr dst, uint64_t key)
{
	if (!ep || ep->fatal || !dst_valid(dst))
		return -FI_EINVAL;
	if (len > UINT32_MAX)
		return -FI_EMSGSIZE;
	if (!sw_mr_key_valid(key))
		return -FI_EKEYREJECTED;
	if (ep->tx_outstanding >= ep->attr.tx_size || sw_eq_saturated(ep, ep->eq_tx))
		return -FI_EAGAIN;
	return 0;
}

/* An RMA operation is a request on rma_queue from its command until its ACK or REPLY, so the endpoint's
 * close finds (and releases) it like any send. */
static int rma_issue(struct sw_ep *ep, struct nic_cmd *c, void *context, uint64_t flags, uint64_t len)
{
	struct sw_req *m = sw_req_new(ep, SWK_RMA);
	m->context = context;
	m->flags = flags;
	m->len = len;
	c->dma.user_ptr = (uint64_t)(uintptr_t)m;
	sw_req_list_push(&ep->rma_queue, m);
	int rc = sw_emit(ep, ep->txq, c);
	if (rc) {
		/* Only a full queue is worth retrying: anything else would be refused again forever. */
		sw_req_list_remove(&ep->rma_queue, m);
		sw_req_free(ep, m);
		return rc == -FI_EAGAIN ? -FI_EAGAIN : -FI_EINVAL;
	}
	ep->tx_outstanding++;
	return 0;
}

int sw_write(struct sw_ep *ep, uint64_t buf, uint64_t len, struct sw_addr dst, uint64_t addr, uint64_t key,
	     uint64_t data, uint64_t flags, void *context)
{
	int rc = rma_admit(ep, len, dst, key);
	if (rc)
		return rc;
	bool writedata = (flags & FI_REMOTE_CQ_DATA) != 0;
	if (writedata) {
		/* fi_writedata reaches the MR's reporting LE: only standard MRs with provider keys have one. */
		if (!ep->env->enable_writedata)
			return -FI_EOPNOTSUPP;
		if (!(key & SW_KEY_PROV) || (key & (SW_KEY_OPT | SW_KEY_CACHED)))
			return -FI_EINVAL;
	}
	uint16_t index;
	uint64_t mb, off;
	uint32_t f;
	rma_target(ep, key, addr, true, &index, &mb, &off, &f);
	if (writedata)
		mb |= SW_KEY_WRITEDATA;
	else
		data = 0;
	struct nic_cmd c = { .op = NIC_CMD_PUT };
	c.dma = (struct nic_dma_cmd){ .dst_nic = dst.nic, .dst_pid = dst.pid, .index = index, .vni = dst.vni,
				      .flags = f | NIC_DMA_EVENT_SEND_DISABLE, .local_addr = buf, .length = (uint32_t)len,
				      .remote_offset = off, .match_bits = mb, .header_data = data, .src_pid = ep->pid,
				      .eqn = NIC_NONE, .ctn = NIC_NONE };
	return rma_issue(ep, &c, context, FI_RMA | FI_WRITE, len);
}

int sw_read(struct sw_ep *ep, uint64_t buf, uint64_t len, struct sw_addr dst, uint64_t addr, uint64_t key,
	    uint64_t flags, void *context)
{
	int rc = rma_admit(ep, len, dst, key);
	if (rc)
		return rc;
	uint16_t index;
	uint64_t mb, off;
	uint32_t f;
	rma_target(ep, key, addr, false, &index, &mb, &off, &f);
	struct nic_cmd c = { .op = NIC_CMD_GET };
	c.dma = (struct nic_dma_cmd){ .dst_nic = dst.nic, .dst_pid = dst.pid, .index = index, .vni = dst.vni,
				      .flags = f, .local_addr = buf, .length = (uint32_t)len, .remote_offset = off,
				      .match_bits = mb, .src_pid = ep->pid, .eqn = ep->eq_tx, .ctn = NIC_NONE };
	(void)flags;
	return rma_issue(ep, &c, context, FI_RMA | FI_READ, len);
}

int sw_atomic(struct sw_ep *ep, uint64_t result, struct sw_addr dst, uint64_t addr, uint64_t key,
	      const struct sw_amo *amo, void *context)
{
	int rc = rma_admit(ep, 0, dst, key);
	if (rc)
		return rc;
	if (!amo || !nic_amo_valid(amo->op, amo->cswap, amo->type))
		return -FI_EINVAL;
	uint32_t len = nic_amo_type_size(amo->type);
	uint16_t index;
	uint64_t mb, off;
	uint32_t f;
	/* A fetching atomic goes to the MR's read index, a plain one to its write index (upstream). */
	rma_target(ep, key, addr, !amo->fetch, &index, &mb, &off, &f);
	struct nic_cmd c = { .op = NIC_CMD_AMO };
	c.dma = (struct nic_dma_cmd){ .dst_nic = dst.nic, .dst_pid = dst.pid, .index = index, .vni = dst.vni,
				      .flags = f | NIC_DMA_EVENT_SEND_DISABLE, .local_addr = result, .length = len,
				      .remote_offset = off, .match_bits = mb, .src_pid = ep->pid,
				      .eqn = amo->fetch ? ep->eq_tx : NIC_NONE, .ctn = NIC_NONE,
				      .idc_data = amo->operands, .amo_op = amo->op, .amo_cswap = amo->cswap,
				      .amo_type = amo->type, .amo_fetch = amo->fetch };
	return rma_issue(ep, &c, context, FI_ATOMIC | (amo->fetch ? FI_READ : FI_WRITE), len);
}

static void rma_done(struct sw_ep *ep, struct sw_req *m, const struct nic_event *ev)
{
	struct sw_comp c = { 0 };
	c.op_context = m->context;
	c.flags = m->flags;
	c.len = ev->rc == C_RC_OK ? m->len : 0;
	if (ev->rc != C_RC_OK) {
		c.err = sw_rc_to_errno(ev->rc);
		c.prov_errno = ev->rc;
	}
	if (ep->tx_outstanding)
		ep->tx_outstanding--;
	sw_req_list_remove(&ep->rma_queue, m);
	sw_req_free(ep, m);
	sw_complete(ep, &c);
}

/* ---------------------------------------------------------------- dispatch and teardown */

void sw_txc_event(struct sw_ep *ep, struct sw_obj *o, const struct nic_event *ev)
{
	switch (o->kind) {
	case SWK_SEND:
		if (ev->type == C_EVENT_ACK)
			send_ack(ep, (struct sw_req *)o, ev);
		return;
	case SWK_RMA:
		if (ev->type == C_EVENT_ACK || ev->type == C_EVENT_REPLY)
			rma_done(ep, (struct sw_req *)o, ev);
		return;
	case SWK_CTRL_MSG:
		if (ev->type == C_EVENT_ACK)
			ctrl_msg_ack(ep, (struct sw_ctrl_msg *)o, ev);
		return;
	case SWK_RDZV_SRC:
		if (ev->type == C_EVENT_GET)
			rdzv_src_get(ep, ev);
		return;
	default: return;
	}
}

/* Operations still in flight at close: their NIC events can no longer arrive (the endpoint's LNI and EQs
 * go with it), so their records go back here, and nothing is reported. */
static void free_reqs(struct sw_ep *ep, struct sw_req_list *l)
{
	while (l->head) {
		struct sw_req *r = l->head;
		sw_req_list_remove(l, r);
		sw_req_free(ep, r);
	}
}

void sw_txc_fini(struct sw_ep *ep)
{
	/* A rendezvous send whose ACK came back waits for the target's Get on no list: its id names it. */
	for (uint32_t id = 0; id < ep->rdzv_next; id++) {
		struct sw_req *r = ep->rdzv_reqs[id];
		if (r && !r->on) {
			ep->rdzv_reqs[id] = NULL;
			sw_req_free(ep, r);
		}
	}
	free_reqs(ep, &ep->msg_queue);
	free_reqs(ep, &ep->rnr_wait);
	free_reqs(ep, &ep->rma_queue);
	while (ep->fc_peers) {
		struct sw_fc_peer *p = ep->fc_peers;
		ep->fc_peers = p->next;
		free_reqs(ep, &p->queue);
		free(p);
	}
	while (ep->ctrl_msgs) {
		struct sw_ctrl_msg *m = ep->ctrl_msgs;
		ep->ctrl_msgs = m->next;
		sim_timer_cancel(ep->sim, &m->retry);
		free(m);
	}
	sw_rnr_fini(ep);
	free(ep->rdzv_reqs);
	free(ep->rdzv_free);
}
