/* The Rosetta switch: input buffers organised as virtual output queues, credit-based links, traffic
 * classes with their own buffers and shares, and virtual cut-through forwarding.
 *
 * A packet whose head reaches a switch becomes eligible for its output one switch latency later
 * (df_ev_arrive).  It waits in the VOQ of (input port, output port, class, VC).  Each output arbitrates
 * between classes by start-time fair queueing over bytes (shares) and, inside a class, between its VOQs
 * (oldest packet first, or round robin).  A VOQ may send only if the downstream input buffer of its class
 * has room for the whole packet: its shared space, or the slot reserved for the packet's VC.  VC = number
 * of switch-to-switch hops already taken, which never decreases along a route, so the channel dependency
 * graph is acyclic and the reserved slots make the fabric deadlock-free whatever fills the shared space.
 * The input slot is freed, and its credit sent upstream (one link latency), when the tail leaves.
 *
 * Because VOQs of one input share that input's buffer, packets for a congested endpoint can fill it: the
 * upstream output then has no credits for anyone, and the congestion spreads backwards (tree saturation)
 * unless endpoint congestion control (endpoint.c) holds the contributing sources back.
 *
 * Cost: an output's non-empty VOQs of a class sit in one small array (the arbiter's ring, in order), so
 * finding a packet's VOQ and arbitrating scan contiguous memory; a packet that finds its output idle,
 * free and with credits leaves in its arrival event without being queued; credits return through the
 * link's credit channel, read when the transmitter next decides (see df_oport), so a hop costs one event,
 * plus one when the packet has to wait for its output.
 */
#include <stdlib.h>
#include <string.h>

#include "../fabric/dragonfly.h"
#include "../stats.h"
#include "../util.h"

struct df_rsw *df_switch(struct df *d, uint32_t id)
{
	struct df_rsw *s = d->sw[id];
	if (__builtin_expect(s != NULL, 1))
		return s;
	s = arena_alloc(&d->recs, sizeof(*s) + d->radix * sizeof(s->port[0]));
	s->id = id;
	s->group = df_group_of_sw(d, id);
	s->idx = df_idx_of_sw(d, id);
	rng_init_idx(&s->rng, sim_seed(d->sim), "fabric.sw", id);
	d->sw[id] = s;
	d->switches_alloc++;
	return s;
}

struct df_oport *df_oport_init(struct df *d, void *mem, enum df_port_kind kind, void *owner, uint32_t port)
{
	struct df_oport *op = mem ? mem : arena_alloc(&d->recs, d->port_bytes);
	op->df = d;
	op->cr_next = SIM_TIME_MAX;
	op->kind = (uint8_t)kind;
	op->owner = owner;
	op->port = (uint8_t)port;
	uint32_t nvc = kind == DF_OP_INJECT ? 1 : d->routing == DF_ROUTE_MINIMAL ? 3 : DF_MAX_VC;
	for (uint32_t t = 0; t < d->ntc; t++) {
		struct df_otc *c = &op->tc[t];
		c->stall_since = SIM_TIME_MAX;
		if (kind == DF_OP_EJECT) {
			/* The NIC drains its link at line rate: no credits. */
			c->shared = c->avail = UINT32_MAX;
			continue;
		}
		c->shared = d->buf[t] - nvc * d->resv;
		for (uint32_t v = 0; v < nvc; v++)
			c->resv[v] = d->resv;
		c->avail = d->buf[t];
	}
	d->ports_alloc++;
	return op;
}

void df_oport_release(struct df *d, struct df_oport *op)
{
	if (!op)
		return;
	for (uint32_t t = 0; t < d->ntc; t++)
		free(op->tc[t].vq);
	free(op->cr);
}

struct df_oport *df_port(struct df *d, struct df_rsw *s, uint32_t port)
{
	struct df_oport *op = s->port[port];
	if (__builtin_expect(op != NULL, 1))
		return op;
	if (port < d->local0) {
		op = df_oport_init(d, NULL, DF_OP_EJECT, s, port);
		op->peer = s->id * d->p + port;
		op->link_lat = (uint32_t)d->lat_edge;
	} else {
		uint32_t psw, pport;
		if (!df_port_peer(d, s->id, port, &psw, &pport))
			die("dragonfly: route through unconnected port %u of switch %u", port, s->id);
		op = df_oport_init(d, NULL, DF_OP_SWITCH, s, port);
		op->peer = psw;
		op->peer_port = (uint8_t)pport;
		op->global = port >= d->global0;
		op->link_lat = (uint32_t)(op->global ? d->lat_global : d->lat_local);
		simtime_t rtt = 2 * (simtime_t)op->link_lat + d->sw_lat + df_ser(d, d->mtu + d->hdr);
		op->credit_rtt = (uint32_t)((double)rtt / d->ps_per_byte) + d->resv; /* + the unit in transit */
	}
	s->port[port] = op;
	return op;
}

