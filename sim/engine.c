#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evq.h"
#include "mem.h"
#include "pool.h"
#include "stats.h"
#include "util.h"

/* A timer's record.  The pool's free-list link overlays `fn`; `seq` is zero whenever the timer is not
 * pending (fired, cancelled or free), which is what makes a stale handle harmless. */
struct sim_timer_rec {
	sim_fn fn;
	void *obj;
	uint64_t arg;
	uint64_t seq;
};

struct world_entry {
	const char *name;
	void *obj;
	struct world_entry *next;
};

struct destroy_hook {
	void (*fn)(void *);
	void *obj;
	struct destroy_hook *next;
};

struct sim {
	simtime_t now;
	uint64_t next_seq;
	uint64_t seed;
	struct evq q;
	struct pool timers;
	size_t cancelled_in_queue;
	uint64_t processed;
	size_t peak_queue;      /* most entries the queue ever held (memory accounting) */
	struct sim_limits lim;
	bool stop_requested;
	bool progress;
	bool ticking; /* progress || prec: the run loop looks at its event count every SIM_PROGRESS_EVERY */
	volatile struct sim_progress_rec *prec;
	struct stats *stats;
	struct world_entry *world;
	struct destroy_hook *hooks;
	/* Prefetch hooks (sim_prefetch_hook, sim_prefetch_hook_stage): stage k is tried on the entry
	 * SIM_HOOK_AHEAD - k pops away. */
	sim_fn pf_fn[SIM_PREFETCH_HOOKS];
	sim_prefetch_fn pf[SIM_PREFETCH_STAGES][SIM_PREFETCH_HOOKS]; /* NULL: no hook at that stage */
	unsigned npf;
	/* Per stage, the entry last offered to it (pops from the late lists leave the run as is) and the hook
	 * its handler matched (SIM_PREFETCH_HOOKS: none). */
	const void *pf_last[SIM_PREFETCH_STAGES];
	unsigned pf_last_i[SIM_PREFETCH_STAGES];
	/* progress line state */
	double prog_last_wall, prog_start_wall;
	uint64_t prog_last_events;
	simtime_t prog_last_now;
};

const char *sim_stop_reason_name(enum sim_stop_reason r)
{
	switch (r) {
	case SIM_STOP_NONE: return "none";
	case SIM_STOP_QUIESCENT: return "quiescent";
	case SIM_STOP_TIME_LIMIT: return "time_limit";
	case SIM_STOP_EVENT_LIMIT: return "event_limit";
	case SIM_STOP_REQUESTED: return "requested";
	}
	return "?";
}

struct sim *sim_create(uint64_t seed)
{
	struct sim *s = xcalloc(1, sizeof(*s));
	s->seed = seed;
	s->next_seq = 1;
	evq_init(&s->q);
	pool_init(&s->timers, sizeof(struct sim_timer_rec), 1024);
	s->lim.time_limit = SIM_TIME_MAX;
	s->stats = stats_create();
	return s;
}

void sim_destroy(struct sim *s)
{
	if (!s)
		return;
	while (s->hooks) {
		struct destroy_hook *h = s->hooks;
		s->hooks = h->next;
		h->fn(h->obj);
		free(h);
	}
	while (s->world) {
		struct world_entry *w = s->world;
		s->world = w->next;
		free(w);
	}
	evq_free(&s->q);
	pool_free_all(&s->timers);
	stats_destroy(s->stats);
	free(s);
}

uint64_t sim_seed(const struct sim *s) { return s->seed; }
simtime_t sim_now(const struct sim *s) { return s->now; }
uint64_t sim_events_processed(const struct sim *s) { return s->processed; }
size_t sim_pending(const struct sim *s) { return evq_size(&s->q) - s->cancelled_in_queue; }
struct stats *sim_stats(struct sim *s) { return s->stats; }

void sim_schedule_at(struct sim *s, simtime_t when, sim_fn fn, void *obj, uint64_t arg)
{
	if (when < s->now)
		die("event scheduled in the past (%llu < %llu)", (unsigned long long)when,
		    (unsigned long long)s->now);
	struct evq_entry e = { when, s->next_seq++, fn, obj, arg };
	evq_push(&s->q, &e);
	if (evq_size(&s->q) > s->peak_queue)
		s->peak_queue = evq_size(&s->q);
}

void sim_schedule(struct sim *s, simtime_t delay, sim_fn fn, void *obj, uint64_t arg)
{
	if (delay > SIM_TIME_MAX - s->now)
		die("event delay overflows virtual time");
	sim_schedule_at(s, s->now + delay, fn, obj, arg);
}

