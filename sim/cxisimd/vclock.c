/* Virtual mode: the daemon owns virtual time and advances it conservatively (docs/provider.md "Time").
 *
 * Every application thread that uses the provider has a slot in its process control block (proto.h,
 * struct pcb_shm) with its virtual clock and its state.  A BUSY thread runs application code: its CPU
 * time (times emulation.cpu_scale) advances its clock, which it publishes whenever it enters the provider,
 * and every command it issues is stamped with it.  An IDLE thread waits in the provider (an empty poll,
 * fi_trywait, a blocking read, a control request) until something becomes visible to it or its deadline.
 *
 * vclock_run() moves the engine to the earliest of: the next event, the first queued command's stamp, the
 * first idle thread's deadline -- but never past the clock of a busy thread, which may still issue a
 * command stamped with it.  A completion is posted at the engine's now, so every thread that can read it
 * has a clock at least as late (never earlier); idle threads that wait for it are woken at that time
 * (they are BUSY from then on, so the engine stops there until they have reacted).  Commands run when the
 * engine reaches their stamps; one stamped earlier than the engine's now is causality lag, counted in
 * emulation.causality_lag_ps / _count, and 0 by construction unless a thread broke the rule below.
 *
 * Stall rule (emulation.stall_timeout_us): a busy thread that has not published its clock for that long
 * (wall time) while it holds virtual time back is looked at in /proc:
 *   - running, cpu_scale > 0: its clock is extrapolated from its CPU time, so a computing thread advances
 *     as if it had called the provider (emulation.extrapolations);
 *   - sleeping in nanosleep/clock_nanosleep (a sleep the clock interposer did not turn into virtual
 *     time): its clock follows the wall clock, so virtual time goes on at the wall clock's pace, as in
 *     realtime mode, while it sleeps (emulation.stalls_paced);
 *   - blocked outside the provider (a pipe or socket read, a lock, pthread_join): time goes on without it
 *     (emulation.stalls), but no faster than the wall clock, so a virtual timeout or retry budget
 *     elsewhere does not run out at once while it is about to act; with nothing to do, time stays;
 *   - computing while CPU time is free (cpu_scale 0; only after 50 x stall_timeout, so a thread merely
 *     descheduled on a loaded host is waited for): it is treated as idle, time goes on without it.  A thread between stamping a command and queueing it is never stalled.
 * Either way the thread is marked `stalled`, and when it next enters the provider its clock jumps to the
 * daemon's horizon, so it never issues a command in the engine's past.  No thread holds the others back
 * for more than stall_timeout of wall time per episode.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../util.h"
#include "daemon.h"

/* The daemon's view of one thread slot. */
enum vslot_pace { PACE_OWN, PACE_CPU, PACE_WALL, PACE_BLOCKED, PACE_NONE };
struct vslot {
	uint32_t seen_seq;   /* pub_seq when the clock last moved */
	bool was_busy;
	enum vslot_pace pace; /* stall rule: how its clock moves while it does not publish */
	double seen_wall;    /* wall time it last moved (or turned busy, or stalled) */
	simtime_t seen_clock;
	simtime_t eff;       /* PACE_CPU: clock extrapolated from its CPU time; PACE_WALL: clock at the stall */
	uint64_t seen_cpu;   /* its CPU time (ns) when the stall rule first looked at it since it last moved */
};

