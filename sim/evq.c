/* Hierarchical radix queue with a sorted bottom; the design is described in evq.h.
 *
 * Invariants, with digit(t, L) = bits [B*L, B*L+B) of t, B = EVQ_BITS:
 *  I1  cur <= every pending time.
 *  I2  an event whose time t differs from cur in a digit >= 1 sits at level L = the highest such digit, in
 *      slot digit(t, L); at level L every occupied slot index is therefore > digit(cur, L).  Every other
 *      event (level 0) is in the run or in a late list.
 *  I3  the run is sorted by (time, seq); each late list holds one exact time, sorted by seq; every chain
 *      is in push order.
 *  I4  for one time, entries in the run precede (were pushed before) entries in late lists: an event goes
 *      late only when the run's last entry sorts after it, and then no run entry of its time can follow.
 * A cascade keeps I2 for everything outside the cascaded slot because it only changes digits of cur below
 * that slot's level; popping sets cur to the popped time, which only changes digit 0.
 */
#include "evq.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define EVQ_CHUNK 64 /* blocks per allocation */
#define NIL UINT32_MAX
/* Below this many entries the run is insertion-sorted; above, two stable counting-sort passes. */
#define EVQ_SMALL_SORT 32

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
	q->late_min = EVQ_SLOTS;
	q->late_time = UINT64_MAX;
	memset(q->late, 0xff, sizeof(q->late));
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
	free(q->run);
	free(q->tmp);
	evq_init(q);
}

static inline bool key_less(const struct evq_entry *a, const struct evq_entry *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

size_t evq_mem_bytes(const struct evq *q)
{
	return q->nchunks * sizeof(struct evq_chunk) + (size_t)q->node_cap * sizeof(struct evq_node) +
	       ((size_t)q->run_cap + q->tmp_cap) * sizeof(struct evq_entry);
}

/* Capacity of a growing array (doubling, from 1024) that holds at least `need` entries.  Indices are
 * 32-bit to keep the arrays' bookkeeping small; 2^31 entries (80 GiB) is beyond any machine here. */
static uint32_t grown_cap(uint32_t cap, uint64_t need)
{
	if (need > (1u << 31))
		die("event queue: more than 2^31 events in one array");
	uint64_t c = cap ? cap : 1024;
	while (c < need)
		c *= 2;
	return (uint32_t)c;
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
		q->nchunks++;
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
		c->nblk = 1;
	} else if (c->n == EVQ_BLK) {
		b = b->next = blk_get(q);
		c->tail = b;
		c->n = 0;
		c->nblk++;
	}
	evq_blk_put_entry_(c, e);
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
	*src = (struct evq_chain){ NULL, NULL, 0, 0 };
}

/* File e at level >= 1; x = e->time ^ cur >= EVQ_SLOTS (I2). */
static inline void level_add(struct evq *q, uint64_t x, const struct evq_entry *e)
{
	unsigned l = (unsigned)(63 - __builtin_clzll(x)) / EVQ_BITS;
	unsigned s = (unsigned)(e->time >> (l * EVQ_BITS)) & (EVQ_SLOTS - 1);
	if (chain_add(q, &q->slot[l - 1][s], e)) {
		bit_set(&q->bits[l - 1], s);
		q->level_mask |= 1u << l;
	}
}

/* Detach slot s of level l (non-empty). */
static struct evq_chain level_take(struct evq *q, unsigned l, unsigned s)
{
	struct evq_chain c = q->slot[l - 1][s];
	q->slot[l - 1][s] = (struct evq_chain){ NULL, NULL, 0, 0 };
	bit_clear(&q->bits[l - 1], s);
	if (!q->bits[l - 1].sum)
		q->level_mask &= ~(1u << l);
	return c;
}

/* ---- level 0: the run ---- */

static inline bool run_empty(const struct evq *q) { return q->run_head == q->run_tail; }

/* Room for one more entry at the tail; the consumed prefix is reclaimed first. */
static void run_grow(struct evq *q)
{
	if (q->run_head > 0) {
		memmove(q->run, q->run + q->run_head, (size_t)(q->run_tail - q->run_head) * sizeof(*q->run));
		q->run_tail -= q->run_head;
		q->run_head = 0;
		if (q->run_tail < q->run_cap)
			return;
	}
	q->run_cap = grown_cap(q->run_cap, (uint64_t)q->run_cap + 1);
	q->run = xrealloc(q->run, (size_t)q->run_cap * sizeof(*q->run));
}

