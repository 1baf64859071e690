/* The endpoint edge of the dragonfly: what a Cassini NIC's link interface does with fabric messages.
 *
 * fabric_send queues a message on its flow (source, destination, traffic class).  The injection port
 * serves the sendable flows round robin, one unit at a time: a packet of at most mtu payload bytes plus a
 * header, or in coarse bulk mode a chunk train (chunk_bytes of payload, one header per packet it spans)
 * that moves through the switches as one unit.  A unit needs credits for the first switch's input buffer
 * and, with congestion control, its flow's pacing and room in its in-flight cap (congestion.c).
 * When the last unit of a message leaves the last switch, the message is delivered to the destination NIC
 * at its tail's arrival, and acknowledged to the source after the reverse path's zero-load latency.  The
 * ack retires the message's units from the flow's in-flight count (ordered traffic keeps its route while
 * that is non-zero, routing.c) and checks delivery order (counters fabric.reordered_msgs and
 * fabric.reordered_ordered_msgs).
 */
#include <stdlib.h>

#include "../stats.h"
#include "../util.h"
#include "dragonfly.h"


/* ---- flow table: open addressing keyed by (dst, tc), keys kept in the table so probes stay in it ---- */

static inline uint32_t ft_key(uint32_t dst, uint32_t tc)
{
	return dst << 3 | tc;
}

static inline uint32_t ft_slot(uint32_t key, uint32_t mask)
{
	return df_mix(key, 0) & mask;
}

static void ft_grow(struct df_ep *e)
{
	uint32_t oldn = e->ft_mask + 1, mask = oldn * 2 - 1;
	struct df_ftent *old = e->ft, *t = xcalloc(mask + 1, sizeof(*t));
	for (uint32_t i = 0; i < oldn; i++) {
		if (!old[i].f)
			continue;
		uint32_t j = ft_slot(old[i].key, mask);
		while (t[j].f)
			j = (j + 1) & mask;
		t[j] = old[i];
	}
	free(old);
	e->ft = t;
	e->ft_mask = mask;
}

static void ft_remove(struct df_ep *e, struct df_flow *f)
{
	uint32_t mask = e->ft_mask, i = ft_slot(ft_key(f->dst, f->tc), mask);
	while (e->ft[i].f != f)
		i = (i + 1) & mask;
	for (uint32_t j = i;;) {
		j = (j + 1) & mask;
		if (!e->ft[j].f)
			break;
		uint32_t k = ft_slot(e->ft[j].key, mask);
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			e->ft[i] = e->ft[j];
			i = j;
		}
	}
	e->ft[i].f = NULL;
	e->ft_n--;
}

static void idle_del(struct df_ep *e, struct df_flow *f)
{
	if (!f->idle_listed)
		return;
	if (f->prev) {
		f->prev->next = f->next;
	} else {
		e->idle_head = f->next;
		e->idle_at = 0;
	}
	if (f->next)
		f->next->prev = f->prev;
	else
		e->idle_tail = f->prev;
	f->idle_listed = 0;
}

static struct df_ep *ep_get(struct df *d, uint32_t id)
{
	struct df_ep *e = d->ep[id];
	if (__builtin_expect(e != NULL, 1))
		return e;
	/* The endpoint and its injection port in one block: every send touches both. */
	size_t head = (sizeof(*e) + 63) & ~(size_t)63;
	e = arena_alloc(&d->recs, head + d->port_bytes);
	e->id = id;
	e->sw = id / d->p;
	e->tx = df_oport_init(d, (char *)e + head, DF_OP_INJECT, e, id % d->p);
	e->tx->peer = e->sw;
	e->tx->peer_port = (uint8_t)(id % d->p);
	e->tx->link_lat = (uint32_t)d->lat_edge;
	e->ft_mask = 7;
	e->ft = xcalloc(8, sizeof(*e->ft));
	d->ep[id] = e;
	d->eps_alloc++;
	return e;
}

static bool flow_maybe_free(struct df *d, struct df_flow *f);