uint32_t df_port_depth(struct df *d, const struct df_rsw *s, uint32_t port, uint32_t tc)
{
	/* Bytes waiting for this output, plus the downstream input buffer's occupancy beyond what a busy
	 * link always holds (one credit round trip at line rate, plus the unit being forwarded, which in chunk
	 * mode is a whole chunk): when the next switch cannot forward, its
	 * buffer fills and the congestion shows here one hop early. */
	struct df_oport *op = s->port[port];
	if (!op)
		return 0;
	const struct df_otc *t = &op->tc[tc];
	if (op->kind == DF_OP_EJECT)
		return t->queued;
	df_credits_absorb(op, sim_now(d->sim));
	uint32_t used = d->buf[tc] - t->avail;
	return t->queued + (used > op->credit_rtt ? used - op->credit_rtt : 0);
}

/* ---- the VOQs of an (output, class): an array in round-robin order from vq[cur] ---- */

static inline uint16_t voq_key(uint32_t in_port, uint32_t vc)
{
	return (uint16_t)(in_port << 3 | vc);
}

static inline uint32_t voq_vc(const struct df_voq *v)
{
	return v->key & 7;
}

/* A new VOQ joins at the end of the round, just before the cursor. */
/* The VOQs' keys, in the same order, follow the array (cap entries): finding a packet's VOQ scans them. */
static inline uint16_t *voq_keys(const struct df_otc *t)
{
	return (uint16_t *)(t->vq + t->cap);
}

static struct df_voq *voq_insert(struct df_otc *t, uint16_t key)
{
	if (t->nvq == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2u : 4;
		struct df_voq *vq = xmalloc(cap * (sizeof(*vq) + sizeof(uint16_t)));
		if (t->nvq) { /* the first VOQ finds no array: memcpy from NULL is undefined even for 0 bytes */
			memcpy(vq, t->vq, t->nvq * sizeof(*vq));
			memcpy((void *)(vq + cap), voq_keys(t), t->nvq * sizeof(uint16_t));
		}
		free(t->vq);
		t->vq = vq;
		t->cap = (uint16_t)cap;
	}
	uint32_t at = t->nvq ? t->cur : 0;
	uint16_t *keys = voq_keys(t);
	memmove(&t->vq[at + 1], &t->vq[at], (t->nvq - at) * sizeof(*t->vq));
	memmove(&keys[at + 1], &keys[at], (t->nvq - at) * sizeof(*keys));
	keys[at] = key;
	t->nvq++;
	if (t->nvq > 1)
		t->cur++;
	struct df_voq *v = &t->vq[at];
	v->key = key;
	return v;
}

/* Removing the VOQ at i leaves the cursor on the one that followed it. */
static void voq_remove(struct df_otc *t, uint32_t i)
{
	uint16_t *keys = voq_keys(t);
	memmove(&t->vq[i], &t->vq[i + 1], (t->nvq - i - 1) * sizeof(*t->vq));
	memmove(&keys[i], &keys[i + 1], (t->nvq - i - 1) * sizeof(*keys));
	t->nvq--;
	t->cur = (uint16_t)(t->nvq && i < t->nvq ? i : 0);
}

/* ---- the credit channel of a link (see df_oport) ---- */

static void credit_grow(struct df_oport *op)
{
	uint32_t cap = op->cr ? (op->cr_mask + 1) * 2 : 16;
	struct df_credit *c = xmalloc(cap * sizeof(*c));
	for (uint32_t i = 0; i < op->cr_n; i++)
		c[i] = op->cr[(op->cr_head + i) & op->cr_mask];
	free(op->cr);
	op->cr = c;
	op->cr_head = 0;
	op->cr_mask = cap - 1;
}

