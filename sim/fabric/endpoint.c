/* The endpoint edge of the dragonfly: what a Cassini NIC's link interface does with fabric messages.
 *
 * fabric_send queues a message on its flow (source, destination, traffic class).  The injection port
 * serves the sendable flows round robin, one unit at a time: a packet of at most mtu payload bytes plus a
 * header, or in coarse bulk mode a chunk train (chunk_bytes of payload, one header per packet it spans)
 * that moves through the switches as one unit.  A unit needs credits for the first switch's input
 * buffer.  Its delivery at the destination is acknowledged back to the source after the zero-load latency
 * of the reverse path; the acks drive:
 *   - the flow's in-flight count (ordered traffic keeps its route while it is non-zero, routing.c);
 *   - endpoint congestion control: the last switch marks units that leave an endpoint queue deeper than
 *     cc_threshold_bytes; a marked ack cuts that flow's window (at most once per window of acks), unmarked
 *     acks grow it additively.  Only flows into the congested endpoint get marks, so only the sources that
 *     feed it are held back, and the fabric's buffers stay free for the other flows;
 *   - reorder detection per flow (counters fabric.reordered_msgs and fabric.reordered_ordered_msgs).
 * Without congestion control one ack per message suffices; with it, every unit is acknowledged.
 */
#include <stdlib.h>

#include "../stats.h"
#include "../util.h"
#include "dragonfly.h"

enum { ACK_PERUNIT = 1, ACK_MARK = 2, ACK_LAST = 4, ACK_ORDERED = 8 };
#define ACK_COUNT_BITS 26

static inline uint64_t ack_pack(uint32_t seq, uint32_t count, uint32_t flags)
{
	return (uint64_t)seq | (uint64_t)count << 32 | (uint64_t)flags << (32 + ACK_COUNT_BITS);
}

/* ---- flow table: open addressing keyed by (dst, tc) ---- */

static inline uint32_t ft_slot(uint32_t dst, uint32_t tc, uint32_t mask)
{
	return ((dst << 3 | tc) * 0x9e3779b1u) >> 9 & mask;
}

static void ft_grow(struct df_ep *e)
{
	uint32_t oldn = e->ft_mask + 1, mask = oldn * 2 - 1;
	struct df_flow **old = e->ft, **t = xcalloc(mask + 1, sizeof(*t));
	for (uint32_t i = 0; i < oldn; i++) {
		if (!old[i])
			continue;
		uint32_t j = ft_slot(old[i]->dst, old[i]->tc, mask);
		while (t[j])
			j = (j + 1) & mask;
		t[j] = old[i];
	}
	free(old);
	e->ft = t;
	e->ft_mask = mask;
}

static void ft_remove(struct df_ep *e, struct df_flow *f)
{
	uint32_t mask = e->ft_mask, i = ft_slot(f->dst, f->tc, mask);
	while (e->ft[i] != f)
		i = (i + 1) & mask;
	for (uint32_t j = i;;) {
		j = (j + 1) & mask;
		if (!e->ft[j])
			break;
		uint32_t k = ft_slot(e->ft[j]->dst, e->ft[j]->tc, mask);
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			e->ft[i] = e->ft[j];
			i = j;
		}
	}
	e->ft[i] = NULL;
	e->ft_n--;
}

static struct df_ep *ep_get(struct df *d, uint32_t id)
{
	struct df_ep *e = d->ep[id];
	if (__builtin_expect(e != NULL, 1))
		return e;
	e = xcalloc(1, sizeof(*e));
	e->id = id;
	e->sw = id / d->p;
	e->tx = df_oport_new(d, DF_OP_INJECT, e, id % d->p);
	e->tx->peer = e->sw;
	e->tx->peer_port = (uint8_t)(id % d->p);
	e->tx->link_lat = d->lat_edge;
	e->ft_mask = 7;
	e->ft = xcalloc(8, sizeof(*e->ft));
	d->ep[id] = e;
	d->eps_alloc++;
	return e;
}

