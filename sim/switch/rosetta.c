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
 */
#include <stdlib.h>

#include "../fabric/dragonfly.h"
#include "../stats.h"
#include "../util.h"

struct df_rsw *df_switch(struct df *d, uint32_t id)
{
	struct df_rsw *s = d->sw[id];
	if (__builtin_expect(s != NULL, 1))
		return s;
	s = xcalloc(1, sizeof(*s) + d->radix * sizeof(s->port[0]));
	s->id = id;
	s->group = df_group_of_sw(d, id);
	s->idx = df_idx_of_sw(d, id);
	rng_init_idx(&s->rng, sim_seed(d->sim), "fabric.sw", id);
	s->vh_mask = 15;
	s->vh = xcalloc(16, sizeof(*s->vh));
	d->sw[id] = s;
	d->switches_alloc++;
	return s;
}

struct df_oport *df_oport_new(struct df *d, enum df_port_kind kind, void *owner, uint32_t port)
{
	struct df_oport *op = xcalloc(1, d->port_bytes);
	op->df = d;
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

struct df_oport *df_port(struct df *d, struct df_rsw *s, uint32_t port)
{
	struct df_oport *op = s->port[port];
	if (__builtin_expect(op != NULL, 1))
		return op;
	if (port < d->local0) {
		op = df_oport_new(d, DF_OP_EJECT, s, port);
		op->peer = s->id * d->p + port;
		op->link_lat = d->lat_edge;
	} else {
		uint32_t psw, pport;
		if (!df_port_peer(d, s->id, port, &psw, &pport))
			die("dragonfly: route through unconnected port %u of switch %u", port, s->id);
		op = df_oport_new(d, DF_OP_SWITCH, s, port);
		op->peer = psw;
		op->peer_port = (uint8_t)pport;
		op->global = port >= d->global0;
		op->link_lat = op->global ? d->lat_global : d->lat_local;
		simtime_t rtt = 2 * op->link_lat + d->sw_lat + df_ser(d, d->mtu + d->hdr);
		op->credit_rtt = (uint32_t)((double)rtt / d->ps_per_byte) + d->resv; /* + the unit in transit */
	}
	s->port[port] = op;
	return op;
}

uint32_t df_port_depth(const struct df *d, const struct df_rsw *s, uint32_t port, uint32_t tc)
{
	/* Bytes waiting for this output, plus the downstream input buffer's occupancy beyond what a busy
	 * link always holds (one credit round trip at line rate, plus the unit being forwarded, which in chunk
	 * mode is a whole chunk): when the next switch cannot forward, its
	 * buffer fills and the congestion shows here one hop early. */
	const struct df_oport *op = s->port[port];
	if (!op)
		return 0;
	const struct df_otc *t = &op->tc[tc];
	if (op->kind == DF_OP_EJECT)
		return t->queued;
	uint32_t used = d->buf[tc] - t->avail;
	return t->queued + (used > op->credit_rtt ? used - op->credit_rtt : 0);
}

/* ---- VOQ table: open addressing over the non-empty VOQs of a switch ---- */

static inline uint32_t vh_slot(uint32_t key, uint32_t mask)
{
	return df_mix(key, 0) & mask;
}

static void vh_grow(struct df_rsw *s)
{
	uint32_t oldn = s->vh_mask + 1, mask = oldn * 2 - 1;
	struct df_voq **old = s->vh, **t = xcalloc(mask + 1, sizeof(*t));
	for (uint32_t i = 0; i < oldn; i++) {
		if (!old[i])
			continue;
		uint32_t j = vh_slot(old[i]->key, mask);
		while (t[j])
			j = (j + 1) & mask;
		t[j] = old[i];
	}
	free(old);
	s->vh = t;
	s->vh_mask = mask;
}

static struct df_voq *voq_get(struct df *d, struct df_rsw *s, uint32_t key, bool *created)
{
	uint32_t i = vh_slot(key, s->vh_mask);
	for (struct df_voq *v; (v = s->vh[i]); i = (i + 1) & s->vh_mask)
		if (v->key == key) {
			*created = false;
			return v;
		}
	if ((s->vh_n + 1) * 2 > s->vh_mask + 1) {
		vh_grow(s);
		i = vh_slot(key, s->vh_mask);
		while (s->vh[i])
			i = (i + 1) & s->vh_mask;
	}
	struct df_voq *v = pool_get(&d->voqs);
	v->key = key;
	v->head = v->tail = NULL;
	s->vh[i] = v;
	s->vh_n++;
	*created = true;
	return v;
}

/* Backward-shift deletion keeps probe sequences intact without tombstones. */
static void voq_remove(struct df_rsw *s, struct df_voq *v)
{
	uint32_t mask = s->vh_mask, i = vh_slot(v->key, mask);
	while (s->vh[i] != v)
		i = (i + 1) & mask;
	for (uint32_t j = i;;) {
		j = (j + 1) & mask;
		if (!s->vh[j])
			break;
		uint32_t k = vh_slot(s->vh[j]->key, mask);
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			s->vh[i] = s->vh[j];
			i = j;
		}
	}
	s->vh[i] = NULL;
	s->vh_n--;
}