static inline void run_append(struct evq *q, const struct evq_entry *e)
{
	if (q->run_tail == q->run_cap)
		run_grow(q);
	q->run[q->run_tail++] = *e;
}

/* Stable insertion sort of a[0..n) by time, or by (time, seq) when sequence numbers came out of order. */
static void sort_insertion(struct evq_entry *a, uint32_t n, bool by_seq)
{
	for (uint32_t i = 1; i < n; i++) {
		if (by_seq ? !key_less(&a[i], &a[i - 1]) : a[i].time >= a[i - 1].time)
			continue;
		struct evq_entry v = a[i];
		uint32_t j = i;
		do {
			a[j] = a[j - 1];
			j--;
		} while (j > 0 && (by_seq ? key_less(&v, &a[j - 1]) : v.time < a[j - 1].time));
		a[j] = v;
	}
}

/* Scratch for the run's sort; its contents need not survive. */
static void tmp_reserve(struct evq *q, uint32_t n)
{
	if (q->tmp_cap >= n)
		return;
	q->tmp_cap = grown_cap(q->tmp_cap, n);
	free(q->tmp);
	q->tmp = xmalloc((size_t)q->tmp_cap * sizeof(*q->tmp));
}

/* Room for n entries in the empty run. */
static inline void run_reserve(struct evq *q, uint32_t n)
{
	if (q->run_cap >= n)
		return;
	q->run_cap = grown_cap(q->run_cap, n);
	free(q->run);
	q->run = xmalloc((size_t)q->run_cap * sizeof(*q->run));
}

/* Half digits for the two counting-sort passes of the run. */
#define LO_BITS (EVQ_BITS / 2)
#define HI_BITS (EVQ_BITS - LO_BITS)
#define LO_MASK ((1u << LO_BITS) - 1)
#define HI_MASK ((1u << HI_BITS) - 1)

/* The run is sorted by two stable counting passes, each over half of the lowest digit (its times differ
 * in nothing else, I2): linear time, 64 buckets per pass, so the scatter stays within a few cache lines
 * per bucket.  Stability keeps push order, which is seq order unless a caller pushed sequence numbers out
 * of order (then equal-time groups get a final insertion pass).  Small runs are insertion-sorted. */
struct evq_hist {
	uint32_t lo[1u << LO_BITS], hi[1u << HI_BITS];
};

static inline void hist_add(struct evq_hist *h, uint64_t t)
{
	h->lo[t & LO_MASK]++;
	h->hi[(t >> LO_BITS) & HI_MASK]++;
}

/* Counts to starting offsets. */
static void hist_prefix(struct evq_hist *h)
{
	for (uint32_t d = 0, sl = 0, sh = 0; d < (1u << HI_BITS); d++) {
		uint32_t t;
		if (d < (1u << LO_BITS)) {
			t = h->lo[d];
			h->lo[d] = sl;
			sl += t;
		}
		t = h->hi[d];
		h->hi[d] = sh;
		sh += t;
	}
}

/* Second pass: tmp[0..n), ordered by the low half digit, into the run by the high half digit. */
static void run_from_tmp(struct evq *q, struct evq_hist *h, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		q->run[h->hi[(q->tmp[i].time >> LO_BITS) & HI_MASK]++] = q->tmp[i];
	q->run_tail = n;
	if (q->seq_disorder)
		sort_insertion(q->run, n, true); /* only equal-time groups can still be out of order */
}

/* Blocks are scattered: while block b is read, fetch its successor (one line per entry read covers the
 * 40-byte entries at the same pace). */
static inline void prefetch_next(const struct evq_blk *b, uint32_t k)
{
	if (b->next)
		__builtin_prefetch((const char *)b->next + k * sizeof(struct evq_entry));
}

/* Cascade of a level-1 slot of one block of a few events (sparse queues: often one): copied into the run
 * (empty on entry) with an insertion sort. */
static inline void cascade_small(struct evq *q, struct evq_chain *c)
{
	uint32_t n = c->n;
	const struct evq_entry *e = c->head->e;
	run_reserve(q, n);
	struct evq_entry *a = q->run;
	if (q->seq_disorder) {
		memcpy(a, e, n * sizeof(*a));
		sort_insertion(a, n, true);
	} else {
		for (uint32_t k = 0; k < n; k++) { /* insertion sort while copying */
			uint32_t j = k;
			while (j > 0 && e[k].time < a[j - 1].time) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = e[k];
		}
	}
	q->run_tail = n;
	blk_put(q, c->head);
}

/* Cascade of a dense level-1 slot (at least half as many events as the digit has values): one counting
 * sort over the whole lowest digit, straight from the chain into the run. */