void df_credits_absorb_due(struct df_oport *op, simtime_t now)
{
	while (op->cr_n && op->cr[op->cr_head].at <= now) {
		const struct df_credit *c = &op->cr[op->cr_head];
		struct df_otc *t = &op->tc[c->tc];
		if (c->resv)
			t->resv[c->vc] += c->wire;
		else
			t->shared += c->wire;
		t->avail += c->wire;
		op->cr_head = (op->cr_head + 1) & op->cr_mask;
		op->cr_n--;
	}
	op->cr_next = op->cr_n ? op->cr[op->cr_head].at : SIM_TIME_MAX;
}

/* The tail of a unit left the buffer `up` holds credits for: the credit reaches `up` one link latency
 * later.  Units leave an input buffer through different outputs with different serialization times, so
 * arrival times are not quite in push order: insert from the back. */
static void credit_return(struct df *d, struct df_oport *up, simtime_t at, uint32_t tc, uint32_t vc, bool resv,
			  uint32_t wire)
{
	if (!up->cr || up->cr_n > up->cr_mask)
		credit_grow(up);
	uint32_t i = up->cr_n, mask = up->cr_mask;
	for (; i && up->cr[(up->cr_head + i - 1) & mask].at > at; i--)
		up->cr[(up->cr_head + i) & mask] = up->cr[(up->cr_head + i - 1) & mask];
	up->cr[(up->cr_head + i) & mask] = (struct df_credit){ .at = at, .wire = wire, .tc = (uint8_t)tc,
							       .vc = (uint8_t)vc, .resv = resv };
	up->cr_n++;
	if (at < up->cr_next)
		up->cr_next = at;
	if (up->credit_wait)
		df_arm_kick(d, up, at);
}

/* ---- events ---- */

/* One pending kick per port; arming an earlier one supersedes the later (its event is then ignored).
 * SIM_TIME_MAX: nothing to wait for. */
void df_arm_kick(struct df *d, struct df_oport *op, simtime_t at)
{
	if ((op->kick_armed && op->kick_at <= at) || at == SIM_TIME_MAX)
		return;
	op->kick_armed = 1;
	op->kick_at = at;
	sim_schedule_at(d->sim, at, df_ev_kick, op, ++op->kick_gen);
}

/* The VOQ (index) whose head may go next on (output, class) t: the oldest, or the next in round-robin
 * order, among the VOQs whose head fits the downstream credits; -1 if none.  In a saturated fabric most
 * calls find nothing: a failed scan remembers the smallest head it saw, and until a VOQ or its head
 * changes, credits below that size skip the scan. */
static int pick_voq(const struct df *d, const struct df_oport *op, struct df_otc *t)
{
	bool eject = op->kind == DF_OP_EJECT;
	if (!eject && t->need) {
		bool any = t->shared >= t->need;
		for (uint32_t vc = 0; vc < DF_MAX_VC && !any; vc++)
			any = t->nvoq_vc[vc] && t->resv[vc] >= t->need;
		if (!any)
			return -1;
	}
	uint32_t n = t->nvq, i = t->cur, need = UINT32_MAX;
	int best = -1;
	const struct df_voq *vq = t->vq;
	if (eject) {
		if (d->arb == DF_ARB_ROUND_ROBIN)
			return n ? (int)i : -1;
		simtime_t bb = SIM_TIME_MAX;
		for (uint32_t k = n; k--; i = i + 1 == n ? 0 : i + 1)
			if (best < 0 || vq[i].head_birth < bb) {
				best = (int)i;
				bb = vq[i].head_birth;
			}
		return best;
	}
	if (d->arb == DF_ARB_ROUND_ROBIN) {
		for (uint32_t k = n; k--; i = i + 1 == n ? 0 : i + 1) {
			if (df_credit_ok(t, voq_vc(&vq[i]), vq[i].head_wire))
				return (int)i;
			need = vq[i].head_wire < need ? vq[i].head_wire : need;
		}
	} else {
		simtime_t bb = SIM_TIME_MAX;
		for (uint32_t k = n; k--; i = i + 1 == n ? 0 : i + 1) {
			if (!df_credit_ok(t, voq_vc(&vq[i]), vq[i].head_wire)) {
				need = vq[i].head_wire < need ? vq[i].head_wire : need;
				continue;
			}
			if (best < 0 || vq[i].head_birth < bb) {
				best = (int)i;
				bb = vq[i].head_birth;
			}
		}
	}
	if (best < 0 && n)
		t->need = need;
	return best;
}

