/* Time modes of the daemon (virtual mode: vclock.c).  Realtime: virtual time follows the wall clock (divided by the slowdown).  The
 * engine is stepped from the event loop: before commands are applied it catches up with the wall clock;
 * afterwards it runs every event due up to `lead` ahead of the wall clock, so a whole request/response
 * exchange inside the NIC and fabric models costs one wake-up; then a timer waits for the next event.
 * Commands that reach the daemon while the engine is ahead take effect at the engine's time; the lag is
 * counted (emulation.causality_lag_ps and emulation.causality_lag_count), as in the virtual mode. */
#include <math.h>
#include <time.h>

#include "daemon.h"

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

simtime_t clock_wall_vt(struct daemon *d)
{
	double s = (wall_now() - d->t0_wall) / d->emu->slowdown;
	return (simtime_t)(s * 1e12);
}

static void publish_vt(struct daemon *d)
{
	simtime_t now = sim_now(d->sim);
	for (struct client *c = d->clients; c; c = c->next)
		if (c->pcb)
			atomic_store_explicit(&c->pcb->daemon_vt_ps, now, memory_order_relaxed);
}

void clock_catch_up(struct daemon *d)
{
	if (daemon_virtual(d))
		return; /* virtual time moves only in vclock_run */
	simtime_t w = clock_wall_vt(d);
	if (sim_now(d->sim) < w)
		sim_run_until(d->sim, w);
}

void clock_count_lag(struct daemon *d, simtime_t stamp)
{
	simtime_t now = sim_now(d->sim);
	if (stamp < now) {
		*d->st_causality_lag += now - stamp;
		(*d->st_causality_lag_count)++;
	}
}

static void step_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)revents;
	clock_step(t->data);
}

void clock_step(struct daemon *d)
{
	if (daemon_virtual(d)) {
		vclock_run(d);
		return;
	}
	simtime_t w = clock_wall_vt(d);
	simtime_t until = w + d->emu->lead;
	if (until > sim_now(d->sim))
		sim_run_until(d->sim, until);
	publish_vt(d);
	if (d->nbacklogged)
		for (struct client *c = d->clients; c; c = c->next)
			for (struct obj *o = c->objs; o; o = o->next)
				if (o->kind == OBJ_QUEUE && ((struct dqueue *)o)->bl_head)
					queue_flush_backlog((struct dqueue *)o);
	simtime_t next;
	ev_timer_stop(d->loop, &d->step_timer);
	if (!sim_next_event_time(d->sim, &next)) {
		if (d->nbacklogged) {
			ev_timer_set(&d->step_timer, 1e-3, 0);
			ev_timer_start(d->loop, &d->step_timer);
		}
		return;
	}
	/* Wake when the next event comes within the lead of the wall clock. */
	double delay = 0;
	if (next > d->emu->lead) {
		simtime_t due = next - d->emu->lead;
		simtime_t now = clock_wall_vt(d);
		if (due > now)
			delay = (double)(due - now) * 1e-12 * d->emu->slowdown;
	}
	if (d->nbacklogged && delay > 1e-3)
		delay = 1e-3; /* a full event queue is retried until its process has read it */
	ev_timer_set(&d->step_timer, delay, 0);
	ev_timer_start(d->loop, &d->step_timer);
}

void clock_init(struct daemon *d)
{
	vclock_init(d);
	d->t0_wall = wall_now();
	ev_timer_init(&d->step_timer, step_cb, 0, 0);
	d->step_timer.data = d;
}
