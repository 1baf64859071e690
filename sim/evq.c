/* Hierarchical radix queue; the design and its invariants are described in evq.h.
 *
 * Invariants (I1-I3), with digit(t, L) = bits [8L, 8L+8) of t:
 *  I1  cur <= every pending time.
 *  I2  an event with time t is at level L = highest digit where t and cur differ (0 if t == cur), in slot
 *      digit(t, L); hence at level L >= 1 every slot index is > digit(cur, L).
 *  I3  all events of one time sit in one slot, in push order (level 0: in seq order).
 * A cascade keeps I2 for everything outside the cascaded slot because it only changes digits of cur below
 * that slot's level; popping sets cur to the popped time, which only changes digit 0.
 */
#include "evq.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

/* 64 entries (2.5 KiB) per block: long enough that block hops are rare in a cascade, short enough that
 * the partly filled tail blocks of up to 7 x 256 slots stay a few MiB. */
#define EVQ_BLK 64
#define EVQ_CHUNK 64 /* blocks per allocation */
#define NIL UINT32_MAX

struct evq_blk {
	struct evq_blk *next;
	struct evq_entry e[EVQ_BLK];
};

struct evq_chunk {
	struct evq_chunk *next;
	struct evq_blk b[EVQ_CHUNK];
};

struct evq_node {
	struct evq_entry e;
	uint32_t next;
};

void evq_init(struct evq *q)
{
	memset(q, 0, sizeof(*q));
	q->l0_min = EVQ_SLOTS;
	memset(q->l0_head, 0xff, sizeof(q->l0_head));
	memset(q->l0_tail, 0xff, sizeof(q->l0_tail));
	q->node_free = NIL;
}

void evq_free(struct evq *q)
{
	while (q->chunks) {
		struct evq_chunk *c = q->chunks;
		q->chunks = c->next;
		free(c);
	}
	free(q->node);
	evq_init(q);
}

/* ---- bitmaps ---- */

static inline void bit_set(struct evq_bitmap *m, unsigned i)
{
	m->w[i >> 6] |= 1ULL << (i & 63);
	m->sum |= 1ULL << (i >> 6);
}

static inline void bit_clear(struct evq_bitmap *m, unsigned i)
{
	if (!(m->w[i >> 6] &= ~(1ULL << (i & 63))))
		m->sum &= ~(1ULL << (i >> 6));
}

/* Lowest set bit >= from, or EVQ_SLOTS. */
static inline unsigned bit_next(const struct evq_bitmap *m, unsigned from)
{
	if (from >= EVQ_SLOTS)
		return EVQ_SLOTS;
	unsigned k = from >> 6;
	uint64_t x = m->w[k] & (~0ULL << (from & 63));
	if (x)
		return (k << 6) | (unsigned)__builtin_ctzll(x);
	if (k + 1 >= EVQ_WORDS)
		return EVQ_SLOTS;
	uint64_t s = m->sum & (~0ULL << (k + 1));
	if (!s)
		return EVQ_SLOTS;
	k = (unsigned)__builtin_ctzll(s);
	return (k << 6) | (unsigned)__builtin_ctzll(m->w[k]);
}

/* Mask of the digits below level l (l may be EVQ_LEVELS). */
static inline uint64_t low_digits(unsigned l)
{
	return l * EVQ_BITS >= 64 ? ~0ULL : (1ULL << (l * EVQ_BITS)) - 1;
}

/* ---- level >= 1 chains ---- */

static struct evq_blk *blk_get(struct evq *q)
{
	if (!q->blk_free) {
		struct evq_chunk *c = xmalloc(sizeof(*c));
		c->next = q->chunks;
		q->chunks = c;
		for (unsigned i = 0; i < EVQ_CHUNK; i++) {
			c->b[i].next = q->blk_free;
			q->blk_free = &c->b[i];
		}
	}
	struct evq_blk *b = q->blk_free;
	q->blk_free = b->next;
	b->next = NULL;
	return b;
}

static inline void blk_put(struct evq *q, struct evq_blk *b)
{
	b->next = q->blk_free;
	q->blk_free = b;
}

/* Append to a chain; true when the chain was empty (the caller marks the slot). */
static inline bool chain_add(struct evq *q, struct evq_chain *c, const struct evq_entry *e)
{
	struct evq_blk *b = c->tail;
	bool was_empty = !b;
	if (was_empty) {
		b = c->head = c->tail = blk_get(q);
		c->n = 0;
	} else if (c->n == EVQ_BLK) {
		b = b->next = blk_get(q);
		c->tail = b;
		c->n = 0;
	}
	b->e[c->n++] = *e;
	return was_empty;
}