/* The flow (dst, tc) of endpoint e: the live one, or a new one. */
static struct df_flow *flow_get(struct df *d, struct df_ep *e, uint32_t dst, uint32_t tc, simtime_t now)
{
	uint32_t key = ft_key(dst, tc), i = ft_slot(key, e->ft_mask);
	for (; e->ft[i].f; i = (i + 1) & e->ft_mask) {
		if (e->ft[i].key != key)
			continue;
		struct df_flow *f = e->ft[i].f;
		if (f->state != DF_FLOW_IDLE)
			return f;
		/* An idle flow whose last ack is in by now no longer exists. */
		df_flow_absorb(d, f, now);
		if (!flow_maybe_free(d, f))
			return f;
		for (i = ft_slot(key, e->ft_mask); e->ft[i].f;)
			i = (i + 1) & e->ft_mask;
		break;
	}
	if ((e->ft_n + 1) * 2 > e->ft_mask + 1) {
		ft_grow(e);
		i = ft_slot(key, e->ft_mask);
		while (e->ft[i].f)
			i = (i + 1) & e->ft_mask;
	}
	struct df_flow *f = pool_get(&d->flows);
	*f = (struct df_flow){ .ep = e, .dst = dst, .tc = (uint8_t)tc, .state = DF_FLOW_IDLE, .rate = d->line_gbps };
	uint32_t nl, ng, nsw;
	df_min_hops(d, dst, e->id, &nl, &ng, &nsw);
	f->ack_lat = df_path_latency(d, nl, ng, nsw) + df_ser(d, d->hdr);
	df_cc_window(d, f);
	e->ft[i].key = key;
	e->ft[i].f = f;
	e->ft_n++;
	(*d->c.flows_created)++;
	return f;
}

static bool flow_maybe_free(struct df *d, struct df_flow *f)
{
	if (f->state != DF_FLOW_IDLE || f->inflight || f->feedback || f->fb_wake)
		return false;
	idle_del(f->ep, f);
	ft_remove(f->ep, f);
	pool_put(&d->flows, f);
	return true;
}

/* An idle flow is one no event looks at any more: it is released when found fully acknowledged, by the
 * next send to the same destination (before it could be reused: a flow is released exactly when its last
 * ack is in) or by the endpoint's next sends, which release a few of the idle flows whose last ack is on
 * its way (the idle list, in the order those acks left). */
static void idle_sweep(struct df *d, struct df_ep *e, simtime_t now)
{
	for (int k = 0; k < 2 && e->idle_head && e->idle_at <= now; k++) {
		struct df_flow *f = e->idle_head;
		if (!e->idle_at) {
			e->idle_at = f->ack_tail ? f->ack_tail->at : 1;
			if (e->idle_at > now)
				break;
		}
		df_flow_absorb(d, f, now);
		if (!flow_maybe_free(d, f))
			break;
	}
}

static void idle_add(struct df_ep *e, struct df_flow *f)
{
	f->next = NULL;
	f->prev = e->idle_tail;
	if (e->idle_tail) {
		e->idle_tail->next = f;
	} else {
		e->idle_head = f;
		e->idle_at = f->ack_tail->at;
	}
	e->idle_tail = f;
	f->idle_listed = 1;
}

static void ring_add(struct df_ep *e, struct df_flow *f)
{
	if (e->ring) {
		f->next = e->ring;
		f->prev = e->ring->prev;
		f->prev->next = f;
		e->ring->prev = f;
	} else {
		f->next = f->prev = f;
		e->ring = f;
	}
	e->nactive++;
}

static void ring_del(struct df_ep *e, struct df_flow *f)
{
	if (--e->nactive) {
		f->prev->next = f->next;
		f->next->prev = f->prev;
		if (e->ring == f)
			e->ring = f->next;
	} else {
		e->ring = NULL;
	}
}

static inline uint32_t unit_payload(const struct df *d, const struct df_msg *msg)
{
	uint32_t u = msg->chunked ? d->chunk : d->mtu;
	return msg->left < u ? msg->left : u;
}

static inline uint32_t unit_wire(const struct df *d, const struct df_msg *msg, uint32_t payload)
{
	return msg->chunked ? df_unit_wire(d, payload) : payload + d->hdr;
}

static inline uint32_t next_wire(const struct df *d, const struct df_flow *f)
{
	return unit_wire(d, f->head, unit_payload(d, f->head));
}