/* Send pkt (already out of its VOQ) on op: credits, fair-share clock, link, telemetry, the credit back
 * upstream, and the packet on to the next switch or the endpoint. */
static void send_unit(struct df *d, struct df_oport *op, uint32_t tc, uint32_t vc, struct df_pkt *pkt, simtime_t now)
{
	struct df_otc *t = &op->tc[tc];
	uint32_t wire = pkt->wire;
	t->need = 0;
	t->queued -= wire;
	if (!t->queued)
		op->active &= ~(1u << tc);
	bool resv = false;
	if (op->kind != DF_OP_EJECT) {
		resv = t->shared < wire;
		if (resv)
			t->resv[vc] -= wire;
		else
			t->shared -= wire;
		t->avail -= wire;
	}
	op->vclock = t->vtime;
	t->vtime += (uint64_t)wire * d->wfq_inc[tc];

	simtime_t end = now + df_ser(d, wire);
	op->link_free = end;
	t->tx_bytes += wire;
	t->tx_pkts++;
	if (t->stall_since != SIM_TIME_MAX) {
		t->stall_ps += now - t->stall_since;
		t->stall_since = SIM_TIME_MAX;
	}
	/* Our input slot frees as the tail leaves; the credit travels back over the same link. */
	struct df_oport *up = pkt->up;
	credit_return(d, up, end + up->link_lat, tc, pkt->upvc, pkt->flags & DF_PKT_RESV, wire);

	if (op->kind == DF_OP_EJECT) {
		df_eject(d, op, pkt, end);
	} else {
		pkt->up = op;
		pkt->upvc = (uint8_t)vc;
		pkt->flags = (uint8_t)((pkt->flags & ~DF_PKT_RESV) | (resv ? DF_PKT_RESV : 0));
		pkt->hops++;
		pkt->ghops += op->global;
		pkt->sw = op->peer;
		pkt->in_port = op->peer_port;
		sim_schedule_at(d->sim, now + op->link_lat + d->sw_lat, df_ev_arrive, d, (uint64_t)(uintptr_t)pkt);
	}
	/* A kick armed while blocked on credits is moot now: the link is busy until `end`. */
	op->credit_wait = 0;
	op->kick_armed = 0;
	if (op->active)
		df_arm_kick(d, op, end);
}

/* Dequeue the head of VOQ i of class tc and send it. */
static void transmit(struct df *d, struct df_oport *op, uint32_t tc, uint32_t i, simtime_t now)
{
	struct df_otc *t = &op->tc[tc];
	struct df_voq *v = &t->vq[i];
	struct df_pkt *pkt = v->head;
	uint32_t vc = voq_vc(v);
	v->head = pkt->next;
	if (v->head) {
		v->head_wire = v->head->wire;
		v->head_birth = v->head->birth;
		t->cur = (uint16_t)(i + 1 == t->nvq ? 0 : i + 1);
	} else {
		/* Empty VOQs leave the ring. */
		t->nvoq_vc[vc]--;
		voq_remove(t, i);
	}
	send_unit(d, op, tc, vc, pkt, now);
}

static void switch_kick(struct df *d, struct df_oport *op)
{
	simtime_t now = sim_now(d->sim);
	if (op->link_free > now) {
		df_arm_kick(d, op, op->link_free);
		return;
	}
	df_credits_absorb(op, now);
	int best = -1;
	uint32_t best_tc = 0;
	uint64_t best_vt = UINT64_MAX;
	for (uint32_t m = op->active; m; m &= m - 1) {
		uint32_t tc = (uint32_t)__builtin_ctz(m);
		struct df_otc *t = &op->tc[tc];
		int i = pick_voq(d, op, t);
		if (i < 0) {
			if (t->stall_since == SIM_TIME_MAX)
				t->stall_since = now;
			continue;
		}
		if (t->vtime < best_vt) {
			best_vt = t->vtime;
			best = i;
			best_tc = tc;
		}
	}
	if (best >= 0) {
		transmit(d, op, best_tc, (uint32_t)best, now);
	} else {
		op->credit_wait = 1;
		df_arm_kick(d, op, df_next_credit(op));
	}
}

void df_ev_kick(struct sim *sim, void *obj, uint64_t arg)
{
	struct df_oport *op = obj;
	(void)sim;
	if (!op->kick_armed || arg != op->kick_gen)
		return;
	op->kick_armed = 0;
	if (op->kind == DF_OP_INJECT)
		df_inject_kick(op->df, op->owner);
	else
		switch_kick(op->df, op);
}