/* Queue entries of timers run this trampoline with the record as obj and the timer's seq as arg. */
static void timer_fire(struct sim *s, void *obj, uint64_t seq)
{
	struct sim_timer_rec *r = obj;
	sim_fn fn = r->fn;
	void *o = r->obj;
	uint64_t a = r->arg;
	r->seq = 0;
	pool_put(&s->timers, r);
	(void)seq;
	fn(s, o, a);
}

static inline bool timer_cancelled(const struct evq_entry *e)
{
	return e->fn == timer_fire && ((struct sim_timer_rec *)e->obj)->seq != e->arg;
}

sim_timer sim_timer_start(struct sim *s, simtime_t delay, sim_fn fn, void *obj, uint64_t arg)
{
	struct sim_timer_rec *r = pool_get(&s->timers);
	r->fn = fn;
	r->obj = obj;
	r->arg = arg;
	r->seq = s->next_seq; /* the seq sim_schedule is about to use */
	sim_schedule(s, delay, timer_fire, r, r->seq);
	return (sim_timer){ r, r->seq };
}

bool sim_timer_pending(const sim_timer *h)
{
	return h->rec && h->seq && h->rec->seq == h->seq;
}

bool sim_timer_cancel(struct sim *s, sim_timer *h)
{
	if (!sim_timer_pending(h)) {
		h->rec = NULL;
		return false;
	}
	h->rec->seq = 0; /* the queue entry is discarded when it reaches the head */
	h->rec = NULL;
	s->cancelled_in_queue++;
	return true;
}

static unsigned hook_slot(struct sim *s, sim_fn fn)
{
	for (unsigned i = 0; i < s->npf; i++)
		if (s->pf_fn[i] == fn)
			return i;
	if (s->npf == SIM_PREFETCH_HOOKS)
		return SIM_PREFETCH_HOOKS; /* only a hint: the handler runs as fast as without one */
	s->pf_fn[s->npf] = fn;
	for (unsigned k = 0; k < SIM_PREFETCH_STAGES; k++)
		s->pf[k][s->npf] = NULL;
	return s->npf++;
}

void sim_prefetch_hook_stage(struct sim *s, sim_fn fn, unsigned stage, sim_prefetch_fn pf)
{
	unsigned i = hook_slot(s, fn);
	if (i < SIM_PREFETCH_HOOKS && stage < SIM_PREFETCH_STAGES)
		s->pf[stage][i] = pf;
}

void sim_prefetch_hook(struct sim *s, sim_fn fn, sim_prefetch_fn pf) { sim_prefetch_hook_stage(s, fn, 0, pf); }

/* Called after a pop, when evq_ahead(k) is the event k + 1 pops away.  The queue prefetched an event's
 * object and pointer-like arg when it was EVQ_PREFETCH_AHEAD (6) pops away; 5 pops away, with those lines
 * in cache, stage 0 of its handler's hook fetches the next level; 4 pops away stage 1 the level after, and
 * so on to stage 4, 1 pop away (a pop ahead of a handler that costs ~0.5 us at a million endpoints:
 * ample).  At 106,496 clients two stages at 3 and 2 or 2 and 1 pops, queue prefetch 4 or 6, measured alike
 * within the machine's noise, all 10-15% fewer CPU seconds than one stage; five stages let the chains of
 * a client's post and of the PCT tables reach their last records (docs/evq.md). */
#define SIM_HOOK_AHEAD (SIM_PREFETCH_STAGES + 0) /* stage 0's entry: evq_ahead(SIM_HOOK_AHEAD) */
_Static_assert(EVQ_PREFETCH_AHEAD > SIM_HOOK_AHEAD, "the queue's own prefetch comes before every stage");

static inline void run_prefetch_hook(struct sim *s)
{
	/* Later stages first: their events run sooner.  Stage k gets the entry stage k - 1 was offered one pop
	 * ago, and only that one (so the stages of an entry come in order; pops from the late lists leave the
	 * run as it was, and nothing is offered twice).  The handler is compared again: the run may have been
	 * refilled in between, and a hook must see only its own handler's events.  The run's bounds are read
	 * once: hooks only prefetch (engine.h), so the run stays as it is while they are called (the compiler
	 * cannot know that, and reloaded them after every call: ~37 of the ~850 instructions of an event). */
	uint32_t avail;
	const struct evq_entry *run = evq_run_ahead(&s->q, &avail);
	for (unsigned k = SIM_PREFETCH_STAGES - 1; k >= 1; k--) {
		if (SIM_HOOK_AHEAD - k >= avail)
			continue;
		const struct evq_entry *n = run + (SIM_HOOK_AHEAD - k);
		if (n != s->pf_last[k - 1] || n == s->pf_last[k])
			continue;
		unsigned i = s->pf_last_i[k - 1];
		s->pf_last[k] = n;
		s->pf_last_i[k] = i;
		if (i < s->npf && n->fn == s->pf_fn[i] && s->pf[k][i])
			s->pf[k][i](n->obj, n->arg);
	}
	if (SIM_HOOK_AHEAD >= avail)
		return;
	const struct evq_entry *a = run + SIM_HOOK_AHEAD;
	if (a == s->pf_last[0])
		return;
	s->pf_last[0] = a;
	s->pf_last_i[0] = SIM_PREFETCH_HOOKS;
	for (unsigned i = 0; i < s->npf; i++)
		if (a->fn == s->pf_fn[i]) {
			s->pf_last_i[0] = i;
			if (s->pf[0][i])
				s->pf[0][i](a->obj, a->arg);
			return;
		}
}

