/* The pending-event queue: a hierarchical radix queue over event times with a sorted bottom, in exact
 * (time, sequence) order.
 *
 * Why this shape.  A discrete-event simulation pops keys in nondecreasing order, so the queue keeps a
 * reference time `cur` (<= every pending time) and files each event by the highest base-2^EVQ_BITS digit
 * in which its time differs from `cur`: level L >= 1, slot = that digit (a chain of blocks, push order).
 * Events that differ from `cur` only in the lowest digit form level 0, the next few nanoseconds.  When
 * level 0 runs dry, the lowest non-empty slot of the lowest non-empty level is redistributed into lower
 * levels ("cascade").  An event moves at most once per level below the one it was filed at: with 12-bit
 * digits, a delay below 4 ns costs nothing, below 16 us one move, below 68 ms two, whatever the queue size
 * and however skewed the delays (the old binary radix heap moved each event ~20 times).  No bucket width is
 * tuned to a distribution (unlike a calendar or ladder queue), and 6 levels cover the whole uint64 range.
 *
 * Level 0 has two parts.  The run: what a cascade brings down, radix-sorted into an array that pops read
 * sequentially (cache- and prefetch-friendly; what a ladder queue calls its bottom).  Pushes that land in
 * level 0 append to the run when they sort after its last entry (the usual case, including bursts at the
 * current time); otherwise ("late" events, e.g. +0 while the run holds later events) they go into
 * per-exact-time FIFO lists, so no push ever shifts the run.  A pop takes the smaller of the two heads.
 *
 * Storage.  Blocks come from a free list and the run, late-list arena and sort buffer only grow, so memory
 * is kept after the queue shrinks: no malloc per event and no page faults in steady state.
 *
 * Contract.  Events pop in (time, seq) order for any push order of sequence numbers (the engine's are
 * increasing; other orders take a slower path).  Any time may be pushed: times >= the last popped one are
 * the fast path; a time below `cur` (possible after a peek, e.g. sim_run_until stopping before the next
 * event and the caller then scheduling earlier) moves the lower levels back up once ("rollback").
 */
#ifndef CXISIM_EVQ_H
#define CXISIM_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sim;

/* The event record itself, stored by value so popping never chases a pointer into a cold record. */
struct evq_entry {
	uint64_t time;
	uint64_t seq;
	void (*fn)(struct sim *sim, void *obj, uint64_t arg);
	void *obj;
	uint64_t arg;
};

#ifndef EVQ_BITS
#define EVQ_BITS 12 /* radix: bits of time per level, 6..12 */
#endif
#define EVQ_SLOTS (1u << EVQ_BITS)                  /* slots per level */
#define EVQ_WORDS (EVQ_SLOTS / 64)                  /* bitmap words per level */
#define EVQ_LEVELS ((64 + EVQ_BITS - 1) / EVQ_BITS) /* levels covering a uint64 time */
_Static_assert(EVQ_BITS >= 6 && EVQ_BITS <= 12, "a level's bitmap is 1 to 64 words under one summary word");

/* Occupied slots of one level; bit k of `sum` says word k is non-zero, so finding the next occupied slot
 * is two ctz whatever the radix. */
struct evq_bitmap {
	uint64_t sum;
	uint64_t w[EVQ_WORDS];
};

/* 64 entries (2.5 KiB) per block: long enough that block hops are rare in a cascade, short enough that
 * partly filled tail blocks stay small next to the events themselves. */
#define EVQ_BLK 64

struct evq_blk {
	struct evq_blk *next;
	struct evq_entry e[EVQ_BLK];
};

struct evq_node;  /* late-list node (evq.c) */
struct evq_chunk; /* allocation unit of blocks (evq.c) */

/* A slot of level >= 1: events in push order, in a chain of blocks, all full but the tail, which holds
 * `n` (kept here rather than in the block so an append touches one cold line, not two). */
