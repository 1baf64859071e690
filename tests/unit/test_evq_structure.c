/* The event queue's own edge cases, each checked pop by pop against a reference binary heap on (time, seq):
 * level spawning and cascades across all radix levels, far-future keys up to 2^64-1, same-time bursts and
 * +0 pushes (the run and the late lists), empty/refill transitions, pushes below the reference after a
 * peek (rollback), sequence numbers pushed out of order, array growth and memory reuse, and skewed
 * (bimodal) hold workloads.  Payload fields are derived from seq so that a mixed-up entry is caught too. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/engine.h"
#include "../../sim/evq.h"
#include "../../sim/rng.h"

/* ---- reference: a plain binary min-heap ---- */

struct ref {
	struct evq_entry *a;
	size_t n, cap;
};

static bool ref_less(const struct evq_entry *x, const struct evq_entry *y)
{
	return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static void ref_push(struct ref *r, struct evq_entry e)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 1024;
		r->a = realloc(r->a, r->cap * sizeof(*r->a));
		cr_assert(r->a);
	}
	size_t i = r->n++;
	while (i > 0 && ref_less(&e, &r->a[(i - 1) / 2])) {
		r->a[i] = r->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	r->a[i] = e;
}

static struct evq_entry ref_pop(struct ref *r)
{
	struct evq_entry top = r->a[0], last = r->a[--r->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= r->n)
			break;
		if (c + 1 < r->n && ref_less(&r->a[c + 1], &r->a[c]))
			c++;
		if (!ref_less(&r->a[c], &last))
			break;
		r->a[i] = r->a[c];
		i = c;
	}
	if (r->n)
		r->a[i] = last;
	return top;
}

/* ---- harness: every operation goes to both and results are compared ---- */

static void dummy_fn(struct sim *sim, void *obj, uint64_t arg)
{
	(void)sim, (void)obj, (void)arg;
}

struct harness {
	struct evq *q;
	struct ref r;
	uint64_t seq;  /* next sequence number */
	uint64_t last; /* time of the last pop */
	uint64_t pops;
};

static void h_init(struct harness *h)
{
	memset(h, 0, sizeof(*h));
	h->q = malloc(sizeof(*h->q));
	cr_assert(h->q);
	evq_init(h->q);
}

static void h_fini(struct harness *h)
{
	cr_assert_eq(evq_size(h->q), h->r.n);
	evq_free(h->q);
	free(h->q);
	free(h->r.a);
}

static struct evq_entry make(uint64_t time, uint64_t seq)
{
	return (struct evq_entry){ time, seq, dummy_fn, (void *)(uintptr_t)(seq * 8 + 8),
				   seq ^ 0x9e3779b97f4a7c15ULL };
}

static void h_push_seq(struct harness *h, uint64_t time, uint64_t seq)
{
	struct evq_entry e = make(time, seq);
	evq_push(h->q, &e);
	ref_push(&h->r, e);
	cr_assert_eq(evq_size(h->q), h->r.n);
}

static void h_push(struct harness *h, uint64_t time)
{
	h_push_seq(h, time, h->seq++);
}

static void check_same(const struct evq_entry *got, const struct evq_entry *want, uint64_t pops,
		       const char *what)
{
	cr_assert(got->time == want->time && got->seq == want->seq, "%s %llu: got (%llu, %llu), want (%llu, %llu)",
		  what, (unsigned long long)pops, (unsigned long long)got->time, (unsigned long long)got->seq,
		  (unsigned long long)want->time, (unsigned long long)want->seq);
	cr_assert(got->fn == want->fn && got->obj == want->obj && got->arg == want->arg,
		  "%s %llu: payload of seq %llu corrupted", what, (unsigned long long)pops,
		  (unsigned long long)want->seq);
}

static void h_peek(struct harness *h)
{
	struct evq_entry got;
	bool ok = evq_peek(h->q, &got);
	cr_assert_eq(ok, h->r.n > 0, "peek on %s queue returned %d", h->r.n ? "non-empty" : "empty", ok);
	if (ok)
		check_same(&got, &h->r.a[0], h->pops, "peek before pop");
}

