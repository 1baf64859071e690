/* Event order: (time, insertion sequence), checked against a reference sort; timers and stop conditions. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "../../sim/engine.h"
#include "../../sim/evq.h"
#include "../../sim/rng.h"

struct rec {
	uint64_t time, seq;
};

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct order_log {
	struct rec *got;
	size_t n;
};

static void log_event(struct sim *sim, void *obj, uint64_t seq)
{
	struct order_log *l = obj;
	l->got[l->n++] = (struct rec){ sim_now(sim), seq };
}

/* 10^6 events scheduled up front with many time ties: the engine must fire them in reference order. */
Test(engine_queue, million_events_match_reference_sort)
{
	const size_t N = 1000000;
	struct rec *ref = malloc(N * sizeof(*ref));
	struct order_log l = { malloc(N * sizeof(struct rec)), 0 };
	struct rng r;
	rng_init(&r, 42, "test.queue");
	struct sim *sim = sim_create(1);
	for (size_t i = 0; i < N; i++) {
		/* A small time range forces ~10 events per distinct time: ties everywhere. */
		uint64_t t = rng_below(&r, N / 10);
		ref[i] = (struct rec){ t, i };
		sim_schedule_at(sim, t, log_event, &l, i);
	}
	qsort(ref, N, sizeof(*ref), cmp_rec);
	cr_assert_eq(sim_run(sim), SIM_STOP_QUIESCENT);
	cr_assert_eq(l.n, N);
	for (size_t i = 0; i < N; i++) {
		cr_assert_eq(l.got[i].time, ref[i].time, "event %zu: time %lu, want %lu", i, l.got[i].time, ref[i].time);
		cr_assert_eq(l.got[i].seq, ref[i].seq, "event %zu: seq %lu, want %lu", i, l.got[i].seq, ref[i].seq);
	}
	free(ref);
	free(l.got);
	sim_destroy(sim);
}

/* The queue alone, interleaving pushes and pops (hold pattern) against a reference that sorts. */
Test(engine_queue, interleaved_push_pop_is_monotone_and_complete)
{
	struct evq q;
	struct rng r;
	evq_init(&q);
	rng_init(&r, 7, "test.hold");
	uint64_t seq = 0, popped = 0, last_t = 0, last_s = 0;
	for (int i = 0; i < 10000; i++) {
		struct evq_entry e = { rng_below(&r, 1000), seq++, NULL, NULL, 0 };
		evq_push(&q, &e);
	}
	for (int i = 0; i < 1000000; i++) {
		struct evq_entry e;
		cr_assert(evq_pop(&q, &e));
		cr_assert(e.time > last_t || (e.time == last_t && e.seq > last_s) || popped == 0,
			  "pop %d out of order", i);
		last_t = e.time;
		last_s = e.seq;
		popped++;
		struct evq_entry n = { e.time + rng_below(&r, 3), seq++, NULL, NULL, 0 }; /* ties with now */
		evq_push(&q, &n);
	}
	cr_assert_eq(evq_size(&q), 10000);
	evq_free(&q);
}

static void count(struct sim *sim, void *obj, uint64_t arg)
{
	(void)sim;
	(void)arg;
	(*(int *)obj)++;
}

Test(engine_queue, cancelled_timer_neither_fires_nor_advances_time)
{
	struct sim *sim = sim_create(1);
	int fired = 0;
	sim_schedule(sim, SIM_NS(10), count, &fired, 0);
	sim_timer t = sim_timer_start(sim, SIM_US(500), count, &fired, 0);
	cr_assert(sim_timer_pending(&t));
	cr_assert_eq(sim_pending(sim), 2);
	cr_assert(sim_timer_cancel(sim, &t));
	cr_assert_not(sim_timer_cancel(sim, &t), "second cancel must fail");
	cr_assert_eq(sim_pending(sim), 1);
	cr_assert_eq(sim_run(sim), SIM_STOP_QUIESCENT);
	cr_assert_eq(fired, 1);
	cr_assert_eq(sim_now(sim), SIM_NS(10), "a cancelled timer must not advance time");
	sim_destroy(sim);
}

struct rearm {
	sim_timer t;
	int fired;
};

static void rearm_fire(struct sim *sim, void *obj, uint64_t arg)
{
	struct rearm *r = obj;
	(void)arg;
	r->fired++;
	/* A handle to a fired timer is stale, even after its record is reused by a new timer. */
	sim_timer old = r->t;
	cr_assert_not(sim_timer_pending(&old));
	if (r->fired < 3)
		r->t = sim_timer_start(sim, SIM_NS(1), rearm_fire, r, 0);
	cr_assert_not(sim_timer_cancel(sim, &old));
}