struct evq_chain {
	struct evq_blk *head, *tail;
	uint32_t n;
	uint32_t nblk; /* blocks in the chain */
};

/* Head and tail node of one late list (exact time), as arena indices. */
struct evq_late {
	uint32_t head, tail;
};

struct evq {
	uint64_t cur;   /* reference: <= every pending time; digits above an event's level equal its own */
	uint64_t floor; /* time of the last pop: the engine never pushes below it */
	size_t size;
	/* Level 0, sorted run: entries [run_head, run_tail) of run[], ascending (time, seq). */
	struct evq_entry *run;
	uint32_t run_head, run_tail, run_cap;
	/* Level 0, late lists: slot = lowest digit of the time; lists in seq order. */
	unsigned late_min;  /* lowest non-empty late slot; EVQ_SLOTS when there is none */
	uint64_t late_time; /* its time; UINT64_MAX when there is none */
	struct evq_bitmap late_bits;
	struct evq_late late[EVQ_SLOTS];
	struct evq_node *node;
	uint32_t node_cap, node_used, node_free;
	/* Levels 1 .. EVQ_LEVELS-1, at index L - 1. */
	uint32_t level_mask; /* bit L: level L has a non-empty slot */
	struct evq_bitmap bits[EVQ_LEVELS - 1];
	struct evq_chain slot[EVQ_LEVELS - 1][EVQ_SLOTS];
	struct evq_blk *blk_free;
	struct evq_chunk *chunks;
	size_t nchunks;
	/* Radix-sort buffer for the run, and counters of a one-pass sort. */
	struct evq_entry *tmp;
	uint32_t tmp_cap;
	uint32_t cnt[EVQ_SLOTS];
	/* Sequence numbers seen out of push order at least once: the run sort then also orders by seq. */
	bool seq_disorder, pushed;
	uint64_t seq_next; /* last pushed seq + 1 */
};

void evq_init(struct evq *q);
void evq_free(struct evq *q);
/* Bytes of storage the queue holds (kept across shrinking and reused; grows only with a new peak). */
size_t evq_mem_bytes(const struct evq *q);

/* Out-of-line paths (evq.c); the inline functions below handle the common cases. */
void evq_push_slow(struct evq *q, const struct evq_entry *e);
void evq_push_first_(struct evq *q, struct evq_chain *c, unsigned l, unsigned s, const struct evq_entry *e);
bool evq_pop_slow(struct evq *q, struct evq_entry *out);
bool evq_peek_slow(struct evq *q, struct evq_entry *out);

/* Append to a chain's tail block, which has room. */
static inline void evq_blk_put_entry_(struct evq_chain *c, const struct evq_entry *e)
{
	struct evq_blk *b = c->tail;
	b->e[c->n++] = *e;
	/* The tails of hundreds of slots are written in turn, each line long after the previous one: ask for
	 * the line of the entry after next now, so the next append to this slot does not stall on it. */
	if (c->n + 1 < EVQ_BLK)
		__builtin_prefetch(&b->e[c->n + 1], 1);
}

/* Any key is accepted; times >= the last popped one are the fast path.  Inline so that the engine's
 * schedule call compiles to a handful of instructions in the common cases: a level >= 1 slot whose tail
 * block has room, or an append to the run. */
static inline void evq_push(struct evq *q, const struct evq_entry *e)
{
	uint64_t x = e->time ^ q->cur;
	if (__builtin_expect(e->seq >= q->seq_next && q->seq_next != 0 && e->time >= q->cur, 1)) {
		if (x >= EVQ_SLOTS) {
			unsigned l = (unsigned)(63 - __builtin_clzll(x)) / EVQ_BITS;
			unsigned s = (unsigned)(e->time >> (l * EVQ_BITS)) & (EVQ_SLOTS - 1);
			struct evq_chain *c = &q->slot[l - 1][s];
			if (__builtin_expect(c->tail != NULL, 1) && c->n < EVQ_BLK) {
				q->seq_next = e->seq + 1;
				evq_blk_put_entry_(c, e);
				q->size++;
				return;
			}
			if (!c->tail) {
				/* First event of the slot: most events of a sparse queue. */
				evq_push_first_(q, c, l, s, e);
				return;
			}
		} else if (q->run_head != q->run_tail && q->run_tail < q->run_cap &&
			   e->time >= q->run[q->run_tail - 1].time) {
			q->seq_next = e->seq + 1;
			q->run[q->run_tail++] = *e;
			q->size++;
			return;
		}
	}
	evq_push_slow(q, e);
}