static struct df_flow *flow_get(struct df *d, struct df_ep *e, uint32_t dst, uint32_t tc)
{
	uint32_t i = ft_slot(dst, tc, e->ft_mask);
	for (struct df_flow *f; (f = e->ft[i]); i = (i + 1) & e->ft_mask)
		if (f->dst == dst && f->tc == tc)
			return f;
	if ((e->ft_n + 1) * 2 > e->ft_mask + 1) {
		ft_grow(e);
		i = ft_slot(dst, tc, e->ft_mask);
		while (e->ft[i])
			i = (i + 1) & e->ft_mask;
	}
	struct df_flow *f = pool_get(&d->flows);
	*f = (struct df_flow){ .ep = e, .dst = dst, .tc = (uint8_t)tc, .state = DF_FLOW_IDLE };
	f->window = d->cc_max_win;
	f->acked_since_cut = f->window; /* the first mark may cut at once */
	uint32_t nl, ng, nsw;
	df_min_hops(d, dst, e->id, &nl, &ng, &nsw);
	f->ack_lat = df_path_latency(d, nl, ng, nsw) + df_ser(d, d->hdr);
	e->ft[i] = f;
	e->ft_n++;
	(*d->c.flows_created)++;
	return f;
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

static inline bool window_open(const struct df *d, const struct df_flow *f, uint32_t wire)
{
	return !d->cc || !f->inflight_bytes || f->inflight_bytes + wire <= f->window;
}

/* A flow got a message (or acks opened its window): make it sendable, or park it on its window. */
static void flow_wake(struct df *d, struct df_ep *e, struct df_flow *f)
{
	struct df_msg *msg = f->head;
	if (window_open(d, f, unit_wire(d, msg, unit_payload(d, msg)))) {
		f->state = DF_FLOW_ACTIVE;
		ring_add(e, f);
	} else {
		f->state = DF_FLOW_PARKED;
	}
}

static void inject(struct df *d, struct df_ep *e, struct df_flow *f, uint32_t payload, uint32_t wire, simtime_t now)
{
	struct df_msg *msg = f->head;
	struct fabric_msg *m = msg->m;
	struct df_oport *op = e->tx;
	struct df_otc *t = &op->tc[f->tc];
	struct df_pkt *pkt = pool_get(&d->pkts);
	bool ordered = m->flags & FABRIC_ORDERED;
	*pkt = (struct df_pkt){
		.msg = msg, .up = op, .birth = now, .wire = wire, .payload = payload, .sw = e->sw,
		.dsw = m->dst / d->p, .via = DF_NONE, .dport = (uint8_t)(m->dst % d->p),
		.in_port = (uint8_t)(e->id % d->p), .tc = f->tc, .flags = ordered ? DF_PKT_ORDERED : 0,
	};
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
	f->inflight_bytes += wire;
	f->inflight_ordered += ordered;
	op->link_free = now + df_ser(d, wire);
	struct df_tel *tel = df_tel(d, op, f->tc);
	*tel->tx_bytes += wire;
	(*tel->tx_pkts)++;
	if (t->stall_since != SIM_TIME_MAX) {
		*tel->stall_ps += now - t->stall_since;
		t->stall_since = SIM_TIME_MAX;
	}
	(*d->c.pkts_injected)++;
	sim_schedule_at(d->sim, now + d->lat_edge + d->sw_lat, df_ev_arrive, d, (uint64_t)(uintptr_t)pkt);
}

void df_inject_kick(struct df *d, struct df_ep *e)
{
	struct df_oport *op = e->tx;
	simtime_t now = sim_now(d->sim);
	if (op->kick_armed || !e->nactive)
		return;
	if (op->link_free > now) {
		df_arm_kick(d, op, op->link_free);
		return;
	}
	struct df_flow *f = e->ring;
	for (uint32_t n = e->nactive; n--;) {
		struct df_flow *next = f->next;
		struct df_msg *msg = f->head;
		uint32_t payload = unit_payload(d, msg), wire = unit_wire(d, msg, payload);
		struct df_otc *t = &op->tc[f->tc];
		if (!df_credit_ok(t, 0, wire)) {
			if (t->stall_since == SIM_TIME_MAX)
				t->stall_since = now;
		} else if (!window_open(d, f, wire)) {
			ring_del(e, f);
			f->state = DF_FLOW_PARKED;
		} else {
			bool stays = f->state == DF_FLOW_ACTIVE;
			inject(d, e, f, payload, wire, now);
			if (stays && f->state == DF_FLOW_ACTIVE)
				e->ring = f->next; /* round robin between flows, unit by unit */
			if (e->nactive)
				df_arm_kick(d, op, op->link_free);
			return;
		}
		f = next;
	}
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
	struct df_flow *f = flow_get(d, e, m->dst, m->tc);
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
	df_inject_kick(d, e);
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

static void cc_on_ack(struct df *d, struct df_flow *f, uint32_t bytes, bool marked)
{
	f->acked_since_cut += bytes;
	if (marked) {
		if (f->acked_since_cut >= f->window) {
			uint32_t w = (uint32_t)((double)f->window * d->cc_md);
			f->window = w > d->cc_min_win ? w : d->cc_min_win;
			f->acked_since_cut = 0;
			(*d->c.cc_cuts)++;
		}
	} else if (f->window < d->cc_max_win) {
		uint64_t inc = (uint64_t)d->cc_ai * bytes / f->window;
		uint64_t w = (uint64_t)f->window + (inc ? inc : 1);
		f->window = w < d->cc_max_win ? (uint32_t)w : d->cc_max_win;
	}
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

static void ev_ack(struct sim *sim, void *obj, uint64_t arg)
{
	struct df_flow *f = obj;
	struct df_ep *e = f->ep;
	struct df *d = e->tx->df;
	uint32_t count = (uint32_t)(arg >> 32) & ((1u << ACK_COUNT_BITS) - 1);
	uint32_t flags = (uint32_t)(arg >> (32 + ACK_COUNT_BITS));
	uint32_t units = flags & ACK_PERUNIT ? 1 : count;
	(void)sim;
	f->inflight -= units;
	if (flags & ACK_ORDERED)
		f->inflight_ordered -= units;
	if (flags & ACK_PERUNIT) {
		f->inflight_bytes -= count;
		cc_on_ack(d, f, count, flags & ACK_MARK);
	}
	if (flags & ACK_LAST)
		check_order(d, f, (uint32_t)arg, flags & ACK_ORDERED);
	if (f->state == DF_FLOW_PARKED) {
		struct df_msg *msg = f->head;
		if (window_open(d, f, unit_wire(d, msg, unit_payload(d, msg)))) {
			f->state = DF_FLOW_ACTIVE;
			ring_add(e, f);
			df_inject_kick(d, e);
		}
	} else if (f->state == DF_FLOW_IDLE && !f->inflight) {
		ft_remove(e, f);
		pool_put(&d->flows, f);
	}
}

void df_eject(struct df *d, struct df_oport *op, struct df_pkt *pkt, simtime_t tx_end)
{
	struct df_msg *msg = pkt->msg;
	struct df_flow *f = msg->flow;
	simtime_t arrive = tx_end + d->lat_edge;
	if (!msg->first_seen) {
		msg->first_seen = 1;
		msg->m->first_arrival = arrive;
	}
	bool last = --msg->remaining == 0;
	uint32_t ord = pkt->flags & DF_PKT_ORDERED ? ACK_ORDERED : 0;
	(*d->c.pkts_delivered)++;
	*d->c.bytes_delivered += pkt->payload;
	if (d->cc) {
		uint32_t mark = op->tc[pkt->tc].queued > d->cc_threshold ? ACK_MARK : 0;
		*d->c.cc_marks += mark != 0;
		sim_schedule_at(d->sim, arrive + f->ack_lat, ev_ack, f,
				ack_pack(msg->seq, pkt->wire, ACK_PERUNIT | mark | ord | (last ? ACK_LAST : 0)));
	} else if (last) {
		sim_schedule_at(d->sim, arrive + f->ack_lat, ev_ack, f, ack_pack(msg->seq, msg->units, ACK_LAST | ord));
	}
	if (last)
		sim_schedule_at(d->sim, arrive, ev_deliver, d, (uint64_t)(uintptr_t)msg);
	pool_put(&d->pkts, pkt);
}