static void h_pop(struct harness *h)
{
	struct evq_entry got;
	bool ok = evq_pop(h->q, &got);
	cr_assert_eq(ok, h->r.n > 0, "pop on %s queue returned %d", h->r.n ? "non-empty" : "empty", ok);
	if (!ok)
		return;
	struct evq_entry want = ref_pop(&h->r);
	check_same(&got, &want, h->pops, "pop");
	h->last = got.time;
	h->pops++;
	cr_assert_eq(evq_size(h->q), h->r.n);
}

static void h_drain(struct harness *h)
{
	while (h->r.n)
		h_pop(h);
	h_pop(h); /* and once more on the empty queue */
	h_peek(h);
}

/* A delay spanning every level: +0, within level 0, and up to the far end of the time range. */
static uint64_t any_scale_time(struct rng *r, uint64_t now)
{
	uint64_t room = UINT64_MAX - now, d;
	switch (rng_below(r, 8)) {
	case 0: d = 0; break;
	case 1: d = rng_below(r, 4096); break;
	case 2: d = rng_below(r, 1ULL << 24); break;
	case 3: d = rng_below(r, 1ULL << 36); break;
	case 4: d = rng_below(r, 1ULL << 48); break;
	case 5: d = rng_next(r) >> rng_below(r, 64); break;
	case 6: d = room; break; /* exactly 2^64-1 */
	default: d = SIM_US(500); break;
	}
	return d > room ? UINT64_MAX : now + d;
}

/* ---- tests ---- */

/* Random pushes at every scale, pops and peeks, drains to empty, and pushes below the reference time right
 * after a peek (the queue may have cascaded a far slot; pushing between the last pop and that slot must
 * still come out first).  Several fresh queues, starting at 0 and at random points up to 2^63, since the
 * clock only moves forward. */
Test(evq_structure, random_ops_all_scales_vs_reference)
{
	struct rng r;
	uint64_t pops = 0;
	rng_init(&r, 11, "test.evq.fuzz");
	for (int run = 0; run < 8; run++) {
		struct harness h;
		h_init(&h);
		h.last = run ? rng_next(&r) >> (1 + rng_below(&r, 63)) : 0;
		for (int round = 0; round < 5; round++) {
			size_t target = (size_t)1 << rng_below(&r, 15); /* 1 .. 16384 pending */
			for (int op = 0; op < 20000; op++) {
				uint64_t p = rng_below(&r, 100);
				if (p < 10) {
					h_peek(&h);
					/* below whatever the peek cascaded to, but not below the last pop */
					if (h.r.n && h.r.a[0].time > h.last && rng_below(&r, 2))
						h_push(&h, h.last + rng_below(&r, h.r.a[0].time - h.last));
				} else if (p < 55 || h.r.n < target / 2) {
					if (h.r.n < 2 * target)
						h_push(&h, any_scale_time(&r, h.last));
				} else {
					h_pop(&h);
				}
			}
			if (round % 2)
				h_drain(&h);
		}
		h_drain(&h);
		pops += h.pops;
		h_fini(&h);
	}
	cr_assert_gt(pops, 300000);
}

/* A top-level slot too big for the single-block shortcut, cascaded while the reference has non-zero low
 * digits: the new reference must be the slot's base, not the old reference with the slot digit set. */
Test(evq_structure, top_level_cascade_from_unaligned_reference)
{
	struct harness h;
	struct rng r;
	h_init(&h);
	rng_init(&r, 4, "test.evq.top");
	h_push(&h, (1ULL << 40) + 5 + (1ULL << 20));
	h_pop(&h);
	for (int i = 0; i < 500; i++)
		h_push(&h, (1ULL << 62) + (rng_below(&r, 1ULL << 12) << 30) + rng_below(&r, 1ULL << 21));
	for (int i = 0; i < 100; i++)
		h_push(&h, (3ULL << 62) + rng_below(&r, 1ULL << 41));
	h_drain(&h);
	h_fini(&h);
}

/* Keys at the far end of the time range: every power of two, 2^64-1 with ties, pushed in scrambled order,
 * then the clock moved close to 2^64 and more pushed there. */
