/* The pending-event queue: a hierarchical radix queue ("timing wheel") over event times, with exact
 * (time, sequence) order.
 *
 * Why this shape.  A discrete-event simulation pops keys in nondecreasing order, so the queue can keep a
 * reference time `cur` (<= every pending time) and file each event by the highest base-256 digit in which
 * its time differs from `cur`: level L, slot = that digit.  Level 0 therefore holds, per slot, events of one
 * exact time, kept as a FIFO (ordered by sequence), so bursts at the same time and handlers that schedule
 * at +0 cost O(1).  When level 0 runs dry the lowest non-empty slot of the lowest non-empty level is
 * redistributed into lower levels ("cascade").  An event moves at most once per level below the one it
 * was filed at, i.e. about log256(delay) times (3 for a 2 us delay at 1 ps resolution, 4 for a 500 us
 * timer) whatever the queue size and however skewed the delays: the old binary radix heap moved each
 * event ~20 times.  The structure needs no tuning to a distribution (unlike a calendar or ladder queue's
 * bucket width) and covers the whole uint64 range (8 levels of 8 bits).
 *
 * Storage.  Levels >= 1 keep events by value in chains of fixed-size blocks, so a cascade streams through
 * memory; blocks come from a free list that keeps its memory after the queue shrinks (no malloc per event,
 * no page faults in steady state).  Level 0 keeps events in a small node arena with per-time FIFO lists:
 * it holds only the current 256 ps window, so it stays in cache.
 *
 * Contract.  Events pop in (time, seq) order, ties on time broken by the smaller seq, for any push order.
 * Pushing a time below the last popped one is allowed but is the caller's own business (the engine never
 * does); pushing below the reference time after a peek (sim_run_until stopping before the next event, then
 * scheduling earlier) is handled by moving the lower levels back up once ("rollback").
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
#define EVQ_BITS 8                                        /* radix: bits of time per level, 6..12 */
#endif
#define EVQ_SLOTS (1u << EVQ_BITS)                        /* slots per level */
#define EVQ_WORDS (EVQ_SLOTS / 64)                        /* bitmap words per level */
#define EVQ_LEVELS ((64 + EVQ_BITS - 1) / EVQ_BITS)       /* levels covering a uint64 time */

/* Occupied slots of one level; bit k of `sum` says word k is non-zero (two-level so finding the next
 * occupied slot is two ctz whatever the radix). */
struct evq_bitmap {
	uint64_t sum;
	uint64_t w[EVQ_WORDS];
};

struct evq_blk;   /* block of a level >= 1 chain (evq.c) */
struct evq_node;  /* level-0 list node (evq.c) */
struct evq_chunk; /* allocation unit of blocks (evq.c) */

/* A slot of level >= 1: events in push order, in a chain of blocks, all full but the tail, which holds
 * `n` (kept here rather than in the block so an append touches one cold line, not two). */
struct evq_chain {
	struct evq_blk *head, *tail;
	uint32_t n;
};

struct evq {
	uint64_t cur;   /* reference: <= every pending time; digits above an event's level equal its own */
	uint64_t floor; /* time of the last pop: the engine never pushes below it */
	size_t size;
	/* Level 0: slot = low digit of an exact time; a FIFO list of arena nodes (indices). */
	unsigned l0_min; /* lowest non-empty level-0 slot; EVQ_SLOTS when level 0 is empty */
	struct evq_bitmap l0_bits;
	uint32_t l0_head[EVQ_SLOTS], l0_tail[EVQ_SLOTS];
	struct evq_node *node;
	uint32_t node_cap, node_used, node_free;
	/* Levels 1 .. EVQ_LEVELS-1 (index 0 unused). */
	uint32_t level_mask; /* bit L: level L has a non-empty slot */
	struct evq_bitmap bits[EVQ_LEVELS];
	struct evq_chain slot[EVQ_LEVELS][EVQ_SLOTS];
	struct evq_blk *blk_free;
	struct evq_chunk *chunks;
};

void evq_init(struct evq *q);
void evq_free(struct evq *q);
/* Any key is accepted; keys >= the last popped key are the fast path. */
void evq_push(struct evq *q, const struct evq_entry *e);
/* Smallest entry; false when empty. */
bool evq_pop(struct evq *q, struct evq_entry *out);
/* Smallest key without removing it; false when empty. */
bool evq_peek(struct evq *q, struct evq_entry *out);
static inline size_t evq_size(const struct evq *q) { return q->size; }

#endif