static simtime_t effective_clock(const struct vslot *v, simtime_t clk, double wall)
{
	simtime_t e = v->pace == PACE_CPU ? v->eff
		    : v->pace == PACE_WALL || v->pace == PACE_BLOCKED ? v->eff + (simtime_t)((wall - v->seen_wall) * 1e12)
								      : 0;
	return e > clk ? e : clk;
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t slots_in_use(const struct client *c)
{
	uint32_t n = atomic_load_explicit(&c->pcb->slots_hwm, memory_order_acquire);
	return n < CXISIM_MAX_THREADS ? n : CXISIM_MAX_THREADS; /* the process writes it: never trusted */
}

static bool client_live(const struct client *c)
{
	return c->attached && !c->dead && c->pcb && c->vs;
}

/* Wake an idle thread at virtual time `when`: it is BUSY from now on with a clock of at least `when`. */
static bool wake_slot(struct daemon *d, struct pcb_thread *t, simtime_t when)
{
	uint32_t idle = PCB_THREAD_IDLE;
	if (!atomic_compare_exchange_strong(&t->state, &idle, PCB_THREAD_WAKING))
		return false;
	if (atomic_load(&t->vclock_ps) < when)
		atomic_store(&t->vclock_ps, when);
	atomic_store(&t->deadline_ps, UINT64_MAX);
	atomic_store(&t->stalled, 0); /* its clock is set here: no jump to the horizon later */
	atomic_store(&t->state, PCB_THREAD_BUSY);
	atomic_fetch_add(&t->wake, 1);
	syscall(SYS_futex, &t->wake, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	(*d->st_wakes)++;
	return true;
}

void vclock_wake(struct client *c, uint32_t obj_id)
{
	if (!client_live(c))
		return;
	struct daemon *d = c->d;
	/* Pairs with the thread's fence between turning IDLE and re-checking its queues. */
	atomic_thread_fence(memory_order_seq_cst);
	bool any = false;
	uint32_t n = slots_in_use(c);
	for (uint32_t i = 0; i < n; i++) {
		struct pcb_thread *t = &c->pcb->threads[i];
		if (atomic_load(&t->state) != PCB_THREAD_IDLE)
			continue;
		uint32_t w = atomic_load(&t->wait_id);
		if (w != PCB_WAIT_ANY && w != obj_id)
			continue;
		any |= wake_slot(d, t, sim_now(d->sim));
	}
	if (any)
		sim_stop(d->sim); /* the woken threads hold virtual time from here */
}

simtime_t vclock_request_stamp(struct client *c)
{
	return client_live(c) ? atomic_load(&c->pcb->req_vt_ps) : 0;
}

void vclock_request_done(struct client *c)
{
	if (!client_live(c))
		return;
	c->req_in = false;
	uint32_t slot = atomic_exchange(&c->pcb->req_slot, PCB_REQ_NO_SLOT);
	if (slot >= slots_in_use(c)) /* none, or out of range: the process writes it, never trusted */
		return;
	if (wake_slot(c->d, &c->pcb->threads[slot], sim_now(c->d->sim)))
		sim_stop(c->d->sim);
}

/* Earliest clock of the busy threads (tb) and deadline of the idle ones (td); idle threads whose deadline
 * has come are woken.  tw: the earliest wall-paced clock of the threads stalled blocked outside the
 * provider (clamp_blocked). */
static void scan_client(struct daemon *d, struct client *c, double wall, simtime_t *tb, simtime_t *td,
			simtime_t *tw)
{
	simtime_t now = sim_now(d->sim);
	uint32_t n = slots_in_use(c);
	for (uint32_t i = 0; i < n; i++) {
		struct pcb_thread *t = &c->pcb->threads[i];
		struct vslot *v = &c->vs[i];
		uint32_t st = atomic_load(&t->state);
		if (st == PCB_THREAD_IDLE) {
			v->was_busy = false;
			/* A thread making a control request idles before the request is on the socket: until the
			 * daemon has it (held or handled), the engine must not pass its time (or a deadline of
			 * another thread could expire first).  Only the request in flight, or, with none, every
			 * thread about to make one: the others wait for the process's request lock, which the
			 * request in flight holds until the engine reaches its time. */
			if (atomic_load(&t->wait_id) == PCB_WAIT_REQUEST && !c->req_in) {
				uint32_t rs = atomic_load(&c->pcb->req_slot);
				simtime_t at = rs == i ? atomic_load(&c->pcb->req_vt_ps)
					     : rs == PCB_REQ_NO_SLOT ? atomic_load(&t->vclock_ps) : UINT64_MAX;
				if (at < *tb)
					*tb = at;
			}
			simtime_t dl = atomic_load(&t->deadline_ps);
			if (dl <= now) {
				if (wake_slot(d, t, dl > now ? dl : now) && now < *tb)
					*tb = now;
			} else if (dl < *td) {
				*td = dl;
			}
			continue;
		}
		if (st != PCB_THREAD_BUSY && st != PCB_THREAD_WAKING) {
			v->was_busy = false;
			continue;
		}
		simtime_t clk = atomic_load(&t->vclock_ps);
		uint32_t seq = atomic_load(&t->pub_seq);
		if (!v->was_busy || seq != v->seen_seq || clk != v->seen_clock) {
			v->was_busy = true;
			v->seen_seq = seq;
			v->seen_clock = clk;
			v->seen_wall = wall;
			v->seen_cpu = UINT64_MAX;
			v->pace = PACE_OWN;
		}
		if (v->pace == PACE_NONE)
			continue; /* stalled outside the provider: time goes on without it */
		if (v->pace == PACE_BLOCKED) {
			simtime_t w = effective_clock(v, clk, wall);
			if (w < *tw)
				*tw = w;
			continue;
		}
		if (v->pace != PACE_OWN)
			clk = effective_clock(v, clk, wall);
		if (clk < *tb)
			*tb = clk;
	}
}

static void publish(struct daemon *d, simtime_t horizon)
{
	simtime_t now = sim_now(d->sim);
	for (struct client *c = d->clients; c; c = c->next) {
		if (!client_live(c))
			continue;
		if (atomic_load(&c->pcb->horizon_ps) < horizon)
			atomic_store(&c->pcb->horizon_ps, horizon);
		atomic_store_explicit(&c->pcb->daemon_vt_ps, now, memory_order_relaxed);
	}
}

/* Execute due commands and the held requests they no longer block; returns the first pending stamp. */
static simtime_t run_commands(struct daemon *d)
{
	simtime_t tcmd = UINT64_MAX;
	struct client *next;
	for (struct client *c = d->clients; c; c = next) {
		next = c->next;
		if (!client_live(c))
			continue;
		bool pending = false;
		for (struct obj *o = c->objs; o; o = o->next)
			if (o->kind == OBJ_EP) {
				simtime_t t = ep_drain_due((struct dep *)o);
				if (t != UINT64_MAX) {
					/* (a held request waits for these, not for commands refused for room) */
					pending |= !((struct dep *)o)->backpressured;
					if (t < tcmd)
						tcmd = t;
				}
			}
		if (c->held_req && !pending && c->held_vt > sim_now(d->sim)) {
			if (c->held_vt < tcmd) /* the engine runs to the request's stamp */
				tcmd = c->held_vt;
		} else if (c->held_req && !pending) {
			char *req = c->held_req;
			size_t len = c->held_len;
			c->held_req = NULL;
			server_handle_request(c, req, len); /* may close (free) c */
			free(req);
			d->vrun_again = true;
		}
	}
	if (d->nbacklogged)
		for (struct client *c = d->clients; c; c = c->next)
			for (struct obj *o = c->objs; o; o = o->next)
				if (o->kind == OBJ_QUEUE && ((struct dqueue *)o)->bl_head)
					queue_flush_backlog((struct dqueue *)o);
	return tcmd;
}

static void scan_all(struct daemon *d, double wall, simtime_t *tb, simtime_t *td)
{
	simtime_t tw = UINT64_MAX;
	*tb = *td = UINT64_MAX;
	for (struct client *c = d->clients; c; c = c->next)
		if (client_live(c))
			scan_client(d, c, wall, tb, td, &tw);
	d->vblocked_ps = tw;
}

/* While a thread is blocked outside the provider, time goes on without it, but no faster than the wall
 * clock: the engine's next stop is clamped to its wall-paced clock.  With nothing to do the engine does not
 * move at all (a brief block costs no virtual time). */
static simtime_t clamp_blocked(struct daemon *d, simtime_t target)
{
	simtime_t now = sim_now(d->sim), tw = d->vblocked_ps;
	if (target == UINT64_MAX || target <= tw)
		return target;
	return tw > now ? tw : now;
}

static void set_waiting(struct daemon *d, uint32_t on, simtime_t want)
{
	for (struct client *c = d->clients; c; c = c->next)
		if (client_live(c)) {
			atomic_store(&c->pcb->daemon_want_ps, want);
			atomic_store(&c->pcb->daemon_waiting, on);
		}
}

/* Wall time vclock_run may run before it lets the event loop poll (and resumes right after). */
#define VRUN_SLICE_S 0.02

static void arm_timer(struct daemon *d, bool held_back)
{
	ev_timer_stop(d->loop, &d->stall_timer);
	double t = 0;
	if (held_back)
		t = d->emu->stall_timeout_s;
	if (d->nbacklogged && (!t || t > 1e-3))
		t = 1e-3; /* a full event queue is retried until its process has read it */
	if (t > 0) {
		ev_timer_set(&d->stall_timer, t, 0);
		ev_timer_start(d->loop, &d->stall_timer);
	}
}

void vclock_run(struct daemon *d)
{
	if (d->vrun_active) {
		d->vrun_again = true;
		return;
	}
	d->vrun_active = true;
	double wall = wall_now();
	bool held_back = false, yielded = false;
	set_waiting(d, 0, UINT64_MAX);
	for (unsigned pass = 1;; pass++) {
		/* Give the sockets and doorbells their turn now and then: with nothing holding time back (no busy
		 * thread, no deadline) a command the NIC keeps refusing moved the engine on by retry_ns forever,
		 * and no request of any process was answered (a command-ring fuzz in virtual mode). */
		if (pass % 64 == 0 && wall_now() - wall > VRUN_SLICE_S) {
			yielded = true;
			break;
		}
		d->vrun_again = false;
		simtime_t now = sim_now(d->sim);
		/* Clocks first, then the queues: a command queued before its thread published a later clock is
		 * seen by the drain that follows the scan that saw that clock. */
		simtime_t tb, td, te = UINT64_MAX;
		scan_all(d, wall, &tb, &td);
		simtime_t tcmd = run_commands(d);
		if (!sim_next_event_time(d->sim, &te))
			te = UINT64_MAX;
		if (te <= now) {
			sim_run_until(d->sim, now); /* events due now (a wake stops the run: scan again) */
			continue;
		}
		if (d->vrun_again)
			continue;
		simtime_t want = tcmd < td ? tcmd : td;
		if (te < want)
			want = te;
		simtime_t target = clamp_blocked(d, tb < want ? tb : want);
		if (target > now && target != UINT64_MAX) {
			/* Dekker with a thread that wakes by itself: publish the horizon, then look at the busy
			 * threads again; one that turned busy meanwhile either is seen here or starts at the
			 * new horizon. */
			publish(d, target);
			atomic_thread_fence(memory_order_seq_cst);
			simtime_t tb2, td2;
			scan_all(d, wall, &tb2, &td2);
			if (tb2 < target)
				target = tb2;
			/* ... and the queues again after the clocks just read. */
			simtime_t tcmd2 = run_commands(d);
			if (tcmd2 < target)
				target = tcmd2;
			if (target > now) {
				sim_run_until(d->sim, target);
				publish(d, target);
				continue;
			}
		}
		/* Held back by a busy thread, or nothing to do: sleep until a thread publishes a clock reaching
		 * `want` or goes idle (the provider rings the process's eventfd: a new deadline), or a command
		 * arrives (queue doorbells). */
		set_waiting(d, 1, want);
		atomic_thread_fence(memory_order_seq_cst);
		simtime_t tb2, td2;
		scan_all(d, wall, &tb2, &td2);
		if (tb2 > tb || td2 < td || d->vrun_again) {
			set_waiting(d, 0, UINT64_MAX);
			continue;
		}
		held_back = want != UINT64_MAX;
		break;
	}
	publish(d, sim_now(d->sim));
	d->vrun_active = false;
	arm_timer(d, held_back);
	if (yielded) { /* go on once the loop has polled (clock_step runs vclock_run) */
		ev_timer_stop(d->loop, &d->step_timer);
		ev_timer_set(&d->step_timer, 0., 0.);
		ev_timer_start(d->loop, &d->step_timer);
	}
}

/* ---- stall rule ---- */

/* State letter and CPU time (ns) of a thread of another process, from /proc. */
static bool thread_proc_info(pid_t pid, int32_t tid, char *state, uint64_t *cpu_ns)
{
	char path[96], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* the command name may contain anything */
	if (!p || p[1] != ' ')
		return false;
	*state = p[2];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)pid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	*cpu_ns = 0;
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = 0;
			*cpu_ns = strtoull(buf, NULL, 10); /* time spent on the CPU, ns (sum_exec_runtime) */
		}
	}
	return true;
}