static inline bool window_open(const struct df *d, const struct df_flow *f, uint32_t wire)
{
	return !d->cc || !f->inflight_bytes || f->inflight_bytes + wire <= f->window;
}

/* Whether a round of the ring could send anything, from what the last failed round found (see df_ep). */
static bool round_may_send(const struct df *d, const struct df_ep *e, const struct df_oport *op, simtime_t now)
{
	if (!e->sum_valid || now >= e->wake || now >= e->fb_min)
		return true;
	for (uint32_t tc = 0; tc < d->ntc; tc++)
		if (e->need[tc] != UINT32_MAX && df_credit_ok(&op->tc[tc], 0, e->need[tc]))
			return true;
	return false;
}

/* A flow that joins the ring joins the summary of the last failed round. */
static void summary_add(const struct df *d, struct df_ep *e, const struct df_flow *f, simtime_t now)
{
	if (!e->sum_valid)
		return;
	if (f->fb_head && f->fb_head->at < e->fb_min)
		e->fb_min = f->fb_head->at;
	if (f->next_send > now) {
		if (f->next_send < e->wake)
			e->wake = f->next_send;
	} else {
		uint32_t w = next_wire(d, f);
		if (w < e->need[f->tc])
			e->need[f->tc] = w;
	}
}

/* A flow with a message to send joins the ring, unless its in-flight cap holds it (it is then parked
 * until congestion feedback retires some of its bytes). */
static void flow_wake(struct df *d, struct df_ep *e, struct df_flow *f)
{
	simtime_t now = sim_now(d->sim);
	df_flow_absorb(d, f, now);
	idle_del(e, f);
	if (window_open(d, f, next_wire(d, f))) {
		f->state = DF_FLOW_ACTIVE;
		ring_add(e, f);
		summary_add(d, e, f, now);
		df_inject_kick(d, e);
	} else {
		f->state = DF_FLOW_PARKED;
		df_cc_wake_parked(d, f);
	}
}

void df_flow_feedback_done(struct df *d, struct df_flow *f)
{
	if (f->state == DF_FLOW_PARKED && window_open(d, f, next_wire(d, f)))
		flow_wake(d, f->ep, f);
	else if (f->state == DF_FLOW_PARKED)
		df_cc_wake_parked(d, f);
	else
		flow_maybe_free(d, f);
}

static void inject(struct df *d, struct df_ep *e, struct df_flow *f, uint32_t payload, uint32_t wire, simtime_t now)
{
	struct df_msg *msg = f->head;
	struct fabric_msg *m = msg->m;
	struct df_oport *op = e->tx;
	struct df_otc *t = &op->tc[f->tc];
	struct df_pkt *pkt = pool_get(&d->pkts);
	uint32_t dsw = m->dst / d->p;
	*pkt = (struct df_pkt){
		.msg = msg, .up = op, .birth = now, .wire = wire, .sw = e->sw, .rmin16 = 65535,
		.dgrp = (uint16_t)df_group_of_sw(d, dsw), .didx = (uint8_t)df_idx_of_sw(d, dsw), .via = DF_NONE,
		.dport = (uint8_t)(m->dst - dsw * d->p), .in_port = (uint8_t)(e->id % d->p), .tc = f->tc,
		.flags = m->flags & FABRIC_ORDERED ? DF_PKT_ORDERED : 0,
	};
	double r16 = f->rate / d->line_gbps * 65535.0;
	pkt->rate16 = r16 >= 65535.0 ? 65535 : r16 < 1.0 ? 1 : (uint16_t)r16;
	if (t->shared < wire) {
		t->resv[0] -= wire;
		pkt->flags |= DF_PKT_RESV;
	} else {
		t->shared -= wire;
	}
	t->avail -= wire;
	msg->left -= payload;
	if (--msg->unsent == 0) {
		f->head = msg->next;
		if (!f->head) {
			f->tail = NULL;
			ring_del(e, f);
			f->state = DF_FLOW_IDLE;
		}
	}
	f->inflight++;
	f->in_net++;
	if (d->cc)
		df_cc_sent(d, f, wire, now);
	op->link_free = now + df_ser(d, wire);
	t->used = 1;
	t->tx_bytes += wire;
	t->tx_pkts++;
	if (t->stall_since != SIM_TIME_MAX) {
		t->stall_ps += now - t->stall_since;
		t->stall_since = SIM_TIME_MAX;
	}
	(*d->c.pkts_injected)++;
	sim_schedule_at(d->sim, now + d->lat_edge + d->sw_lat, df_ev_arrive, d, (uint64_t)(uintptr_t)pkt);
}

