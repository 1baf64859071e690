/* Provider software: the receive context (FI_PROTO_CXI) -- its state machine and flow-control recovery.
 * Receive requests themselves (posting, matching, completion, cancel) are in sw_recv.c, FI_PEEK and
 * FI_CLAIM in sw_peek.c.
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

static struct sw_obj search_obj = { SWK_SEARCH };
static struct sw_obj flush_obj = { SWK_FLUSH };

static void onload_complete(struct sw_ep *ep);
static void replay(struct sw_ep *ep);

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
	sw_emit_internal(ep, ep->tgq, &c);
}

static void onload_start(struct sw_ep *ep)
{
	ep->onload_search_done = false;
	ep->puts_pending = 0;
	/* The offsets of the headers to onload come from the driver (cxil_pte_status, asked twice: once with
	 * room for 512, then with the list's length). */
	ep->host.kernel_calls += 2;
	struct nic_cmd c = { .op = NIC_CMD_TGT_SEARCH_AND_DELETE };
	c.tgt = (struct nic_tgt_cmd){ .ptn = ep->rx_ptn, .list = C_PTL_LIST_UNEXPECTED, .ctn = NIC_NONE,
				      .match_id = C_MATCH_ID_ANY, .ignore_bits = ~0ULL,
				      .user_ptr = (uint64_t)(uintptr_t)&search_obj };
	sw_emit_internal(ep, ep->tgq, &c);
}

/* One onloaded header (PUT_OVERFLOW from SEARCH_AND_DELETE). */
static void onload_entry(struct sw_ep *ep, const struct nic_event *ev)
{
	ep->st.onloaded++;
	(*ep->c_onloaded)++;
	ep->host.fc_onloaded++;
	bool fresh;
	struct sw_ux *u = sw_ux_from_hw(ep, ev, &fresh);
	if (fresh && !u->data_ready) {
		/* Its data event is still to come. */
		ep->puts_pending++;
		sw_ux_map_put(ep, ev->start, u);
	}
	u->onloaded = true;
	sw_ux_push(&ep->ux, u);
	/* A hardware header was freed: the LE resource recovered, re-enable will be possible. */
	if (ep->state == RXC_ONLOAD_FLOW_CONTROL)
		ep->state = RXC_ONLOAD_FLOW_CONTROL_REENABLE;
}

/* The data event of an onloaded header came after the header. */
void sw_rxc_onload_data(struct sw_ep *ep)
{
	if (ep->puts_pending && --ep->puts_pending == 0 && ep->onload_search_done)
		onload_complete(ep);
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

/* The oldest n receives of the replay list (RNR append retries: as many as LEs may have come free). */
void sw_rxc_replay_some(struct sw_ep *ep, uint32_t n)
{
	while (n-- && ep->replay.head) {
		struct sw_req *r = ep->replay.head;
		sw_req_list_remove(&ep->replay, r);
		sw_recv_queue(ep, r);
	}
}

static void replay(struct sw_ep *ep)
{
	/* Detach the list first: a receive that fails again joins a fresh one. */
	struct sw_req *r = ep->replay.head;
	ep->replay = (struct sw_req_list){ 0 };
	while (r) {
		struct sw_req *next = r->next;
		if (ep->attr.proto != SW_PROTO_CXI_RNR) /* RNR append retries are counted as such */
			ep->host.fc_recv_replays++;
		r->on = NULL;
		r->next = r->prev = NULL;
		sw_recv_queue(ep, r);
		r = next;
	}
}

static void send_resumes(struct sw_ep *ep)
{
	ep->drop_count = 0;
	while (ep->fc_drops) {
		struct sw_fc_drops *d = ep->fc_drops;
		ep->fc_drops = d->next;
		ep->st.fc_resume_sent++;
		(*ep->c_resume)++;
		ep->host.ctrl_tx++;
		sw_ctrl_post(ep, d->addr, SW_CTRL_RESUME, d->drops, NULL);
		free(d);
	}
}

/* Try to leave FLOW_CONTROL: only once every dropped message has been reported by its sender. */
static int reenable(struct sw_ep *ep)
{
	struct nic_pte_status st;
	nic_pte_status(ep->nic, ep->rx_ptn, &st);
	ep->host.kernel_calls++; /* cxil_pte_status */
	if (ep->drop_count != st.drop_count)
		return -FI_EAGAIN;
	if (ep->new_state == RXC_ENABLED_SOFTWARE) {
		int rc = nic_pte_transition_sm(ep->lni, ep->rx_ptn, ep->drop_count);
		ep->host.kernel_calls++; /* cxil_pte_transition_sm */
		return rc ? -FI_EAGAIN : 0;
	}
	sw_setstate(ep, ep->rx_ptn, C_PTLTE_ENABLED, ep->drop_count);
	ep->host.fc_reenables++;
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
	ep->host.ctrl_rx++;
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
	ep->host.fc_state_changes++;
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
		ep->host.fc_state_changes++;
		flush_appends(ep);
		return;
	default: return;
	}
}

/* ---------------------------------------------------------------- dispatch, init, fini */

void sw_rxc_event(struct sw_ep *ep, struct sw_obj *o, const struct nic_event *ev)
{
	switch (o->kind) {
	case SWK_RECV: sw_recv_event(ep, (struct sw_req *)o, ev); return;
	case SWK_RMSG: sw_recv_rmsg_event(ep, (struct sw_rmsg *)o, ev); return;
	case SWK_PEEK: sw_peek_event(ep, (struct sw_req *)o, ev); return;
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
	while (l->head)
		sw_recv_free(ep, l->head);
}

static void free_ux_list(struct sw_ep *ep, struct sw_ux_list *l)
{
	while (l->head) {
		struct sw_ux *u = l->head;
		sw_ux_remove(l, u);
		sw_ux_free(ep, u);
	}
}

/* Close: every record the receive side holds goes back once.  Receives take their rendezvous messages
 * with them (a software Get waiting for a slot is one of those); the map of hardware headers goes before
 * the lists, since an onloaded header whose data is still to come is in both. */
void sw_rxc_fini(struct sw_ep *ep)
{
	free_req_list(ep, &ep->posted);
	free_req_list(ep, &ep->replay);
	free_req_list(ep, &ep->inflight);
	ep->sw_get_wait = ep->sw_get_wait_tail = NULL;
	sw_peek_fini(ep);
	sw_ux_map_fini(ep);
	free_ux_list(ep, &ep->ux);
	free_ux_list(ep, &ep->pending_ux);
	while (ep->fc_drops) {
		struct sw_fc_drops *d = ep->fc_drops;
		ep->fc_drops = d->next;
		free(d);
	}
	sw_bufs_fini(ep);
}