/* Entries in block b of chain c. */
static inline uint32_t chain_blk_n(const struct evq_chain *c, const struct evq_blk *b)
{
	return b == c->tail ? c->n : EVQ_BLK;
}

/* Append chain src's entries to dst and free src's blocks. */
static void chain_move(struct evq *q, struct evq_chain *dst, struct evq_chain *src)
{
	for (struct evq_blk *b = src->head, *nx; b; b = nx) {
		nx = b->next;
		for (uint32_t k = 0, n = chain_blk_n(src, b); k < n; k++)
			chain_add(q, dst, &b->e[k]);
		blk_put(q, b);
	}
	src->head = src->tail = NULL;
	src->n = 0;
}

static inline void level_add(struct evq *q, unsigned l, unsigned s, const struct evq_entry *e)
{
	if (chain_add(q, &q->slot[l][s], e)) {
		bit_set(&q->bits[l], s);
		q->level_mask |= 1u << l;
	}
}

/* Detach slot s of level l (non-empty). */
static struct evq_chain level_take(struct evq *q, unsigned l, unsigned s)
{
	struct evq_chain c = q->slot[l][s];
	q->slot[l][s] = (struct evq_chain){ NULL, NULL, 0 };
	bit_clear(&q->bits[l], s);
	if (!q->bits[l].sum)
		q->level_mask &= ~(1u << l);
	return c;
}

/* ---- level 0 ---- */

static inline uint32_t node_get(struct evq *q)
{
	uint32_t i = q->node_free;
	if (i != NIL) {
		q->node_free = q->node[i].next;
		return i;
	}
	if (q->node_used == q->node_cap) {
		if (q->node_cap >= NIL / 2)
			die("event queue: level-0 arena full");
		q->node_cap = q->node_cap ? q->node_cap * 2 : 1024;
		q->node = xrealloc(q->node, (size_t)q->node_cap * sizeof(*q->node));
	}
	return q->node_used++;
}

static inline void node_put(struct evq *q, uint32_t i)
{
	q->node[i].next = q->node_free;
	q->node_free = i;
}

/* Insert node i into slot s before the first node with a larger seq.  Only reached when a caller pushes
 * sequence numbers out of push order (the engine never does), so a list walk is fine. */
static void l0_insert_sorted(struct evq *q, unsigned s, uint32_t i)
{
	uint64_t seq = q->node[i].e.seq;
	uint32_t prev = NIL, cur = q->l0_head[s];
	while (cur != NIL && q->node[cur].e.seq <= seq) {
		prev = cur;
		cur = q->node[cur].next;
	}
	q->node[i].next = cur;
	if (prev == NIL)
		q->l0_head[s] = i;
	else
		q->node[prev].next = i;
	if (cur == NIL)
		q->l0_tail[s] = i;
}

static inline void l0_add(struct evq *q, const struct evq_entry *e)
{
	unsigned s = (unsigned)e->time & (EVQ_SLOTS - 1);
	uint32_t i = node_get(q);
	struct evq_node *n = &q->node[i];
	uint32_t t = q->l0_tail[s];
	n->e = *e;
	n->next = NIL;
	if (t == NIL) {
		q->l0_head[s] = q->l0_tail[s] = i;
		bit_set(&q->l0_bits, s);
		if (s < q->l0_min)
			q->l0_min = s;
	} else if (q->node[t].e.seq <= e->seq) {
		q->node[t].next = i;
		q->l0_tail[s] = i;
	} else {
		l0_insert_sorted(q, s, i);
	}
}

/* ---- placement, cascade, rollback ---- */

/* File e by the highest digit where its time differs from cur (I2). */
static inline void place(struct evq *q, const struct evq_entry *e)
{
	uint64_t x = e->time ^ q->cur;
	if (x < EVQ_SLOTS) {
		l0_add(q, e);
		return;
	}
	unsigned l = (unsigned)(63 - __builtin_clzll(x)) / EVQ_BITS;
	level_add(q, l, (unsigned)(e->time >> (l * EVQ_BITS)) & (EVQ_SLOTS - 1), e);
}

/* Move cur down to `to` (< cur) so that an event below cur can be filed.  With D the highest digit where
 * `to` and cur differ, everything at levels < D shares digits >= D with the old cur, so relative to `to`
 * it all belongs in one slot of level D, which I2 guarantees is empty; levels >= D are unaffected.  Slots
 * are copied one after the other, each in its own order, so per-time order (I3) holds.  Rare (once per
 * sim_run_until that stopped before the next event), so copying rather than splicing keeps chains simple. */
