/* The pending-event queue: a radix heap over 128-bit keys (time, sequence).
 *
 * A discrete-event simulation never schedules into the past, and sequence numbers only grow, so keys
 * popped from the queue are monotone.  That is exactly what a radix heap needs: an element sits in the
 * bucket of the highest bit in which it differs from the last popped key, and only ever moves to lower
 * buckets.  Pops touch buckets sequentially (no pointer chasing through a tree), which keeps the queue fast
 * with millions of pending events.  Keys are unique (the sequence breaks ties), so order is total.
 */
#ifndef CXISIM_EVQ_H
#define CXISIM_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The event record itself: the queue stores events by value, so popping one never chases a pointer into
 * a cold record (the dominant cost with a million pending events).  Bucket arrays are reused for the whole
 * run: no allocation per event. */
struct sim;

struct evq_entry {
	uint64_t time;
	uint64_t seq;
	void (*fn)(struct sim *sim, void *obj, uint64_t arg);
	void *obj;
	uint64_t arg;
};

struct evq_bucket {
	struct evq_entry *v;
	uint32_t n, cap;
};

#define EVQ_NBUCKETS 129 /* bucket 0: equal to last; 1..64: seq bits; 65..128: time bits */

struct evq {
	struct evq_bucket b[EVQ_NBUCKETS];
	uint64_t nonempty[3]; /* bit i: bucket i holds entries */
	uint64_t last_time, last_seq;
	size_t size;
	/* Undo record of the last refill not yet followed by a pop (see evq_unpeek). */
	int undo_bucket;
	uint64_t undo_time, undo_seq;
};

void evq_init(struct evq *q);
void evq_free(struct evq *q);
/* Key must be >= the last popped key. */
void evq_push(struct evq *q, const struct evq_entry *e);
/* Smallest entry; false when empty. */
bool evq_pop(struct evq *q, struct evq_entry *out);
/* Smallest key without removing it; false when empty. */
bool evq_peek(struct evq *q, struct evq_entry *out);
/* After a peek that is not followed by a pop (the run loop stopping before the next event), restore the
 * queue's reference key so that keys smaller than the peeked one (but not smaller than the last popped one)
 * may still be pushed: e.g. a daemon that ran until T and then schedules at T + d, before the next event. */
void evq_unpeek(struct evq *q);
static inline size_t evq_size(const struct evq *q) { return q->size; }

#endif