/* True when the run's head is the smallest entry.  On a tie in time with the late lists the run comes
 * first (evq.c, I4) unless sequence numbers were ever pushed out of order. */
static inline bool evq_run_first_(const struct evq *q)
{
	return q->run_head != q->run_tail && q->run[q->run_head].time <= q->late_time && !q->seq_disorder;
}

/* How many run entries ahead of the head a pop prefetches the object of.  The run itself is read in order
 * (the hardware prefetcher follows it), but each entry's `obj` is a record somewhere in gigabytes of model
 * state (an endpoint, a NIC, a switch port): fetching it a few events early overlaps that miss with the
 * handlers in between instead of stalling the handler that needs it. */
#ifndef EVQ_PREFETCH_AHEAD
#define EVQ_PREFETCH_AHEAD 6
#endif
#define EVQ_PREFETCH_ARG_MIN (1ULL << 32) /* below: an index or a count, not an address */

/* Smallest entry; false when empty. */
static inline bool evq_pop(struct evq *q, struct evq_entry *out)
{
	if (__builtin_expect(evq_run_first_(q), 1)) {
		if (q->run_head + EVQ_PREFETCH_AHEAD < q->run_tail) {
			const struct evq_entry *a = &q->run[q->run_head + EVQ_PREFETCH_AHEAD];
			__builtin_prefetch(a->obj);
			/* Many handlers get their record in `arg` (a packet, a work item) and a shared object
			 * in `obj`: prefetch an arg that looks like a heap pointer too (a prefetch never faults). */
			if (a->arg >= EVQ_PREFETCH_ARG_MIN)
				__builtin_prefetch((const void *)(uintptr_t)a->arg);
		}
		*out = q->run[q->run_head++];
		q->cur = q->floor = out->time; /* see evq_pop_slow */
		q->size--;
		return true;
	}
	return evq_pop_slow(q, out);
}

/* The entry k pops after the next one, if it is already in the run (a hint for prefetching: NULL when it
 * is not there yet; a late event may still come first). */
static inline const struct evq_entry *evq_ahead(const struct evq *q, uint32_t k)
{
	return q->run_head + k < q->run_tail ? &q->run[q->run_head + k] : NULL;
}

/* The run from the entry the next pop takes (when it comes from the run): *avail entries at the returned
 * address, entry k being evq_ahead(k).  Lets a caller that looks at several entries read the run's bounds
 * once. */
static inline const struct evq_entry *evq_run_ahead(const struct evq *q, uint32_t *avail)
{
	*avail = q->run_tail - q->run_head;
	return q->run + q->run_head;
}

/* Smallest key without removing it; false when empty. */
static inline bool evq_peek(struct evq *q, struct evq_entry *out)
{
	if (__builtin_expect(evq_run_first_(q), 1)) {
		*out = q->run[q->run_head];
		return true;
	}
	return evq_peek_slow(q, out);
}

/* Called when a peek is not followed by a pop (the run loop stopping before the next event), after which
 * keys below the peeked one (not below the last popped one) may be pushed.  Nothing to do here: this
 * queue accepts such keys at any time and moves its reference back only if one actually arrives
 * (rollback, evq.c), which spares the common case (no earlier push) any work. */
static inline void evq_unpeek(struct evq *q) { (void)q; }

static inline size_t evq_size(const struct evq *q) { return q->size; }

#endif