Test(engine_queue, stale_timer_handles_are_harmless)
{
	struct sim *sim = sim_create(1);
	struct rearm r = { .fired = 0 };
	r.t = sim_timer_start(sim, SIM_NS(1), rearm_fire, &r, 0);
	sim_run(sim);
	cr_assert_eq(r.fired, 3);
	cr_assert_eq(sim_now(sim), SIM_NS(3));
	sim_destroy(sim);
}

static void forever(struct sim *sim, void *obj, uint64_t arg)
{
	(void)obj;
	sim_schedule(sim, SIM_NS(1), forever, NULL, arg);
}

Test(engine_queue, stop_conditions)
{
	struct sim *sim = sim_create(1);
	sim_schedule(sim, 0, forever, NULL, 0);
	sim_set_limits(sim, (struct sim_limits){ .time_limit = SIM_US(1), .event_limit = 0 });
	cr_assert_eq(sim_run(sim), SIM_STOP_TIME_LIMIT);
	cr_assert_eq(sim_now(sim), SIM_US(1));
	cr_assert_eq(sim_events_processed(sim), 1001); /* t = 0, 1, ..., 1000 ns */
	sim_set_limits(sim, (struct sim_limits){ .time_limit = SIM_TIME_MAX, .event_limit = 1500 });
	cr_assert_eq(sim_run(sim), SIM_STOP_EVENT_LIMIT);
	cr_assert_eq(sim_events_processed(sim), 1500);
	cr_assert_eq(sim_run_until(sim, SIM_NS(1600)), SIM_STOP_EVENT_LIMIT);
	sim_set_limits(sim, (struct sim_limits){ .time_limit = SIM_TIME_MAX, .event_limit = 0 });
	cr_assert_eq(sim_run_until(sim, SIM_NS(1600)), SIM_STOP_NONE);
	cr_assert_eq(sim_now(sim), SIM_NS(1600));
	sim_destroy(sim);
}

static void stopper(struct sim *sim, void *obj, uint64_t arg)
{
	(void)obj;
	(void)arg;
	sim_stop(sim);
}

Test(engine_queue, requested_stop_and_past_schedule_rejected)
{
	struct sim *sim = sim_create(1);
	sim_schedule(sim, SIM_NS(5), stopper, NULL, 0);
	sim_schedule(sim, SIM_NS(6), stopper, NULL, 0);
	cr_assert_eq(sim_run(sim), SIM_STOP_REQUESTED);
	cr_assert_eq(sim_now(sim), SIM_NS(5));
	cr_assert_eq(sim_pending(sim), 1);
	sim_destroy(sim);
}

/* Prefetch hooks: called for events of their handler only (each at most once), shortly before they run
 * (events far enough ahead to reach the queue's sorted run, as nearly all do in a large model: here ~40 per
 * 4.1 ns window of the run, enough for the first stage's SIM_PREFETCH_STAGES pops of lead), with their obj
 * and arg; the run (order, times, count) is the same with and without them. */
static uint64_t hook_calls, hook_wrong, next_calls, next_wrong, next_early, last_calls, last_early, final_calls,
	final_early;
static void hooked(struct sim *sim, void *obj, uint64_t arg)
{
	(void)sim;
	(*(uint64_t *)obj) += arg;
}
static void unhooked(struct sim *sim, void *obj, uint64_t arg)
{
	(void)sim;
	(*(uint64_t *)obj) ^= arg * 0x9e3779b97f4a7c15ULL;
}
static void hook_pf(const void *obj, uint64_t arg)
{
	hook_calls++;
	hook_wrong += arg >= 1000 || obj == NULL;
	__builtin_prefetch(obj);
}

/* The second stage: same handler only, and only after the first stage saw the entry (one level deeper). */
static uint64_t first_seen[1000], second_seen[1000], third_seen[1000];
static void hook_pf_first(const void *obj, uint64_t arg)
{
	hook_pf(obj, arg);
	if (arg < 1000)
		first_seen[arg]++;
}
static void hook_pf_next(const void *obj, uint64_t arg)
{
	next_calls++;
	next_wrong += arg >= 1000 || obj == NULL;
	next_early += arg < 1000 && !first_seen[arg];
	if (arg < 1000)
		second_seen[arg]++;
	__builtin_prefetch(obj);
}
static void hook_pf_last(const void *obj, uint64_t arg)
{
	last_calls++;
	next_wrong += arg >= 1000 || obj == NULL;
	last_early += arg < 1000 && !second_seen[arg];
	if (arg < 1000)
		third_seen[arg]++;
}
/* The last stage (SIM_PREFETCH_STAGES - 1), with the stages between it and the third without hooks. */
static void hook_pf_final(const void *obj, uint64_t arg)
{
	final_calls++;
	next_wrong += arg >= 1000 || obj == NULL;
	final_early += arg < 1000 && !third_seen[arg];
}