/* Whether a blocked thread is in a sleep system call (/proc/PID/task/TID/syscall: the number first). */
static bool thread_in_sleep(pid_t pid, int32_t tid)
{
	char path[96], buf[64];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* unknown: the cautious pace */
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true; /* unknown (it may have just woken): the cautious pace */
	buf[n] = 0;
	long nr = strtol(buf, NULL, 10);
	return nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
}

/* Dekker with the thread's publication (it bumps pub_seq, then reads `stalled`): false when it came back. */
static bool mark_stalled(struct pcb_thread *t, const struct vslot *v)
{
	atomic_store(&t->stalled, 1);
	atomic_thread_fence(memory_order_seq_cst);
	/* A thread between stamping a command and queueing it is never stalled: its command would be late. */
	if (atomic_load(&t->pub_seq) != v->seen_seq || atomic_load(&t->state) != PCB_THREAD_BUSY ||
	    atomic_load(&t->emitting)) {
		atomic_store(&t->stalled, 0);
		return false;
	}
	return true;
}

static void stall_check_client(struct daemon *d, struct client *c, double wall, simtime_t horizon)
{
	uint32_t n = slots_in_use(c);
	for (uint32_t i = 0; i < n; i++) {
		struct pcb_thread *t = &c->pcb->threads[i];
		struct vslot *v = &c->vs[i];
		if (atomic_load(&t->state) != PCB_THREAD_BUSY || !v->was_busy || v->pace == PACE_WALL ||
		    v->pace == PACE_BLOCKED || v->pace == PACE_NONE)
			continue;
		simtime_t clk = effective_clock(v, atomic_load(&t->vclock_ps), wall);
		if (clk >= horizon || wall - v->seen_wall < d->emu->stall_timeout_s)
			continue; /* not holding time back, or not for long */
		char st = '?';
		uint64_t cpu = 0;
		bool known = thread_proc_info(c->pid, t->tid, &st, &cpu);
		uint64_t base = atomic_load(&t->cpu_ns);
		/* Let go only after a longer wait, so such runs stay exact: a thread running while CPU time is free
		 * (maybe only descheduled between two provider calls on a loaded host), and one back from a park by its
		 * wall-clock timeout (an excursion, provider/vtime.c: most likely its poll loop going round, whose CPU is
		 * not charged when it polls the same object again; extrapolated, time would go on by that CPU, which the
		 * thread cannot take back -- a round trip of test_park_timeout_excursions_are_not_charged charged
		 * ~0.4-0.9 ms of a 1 ms excursion in ~1 run of 5 under CPU hogs).  The wait is counted in the thread's
		 * own CPU time, not in wall time: on a loaded host a runnable thread can stay off the CPU for longer
		 * than any wall bound, and what it does next then depends on the host.  Counted in wall time,
		 * test_stalled_excursions_are_not_extrapolated failed CI (a 1 ms burn outlasted 5 ms of wall; 5 of 6
		 * runs at nice 15 under 3 CPU hogs), and NetPIPE at cpu_scale 0 under the same load had 3-43 such
		 * let-gos of an Open MPI rank per run (a 16-byte time 5 ns off once).  A thread kept off the CPU
		 * holds time back only until it runs again. */
		bool patient = d->emu->cpu_scale <= 0 || atomic_load(&t->excursion);
		if (known && st == 'R' && patient) {
			if (v->seen_cpu == UINT64_MAX || cpu < v->seen_cpu)
				v->seen_cpu = cpu;
			if (cpu - v->seen_cpu < (uint64_t)(50 * d->emu->stall_timeout_s * 1e9))
				continue;
		}
		if (known && st == 'R' && d->emu->cpu_scale > 0) {
			if (cpu <= base)
				continue; /* runnable but not on a CPU yet, or inside a provider call (base UINT64_MAX) */
			/* Computing: its CPU time keeps advancing its clock. */
			simtime_t eff = atomic_load(&t->vclock_ps) + (simtime_t)((double)(cpu - base) * 1e3 * d->emu->cpu_scale);
			if (eff > clk && mark_stalled(t, v)) {
				v->pace = PACE_CPU;
				v->eff = eff;
				v->seen_wall = wall;
				(*d->st_extrapolations)++;
			}
			continue;
		}
		/* A real sleep: its clock follows the wall clock.  Blocked on anything else, or computing while
		 * CPU time is free: idle. */
		if (!mark_stalled(t, v))
			continue;
		/* A running or runnable thread is computing, never sleeping (its /proc syscall file cannot be
		 * read while it runs).  A blocked one -- on a pipe, a socket, a lock -- lets time go on without
		 * it, but no faster than the wall clock (clamp_blocked), so a virtual timeout or a retry budget
		 * does not run out at once while it is about to act on something outside the simulation (a pipe
		 * handshake, then a send or a receive). */
		bool blocked = !known || st != 'R';
		bool sleeping = blocked && thread_in_sleep(c->pid, t->tid);
		v->pace = sleeping ? PACE_WALL : blocked ? PACE_BLOCKED : PACE_NONE;
		v->eff = clk;
		v->seen_wall = wall;
		(*(sleeping ? d->st_stalls_paced : d->st_stalls))++;
		if (!d->quiet)
			fprintf(stderr, "cxisimd: client %u (pid %d) thread %d holds virtual time without entering the "
				"provider (state %c): %s until it does\n", c->id, (int)c->pid, (int)t->tid, st,
				v->pace == PACE_WALL ? "sleeping, its clock follows the wall clock"
				: v->pace == PACE_BLOCKED ? "blocked, time goes on without it at the wall clock's pace"
							  : "time goes on without it");
	}
}