void sim_set_limits(struct sim *s, struct sim_limits lim) { s->lim = lim; }
void sim_set_progress(struct sim *s, bool on)
{
	s->progress = on && isatty(STDERR_FILENO);
	s->ticking = s->progress || s->prec;
}

static void progress_store(struct sim *s, uint64_t phase)
{
	if (!s->prec)
		return;
	s->prec->events = s->processed;
	s->prec->now_ps = s->now;
	s->prec->phase = phase;
}

void sim_set_progress_record(struct sim *s, volatile struct sim_progress_rec *rec)
{
	s->prec = rec;
	s->ticking = s->progress || rec;
	if (rec) {
		rec->magic = SIM_PROGRESS_MAGIC;
		progress_store(s, SIM_PHASE_SETUP);
	}
}
void sim_stop(struct sim *s) { s->stop_requested = true; }

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress_line(struct sim *s, bool final)
{
	double w = wall_now();
	double dt = w - s->prog_last_wall;
	if (!final && dt < 0.5)
		return;
	double evps = dt > 0 ? (double)(s->processed - s->prog_last_events) / dt : 0;
	double vps = dt > 0 ? (double)(s->now - s->prog_last_now) / dt : 0; /* virtual ps per wall s */
	char eta[32] = "?";
	if (s->lim.time_limit != SIM_TIME_MAX && vps > 0)
		snprintf(eta, sizeof(eta), "%.0fs", (double)(s->lim.time_limit - s->now) / vps);
	else if (s->lim.event_limit && evps > 0)
		snprintf(eta, sizeof(eta), "%.0fs", (double)(s->lim.event_limit - s->processed) / evps);
	fprintf(stderr, "\r[cxisim] virtual %.6f s  %.2f M events/s  pending %zu  ETA %s   %s",
		(double)s->now * 1e-12, evps * 1e-6, sim_pending(s), eta, final ? "\n" : "");
	s->prog_last_wall = w;
	s->prog_last_events = s->processed;
	s->prog_last_now = s->now;
}

#ifdef SIM_HANDLER_PROFILE
/* A profiling build (tests/bench/handler_profile.py builds and reads it): per handler, events run and TSC
 * cycles spent in the handler itself (not the queue or the prefetch hooks), printed to stderr at exit as
 * "handler-profile OFFSET EVENTS CYCLES", OFFSET the handler's address minus sim_create's (the script names
 * it from the binary's symbols).  Off in every other build: the run loop has no such code. */
#define SIM_HPROF_SLOTS 256
static struct {
	sim_fn fn;
	uint64_t events, cycles;
} hprof[SIM_HPROF_SLOTS];

static void hprof_dump(void)
{
	for (unsigned i = 0; i < SIM_HPROF_SLOTS; i++)
		if (hprof[i].fn)
			fprintf(stderr, "handler-profile %lld %llu %llu\n",
				(long long)((uintptr_t)hprof[i].fn - (uintptr_t)sim_create),
				(unsigned long long)hprof[i].events, (unsigned long long)hprof[i].cycles);
}

static void hprof_add(sim_fn fn, uint64_t cycles)
{
	static bool registered;
	if (!registered) {
		registered = true;
		atexit(hprof_dump);
	}
	unsigned h = (unsigned)(((uintptr_t)fn >> 4) * 2654435761u) % SIM_HPROF_SLOTS;
	for (unsigned n = 0; hprof[h].fn && hprof[h].fn != fn; h = (h + 1) % SIM_HPROF_SLOTS)
		if (++n == SIM_HPROF_SLOTS)
			return; /* more handlers than slots: the rest go uncounted */
	hprof[h].fn = fn;
	hprof[h].events++;
	hprof[h].cycles += cycles;
}
#endif

