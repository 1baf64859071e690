/* Dragonfly routing.
 *
 * The first switch a packet reaches chooses its route (UGAL-L style: only that switch's own queue depths
 * are known); every later switch computes the next hop from the route fields the packet carries:
 *   via    intermediate group (Valiant across groups) or intermediate switch (inside one group);
 *   sel    random bits that fix which of the parallel global (and local) links each hop takes.
 * Route kinds:
 *   minimal   l? g l? between groups, l inside a group;
 *   valiant   through a random intermediate group (l? g l? g l?), or a random intermediate switch of the
 *             group for traffic that stays inside it;
 *   adaptive  up to `adaptive_candidates` candidates, half minimal and half Valiant, each costed as
 *             (depth of its first output queue + this packet) x its hop count, plus a bias against the
 *             non-minimal ones; the cheapest wins and ties go to the earlier (minimal) candidate.
 * Traffic marked ordered keeps the route of its flow while any earlier ordered packet of the flow is in
 * flight (per-flow adaptive routing: the route can only change when the flow has drained), so it cannot
 * be reordered; other traffic is routed packet by packet.
 */
#include "dragonfly.h"

#include "../stats.h"

static inline uint32_t local_choice(const struct df *d, uint32_t sel, uint32_t hops)
{
	return d->llp > 1 ? df_pick(df_mix(sel, 8 + hops), d->llp) : 0;
}

static inline uint32_t global_choice(const struct df *d, uint32_t sel, uint32_t ghops)
{
	return d->lpp > 1 ? df_pick(df_mix(sel, ghops), d->lpp) : 0;
}

uint32_t df_next_port_at(const struct df *d, uint32_t G, uint32_t si, struct df_pkt *pkt)
{
	uint32_t dg = pkt->dgrp, di = pkt->didx;
	uint32_t T;
	if (pkt->flags & DF_PKT_VIA_GROUP) {
		if (G == pkt->via)
			pkt->flags &= (uint8_t)~DF_PKT_VIA_GROUP;
		else {
			T = pkt->via;
			goto global;
		}
	}
	if (G != dg) {
		T = dg;
		goto global;
	}
	if (pkt->flags & DF_PKT_VIA_SWITCH) {
		if (si == pkt->via)
			pkt->flags &= (uint8_t)~DF_PKT_VIA_SWITCH;
		else
			return df_local_port(d, si, pkt->via, local_choice(d, pkt->sel, pkt->hops));
	}
	if (si == di)
		return pkt->dport;
	return df_local_port(d, si, di, local_choice(d, pkt->sel, pkt->hops));
global:;
	uint32_t gw, port;
	df_gateway(d, G, T, global_choice(d, pkt->sel, pkt->ghops), &gw, &port);
	if (gw == si)
		return port;
	return df_local_port(d, si, gw, local_choice(d, pkt->sel, pkt->hops));
}

struct cand {
	uint32_t sel;
	uint16_t via;
	uint8_t flags;
	uint32_t first; /* first output port */
	uint32_t hops;  /* switch-to-switch hops */
};

/* First port and hop count of a route from switch (G, si) to switch (dg, di), computed from the same
 * arithmetic as df_next_port, without walking it. */
static void cost_inter_min(const struct df *d, uint32_t G, uint32_t si, uint32_t dg, uint32_t di, struct cand *c)
{
	uint32_t r = global_choice(d, c->sel, 0), gw, port, ent, p2;
	df_gateway(d, G, dg, r, &gw, &port);
	df_gateway(d, dg, G, r, &ent, &p2);
	c->first = gw == si ? port : df_local_port(d, si, gw, local_choice(d, c->sel, 0));
	c->hops = (gw != si) + 1 + (ent != di);
}

static void cost_inter_valiant(const struct df *d, uint32_t G, uint32_t si, uint32_t dg, uint32_t di, struct cand *c)
{
	uint32_t I = c->via, r1 = global_choice(d, c->sel, 0), r2 = global_choice(d, c->sel, 1);
	uint32_t gwA, portA, eI, gwB, eD, p;
	df_gateway(d, G, I, r1, &gwA, &portA);
	df_gateway(d, I, G, r1, &eI, &p);
	df_gateway(d, I, dg, r2, &gwB, &p);
	df_gateway(d, dg, I, r2, &eD, &p);
	c->first = gwA == si ? portA : df_local_port(d, si, gwA, local_choice(d, c->sel, 0));
	c->hops = (gwA != si) + 1 + (eI != gwB) + 1 + (eD != di);
}

/* The random bits of a route choice: one draw from the switch's stream per packet routed; candidate i
 * takes its link-choice bits (sel) and its intermediate from two hashes of it. */
struct draw {
	uint32_t lo, hi;
};

static inline struct draw draw_route(struct df_rsw *s)
{
	uint64_t r = rng_next(&s->rng);
	return (struct draw){ (uint32_t)r, (uint32_t)(r >> 32) };
}

/* A random one of n items other than a and b (a != b, both < n, n >= 3). */
static inline uint32_t pick_other(uint32_t x, uint32_t n, uint32_t a, uint32_t b)
{
	uint32_t lo = a < b ? a : b, hi = a < b ? b : a, v = df_pick(x, n - 2);
	v += v >= lo;
	v += v >= hi;
	return v;
}