/* The packet joins VOQ (in_port, vc) of class t. */
static void enqueue(struct df_otc *t, struct df_pkt *pkt, uint32_t vc)
{
	uint16_t key = voq_key(pkt->in_port, vc);
	struct df_voq *v = NULL;
	const uint16_t *keys = voq_keys(t);
	for (uint32_t i = 0, n = t->nvq; i < n; i++)
		if (keys[i] == key) {
			v = &t->vq[i];
			break;
		}
	pkt->next = NULL;
	if (v) {
		v->tail->next = pkt;
		v->tail = pkt;
		return;
	}
	v = voq_insert(t, key);
	v->head = v->tail = pkt;
	v->head_wire = pkt->wire;
	v->head_birth = pkt->birth;
	t->nvoq_vc[vc]++;
	t->need = 0;
}

void df_ev_arrive(struct sim *sim, void *obj, uint64_t arg)
{
	struct df *d = obj;
	struct df_pkt *pkt = (struct df_pkt *)(uintptr_t)arg;
	struct df_rsw *s = df_switch(d, pkt->sw);
	simtime_t now = sim_now(sim);
	if (!(pkt->flags & DF_PKT_ROUTED))
		df_route_first(d, s, pkt);
	(*d->c.hops)++;
	uint32_t out = df_next_port(d, s, pkt);
	struct df_oport *op = df_port(d, s, out);
	uint32_t tc = pkt->tc, vc = op->kind == DF_OP_EJECT ? 0 : pkt->hops;
	struct df_otc *t = &op->tc[tc];
	df_credits_absorb(op, now);
	/* An output with nothing queued, its link free and no kick pending would pick this packet at once if
	 * it fits the credits: send it without queueing it. */
	bool direct = !op->active && !op->kick_armed && op->link_free <= now &&
		      (op->kind == DF_OP_EJECT || df_credit_ok(t, vc, pkt->wire));
	if (!direct)
		enqueue(t, pkt, vc);
	if (!t->queued) {
		op->active |= 1u << tc;
		if (t->vtime < op->vclock)
			t->vtime = op->vclock;
	}
	t->queued += pkt->wire;
	if (d->cc) {
		if (op->kind == DF_OP_EJECT)
			df_cc_egress(d, t, pkt, now);
		else if (d->cc_fabric)
			df_cc_link(d, t, pkt, now);
	}
	t->used = 1;
	if (t->queued > t->queue_hwm)
		t->queue_hwm = t->queued;
	if (direct)
		send_unit(d, op, tc, vc, pkt, now);
	else if (!op->kick_armed || op->credit_wait)
		switch_kick(d, op); /* sends now, or arms a kick for when the link frees or a credit arrives */
}

/* df_ev_arrive(df, pkt), two pops ahead: the switch record, and the line of its port table the packet's
 * output is in (the route is fixed after the first switch, so the port follows from the packet alone: a
 * copy goes through df_next_port_at, the packet itself is left as it is); the upstream transmitter whose
 * credit ring the departure writes; an unrouted packet's message (the first switch reads its flow). */
static uint32_t arrive_out(const struct df *d, const struct df_pkt *pkt)
{
	struct df_pkt copy = *pkt;
	return df_next_port_at(d, df_group_of_sw(d, pkt->sw), df_idx_of_sw(d, pkt->sw), &copy);
}

static void arrive_prefetch(const void *obj, uint64_t arg)
{
	const struct df *d = obj;
	const struct df_pkt *pkt = (const struct df_pkt *)(uintptr_t)arg;
	const struct df_rsw *s = d->sw[pkt->sw];
	if (!s)
		return;
	__builtin_prefetch(s);
	if (pkt->flags & DF_PKT_ROUTED) {
		uint32_t out = arrive_out(d, pkt);
		__builtin_prefetch(&s->port[out]);
		if (out < d->local0)
			__builtin_prefetch(pkt->msg); /* the last hop: ejection and congestion feedback read it */
	} else {
		__builtin_prefetch(pkt->msg);
	}
	__builtin_prefetch(pkt->up);
}

/* ... and one pop ahead, the level after: the output port's record and class (both lines: vtime,
 * telemetry and congestion control are on the second), the slot of the upstream credit ring the
 * returned credit is compared with and written to, an unrouted packet's flow. */
