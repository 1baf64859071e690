/* Endpoint congestion control (fabric.congestion_control, on by default).
 *
 * Congestion is detected where it starts: at the port of the last switch that feeds an endpoint.  That
 * port keeps a fair rate R for the sources sending to its endpoint.  Each unit carries the rate its source
 * was paced at; every cc_interval_ns the port counts the flows it is fed by, n = sum over the units that
 * joined its queue of (their wire time at max(their source's rate, R)) / interval, so a flow sending at R
 * counts one, a flow held below R elsewhere counts less, and a flow not yet slowed down to R still counts
 * one; and it moves R toward target / n (damped by cc_gain).
 * The target is the link rate, corrected so that the queue returns to cc_threshold_bytes within cc_drain
 * intervals (a small standing queue keeps the link busy).  The fixed point gives every unconstrained flow
 * (target - what the constrained ones use) / (their number): the max-min share; and since n counts flows,
 * not the arrival rate, it does not lag behind sources that have not yet slowed down.
 * Each unit that joins the queue sends R back to its own source (the reverse path's zero-load latency):
 * the sources that feed the endpoint, and only they, pace their flow to it at R (the gap after their last
 * unit is recomputed with each new R, and never exceeds four intervals, so a flow held at a low rate keeps
 * probing and learns when R rises).  Flows through the same switches to other endpoints never see this
 * feedback and keep the fabric's buffers to themselves; without it (congestion_control: false) the queue
 * for a hot endpoint fills the shared input buffers back through the tree (tree saturation).
 * With cc_scope: fabric, every switch-to-switch output keeps such a rate for the flows crossing it too;
 * a unit carries the lowest one it met and the feedback returns min(that, R): sources then converge to
 * max-min fair shares of every link (the allocation of a fluid max-min model such as SimGrid's), also
 * where minimal routing concentrates flows inside the fabric.  The default (endpoint) scope leaves
 * in-network congestion to adaptive routing, as Slingshot does.
 * Each flow may also have at most min(2 x R x its zero-load round trip + one unit, cc_max_window_bytes)
 * between its NIC and that egress queue, which bounds what a burst can pour into the fabric before the
 * first feedback arrives.
 */
#include <math.h>

#include "../stats.h"
#include "dragonfly.h"

static void update_rate(struct df *d, struct df_otc *t, simtime_t now)
{
	double el = (double)(now - t->cc_t0), C = d->line_gbps;
	double excess = (double)t->queued - (double)d->cc_threshold; /* < 0: room to fill */
	double target = C - excess * 8000.0 / ((double)d->cc_interval * d->cc_drain);
	target = target < 0.1 * C ? 0.1 * C : target > 2.0 * C ? 2.0 * C : target;
	double n = t->cc_send_ps / el; /* flows, counted at the rates they were sent at */
	double r = t->cc_rate;
	if (n > 1e-3) {
		/* Damped, and at most +50% or -50% per interval: the sources answer a change about one round trip
		 * later, so larger steps overshoot. */
		double next = r + d->cc_gain * (target / n - r);
		r = next > 1.5 * r ? 1.5 * r : next < 0.5 * r ? 0.5 * r : next;
	} else {
		/* Intervals with nothing arriving (an idle endpoint) each let the rate double. */
		double idle = floor(el / (double)d->cc_interval);
		r *= pow(2.0, idle > 64 ? 64 : idle);
	}
	t->cc_rate = r > C ? C : r < d->cc_min_gbps ? d->cc_min_gbps : r;
	t->cc_t0 = now;
	t->cc_send_ps = 0;
}

/* The flow's in-flight cap bounds what a burst can put into the fabric before feedback arrives: two
 * round trips at the fair rate plus one unit (the pacing, not the cap, sets the rate in steady state). */
void df_cc_window(const struct df *d, struct df_flow *f)
{
	double w = 2.0 * f->rate / 8.0 * (double)(2 * f->ack_lat) * 1e-3 + d->resv; /* Gb/s / 8 = bytes/ns */
	f->window = w > d->cc_max_win ? d->cc_max_win : (uint32_t)w;
}