static uint64_t run_mixed(int hook, uint64_t *events, simtime_t *end)
{
	struct sim *s = sim_create(7);
	if (hook == 1) {
		sim_prefetch_hook(s, hooked, hook_pf);
		sim_prefetch_hook(s, hooked, hook_pf); /* twice: harmless */
	} else if (hook == 2) {
		memset(first_seen, 0, sizeof(first_seen));
		memset(second_seen, 0, sizeof(second_seen));
		memset(third_seen, 0, sizeof(third_seen));
		sim_prefetch_hook_stage(s, hooked, 2, hook_pf_last); /* a later stage registered first: same slot */
		sim_prefetch_hook(s, hooked, hook_pf_first);
		sim_prefetch_hook_stage(s, hooked, 1, hook_pf_next);
		sim_prefetch_hook_stage(s, hooked, SIM_PREFETCH_STAGES - 1, hook_pf_final);
		sim_prefetch_hook_stage(s, hooked, SIM_PREFETCH_STAGES, hook_pf_next); /* no such stage: ignored */
	}
	uint64_t acc = 0;
	struct rng r;
	rng_init(&r, 3, "hooks");
	for (uint64_t i = 0; i < 2000; i++)
		sim_schedule(s, 10000 + rng_below(&r, 200000), i % 2 ? hooked : unhooked, &acc, i % 2 ? i / 2 : i + 1000);
	sim_run(s);
	*events = sim_events_processed(s);
	*end = sim_now(s);
	sim_destroy(s);
	return acc;
}

Test(engine_queue, prefetch_hooks_see_their_handler_only_and_change_nothing)
{
	uint64_t ev0, ev1;
	simtime_t t0, t1;
	hook_calls = hook_wrong = 0;
	uint64_t a0 = run_mixed(0, &ev0, &t0);
	cr_assert_eq(hook_calls, 0);
	uint64_t a1 = run_mixed(true, &ev1, &t1);
	cr_assert_eq(a0, a1);
	cr_assert_eq(ev0, ev1);
	cr_assert_eq(t0, t1);
	cr_assert_gt(hook_calls, 500, "hook called %llu times for 1,000 hooked events", (unsigned long long)hook_calls);
	cr_assert_leq(hook_calls, 1000, "%llu calls: an entry offered twice", (unsigned long long)hook_calls);
	cr_assert_eq(hook_wrong, 0, "a hook saw another handler's event");
}

Test(engine_queue, later_stage_hooks_follow_the_earlier_and_change_nothing)
{
	uint64_t ev0, ev2;
	simtime_t t0, t2;
	hook_calls = hook_wrong = next_calls = next_wrong = next_early = last_calls = last_early = 0;
	final_calls = final_early = 0;
	uint64_t a0 = run_mixed(0, &ev0, &t0);
	uint64_t a2 = run_mixed(2, &ev2, &t2);
	cr_assert_eq(a0, a2);
	cr_assert_eq(ev0, ev2);
	cr_assert_eq(t0, t2);
	cr_assert_gt(hook_calls, 500, "first stage called %llu times", (unsigned long long)hook_calls);
	cr_assert_gt(next_calls, 500, "second stage called %llu times for 1,000 hooked events",
		     (unsigned long long)next_calls);
	cr_assert_leq(next_calls, 1000, "%llu calls: an entry offered twice", (unsigned long long)next_calls);
	cr_assert_eq(next_wrong, 0, "a second stage saw another handler's event");
	cr_assert_eq(next_early, 0, "%llu entries reached the second stage before the first",
		     (unsigned long long)next_early);
	cr_assert_gt(last_calls, 500, "third stage called %llu times", (unsigned long long)last_calls);
	cr_assert_leq(last_calls, 1000, "%llu calls: an entry offered twice", (unsigned long long)last_calls);
	cr_assert_eq(last_early, 0, "%llu entries reached the third stage before the second",
		     (unsigned long long)last_early);
	cr_assert_gt(final_calls, 500, "last stage called %llu times", (unsigned long long)final_calls);
	cr_assert_leq(final_calls, 1000, "%llu calls: an entry offered twice", (unsigned long long)final_calls);
	cr_assert_eq(final_early, 0, "%llu entries reached the last stage before the third",
		     (unsigned long long)final_early);
	for (unsigned i = 0; i < 1000; i++)
		cr_assert_leq(first_seen[i], 1, "entry %u offered %llu times to the first stage", i,
			      (unsigned long long)first_seen[i]);
}