static void cascade_to_run_1pass(struct evq *q, struct evq_chain *c, uint32_t total)
{
	uint32_t *pos = q->cnt;
	memset(pos, 0, sizeof(q->cnt));
	for (struct evq_blk *b = c->head; b; b = b->next)
		for (uint32_t k = 0, n = chain_blk_n(c, b); k < n; k++) {
			prefetch_next(b, k);
			pos[b->e[k].time & (EVQ_SLOTS - 1)]++;
		}
	for (uint32_t d = 0, sum = 0; d < EVQ_SLOTS; d++) {
		uint32_t t = pos[d];
		pos[d] = sum;
		sum += t;
	}
	run_reserve(q, total);
	for (struct evq_blk *b = c->head, *nx; b; b = nx) {
		nx = b->next;
		for (uint32_t k = 0, n = chain_blk_n(c, b); k < n; k++)
			q->run[pos[b->e[k].time & (EVQ_SLOTS - 1)]++] = b->e[k];
		blk_put(q, b);
	}
	q->run_tail = total;
	if (q->seq_disorder)
		sort_insertion(q->run, total, true);
}

/* Cascade of a larger level-1 slot: relative to the new cur every entry is in level 0 (they share digits
 * >= 1), so the chain is sorted straight into the run (empty on entry): count, scatter from the chain to
 * tmp, scatter to the run. */
static void cascade_to_run(struct evq *q, struct evq_chain *c)
{
	uint32_t total = (c->nblk - 1) * EVQ_BLK + c->n;
	if (total >= EVQ_SLOTS / 2) {
		cascade_to_run_1pass(q, c, total);
		return;
	}
	struct evq_hist h = { { 0 }, { 0 } };
	uint32_t n0 = 0;
	for (struct evq_blk *b = c->head; b; b = b->next)
		for (uint32_t k = 0, n = chain_blk_n(c, b); k < n; k++) {
			prefetch_next(b, k);
			hist_add(&h, b->e[k].time);
			n0++;
		}
	run_reserve(q, n0);
	tmp_reserve(q, n0);
	hist_prefix(&h);
	for (struct evq_blk *b = c->head, *nx; b; b = nx) {
		nx = b->next;
		for (uint32_t k = 0, n = chain_blk_n(c, b); k < n; k++)
			q->tmp[h.lo[b->e[k].time & LO_MASK]++] = b->e[k];
		blk_put(q, b);
	}
	run_from_tmp(q, &h, n0);
}

/* Cascade of a slot of level >= 2: most entries go to lower levels, so one pass files them, appending the
 * few that fall in level 0 to the run, and frees each block as soon as it is read (the blocks the
 * filing takes next are then these cache-hot ones); the run is sorted afterwards. */
static void cascade_down(struct evq *q, struct evq_chain *c)
{
	struct evq_hist h = { { 0 }, { 0 } };
	for (struct evq_blk *b = c->head, *nx; b; b = nx) {
		nx = b->next;
		for (uint32_t k = 0, n = chain_blk_n(c, b); k < n; k++) {
			const struct evq_entry *e = &b->e[k];
			uint64_t x = e->time ^ q->cur;
			prefetch_next(b, k);
			if (x < EVQ_SLOTS) {
				run_append(q, e);
				hist_add(&h, e->time);
			} else {
				level_add(q, x, e);
			}
		}
		blk_put(q, b);
	}
	uint32_t n0 = q->run_tail;
	if (n0 <= EVQ_SMALL_SORT) {
		sort_insertion(q->run, n0, q->seq_disorder);
		return;
	}
	tmp_reserve(q, n0);
	hist_prefix(&h);
	for (uint32_t i = 0; i < n0; i++)
		q->tmp[h.lo[q->run[i].time & LO_MASK]++] = q->run[i];
	run_from_tmp(q, &h, n0);
}

/* ---- level 0: late lists ---- */

static inline uint32_t node_get(struct evq *q)
{
	uint32_t i = q->node_free;
	if (i != NIL) {
		q->node_free = q->node[i].next;
		return i;
	}
	if (q->node_used == q->node_cap) {
		q->node_cap = grown_cap(q->node_cap, (uint64_t)q->node_cap + 1);
		q->node = xrealloc(q->node, (size_t)q->node_cap * sizeof(*q->node));
	}
	return q->node_used++;
}

static inline void node_put(struct evq *q, uint32_t i)
{
	q->node[i].next = q->node_free;
	q->node_free = i;
}

