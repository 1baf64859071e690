/* Provider software: the RNR protocol (FI_PROTO_CXI_RNR).
 *
 * The receive PtlTE (index 1) matches in hardware without flow control and without overflow or request
 * buffers, so a Put that finds no receive is NACKed by the NIC with C_RC_ENTRY_NOT_FOUND.  The sender then
 * releases its TX credit and retries at now + 1 + i^3 * 10 us for its i-th retry (1, 11, 81, 271, 641 us, the
 * last step repeating); when the next retry would fall past start + FI_CXI_RNR_MAX_TIMEOUT_US the send fails
 * with FI_EIO, prov_errno C_RC_ENTRY_NOT_FOUND (18).  total_rnr_nacks and total_retries are kept per
 * endpoint. */
#include <stdlib.h>

#include "../util.h"
#include "sw_impl.h"

#define RNR_WAIT_STEPS 5

int sw_rnr_rxc_init(struct sw_ep *ep)
{
	struct nic_pte_opts o = { .is_matching = true };
	int rc = nic_pte_alloc(ep->lni, ep->eq_rx, &o, &ep->rx_ptn);
	if (rc)
		return rc;
	for (unsigned v = 0; v < ep->attr.num_vnis; v++)
		if ((rc = nic_pte_map(ep->lni, ep->rx_ptn, ep->attr.vnis[v], ep->pid, SW_PTL_IDX_RNR_RXQ)))
			return rc;
	sw_setstate(ep, ep->rx_ptn, C_PTLTE_ENABLED, NIC_IGNORE_DROPS);
	ep->msg_offload = true;
	ep->state = RXC_ENABLED;
	return 0;
}

/* Receives appended again per retry tick: an LE comes free when a receive is consumed (a message or a
 * cancel, on this endpoint or another one of the pool), so retrying every parked receive each tick would only
 * multiply failed appends (and simulated events) at scale. */
#define RNR_APPEND_BATCH 8

static void append_retry(struct sim *sim, void *obj, uint64_t arg)
{
	struct sw_ep *ep = obj;
	(void)sim;
	(void)arg;
	sw_rxc_replay_some(ep, RNR_APPEND_BATCH);
	if (ep->replay.head)
		sw_rnr_append_retry(ep);
}

/* One of this endpoint's receive LEs was consumed: its LE is free, give it to the oldest parked receive. */
void sw_rnr_le_freed(struct sw_ep *ep)
{
	if (ep->attr.proto == SW_PROTO_CXI_RNR && ep->replay.head)
		sw_rxc_replay_some(ep, 1);
}

#define APPEND_LE_FATAL "Receive LE resources exhausted. Requires use  of FI_PROTO_CXI endpoint protocol\n"

bool sw_rnr_append_failed(struct sw_ep *ep, struct sw_req *r)
{
	simtime_t now = sim_now(ep->sim);
	/* A receive's first failure starts its clock (upstream: rnr_append_retry_ts_us, set when posted). */
	if (!r->max_rnr_time)
		r->max_rnr_time = now + SIM_US(ep->env->rnr_append_retry_timeout_us);
	else if (now >= r->max_rnr_time) {
		sw_fatal(ep, APPEND_LE_FATAL);
		return true;
	}
	ep->host.rnr_append_retries++;
	return false;
}

/* An RNR receive could not get an LE: post it again a little later (upstream re-issues the append from the
 * failed LINK event at once, spinning until an LE frees; here the oldest parked receives retry every 10 us,
 * RNR_APPEND_BATCH at a time, and one more whenever one of the endpoint's own receives frees its LE -- the
 * spin between is not charged). */
void sw_rnr_append_retry(struct sw_ep *ep)
{
	if (!sim_timer_pending(&ep->rnr_append_timer))
		ep->rnr_append_timer = sim_timer_start(ep->sim, SIM_US(10), append_retry, ep, 0);
}

int sw_rnr_send(struct sw_ep *ep, struct sw_req *r)
{
	r->max_rnr_time = sim_now(ep->sim) + SIM_US(ep->rnr_max_us);
	sw_req_list_push(&ep->msg_queue, r);
	if (sw_txc_emit_send(ep, r)) {
		sw_req_list_remove(&ep->msg_queue, r);
		return -FI_EAGAIN;
	}
	return 0;
}

static void rnr_retry(struct sim *sim, void *obj, uint64_t arg)
{
	struct sw_req *r = obj;
	struct sw_ep *ep = r->ep;
	(void)sim;
	(void)arg;
	sw_req_list_remove(&ep->rnr_wait, r);
	sw_req_list_push(&ep->msg_queue, r);
	ep->tx_outstanding++;
	ep->st.total_retries++;
	(*ep->c_retries)++;
	ep->host.rnr_retries++;
	sw_txc_emit_send_internal(ep, r);
}

void sw_rnr_ack(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev)
{
	if (ev->rc != C_RC_ENTRY_NOT_FOUND) {
		sw_txc_report_send(ep, r, ev->rc);
		return;
	}
	ep->st.total_rnr_nacks++;
	(*ep->c_rnr_nacks)++;
	ep->host.rnr_nacks++;
	simtime_t now = sim_now(ep->sim);
	uint64_t i = r->retries < RNR_WAIT_STEPS ? r->retries : RNR_WAIT_STEPS - 1;
	simtime_t retry = now + SIM_US(1 + i * i * i * 10);
	if (retry > r->max_rnr_time) {
		sw_txc_report_send(ep, r, C_RC_ENTRY_NOT_FOUND);
		return;
	}
	r->retries++;
	r->retry_time = retry;
	/* The TX credit is released while the send waits. */
	sw_req_list_remove(&ep->msg_queue, r);
	sw_req_list_push(&ep->rnr_wait, r);
	if (ep->tx_outstanding)
		ep->tx_outstanding--;
	r->rnr_timer = sim_timer_start(ep->sim, retry - now, rnr_retry, r, 0);
}

void sw_rnr_fini(struct sw_ep *ep)
{
	sim_timer_cancel(ep->sim, &ep->rnr_append_timer);
}