/* ---- events ---- */

/* One pending kick per port; arming an earlier one supersedes the later (its event is then ignored). */
void df_arm_kick(struct df *d, struct df_oport *op, simtime_t at)
{
	if (op->kick_armed && op->kick_at <= at)
		return;
	op->kick_armed = 1;
	op->kick_at = at;
	sim_schedule_at(d->sim, at, df_ev_kick, op, ++op->kick_gen);
}

/* The head packet that may go next on (output, class) t: the oldest, or the next in round-robin order,
 * among the VOQs whose head fits the downstream credits.  In a saturated fabric most calls find nothing:
 * a failed scan remembers the smallest head it saw, and until a VOQ or its head changes, credits below
 * that size skip the scan. */
static struct df_voq *pick_voq(const struct df *d, const struct df_oport *op, struct df_otc *t)
{
	bool eject = op->kind == DF_OP_EJECT;
	struct df_voq *v = t->ring, *best = NULL;
	if (!eject && t->need) {
		bool any = t->shared >= t->need;
		for (uint32_t vc = 0; vc < DF_MAX_VC && !any; vc++)
			any = t->nvoq_vc[vc] && t->resv[vc] >= t->need;
		if (!any)
			return NULL;
	}
	uint32_t need = UINT32_MAX;
	if (d->arb == DF_ARB_ROUND_ROBIN) {
		for (uint32_t n = t->nvoq; n--; v = v->next) {
			if (eject || df_credit_ok(t, v->key & 15, v->head_wire))
				return v;
			need = v->head_wire < need ? v->head_wire : need;
		}
	} else {
		for (uint32_t n = t->nvoq; n--; v = v->next) {
			if (!eject && !df_credit_ok(t, v->key & 15, v->head_wire)) {
				need = v->head_wire < need ? v->head_wire : need;
				continue;
			}
			if (!best || v->head_birth < best->head_birth)
				best = v;
		}
	}
	if (!best && t->nvoq)
		t->need = need;
	return best;
}

static void transmit(struct df *d, struct df_oport *op, uint32_t tc, struct df_voq *v, simtime_t now)
{
	struct df_otc *t = &op->tc[tc];
	struct df_pkt *pkt = v->head;
	uint32_t vc = v->key & 15, wire = pkt->wire;
	v->head = pkt->next;
	t->need = 0;
	if (v->head) {
		v->head_wire = v->head->wire;
		v->head_birth = v->head->birth;
		t->ring = v->next;
	} else {
		/* Empty VOQs leave the ring and the table. */
		t->nvoq_vc[vc]--;
		if (--t->nvoq) {
			v->prev->next = v->next;
			v->next->prev = v->prev;
			t->ring = v->next;
		} else {
			t->ring = NULL;
		}
		voq_remove(op->owner, v);
		pool_put(&d->voqs, v);
	}
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
	struct df_tel *tel = &t->tel;
	*tel->tx_bytes += wire;
	(*tel->tx_pkts)++;
	if (t->stall_since != SIM_TIME_MAX) {
		*tel->stall_ps += now - t->stall_since;
		t->stall_since = SIM_TIME_MAX;
	}
	/* Our input slot frees as the tail leaves; the credit travels back over the same link. */
	struct df_oport *up = pkt->up;
	sim_schedule_at(d->sim, end + up->link_lat, df_ev_credit, up,
			df_credit_pack(tc, pkt->upvc, pkt->flags & DF_PKT_RESV, wire));

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
	if (op->active)
		df_arm_kick(d, op, end);
}