static void stall_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct daemon *d = w->data;
	double wall = wall_now();
	simtime_t tb, td;
	simtime_t horizon = run_commands(d);
	scan_all(d, wall, &tb, &td);
	simtime_t te;
	if (sim_next_event_time(d->sim, &te) && te < horizon)
		horizon = te;
	if (td < horizon)
		horizon = td;
	if (horizon != UINT64_MAX) /* else no thread holds anything back */
		for (struct client *c = d->clients; c; c = c->next)
			if (client_live(c))
				stall_check_client(d, c, wall, horizon);
	vclock_run(d);
}

/* ---- clients ---- */

static void pcb_doorbell(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct client *c = w->data;
	uint64_t v;
	ssize_t r = read(c->pcb_efd, &v, sizeof(v));
	(void)r;
	vclock_run(c->d);
}

int vclock_attach(struct client *c)
{
	struct daemon *d = c->d;
	c->pcb_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (c->pcb_efd < 0)
		return -errno;
	c->vs = xcalloc(CXISIM_MAX_THREADS, sizeof(*c->vs));
	struct pcb_shm *p = c->pcb;
	atomic_store(&p->horizon_ps, sim_now(d->sim));
	atomic_store(&p->daemon_vt_ps, sim_now(d->sim));
	p->cpu_scale = d->emu->cpu_scale;
	p->span_clip_ns = d->emu->span_clip_ns; /* only ever applied to CPU time charged, i.e. with cpu_scale > 0 */
	p->span_clip_q_pm = d->emu->span_clip_q_pm;
	p->span_clip_flags = (d->emu->span_clip_after_park ? PCB_CLIP_AFTER_PARK : 0) |
			     (d->emu->span_clip_end_site ? PCB_CLIP_END_SITE : 0);
	p->spin_read_ns = d->emu->spin_read_ns;
	p->spin_free_reads = d->emu->spin_free_reads;
	p->park_timeout_ns = d->emu->park_timeout_ns;
	p->retry_ps = d->emu->retry;
	atomic_store(&p->daemon_want_ps, UINT64_MAX);
	for (uint32_t i = 0; i < CXISIM_MAX_THREADS; i++) {
		/* A free slot waits on nothing: a thread claims it idle, then resumes by itself. */
		atomic_store(&p->threads[i].wait_id, PCB_WAIT_NONE);
		atomic_store(&p->threads[i].deadline_ps, UINT64_MAX);
	}
	ev_io_init(&c->pcb_io, pcb_doorbell, c->pcb_efd, EV_READ);
	c->pcb_io.data = c;
	ev_io_start(d->loop, &c->pcb_io);
	awake_attach(d);
	hostidle_attach(d);
	return c->pcb_efd;
}

void vclock_detach(struct client *c)
{
	if (c->vs) {
		awake_detach(c->d);
		hostidle_detach(c->d);
		if (c->pcb) { /* the process's parks that its wall-clock timeout ended (provider/vtime.c), its span clip */
			*c->d->st_park_timeouts += atomic_load(&c->pcb->park_timeouts);
			*c->d->st_spans += atomic_load(&c->pcb->spans);
			*c->d->st_spans_clipped += atomic_load(&c->pcb->spans_clipped);
			*c->d->st_spans_after_park += atomic_load(&c->pcb->spans_after_park);
			*c->d->st_span_clip_credit += atomic_load(&c->pcb->span_clip_credit_ns);
		}
	}
	if (c->pcb_efd >= 0) {
		ev_io_stop(c->d->loop, &c->pcb_io);
		close(c->pcb_efd);
		c->pcb_efd = -1;
	}
	free(c->vs);
	c->vs = NULL;
	free(c->held_req);
	c->held_req = NULL;
}

void vclock_init(struct daemon *d)
{
	ev_timer_init(&d->stall_timer, stall_cb, 0, 0);
	d->stall_timer.data = d;
}