/* Insert node i into list s before the first node with a larger seq.  Only reached when a caller pushes
 * sequence numbers out of push order (the engine never does), so a list walk is fine. */
static void late_insert_sorted(struct evq *q, unsigned s, uint32_t i)
{
	uint64_t seq = q->node[i].e.seq;
	uint32_t prev = NIL, c = q->late[s].head;
	while (c != NIL && q->node[c].e.seq <= seq) {
		prev = c;
		c = q->node[c].next;
	}
	q->node[i].next = c;
	if (prev == NIL)
		q->late[s].head = i;
	else
		q->node[prev].next = i;
	if (c == NIL)
		q->late[s].tail = i;
}

static void late_add(struct evq *q, const struct evq_entry *e)
{
	unsigned s = (unsigned)e->time & (EVQ_SLOTS - 1);
	uint32_t i = node_get(q);
	struct evq_node *n = &q->node[i];
	struct evq_late *l = &q->late[s];
	n->e = *e;
	n->next = NIL;
	if (l->tail == NIL) {
		l->head = l->tail = i;
		bit_set(&q->late_bits, s);
		if (s < q->late_min) {
			q->late_min = s;
			q->late_time = e->time;
		}
	} else if (q->node[l->tail].e.seq <= e->seq) {
		q->node[l->tail].next = i;
		l->tail = i;
	} else {
		late_insert_sorted(q, s, i);
	}
}

static inline const struct evq_entry *late_head(const struct evq *q)
{
	return &q->node[q->late[q->late_min].head].e;
}

static void late_pop(struct evq *q, struct evq_entry *out)
{
	unsigned s = q->late_min;
	struct evq_late *l = &q->late[s];
	uint32_t i = l->head;
	*out = q->node[i].e;
	l->head = q->node[i].next;
	if (l->head == NIL) {
		l->tail = NIL;
		bit_clear(&q->late_bits, s);
		q->late_min = bit_next(&q->late_bits, s + 1);
		q->late_time = q->late_min == EVQ_SLOTS ? UINT64_MAX
							: (out->time & ~(uint64_t)(EVQ_SLOTS - 1)) | q->late_min;
	}
	node_put(q, i);
}

/* ---- rollback and cascade ---- */

/* Move cur down to `to` (< cur) so that an event below cur can be filed.  With D the highest digit where
 * `to` and cur differ, everything at levels < D shares digits >= D with the old cur, so relative to `to`
 * it all belongs in one slot of level D, which I2 guarantees is empty; levels >= D are unaffected.  The
 * run, then the late lists, then each slot are copied in their own order, so per-time order holds (I3,
 * I4).  Rare (once per sim_run_until that stopped before the next event), so copying is fine. */
static void rollback(struct evq *q, uint64_t to)
{
	unsigned d = (unsigned)(63 - __builtin_clzll(to ^ q->cur)) / EVQ_BITS;
	if (d > 0) {
		struct evq_chain c = { NULL, NULL, 0, 0 };
		for (uint32_t k = q->run_head; k < q->run_tail; k++)
			chain_add(q, &c, &q->run[k]);
		q->run_head = q->run_tail = 0;
		for (unsigned s = bit_next(&q->late_bits, 0); s < EVQ_SLOTS; s = bit_next(&q->late_bits, s + 1)) {
			for (uint32_t i = q->late[s].head, nx; i != NIL; i = nx) {
				nx = q->node[i].next;
				chain_add(q, &c, &q->node[i].e);
				node_put(q, i);
			}
			q->late[s].head = q->late[s].tail = NIL;
		}
		memset(&q->late_bits, 0, sizeof(q->late_bits));
		q->late_min = EVQ_SLOTS;
		q->late_time = UINT64_MAX;
		for (unsigned l = 1; l < d; l++) {
			if (!(q->level_mask & (1u << l)))
				continue;
			struct evq_bitmap *m = &q->bits[l - 1];
			for (unsigned s = bit_next(m, 0); s < EVQ_SLOTS; s = bit_next(m, s + 1))
				chain_move(q, &c, &q->slot[l - 1][s]);
			memset(&q->bits[l - 1], 0, sizeof(q->bits[l - 1]));
			q->level_mask &= ~(1u << l);
		}
		if (c.head) {
			unsigned s = (unsigned)(q->cur >> (d * EVQ_BITS)) & (EVQ_SLOTS - 1);
			if (q->slot[d - 1][s].head)
				die("event queue: rollback target slot %u/%u not empty", d, s);
			q->slot[d - 1][s] = c;
			bit_set(&q->bits[d - 1], s);
			q->level_mask |= 1u << d;
		}
	}
	q->cur = to;
}