Test(evq_structure, far_future_keys)
{
	struct harness h;
	h_init(&h);
	for (int rep = 0; rep < 3; rep++)
		for (int b = 63; b >= 0; b -= 1)
			h_push(&h, (1ULL << b) + (uint64_t)rep);
	for (int i = 0; i < 100; i++)
		h_push(&h, UINT64_MAX);
	h_push(&h, UINT64_MAX - 1);
	h_push(&h, 0);
	for (int i = 0; i < 193; i++) /* 0 and the 192 powers */
		h_pop(&h);
	cr_assert_geq(h.last, 1ULL << 63);
	/* now near the top: +0 and small delays next to the pending 2^64-1 ties */
	for (int i = 0; i < 1000; i++)
		h_push(&h, h.last + (uint64_t)(i % 7) * (uint64_t)(i % 3 ? 1 : 4099));
	h_drain(&h);
	cr_assert_eq(h.last, UINT64_MAX);
	h_fini(&h);
}

/* Same-time bursts: a large burst at one time (run growth), then a handler-style pattern that pushes at
 * +0 while the run still holds later events (those go to the late lists and must keep FIFO order with
 * the run's entries of the same time). */
Test(evq_structure, same_time_bursts_and_plus_zero)
{
	struct harness h;
	struct rng r;
	h_init(&h);
	rng_init(&r, 5, "test.evq.burst");
	for (int i = 0; i < 300000; i++)
		h_push(&h, 7777);
	for (int i = 0; i < 1000; i++)
		h_push(&h, 7777 + rng_below(&r, 3000));
	/* pop one, push several at +0 and a few slightly later, repeatedly */
	for (int i = 0; i < 200000; i++) {
		h_pop(&h);
		int k = (int)rng_below(&r, 4);
		for (int j = 0; j < k; j++)
			h_push(&h, h.last + (rng_below(&r, 4) ? 0 : rng_below(&r, 50)));
	}
	h_drain(&h);
	h_fini(&h);
}

/* The classic failure of a queue that lets peek move its reference: sim_run_until stops before the next
 * event, then a handler outside the run schedules before it.  The earlier event must fire first. */
struct order {
	simtime_t t[4];
	int n;
};

static void note(struct sim *sim, void *obj, uint64_t arg)
{
	struct order *o = obj;
	(void)arg;
	o->t[o->n++] = sim_now(sim);
}

Test(evq_structure, schedule_earlier_after_run_until_stopped)
{
	struct sim *sim = sim_create(1);
	struct order o = { .n = 0 };
	sim_schedule_at(sim, SIM_NS(2), note, &o, 0);
	cr_assert_eq(sim_run_until(sim, SIM_PS(1600)), SIM_STOP_NONE);
	sim_schedule_at(sim, SIM_PS(1700), note, &o, 0);
	sim_schedule_at(sim, SIM_PS(1600), note, &o, 0);
	cr_assert_eq(sim_run(sim), SIM_STOP_QUIESCENT);
	cr_assert_eq(o.n, 3);
	cr_assert_eq(o.t[0], SIM_PS(1600));
	cr_assert_eq(o.t[1], SIM_PS(1700));
	cr_assert_eq(o.t[2], SIM_NS(2));
	sim_destroy(sim);
}

/* Rollback with every level populated: peek cascades the lowest slot of a far level, then pushes land
 * between the last pop and that slot, at every scale. */
Test(evq_structure, push_below_reference_after_peek)
{
	struct harness h;
	struct rng r;
	h_init(&h);
	rng_init(&r, 3, "test.evq.rollback");
	for (int round = 0; round < 2000; round++) {
		for (int i = 0; i < 20; i++)
			h_push(&h, h.last + (1ULL << rng_below(&r, 50)) + rng_below(&r, 1000));
		h_peek(&h);
		uint64_t gap = h.r.a[0].time - h.last;
		for (int i = 0; i < 5 && gap > 1; i++)
			h_push(&h, h.last + rng_below(&r, gap));
		for (int i = 0; i < 15; i++)
			h_pop(&h);
	}
	h_drain(&h);
	h_fini(&h);
}

/* Times below the last pop are the caller's business, but the queue still returns them in key order. */
Test(evq_structure, push_below_last_pop_still_ordered)
{
	struct harness h;
	h_init(&h);
	h_push(&h, 1000000);
	h_push(&h, 5000000);
	h_pop(&h);
	h_push(&h, 10);
	h_push(&h, 999999);
	h_push(&h, 1000000);
	h_drain(&h);
	h_fini(&h);
}

/* Sequence numbers pushed out of push order: equal times pop by seq, whether they meet in a cascaded run,
 * in the run's appends or in the late lists. */
