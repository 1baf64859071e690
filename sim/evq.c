#include "evq.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void evq_init(struct evq *q)
{
	memset(q, 0, sizeof(*q));
	q->undo_bucket = -1;
}

void evq_free(struct evq *q)
{
	for (int i = 0; i < EVQ_NBUCKETS; i++)
		free(q->b[i].v);
	memset(q, 0, sizeof(*q));
	q->undo_bucket = -1;
}

static inline int bucket_of(const struct evq *q, uint64_t time, uint64_t seq)
{
	uint64_t dt = time ^ q->last_time;
	if (dt)
		return 64 + (64 - __builtin_clzll(dt));
	uint64_t ds = seq ^ q->last_seq;
	return ds ? 64 - __builtin_clzll(ds) : 0;
}

static inline void bucket_add(struct evq *q, int i, const struct evq_entry *e)
{
	struct evq_bucket *b = &q->b[i];
	q->nonempty[i >> 6] |= 1ULL << (i & 63);
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->v = xrealloc(b->v, (size_t)b->cap * sizeof(*b->v));
	}
	b->v[b->n++] = *e;
}

void evq_push(struct evq *q, const struct evq_entry *e)
{
	bucket_add(q, bucket_of(q, e->time, e->seq), e);
	q->size++;
}

static inline bool key_less(const struct evq_entry *a, const struct evq_entry *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

/* Make bucket 0 non-empty: take the lowest non-empty bucket, make its minimum the new "last" key and
 * spread its elements into strictly lower buckets. */
static bool refill(struct evq *q)
{
	if (q->b[0].n)
		return true;
	int i;
	if (q->nonempty[0])
		i = __builtin_ctzll(q->nonempty[0]);
	else if (q->nonempty[1])
		i = 64 + __builtin_ctzll(q->nonempty[1]);
	else if (q->nonempty[2])
		i = 128 + __builtin_ctzll(q->nonempty[2]);
	else
		return false;
	struct evq_bucket *src = &q->b[i];
	q->undo_bucket = i;
	q->undo_time = q->last_time;
	q->undo_seq = q->last_seq;
	uint32_t m = 0;
	for (uint32_t k = 1; k < src->n; k++)
		if (key_less(&src->v[k], &src->v[m]))
			m = k;
	q->last_time = src->v[m].time;
	q->last_seq = src->v[m].seq;
	uint32_t n = src->n;
	src->n = 0;
	q->nonempty[i >> 6] &= ~(1ULL << (i & 63));
	for (uint32_t k = 0; k < n; k++)
		bucket_add(q, bucket_of(q, src->v[k].time, src->v[k].seq), &src->v[k]);
	return true;
}

bool evq_peek(struct evq *q, struct evq_entry *out)
{
	if (!refill(q))
		return false;
	*out = q->b[0].v[0];
	return true;
}

bool evq_pop(struct evq *q, struct evq_entry *out)
{
	if (!refill(q))
		return false;
	/* Keys are unique, so bucket 0 holds exactly the one entry equal to the last key. */
	q->undo_bucket = -1;
	*out = q->b[0].v[--q->b[0].n];
	q->nonempty[0] &= ~1ULL;
	q->size--;
	return true;
}

/* A refill moved one bucket's entries into lower buckets relative to a new reference key; every entry now
 * in a bucket below the original one came from it, so moving them back restores the queue exactly. */
void evq_unpeek(struct evq *q)
{
	int i = q->undo_bucket;
	if (i < 0)
		return;
	q->undo_bucket = -1;
	struct evq_bucket *dst = &q->b[i];
	for (int k = 0; k < i; k++) {
		struct evq_bucket *b = &q->b[k];
		for (uint32_t j = 0; j < b->n; j++) {
			if (dst->n == dst->cap) {
				dst->cap = dst->cap ? dst->cap * 2 : 64;
				dst->v = xrealloc(dst->v, (size_t)dst->cap * sizeof(*dst->v));
			}
			dst->v[dst->n++] = b->v[j];
		}
		b->n = 0;
		q->nonempty[k >> 6] &= ~(1ULL << (k & 63));
	}
	if (dst->n)
		q->nonempty[i >> 6] |= 1ULL << (i & 63);
	q->last_time = q->undo_time;
	q->last_seq = q->undo_seq;
}