/* Pacing at the fair rate, against an ideal schedule: a unit that had to wait for its turn at the NIC
 * (other flows, credits) may be followed sooner, by up to one gap, so waiting does not lower the rate.
 * A gap never exceeds four update intervals, so a flow held at a very low rate still sends a unit now and
 * then, and its feedback brings it the current rate. */
static simtime_t gap(const struct df *d, const struct df_flow *f)
{
	simtime_t g = (simtime_t)((double)f->last_wire * 8000.0 / f->rate);
	return g < 4 * d->cc_interval ? g : 4 * d->cc_interval;
}

void df_cc_sent(const struct df *d, struct df_flow *f, uint32_t wire, simtime_t now)
{
	f->inflight_bytes += wire;
	f->last_send = now;
	f->last_wire = wire;
	if (f->rate >= d->line_gbps) {
		f->next_send = 0;
		return;
	}
	simtime_t g = gap(d, f), slot = f->next_send > now - g || now < g ? f->next_send : now - g;
	f->next_send = (slot > now ? now : slot) + g;
}

static void ev_feedback(struct sim *sim, void *obj, uint64_t arg)
{
	struct df_flow *f = obj;
	struct df *d = f->ep->tx->df;
	(void)sim;
	f->feedback--;
	f->inflight_bytes -= (uint32_t)arg;
	f->rate = (double)(arg >> 32) / 1024.0;
	df_cc_window(d, f);
	/* A new rate re-times the next unit from the last one (a flow must not sit out a gap computed from an
	 * old, lower rate). */
	if (f->rate >= d->line_gbps)
		f->next_send = 0;
	else if (f->last_send + gap(d, f) < f->next_send)
		f->next_send = f->last_send + gap(d, f);
	df_flow_feedback_done(d, f);
}

/* A unit joins the queue of t: update the fair rate when an interval is over, count the unit. */
static void account(struct df *d, struct df_otc *t, const struct df_pkt *pkt, simtime_t now)
{
	if (!t->cc_t0 && t->cc_send_ps == 0) {
		t->cc_rate = d->line_gbps;
		t->cc_t0 = now;
	}
	if (now - t->cc_t0 >= d->cc_interval)
		update_rate(d, t, now);
	/* The unit's wire time at the larger of its source's paced rate and this port's rate: a flow sending at
	 * this port's rate adds one interval per interval, a flow held below it elsewhere adds less, and a
	 * flow not yet slowed down to it still counts as one. */
	double r = (double)pkt->rate16 * d->line_gbps / 65535.0;
	t->cc_send_ps += (double)pkt->wire * 8000.0 / (r > t->cc_rate ? r : t->cc_rate);
}

static uint16_t to16(const struct df *d, double gbps)
{
	double r = gbps / d->line_gbps * 65535.0;
	return r >= 65535.0 ? 65535 : r < 1.0 ? 1 : (uint16_t)r;
}

void df_cc_link(struct df *d, struct df_otc *t, struct df_pkt *pkt, simtime_t now)
{
	account(d, t, pkt, now);
	uint16_t r = to16(d, t->cc_rate);
	if (r < pkt->rmin16)
		pkt->rmin16 = r;
}

void df_cc_egress(struct df *d, struct df_otc *t, struct df_pkt *pkt, simtime_t now)
{
	account(d, t, pkt, now);
	double rate = t->cc_rate, path = (double)pkt->rmin16 * d->line_gbps / 65535.0;
	if (pkt->rmin16 < 65535 && path < rate)
		rate = path;
	struct df_flow *f = pkt->msg->flow;
	if (rate < d->line_gbps)
		(*d->c.cc_marks)++;
	f->feedback++;
	sim_schedule(d->sim, f->ack_lat, ev_feedback, f, (uint64_t)(rate * 1024.0) << 32 | pkt->wire);
}