static enum sim_stop_reason run_loop(struct sim *s, simtime_t until)
{
	struct evq_entry e;
	s->stop_requested = false;
	if (s->progress) {
		s->prog_start_wall = s->prog_last_wall = wall_now();
		s->prog_last_events = s->processed;
		s->prog_last_now = s->now;
	}
	for (;;) {
		if (s->lim.event_limit && s->processed >= s->lim.event_limit)
			return SIM_STOP_EVENT_LIMIT;
		if (!evq_peek(&s->q, &e))
			return SIM_STOP_QUIESCENT;
		if (timer_cancelled(&e)) {
			evq_pop(&s->q, &e);
			pool_put(&s->timers, e.obj);
			s->cancelled_in_queue--;
			continue;
		}
		if (e.time > until) {
			/* Time stops short of this event: new events may still be scheduled before it. */
			evq_unpeek(&s->q);
			if (until == s->lim.time_limit) {
				s->now = until;
				return SIM_STOP_TIME_LIMIT;
			}
			s->now = until;
			return SIM_STOP_NONE;
		}
		evq_pop(&s->q, &e);
		s->now = e.time;
		run_prefetch_hook(s);
#ifdef SIM_HANDLER_PROFILE
		uint64_t t0 = __builtin_ia32_rdtsc();
		e.fn(s, e.obj, e.arg);
		hprof_add(e.fn, __builtin_ia32_rdtsc() - t0);
#else
		e.fn(s, e.obj, e.arg);
#endif
		s->processed++;
		if (s->stop_requested)
			return SIM_STOP_REQUESTED;
		_Static_assert((SIM_PROGRESS_EVERY & (SIM_PROGRESS_EVERY - 1)) == 0 && SIM_PROGRESS_EVERY <= 0x10000,
			       "a power of two that divides the progress line's 65,536");
		if (s->ticking && (s->processed & (SIM_PROGRESS_EVERY - 1)) == 0) {
			progress_store(s, SIM_PHASE_RUN);
			if (s->progress && (s->processed & 0xffff) == 0)
				progress_line(s, false);
		}
	}
}

enum sim_stop_reason sim_run(struct sim *s)
{
	progress_store(s, SIM_PHASE_RUN);
	enum sim_stop_reason r = run_loop(s, s->lim.time_limit);
	progress_store(s, SIM_PHASE_DONE);
	if (s->progress)
		progress_line(s, true);
	return r;
}

enum sim_stop_reason sim_run_until(struct sim *s, simtime_t until)
{
	if (until > s->lim.time_limit)
		until = s->lim.time_limit;
	if (until < s->now)
		until = s->now;
	enum sim_stop_reason r = run_loop(s, until);
	/* The daemon's clock follows the wall clock: an empty queue still means time passed. */
	if (r == SIM_STOP_QUIESCENT && s->now < until)
		s->now = until;
	return r;
}

bool sim_next_event_time(struct sim *s, simtime_t *when)
{
	struct evq_entry e;
	while (evq_peek(&s->q, &e)) {
		if (!timer_cancelled(&e)) {
			*when = e.time;
			return true;
		}
		evq_pop(&s->q, &e);
		pool_put(&s->timers, e.obj);
		s->cancelled_in_queue--;
	}
	return false;
}

void sim_world_set(struct sim *s, const char *name, void *obj)
{
	for (struct world_entry *w = s->world; w; w = w->next)
		if (!strcmp(w->name, name)) {
			w->obj = obj;
			return;
		}
	struct world_entry *w = xmalloc(sizeof(*w));
	w->name = name;
	w->obj = obj;
	w->next = s->world;
	s->world = w;
}

void *sim_world_get(const struct sim *s, const char *name)
{
	for (struct world_entry *w = s->world; w; w = w->next)
		if (!strcmp(w->name, name))
			return w->obj;
	return NULL;
}

void sim_on_destroy(struct sim *s, void (*fn)(void *), void *obj)
{
	struct destroy_hook *h = xmalloc(sizeof(*h));
	h->fn = fn;
	h->obj = obj;
	h->next = s->hooks;
	s->hooks = h;
}

void sim_memory(struct sim *s, struct mem_report *r)
{
	size_t q = evq_mem_bytes(&s->q);
	mem_add(r, "engine.event_queue", s->peak_queue, q);
	mem_unit(r, "pending_event", s->peak_queue, q);
	mem_add(r, "engine.timers", s->timers.allocated, pool_bytes(&s->timers));
	mem_add(r, "stats.registry", stats_size(s->stats), stats_mem_bytes(s->stats));
	for (struct world_entry *w = s->world; w; w = w->next)
		mem_add(r, "engine.core", 1, sizeof(*w));
	mem_add(r, "engine.core", 1, sizeof(*s));
}