/* After a round that sent nothing: wake for the first paced flow, and for credits if some flow waits
 * for them. */
static void wait_round(struct df *d, struct df_ep *e, struct df_oport *op)
{
	bool blocked = false;
	for (uint32_t tc = 0; tc < d->ntc; tc++)
		blocked |= e->need[tc] != UINT32_MAX;
	op->credit_wait = blocked;
	df_arm_kick(d, op, e->wake);
	if (blocked)
		df_arm_kick(d, op, df_next_credit(op));
}

/* After a unit left, the next round is due when the link frees.  A lone flow that pacing holds beyond
 * that would only arm a wake-up there: arm it at once, unless feedback that reaches the flow by then
 * (and could re-time it) is pushed meanwhile (lf_skip: congestion.c then arms the skipped kick). */
static void arm_after_inject(struct df *d, struct df_ep *e, struct df_oport *op)
{
	const struct df_flow *f = e->ring;
	simtime_t at = op->link_free;
	if (e->nactive == 1 && f->next_send > at && (!f->fb_head || f->fb_head->at > at)) {
		e->lf_skip = at;
		at = f->next_send;
	}
	df_arm_kick(d, op, at);
}

void df_inject_kick(struct df *d, struct df_ep *e)
{
	struct df_oport *op = e->tx;
	simtime_t now = sim_now(d->sim), wake = SIM_TIME_MAX;
	if (!e->nactive || (op->kick_armed && op->kick_at <= now))
		return;
	if (op->link_free > now) {
		df_arm_kick(d, op, op->link_free);
		return;
	}
	df_credits_absorb(op, now);
	if (!round_may_send(d, e, op, now)) {
		/* The round would find the same: nothing to send or park, the same classes stalled, the same
		 * flow to wait for. */
		for (uint32_t tc = 0; tc < d->ntc; tc++)
			if (e->need[tc] != UINT32_MAX && op->tc[tc].stall_since == SIM_TIME_MAX)
				op->tc[tc].stall_since = now;
		wait_round(d, e, op);
		return;
	}
	for (uint32_t tc = 0; tc < d->ntc; tc++)
		e->need[tc] = UINT32_MAX;
	e->fb_min = SIM_TIME_MAX;
	e->lf_skip = 0;
	struct df_flow *f = e->ring;
	for (uint32_t n = e->nactive; n--;) {
		struct df_flow *next = f->next;
		struct df_msg *msg = f->head;
		df_flow_absorb(d, f, now);
		uint32_t payload = unit_payload(d, msg), wire = unit_wire(d, msg, payload);
		struct df_otc *t = &op->tc[f->tc];
		if (f->next_send > now) {
			if (f->next_send < wake)
				wake = f->next_send; /* paced by congestion control */
		} else if (!df_credit_ok(t, 0, wire)) {
			if (t->stall_since == SIM_TIME_MAX)
				t->stall_since = now;
			if (wire < e->need[f->tc])
				e->need[f->tc] = wire;
		} else if (!window_open(d, f, wire)) {
			ring_del(e, f);
			f->state = DF_FLOW_PARKED;
			df_cc_wake_parked(d, f);
			f = next;
			continue;
		} else {
			bool stays = f->state == DF_FLOW_ACTIVE;
			e->sum_valid = 0;
			op->credit_wait = 0;
			inject(d, e, f, payload, wire, now);
			if (stays && f->state == DF_FLOW_ACTIVE)
				e->ring = f->next; /* round robin between flows, unit by unit */
			if (e->nactive)
				arm_after_inject(d, e, op);
			return;
		}
		if (f->fb_head && f->fb_head->at < e->fb_min)
			e->fb_min = f->fb_head->at;
		f = next;
	}
	e->sum_valid = 1;
	e->wake = wake;
	wait_round(d, e, op);
}

