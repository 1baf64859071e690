/* An index over a long LE list, so that matching a request finds its first match without walking every LE
 * (wall time only: the walk the hardware does, and is charged for, is unchanged).
 *
 * LEs are grouped by their ignore bits ("classes"; a provider's tagged receives share one, its untagged
 * ones another).  An LE of class c matches match bits b only if (b & ~c) == (its bits & ~c), so a hash on
 * those bits holds every candidate of the class, in list order; the candidates are then checked in full
 * (operation, initiator, space), exactly as the walk checks them.  The list's first match is the earliest
 * of the classes' first matches, and its position in the list -- the LEs the walk would have visited --
 * comes from a Fenwick tree over the positions LEs took when appended.  A list with more than
 * LE_IX_CLASSES distinct ignore masks (or a request the index cannot answer) is walked in order instead.
 *
 * The index is built when a searched list reaches LE_IX_MIN entries, kept up to date by every append and
 * removal (nic_le_list_append / nic_le_list_remove), and dropped when the list empties. */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

#define LE_IX_MIN 32    /* shorter lists are walked: the walk is as fast */
#define LE_IX_CLASSES 8 /* distinct ignore masks per list */

struct le_class {
	uint64_t ignore;
	uint32_t n;              /* LEs in the class */
	uint32_t mask;           /* buckets - 1 */
	struct nic_le **head, **tail;
};

struct nic_le_index {
	struct le_class cls[LE_IX_CLASSES];
	uint32_t ncls;
	uint32_t *fen;           /* Fenwick tree over positions [0, cap): 1 where a live LE sits */
	uint32_t cap, next_pos;
};

static uint32_t bucket(const struct le_class *c, uint64_t bits)
{
	uint64_t k = bits & ~c->ignore;
	k ^= k >> 31;
	k *= 0x9e3779b97f4a7c15ULL;
	k ^= k >> 29;
	return (uint32_t)k & c->mask;
}

/* ---------------------------------------------------------------- positions (Fenwick tree) */

static void fen_add(struct nic_le_index *ix, uint32_t pos, int32_t d)
{
	for (uint32_t i = pos + 1; i <= ix->cap; i += i & -i)
		ix->fen[i - 1] += (uint32_t)d;
}

/* Live LEs at positions <= pos. */
static uint32_t fen_rank(const struct nic_le_index *ix, uint32_t pos)
{
	uint32_t r = 0;
	for (uint32_t i = pos + 1; i; i -= i & -i)
		r += ix->fen[i - 1];
	return r;
}

/* Number the list's LEs 0, 1, ... in order, with room for as many appends again. */
static void renumber(struct nic_le_list *l)
{
	struct nic_le_index *ix = l->ix;
	uint32_t cap = 64;
	while (cap < 2 * l->count + 2)
		cap *= 2;
	free(ix->fen);
	ix->fen = xcalloc(cap, sizeof(*ix->fen));
	ix->cap = cap;
	ix->next_pos = 0;
	for (struct nic_le *le = l->head; le; le = le->next) {
		le->pos = ix->next_pos++;
		fen_add(ix, le->pos, 1);
	}
}

/* ---------------------------------------------------------------- classes */

static struct le_class *class_of(struct nic_le_index *ix, uint64_t ignore)
{
	for (uint32_t i = 0; i < ix->ncls; i++)
		if (ix->cls[i].ignore == ignore)
			return &ix->cls[i];
	return NULL;
}

static void chain_append(struct le_class *c, struct nic_le *le)
{
	uint32_t b = bucket(c, le->match_bits);
	le->ix_next = NULL;
	le->ix_prev = c->tail[b];
	if (c->tail[b])
		c->tail[b]->ix_next = le;
	else
		c->head[b] = le;
	c->tail[b] = le;
}

static void chain_remove(struct le_class *c, struct nic_le *le)
{
	uint32_t b = bucket(c, le->match_bits);
	if (le->ix_prev)
		le->ix_prev->ix_next = le->ix_next;
	else
		c->head[b] = le->ix_next;
	if (le->ix_next)
		le->ix_next->ix_prev = le->ix_prev;
	else
		c->tail[b] = le->ix_prev;
}