/* Level 0 is empty: redistribute the lowest non-empty slot of the lowest non-empty level until some events
 * land in level 0, and sort them into the run.  False when the queue is empty. */
static bool refill(struct evq *q)
{
	q->run_head = q->run_tail = 0;
	while (q->run_tail == 0) {
		if (!q->level_mask)
			return false;
		unsigned l = (unsigned)__builtin_ctz(q->level_mask);
		unsigned s = bit_next(&q->bits[l - 1], 0);
		struct evq_chain c = level_take(q, l, s);
		if (l > 1 && c.head == c.tail) {
			/* One block: its exact minimum is cheap to find and becomes the reference, so at least
			 * the minimum lands in level 0 now instead of cascading level by level (sparse queues).
			 * (From level 1 everything lands in level 0 with either reference.) */
			uint64_t m = c.head->e[0].time;
			for (uint32_t k = 1; k < c.n; k++)
				if (c.head->e[k].time < m)
					m = c.head->e[k].time;
			q->cur = m;
		} else {
			/* The slot's base: keeps digits above l, digit l = s, zeros below; <= all its events. */
			q->cur = (q->cur & ~low_digits(l + 1)) | ((uint64_t)s << (l * EVQ_BITS));
		}
		if (l > 1)
			cascade_down(q, &c);
		else if (c.head == c.tail && c.n <= EVQ_SMALL_SORT)
			cascade_small(q, &c);
		else
			cascade_to_run(q, &c);
	}
	return true;
}

/* ---- interface (slow paths; the fast paths are inline in evq.h) ---- */

void evq_push_slow(struct evq *q, const struct evq_entry *e)
{
	/* seq_next == 0: first push, a wrapped counter, or disorder already seen (which keeps every later
	 * push on this path, because the inline fast paths assume increasing sequence numbers). */
	if (e->seq < q->seq_next || q->seq_next == 0)
		q->seq_disorder |= q->pushed;
	q->seq_next = q->seq_disorder ? 0 : e->seq + 1;
	q->pushed = true;
	if (e->time < q->cur)
		rollback(q, e->time < q->floor ? e->time : q->floor);
	uint64_t x = e->time ^ q->cur;
	if (x >= EVQ_SLOTS) {
		level_add(q, x, e);
	} else if (run_empty(q)) {
		q->run_head = q->run_tail = 0;
		run_append(q, e);
	} else if (!key_less(e, &q->run[q->run_tail - 1])) {
		run_append(q, e);
	} else {
		late_add(q, e);
	}
	q->size++;
}

/* evq_push's fast path when the event is the first of its level >= 1 slot c (level l, slot s) and its
 * sequence number and time need no further check. */
void evq_push_first_(struct evq *q, struct evq_chain *c, unsigned l, unsigned s, const struct evq_entry *e)
{
	struct evq_blk *b = c->head = c->tail = blk_get(q);
	b->e[0] = *e;
	c->n = 1;
	c->nblk = 1;
	bit_set(&q->bits[l - 1], s);
	q->level_mask |= 1u << l;
	q->seq_next = e->seq + 1;
	q->size++;
}

/* The smallest level-0 entry, refilling level 0 first if needed; NULL when the queue is empty.  Sets
 * *from_run to where it is. */
static inline __attribute__((always_inline)) const struct evq_entry *head(struct evq *q, bool *from_run)
{
	if (q->late_min == EVQ_SLOTS) {
		if (run_empty(q) && !refill(q))
			return NULL;
		*from_run = true;
		return &q->run[q->run_head];
	}
	const struct evq_entry *l = late_head(q);
	*from_run = !run_empty(q) && key_less(&q->run[q->run_head], l);
	return *from_run ? &q->run[q->run_head] : l;
}

bool evq_peek_slow(struct evq *q, struct evq_entry *out)
{
	bool from_run;
	const struct evq_entry *h = head(q, &from_run);
	if (!h)
		return false;
	*out = *h;
	return true;
}

bool evq_pop_slow(struct evq *q, struct evq_entry *out)
{
	bool from_run;
	const struct evq_entry *h = head(q, &from_run);
	if (!h)
		return false;
	if (from_run) {
		*out = *h;
		q->run_head++;
	} else {
		late_pop(q, out);
	}
	/* Level 0 shares every digit but the lowest with cur, so this keeps I2 and makes cur exact. */
	q->cur = q->floor = out->time;
	q->size--;
	return true;
}