void df_send(struct sim *sim, struct fabric *fab, struct fabric_msg *m)
{
	struct df *d = (struct df *)fab;
	if (m->src >= d->nep || m->dst >= d->nep)
		die("dragonfly fabric: message %u -> %u outside %u endpoints", m->src, m->dst, d->nep);
	if (m->tc >= d->ntc)
		die("dragonfly fabric: message of traffic class %u, but fabric.traffic_classes is %u", m->tc, d->ntc);
	m->sent = sim_now(sim);
	m->first_arrival = 0;
	struct df_ep *e = ep_get(d, m->src);
	simtime_t now = sim_now(sim);
	idle_sweep(d, e, now);
	struct df_flow *f = flow_get(d, e, m->dst, m->tc, now);
	struct df_msg *msg = pool_get(&d->msgs);
	msg->next = NULL;
	msg->m = m;
	msg->flow = f;
	msg->left = m->bytes;
	msg->chunked = d->bulk == DF_BULK_CHUNK && (m->flags & FABRIC_BULK) && m->bytes >= d->chunk_threshold &&
		       m->bytes > d->mtu;
	uint32_t unit = msg->chunked ? d->chunk : d->mtu;
	msg->units = m->bytes ? (uint32_t)(((uint64_t)m->bytes + unit - 1) / unit) : 1;
	msg->unsent = msg->remaining = msg->units;
	msg->seq = f->seq_next++;
	msg->first_seen = 0;
	if (f->tail)
		f->tail->next = msg;
	else
		f->head = msg;
	f->tail = msg;
	(*d->c.msgs_sent)++;
	if (f->state == DF_FLOW_IDLE)
		flow_wake(d, e, f);
}

static void ev_deliver(struct sim *sim, void *obj, uint64_t arg)
{
	struct df *d = obj;
	struct df_msg *msg = (struct df_msg *)(uintptr_t)arg;
	struct fabric_msg *m = msg->m;
	pool_put(&d->msgs, msg);
	struct df_attach *a = &d->att[m->dst];
	if (!a->fn)
		die("dragonfly fabric: message to NIC %u, which never attached", m->dst);
	(*d->c.msgs_delivered)++;
	a->fn(sim, a->nic, m);
}

static void check_order(struct df *d, struct df_flow *f, uint32_t seq, bool ordered)
{
	if (f->seen_any && (int32_t)(seq - f->seq_max) < 0)
		(*d->c.reordered)++;
	else
		f->seq_max = seq;
	f->seen_any = 1;
	if (!ordered)
		return;
	if (f->seen_ordered && (int32_t)(seq - f->seq_max_ordered) < 0)
		(*d->c.reordered_ordered)++;
	else
		f->seq_max_ordered = seq;
	f->seen_ordered = 1;
}

void df_acks_absorb_due(struct df *d, struct df_flow *f, simtime_t now)
{
	struct df_ack *a;
	while ((a = f->ack_head) && a->at <= now) {
		bool ordered = a->units & DF_ACK_ORDERED;
		uint32_t units = a->units & ~DF_ACK_ORDERED;
		f->inflight -= units;
		if (ordered)
			f->routed_ordered -= units;
		check_order(d, f, a->seq, ordered);
		f->ack_head = a->next;
		pool_put(&d->acks, a);
	}
	if (!f->ack_head)
		f->ack_tail = NULL;
}

void df_flows_settle(struct df *d)
{
	/* After a run that drained, every ack would have been an event by now; after one that stopped early,
	 * those due by the stop. */
	simtime_t now = sim_pending(d->sim) ? sim_now(d->sim) : SIM_TIME_MAX;
	for (uint32_t i = 0; i < d->nep; i++) {
		struct df_ep *e = d->ep[i];
		for (uint32_t k = 0; e && k <= e->ft_mask; k++)
			if (e->ft[k].f)
				df_flow_absorb(d, e->ft[k].f, now);
	}
}