static void arrive_prefetch_next(const void *obj, uint64_t arg)
{
	const struct df *d = obj;
	const struct df_pkt *pkt = (const struct df_pkt *)(uintptr_t)arg;
	const struct df_rsw *s = d->sw[pkt->sw];
	if (!s)
		return;
	if (pkt->flags & DF_PKT_ROUTED) {
		uint32_t out = arrive_out(d, pkt);
		const struct df_oport *op = s->port[out];
		if (op) {
			__builtin_prefetch(op);
			__builtin_prefetch(&op->tc[pkt->tc]);
			__builtin_prefetch((const char *)&op->tc[pkt->tc] + 64);
		}
		if (out < d->local0) {
			__builtin_prefetch(pkt->msg->flow);
			__builtin_prefetch(pkt->msg->m);
		}
	} else if (pkt->msg) {
		__builtin_prefetch(pkt->msg->flow);
	}
	const struct df_oport *up = pkt->up;
	if (up && up->cr)
		__builtin_prefetch(&up->cr[(up->cr_head + up->cr_n - 1) & up->cr_mask], 1);
}

/* ... and one pop later, with the port's first line in cache: its credit ring's head (arrived credits are
 * taken in first).  A packet on its last hop (to an endpoint port) also had its message fetched at stage 0
 * and its flow and fabric message at stage 1: now its flow's endpoint and the tails its ack and congestion
 * feedback records are linked to (df_eject, df_cc_egress). */
static void arrive_prefetch_last(const void *obj, uint64_t arg)
{
	const struct df *d = obj;
	const struct df_pkt *pkt = (const struct df_pkt *)(uintptr_t)arg;
	const struct df_rsw *s = d->sw[pkt->sw];
	if (!s || !(pkt->flags & DF_PKT_ROUTED))
		return;
	uint32_t out = arrive_out(d, pkt);
	if (out < d->local0) {
		/* the flow's tails its ack or congestion feedback record joins, and its endpoint */
		const struct df_flow *f = pkt->msg->flow;
		__builtin_prefetch(f->ep);
		if (f->ack_tail)
			__builtin_prefetch(f->ack_tail, 1);
		if (f->fb_tail)
			__builtin_prefetch(f->fb_tail, 1);
	}
	const struct df_oport *op = s->port[out];
	if (op && op->cr && op->cr_n)
		__builtin_prefetch(&op->cr[op->cr_head & op->cr_mask]);
}

/* df_ev_kick(port, gen), two pops ahead (the queue fetched the port's first line four pops ahead): the
 * port's second line (df, owner), the classes with queued bytes (both lines: arbitration reads the first,
 * the departure writes the second), the credit ring's head, an injection port's endpoint. */
static void kick_prefetch(const void *obj, uint64_t arg)
{
	const struct df_oport *op = obj;
	if (!op->kick_armed || arg != op->kick_gen)
		return;
	__builtin_prefetch((const char *)op + 64);
	for (uint32_t m = op->active; m; m &= m - 1) {
		__builtin_prefetch(&op->tc[__builtin_ctz(m)]);
		__builtin_prefetch((const char *)&op->tc[__builtin_ctz(m)] + 64);
	}
	if (op->cr && op->cr_n)
		__builtin_prefetch(&op->cr[op->cr_head & op->cr_mask]);
	if (op->kind == DF_OP_INJECT)
		__builtin_prefetch(op->owner);
}

/* ... one pop ahead: the VOQ arrays of those classes. */
static void kick_prefetch_next(const void *obj, uint64_t arg)
{
	const struct df_oport *op = obj;
	if (!op->kick_armed || arg != op->kick_gen || op->kind == DF_OP_INJECT)
		return;
	for (uint32_t m = op->active; m; m &= m - 1) {
		const struct df_otc *t = &op->tc[__builtin_ctz(m)];
		if (t->vq)
			__builtin_prefetch(t->vq);
	}
}

void df_switch_prefetch_hooks(struct sim *sim)
{
	sim_prefetch_hook(sim, df_ev_kick, kick_prefetch);
	sim_prefetch_hook_stage(sim, df_ev_kick, 1, kick_prefetch_next);
	sim_prefetch_hook(sim, df_ev_arrive, arrive_prefetch);
	sim_prefetch_hook_stage(sim, df_ev_arrive, 1, arrive_prefetch_next);
	sim_prefetch_hook_stage(sim, df_ev_arrive, 2, arrive_prefetch_last);
}