Test(evq_structure, sequence_numbers_out_of_push_order)
{
	struct harness h;
	struct rng r;
	h_init(&h);
	rng_init(&r, 9, "test.evq.seq");
	h_push_seq(&h, 5, 10);
	h_push_seq(&h, 5, 3);
	h_push_seq(&h, 5, 7);
	h_push_seq(&h, 9000, 2);
	h_push_seq(&h, 9000, 1);
	h_drain(&h);
	for (int i = 0; i < 200000; i++) {
		if (rng_below(&r, 3))
			h_push_seq(&h, h.last + rng_below(&r, 3) * rng_below(&r, 10000), rng_next(&r) >> 1);
		else
			h_pop(&h);
	}
	h_drain(&h);
	h_fini(&h);
}

/* Hold model with a bimodal increment (90% 1-100 ns, 10% +500 us), the shape of packet hops vs.
 * retransmit timers, against the reference.  Run again from 2^48 and from 2^49 ps (the same shape in
 * every slot), the third run must not grow the queue's memory: storage is reused, not allocated per
 * event.  (The first run starts from a different level, so only runs two and three are alike.) */
static void bimodal_hold(struct harness *h, uint64_t base, uint64_t seed)
{
	struct rng r;
	rng_init(&r, seed, "test.evq.bimodal");
	h->last = base;
	for (int i = 0; i < 50000; i++)
		h_push(h, base + rng_below(&r, SIM_US(500)));
	for (int i = 0; i < 400000; i++) {
		h_pop(h);
		uint64_t d = rng_below(&r, 10) ? SIM_NS(1) + rng_below(&r, SIM_NS(99) + 1) : SIM_US(500);
		h_push(h, h->last + d);
	}
	h_drain(h);
}

Test(evq_structure, bimodal_hold_and_memory_reuse)
{
	struct harness h;
	h_init(&h);
	bimodal_hold(&h, 0, 1);
	bimodal_hold(&h, 1ULL << 48, 1);
	size_t mem = evq_mem_bytes(h.q);
	cr_assert_gt(mem, 0);
	bimodal_hold(&h, 1ULL << 49, 1);
	cr_assert_eq(evq_mem_bytes(h.q), mem, "memory grew from %zu to %zu on an identical workload", mem,
		     evq_mem_bytes(h.q));
	h_fini(&h);
}

/* Dense uniform hold (many events per level-0 window: the radix-sorted run with ties), and the edge of
 * empty: a queue drained and refilled with one event at a time, at every level. */
Test(evq_structure, dense_hold_and_single_event_refills)
{
	struct harness h;
	struct rng r;
	h_init(&h);
	rng_init(&r, 2, "test.evq.dense");
	for (int i = 0; i < 100000; i++)
		h_push(&h, rng_below(&r, 20000));
	for (int i = 0; i < 300000; i++) {
		h_pop(&h);
		h_push(&h, h.last + rng_below(&r, 20000));
	}
	h_drain(&h);
	for (int b = 0; b < 64; b++) {
		uint64_t d = (1ULL << b) - 1;
		h_push(&h, d > UINT64_MAX - h.last ? UINT64_MAX : h.last + d);
		h_peek(&h);
		h_pop(&h);
		h_pop(&h);
	}
	h_fini(&h);
}

/* The daemon's pattern: ask for the next event's time (a peek that may cascade far ahead), then schedule
 * before it.  The earlier events must fire first. */
Test(evq_structure, schedule_earlier_after_next_event_time)
{
	struct sim *sim = sim_create(1);
	struct order o = { .n = 0 };
	simtime_t next = 0;
	sim_schedule_at(sim, SIM_US(1000), note, &o, 0);
	cr_assert(sim_next_event_time(sim, &next));
	cr_assert_eq(next, SIM_US(1000));
	sim_schedule_at(sim, SIM_US(10), note, &o, 0);
	sim_schedule_at(sim, SIM_NS(3), note, &o, 0);
	cr_assert(sim_next_event_time(sim, &next));
	cr_assert_eq(next, SIM_NS(3));
	cr_assert_eq(sim_run(sim), SIM_STOP_QUIESCENT);
	cr_assert_eq(o.n, 3);
	cr_assert_eq(o.t[0], SIM_NS(3));
	cr_assert_eq(o.t[1], SIM_US(10));
	cr_assert_eq(o.t[2], SIM_US(1000));
	sim_destroy(sim);
}