void df_eject(struct df *d, struct df_oport *op, struct df_pkt *pkt, simtime_t tx_end)
{
	struct df_msg *msg = pkt->msg;
	simtime_t arrive = tx_end + d->lat_edge;
	(void)op;
	if (!msg->first_seen) {
		msg->first_seen = 1;
		msg->m->first_arrival = arrive;
	}
	(*d->c.pkts_delivered)++;
	if (--msg->remaining == 0) {
		*d->c.bytes_delivered += msg->m->bytes;
		/* The ack reaches the source after the reverse path's zero-load latency; a flow's acks are in time
		 * order (its messages leave through one link, one after the other). */
		struct df_flow *f = msg->flow;
		struct df_ack *a = pool_get(&d->acks);
		a->next = NULL;
		a->at = arrive + f->ack_lat;
		a->seq = msg->seq;
		a->units = msg->units | (pkt->flags & DF_PKT_ORDERED ? DF_ACK_ORDERED : 0);
		if (f->ack_tail)
			f->ack_tail->next = a;
		else
			f->ack_head = a;
		f->ack_tail = a;
		f->in_net -= msg->units;
		if (f->state == DF_FLOW_IDLE && !f->in_net && !f->idle_listed)
			idle_add(f->ep, f); /* its last ack is on its way */
		sim_schedule_at(d->sim, arrive, ev_deliver, d, (uint64_t)(uintptr_t)msg);
	}
	pool_put(&d->pkts, pkt);
}

/* ev_deliver(df, msg): the NIC's packet the message carries. */
static void deliver_prefetch(const void *obj, uint64_t arg)
{
	const struct df_msg *msg = (const struct df_msg *)(uintptr_t)arg;
	(void)obj;
	__builtin_prefetch(msg->m);
}

/* ... one pop later: the receiving NIC's record ... */
static void deliver_prefetch_next(const void *obj, uint64_t arg)
{
	const struct df *d = obj;
	const struct df_msg *msg = (const struct df_msg *)(uintptr_t)arg;
	__builtin_prefetch(d->att[msg->m->dst].nic);
}

/* ... and on the next three pops: what the NIC's receive handler reaches from its record, one level deeper
 * each time (fabric_deliver_prefetch). */
static inline void deliver_prefetch_rx(const void *obj, uint64_t arg, unsigned stage)
{
	const struct df *d = obj;
	const struct df_msg *msg = (const struct df_msg *)(uintptr_t)arg;
	const struct df_attach *a = &d->att[msg->m->dst];
	if (d->rx_pf && a->fn == d->rx_pf_fn)
		d->rx_pf(a->nic, msg->m, stage);
}
static void deliver_prefetch_rx0(const void *obj, uint64_t arg) { deliver_prefetch_rx(obj, arg, 0); }
static void deliver_prefetch_rx1(const void *obj, uint64_t arg) { deliver_prefetch_rx(obj, arg, 1); }
static void deliver_prefetch_rx2(const void *obj, uint64_t arg) { deliver_prefetch_rx(obj, arg, 2); }

void df_send_prefetch(const struct fabric *f, const struct fabric_msg *m, unsigned stage)
{
	const struct df *d = (const struct df *)f;
	if (m->src >= d->nep)
		return;
	if (stage == 0) {
		__builtin_prefetch(&d->ep[m->src]);
		return;
	}
	const struct df_ep *e = d->ep[m->src];
	if (!e)
		return;
	if (stage == 1) {
		__builtin_prefetch(e);
	} else if (e->ft) {
		const struct df_ftent *s = &e->ft[ft_slot(ft_key(m->dst, m->tc), e->ft_mask)];
		if (stage == 2)
			__builtin_prefetch(s);
		else if (s->f && s->key == ft_key(m->dst, m->tc))
			__builtin_prefetch(s->f); /* the flow record, when it sits in its home slot */
	}
}

void df_endpoint_prefetch_hooks(struct sim *sim)
{
	sim_prefetch_hook(sim, ev_deliver, deliver_prefetch);
	sim_prefetch_hook_stage(sim, ev_deliver, 1, deliver_prefetch_next);
	sim_prefetch_hook_stage(sim, ev_deliver, 2, deliver_prefetch_rx0);
	sim_prefetch_hook_stage(sim, ev_deliver, 3, deliver_prefetch_rx1);
	sim_prefetch_hook_stage(sim, ev_deliver, 4, deliver_prefetch_rx2);
}