static void switch_kick(struct df *d, struct df_oport *op)
{
	simtime_t now = sim_now(d->sim);
	if (op->link_free > now) {
		df_arm_kick(d, op, op->link_free);
		return;
	}
	struct df_voq *best = NULL;
	uint32_t best_tc = 0;
	uint64_t best_vt = UINT64_MAX;
	for (uint32_t m = op->active; m; m &= m - 1) {
		uint32_t tc = (uint32_t)__builtin_ctz(m);
		struct df_otc *t = &op->tc[tc];
		struct df_voq *v = pick_voq(d, op, t);
		if (!v) {
			if (t->stall_since == SIM_TIME_MAX)
				t->stall_since = now;
			continue;
		}
		if (t->vtime < best_vt) {
			best_vt = t->vtime;
			best = v;
			best_tc = tc;
		}
	}
	if (best)
		transmit(d, op, best_tc, best, now);
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

void df_ev_credit(struct sim *sim, void *obj, uint64_t arg)
{
	struct df_oport *op = obj;
	uint32_t tc = arg & 0xff, vc = (arg >> 8) & 0xf, wire = (uint32_t)(arg >> 16);
	struct df_otc *t = &op->tc[tc];
	if (arg >> 12 & 1)
		t->resv[vc] += wire;
	else
		t->shared += wire;
	t->avail += wire;
	if (op->link_free > sim_now(sim))
		return; /* a busy link re-arbitrates when it frees */
	if (op->kind == DF_OP_INJECT)
		df_inject_kick(op->df, op->owner);
	else if (op->active && !op->kick_armed)
		switch_kick(op->df, op);
}

void df_ev_arrive(struct sim *sim, void *obj, uint64_t arg)
{
	struct df *d = obj;
	struct df_pkt *pkt = (struct df_pkt *)(uintptr_t)arg;
	struct df_rsw *s = df_switch(d, pkt->sw);
	if (!(pkt->flags & DF_PKT_ROUTED))
		df_route_first(d, s, pkt);
	(*d->c.hops)++;
	uint32_t out = df_next_port(d, s, pkt);
	struct df_oport *op = df_port(d, s, out);
	uint32_t tc = pkt->tc, vc = op->kind == DF_OP_EJECT ? 0 : pkt->hops;
	bool created;
	struct df_voq *v = voq_get(d, s, (uint32_t)pkt->in_port << 16 | out << 8 | tc << 4 | vc, &created);
	pkt->next = NULL;
	struct df_otc *t = &op->tc[tc];
	if (created) {
		v->head = v->tail = pkt;
		v->head_wire = pkt->wire;
		v->head_birth = pkt->birth;
		if (t->ring) {
			/* Join at the end of the round: just before the cursor. */
			v->next = t->ring;
			v->prev = t->ring->prev;
			v->prev->next = v;
			t->ring->prev = v;
		} else {
			v->next = v->prev = v;
			t->ring = v;
		}
		t->nvoq++;
		t->nvoq_vc[vc]++;
		t->need = 0;
	} else {
		v->tail->next = pkt;
		v->tail = pkt;
	}
	if (!t->queued) {
		op->active |= 1u << tc;
		if (t->vtime < op->vclock)
			t->vtime = op->vclock;
	}
	t->queued += pkt->wire;
	if (d->cc) {
		if (op->kind == DF_OP_EJECT)
			df_cc_egress(d, t, pkt, sim_now(sim));
		else if (d->cc_fabric)
			df_cc_link(d, t, pkt, sim_now(sim));
	}
	struct df_tel *tel = df_tel(d, op, tc);
	if (t->queued > *tel->queue_hwm)
		*tel->queue_hwm = t->queued;
	if (!op->kick_armed)
		switch_kick(d, op); /* sends now, or arms a kick for when the link frees */
}