/* Buckets for the class's LEs (at most two per bucket on average), refilled in list order. */
static void class_rehash(const struct nic_le_list *l, struct le_class *c)
{
	uint32_t nb = 16;
	while (nb < c->n / 2)
		nb *= 2;
	free(c->head);
	free(c->tail);
	c->head = xcalloc(nb, sizeof(*c->head));
	c->tail = xcalloc(nb, sizeof(*c->tail));
	c->mask = nb - 1;
	for (struct nic_le *le = l->head; le; le = le->next)
		if (le->ignore_bits == c->ignore)
			chain_append(c, le);
}

static void index_free(struct nic_le_list *l)
{
	struct nic_le_index *ix = l->ix;
	for (uint32_t i = 0; i < ix->ncls; i++) {
		free(ix->cls[i].head);
		free(ix->cls[i].tail);
	}
	free(ix->fen);
	free(ix);
	l->ix = NULL;
}

/* Classes for the list's masks; false when there are too many (the list is then walked). */
static bool index_build(struct nic_le_list *l)
{
	struct nic_le_index *ix = xcalloc(1, sizeof(*ix));
	l->ix = ix;
	for (struct nic_le *le = l->head; le; le = le->next) {
		struct le_class *c = class_of(ix, le->ignore_bits);
		if (!c) {
			if (ix->ncls == LE_IX_CLASSES) {
				index_free(l);
				return false;
			}
			c = &ix->cls[ix->ncls++];
			c->ignore = le->ignore_bits;
		}
		c->n++;
	}
	for (uint32_t i = 0; i < ix->ncls; i++)
		class_rehash(l, &ix->cls[i]);
	renumber(l);
	return true;
}

/* ---------------------------------------------------------------- maintenance (ptlte.c list ops) */

void nic_le_index_added(struct nic_le_list *l, struct nic_le *le)
{
	struct nic_le_index *ix = l->ix;
	struct le_class *c = class_of(ix, le->ignore_bits);
	if (!c) {
		if (ix->ncls == LE_IX_CLASSES) {
			/* A ninth mask: walk this list from now on, until it empties. */
			index_free(l);
			l->ix_off = true;
			return;
		}
		c = &ix->cls[ix->ncls++];
		c->ignore = le->ignore_bits;
		c->n = 1;
		class_rehash(l, c);
	} else {
		if (++c->n > 2 * (c->mask + 1))
			class_rehash(l, c); /* le is on the list: the rehash chains it */
		else
			chain_append(c, le);
	}
	if (ix->next_pos == ix->cap) {
		renumber(l); /* numbers le too */
		return;
	}
	le->pos = ix->next_pos++;
	fen_add(ix, le->pos, 1);
}

void nic_le_index_removed(struct nic_le_list *l, struct nic_le *le)
{
	struct nic_le_index *ix = l->ix;
	if (!l->count) {
		index_free(l);
		return;
	}
	struct le_class *c = class_of(ix, le->ignore_bits);
	chain_remove(c, le);
	c->n--;
	fen_add(ix, le->pos, -1);
}

/* ---------------------------------------------------------------- search */

static bool candidate(const struct nic_le *le, uint64_t match_bits, uint32_t initiator, uint32_t op_flag,
		      uint64_t need)
{
	return (le->flags & op_flag) && nic_le_matches(le, match_bits, initiator) &&
	       (!(le->flags & C_LE_NO_TRUNCATE) || nic_le_space(le) >= need);
}

bool nic_le_index_search(struct nic_le_list *l, uint64_t match_bits, uint32_t initiator, uint32_t op_flag,
			 uint64_t need, struct nic_le **found, uint64_t *walked)
{
	if (!l->ix) {
		if (l->ix_off || l->count < LE_IX_MIN)
			return false;
		if (!index_build(l)) {
			l->ix_off = true;
			return false;
		}
	}
	struct nic_le_index *ix = l->ix;
	struct nic_le *best = NULL;
	for (uint32_t i = 0; i < ix->ncls; i++) {
		const struct le_class *c = &ix->cls[i];
		for (struct nic_le *le = c->head[bucket(c, match_bits)]; le; le = le->ix_next) {
			if (best && le->pos > best->pos)
				break; /* the chain is in list order: nothing earlier left here */
			if (candidate(le, match_bits, initiator, op_flag, need)) {
				best = le;
				break;
			}
		}
	}
	*found = best;
	*walked = best ? fen_rank(ix, best->pos) : l->count;
	return true;
}