static void rollback(struct evq *q, uint64_t to)
{
	unsigned d = (unsigned)(63 - __builtin_clzll(to ^ q->cur)) / EVQ_BITS;
	if (d > 0) {
		struct evq_chain c = { NULL, NULL, 0 };
		for (unsigned s = bit_next(&q->l0_bits, 0); s < EVQ_SLOTS; s = bit_next(&q->l0_bits, s + 1)) {
			for (uint32_t i = q->l0_head[s], nx; i != NIL; i = nx) {
				nx = q->node[i].next;
				chain_add(q, &c, &q->node[i].e);
				node_put(q, i);
			}
			q->l0_head[s] = q->l0_tail[s] = NIL;
		}
		memset(&q->l0_bits, 0, sizeof(q->l0_bits));
		q->l0_min = EVQ_SLOTS;
		for (unsigned l = 1; l < d; l++) {
			if (!(q->level_mask & (1u << l)))
				continue;
			for (unsigned s = bit_next(&q->bits[l], 0); s < EVQ_SLOTS; s = bit_next(&q->bits[l], s + 1))
				chain_move(q, &c, &q->slot[l][s]);
			memset(&q->bits[l], 0, sizeof(q->bits[l]));
			q->level_mask &= ~(1u << l);
		}
		if (c.head) {
			unsigned s = (unsigned)(q->cur >> (d * EVQ_BITS)) & (EVQ_SLOTS - 1);
			if (q->slot[d][s].head)
				die("event queue: rollback target slot %u/%u not empty", d, s);
			q->slot[d][s] = c;
			bit_set(&q->bits[d], s);
			q->level_mask |= 1u << d;
		}
	}
	q->cur = to;
}

/* Make level 0 non-empty: redistribute the lowest non-empty slot of the lowest non-empty level until some
 * event lands in level 0.  False when the queue is empty. */
static bool refill(struct evq *q)
{
	while (q->l0_min == EVQ_SLOTS) {
		if (!q->level_mask)
			return false;
		unsigned l = (unsigned)__builtin_ctz(q->level_mask);
		unsigned s = bit_next(&q->bits[l], 0);
		struct evq_chain c = level_take(q, l, s);
		if (c.head == c.tail) {
			/* One block: its exact minimum is cheap to find and becomes the reference, so the minimum
			 * lands in level 0 now instead of cascading level by level (sparse queues). */
			uint64_t m = c.head->e[0].time;
			for (uint32_t k = 1; k < c.n; k++)
				if (c.head->e[k].time < m)
					m = c.head->e[k].time;
			q->cur = m;
		} else {
			/* The slot's base: keeps digits above l, digit l = s, zeros below; <= all its events. */
			q->cur = (q->cur & ~low_digits(l + 1)) | ((uint64_t)s << (l * EVQ_BITS));
		}
		for (struct evq_blk *b = c.head, *nx; b; b = nx) {
			nx = b->next;
			uint32_t n = chain_blk_n(&c, b);
			/* Blocks are scattered: fetch the next one while this one is placed (one line per entry
			 * read covers its 40-byte entries at the same pace). */
			const char *pf = nx ? (const char *)nx : (const char *)b;
			for (uint32_t k = 0; k < n; k++) {
				__builtin_prefetch(pf + k * sizeof(struct evq_entry));
				place(q, &b->e[k]);
			}
			blk_put(q, b); /* freed at once: the next block taken is this cache-hot one */
		}
	}
	return true;
}

/* ---- interface ---- */

void evq_push(struct evq *q, const struct evq_entry *e)
{
	if (e->time < q->cur)
		rollback(q, e->time < q->floor ? e->time : q->floor);
	place(q, e);
	q->size++;
}

bool evq_peek(struct evq *q, struct evq_entry *out)
{
	if (q->l0_min == EVQ_SLOTS && !refill(q))
		return false;
	*out = q->node[q->l0_head[q->l0_min]].e;
	return true;
}

bool evq_pop(struct evq *q, struct evq_entry *out)
{
	if (q->l0_min == EVQ_SLOTS && !refill(q))
		return false;
	unsigned s = q->l0_min;
	uint32_t i = q->l0_head[s];
	struct evq_node *n = &q->node[i];
	*out = n->e;
	q->l0_head[s] = n->next;
	if (n->next == NIL) {
		q->l0_tail[s] = NIL;
		bit_clear(&q->l0_bits, s);
		q->l0_min = bit_next(&q->l0_bits, s + 1);
	}
	node_put(q, i);
	/* Level 0 shares every digit but the lowest with cur, so this keeps I2 and makes cur exact. */
	q->cur = q->floor = out->time;
	q->size--;
	return true;
}