static void make_valiant(struct df *d, struct df_rsw *s, uint32_t dg, uint32_t di, struct draw r, uint32_t i,
			 struct cand *c)
{
	c->sel = df_mix(r.lo, 16 + 2 * i);
	uint32_t x = df_mix(r.hi, 17 + 2 * i);
	c->flags = DF_PKT_NONMIN;
	if (dg != s->group) {
		c->via = (uint16_t)pick_other(x, d->g, s->group, dg);
		c->flags |= DF_PKT_VIA_GROUP;
		cost_inter_valiant(d, s->group, s->idx, dg, di, c);
	} else {
		/* another switch of the group: neither this one nor the destination's */
		c->via = (uint16_t)pick_other(x, d->a, s->idx, di);
		c->flags |= DF_PKT_VIA_SWITCH;
		c->first = df_local_port(d, s->idx, c->via, local_choice(d, c->sel, 0));
		c->hops = 2;
	}
}

static void make_minimal(struct df *d, struct df_rsw *s, uint32_t dg, uint32_t di, struct draw r, uint32_t i,
			 struct cand *c)
{
	c->sel = df_mix(r.lo, 16 + 2 * i);
	c->via = DF_NONE;
	c->flags = 0;
	if (dg != s->group) {
		cost_inter_min(d, s->group, s->idx, dg, di, c);
	} else {
		c->first = df_local_port(d, s->idx, di, local_choice(d, c->sel, 0));
		c->hops = 1;
	}
}

static bool valiant_possible(const struct df *d, const struct df_rsw *s, uint32_t dg)
{
	return dg != s->group ? d->g >= 3 : d->a >= 3;
}

static void choose_adaptive(struct df *d, struct df_rsw *s, struct df_pkt *pkt, uint32_t dg, uint32_t di,
			    struct cand *best)
{
	uint32_t nmin = d->candidates / 2, nnon = d->candidates - nmin;
	/* Parallel minimal paths exist only through the lpp (or llp) parallel links. */
	uint32_t distinct = dg != s->group ? d->lpp : d->llp;
	if (nmin > distinct)
		nmin = distinct;
	if (!valiant_possible(d, s, dg))
		nnon = 0;
	uint64_t best_cost = UINT64_MAX;
	struct draw r = draw_route(s);
	for (uint32_t i = 0; i < nmin + nnon; i++) {
		struct cand c;
		uint64_t bias = i < nmin ? 0 : d->ugal_bias;
		/* A candidate costs at least (this packet) x its hops (+ bias) and must cost strictly less than
		 * the best so far: when it cannot, its queue need not be looked at (nor, for a Valiant one, at
		 * least two hops long, its route worked out). */
		if (i >= nmin && best_cost <= (uint64_t)pkt->wire * 2 + bias)
			break;
		if (i < nmin)
			make_minimal(d, s, dg, di, r, i, &c);
		else
			make_valiant(d, s, dg, di, r, i, &c);
		if (best_cost <= (uint64_t)pkt->wire * c.hops + bias)
			continue;
		uint64_t depth = df_port_depth(d, s, c.first, pkt->tc);
		uint64_t cost = (depth + pkt->wire) * c.hops + bias;
		if (cost < best_cost) {
			best_cost = cost;
			*best = c;
		}
	}
}

void df_route_first(struct df *d, struct df_rsw *s, struct df_pkt *pkt)
{
	pkt->flags |= DF_PKT_ROUTED;
	if (pkt->dgrp == s->group && pkt->didx == s->idx) {
		(*d->c.route_local)++;
		return;
	}
	struct df_flow *fl = pkt->msg->flow;
	bool ordered = pkt->flags & DF_PKT_ORDERED;
	if (ordered)
		df_flow_absorb(d, fl, sim_now(d->sim)); /* acks retire routed units */
	if (ordered && fl->routed_ordered++) {
		/* An earlier ordered packet of this flow is still out: follow it. */
		pkt->sel = fl->pin_sel;
		pkt->via = fl->pin_via;
		pkt->flags |= fl->pin_flags;
		(*d->c.route_pinned)++;
		(*(fl->pin_flags & DF_PKT_NONMIN ? d->c.route_nonminimal : d->c.route_minimal))++;
		return;
	}
	uint32_t dg = pkt->dgrp, di = pkt->didx;
	struct cand c;
	switch (d->routing) {
	case DF_ROUTE_MINIMAL: make_minimal(d, s, dg, di, draw_route(s), 0, &c); break;
	case DF_ROUTE_VALIANT: make_valiant(d, s, dg, di, draw_route(s), 0, &c); break;
	default: choose_adaptive(d, s, pkt, dg, di, &c); break;
	}
	pkt->sel = c.sel;
	pkt->via = c.via;
	pkt->flags |= c.flags;
	(*(c.flags & DF_PKT_NONMIN ? d->c.route_nonminimal : d->c.route_minimal))++;
	if (ordered) {
		fl->pin_sel = c.sel;
		fl->pin_via = c.via;
		fl->pin_flags = c.flags;
	}
}
