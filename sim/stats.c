#include "stats.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum kind { K_COUNTER, K_HIST };

struct entry {
	char *name;
	enum kind kind;
	union {
		uint64_t *counter;
		struct histogram *hist;
	} u;
};

#define CHUNK 1024

struct stats {
	struct entry *tab; /* open addressing, power-of-two capacity */
	size_t cap, n;
	uint64_t **chunks; /* counter storage: stable addresses */
	size_t nchunks, chunk_used;
};

struct stats *stats_create(void)
{
	struct stats *st = xcalloc(1, sizeof(*st));
	st->cap = 1024;
	st->tab = xcalloc(st->cap, sizeof(*st->tab));
	st->chunk_used = CHUNK;
	return st;
}

void stats_destroy(struct stats *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->cap; i++) {
		free(st->tab[i].name);
		if (st->tab[i].name && st->tab[i].kind == K_HIST)
			free(st->tab[i].u.hist);
	}
	for (size_t i = 0; i < st->nchunks; i++)
		free(st->chunks[i]);
	free(st->chunks);
	free(st->tab);
	free(st);
}

static uint64_t hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	/* FNV's low bits depend only on the low bits of every step; the table indexes with low bits, so fold
	 * the high half in (names that differ only in a NIC or endpoint number otherwise cluster). */
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	return h;
}

static struct entry *slot(struct stats *st, const char *name)
{
	size_t i = hash(name) & (st->cap - 1);
	while (st->tab[i].name && strcmp(st->tab[i].name, name))
		i = (i + 1) & (st->cap - 1);
	return &st->tab[i];
}

static void grow(struct stats *st)
{
	struct entry *old = st->tab;
	size_t oldcap = st->cap;
	st->cap *= 2;
	st->tab = xcalloc(st->cap, sizeof(*st->tab));
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].name)
			*slot(st, old[i].name) = old[i];
	free(old);
}

static uint64_t *new_counter(struct stats *st)
{
	if (st->chunk_used == CHUNK) {
		st->chunks = xrealloc(st->chunks, (st->nchunks + 1) * sizeof(*st->chunks));
		st->chunks[st->nchunks++] = xcalloc(CHUNK, sizeof(uint64_t));
		st->chunk_used = 0;
	}
	return &st->chunks[st->nchunks - 1][st->chunk_used++];
}

static struct entry *lookup(struct stats *st, enum kind kind, const char *fmt, va_list ap)
{
	char name[256];
	vsnprintf(name, sizeof(name), fmt, ap);
	struct entry *e = slot(st, name);
	if (e->name) {
		if (e->kind != kind)
			die("stat '%s' registered as both counter and histogram", name);
		return e;
	}
	if ((st->n + 1) * 2 > st->cap) {
		grow(st);
		e = slot(st, name);
	}
	e->name = xstrdup(name);
	e->kind = kind;
	if (kind == K_COUNTER)
		e->u.counter = new_counter(st);
	else
		e->u.hist = xcalloc(1, sizeof(struct histogram));
	st->n++;
	return e;
}

uint64_t *stats_counter(struct stats *st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct entry *e = lookup(st, K_COUNTER, fmt, ap);
	va_end(ap);
	return e->u.counter;
}

struct histogram *stats_hist(struct stats *st, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct entry *e = lookup(st, K_HIST, fmt, ap);
	va_end(ap);
	if (e->u.hist->count == 0)
		e->u.hist->min = UINT64_MAX;
	return e->u.hist;
}

uint64_t *stats_find_counter(struct stats *st, const char *name)
{
	struct entry *e = slot(st, name);
	return e->name && e->kind == K_COUNTER ? e->u.counter : NULL;
}

struct histogram *stats_find_hist(struct stats *st, const char *name)
{
	struct entry *e = slot(st, name);
	return e->name && e->kind == K_HIST ? e->u.hist : NULL;
}

void stats_gauge_set(uint64_t *gauge, uint64_t *gauge_max, uint64_t value)
{
	*gauge = value;
	if (gauge_max && value > *gauge_max)
		*gauge_max = value;
}

static inline unsigned hist_index(uint64_t v)
{
	if (v < (1u << HIST_SUB_BITS))
		return (unsigned)v;
	unsigned e = 63 - (unsigned)__builtin_clzll(v);
	unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & ((1u << HIST_SUB_BITS) - 1);
	return ((e - HIST_SUB_BITS + 1) << HIST_SUB_BITS) + sub;
}

static uint64_t hist_lower(unsigned idx)
{
	if (idx < (1u << HIST_SUB_BITS))
		return idx;
	unsigned e = (idx >> HIST_SUB_BITS) + HIST_SUB_BITS - 1;
	uint64_t sub = idx & ((1u << HIST_SUB_BITS) - 1);
	return (((uint64_t)1 << HIST_SUB_BITS) + sub) << (e - HIST_SUB_BITS);
}

void hist_add(struct histogram *h, uint64_t v)
{
	if (h->count == 0 || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
	h->bucket[hist_index(v)]++;
}

uint64_t hist_quantile(const struct histogram *h, double q)
{
	if (!h->count)
		return 0;
	if (q >= 1.0)
		return h->max;
	uint64_t rank = (uint64_t)(q * (double)h->count); /* entries strictly below the answer */
	uint64_t seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->bucket[i];
		if (seen > rank) {
			uint64_t lb = hist_lower(i);
			return lb < h->min ? h->min : lb;
		}
	}
	return h->max;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp((*(const struct entry *const *)a)->name, (*(const struct entry *const *)b)->name);
}

static struct entry **sorted(const struct stats *st)
{
	struct entry **v = xmalloc((st->n + 1) * sizeof(*v));
	size_t k = 0;
	for (size_t i = 0; i < st->cap; i++)
		if (st->tab[i].name)
			v[k++] = &st->tab[i];
	qsort(v, k, sizeof(*v), cmp_entry);
	return v;
}

static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
static const char *const qnames[] = { "p50", "p90", "p99", "p999" };

/* Opens a JSON member line: a comma after the previous member, a newline, the indent. */
static void member(FILE *f, int *n, int indent)
{
	fprintf(f, "%s\n%*s", (*n)++ ? "," : "", indent, "");
}

static void close_obj(FILE *f, int n, int indent)
{
	if (n)
		fprintf(f, "\n%*s", indent, "");
	fputc('}', f);
}

void stats_dump_json(const struct stats *st, FILE *f, int indent)
{
	struct entry **v = sorted(st);
	int n = 0;
	fprintf(f, "{\n%*s\"counters\": {", indent + 2, "");
	for (size_t i = 0; i < st->n; i++)
		if (v[i]->kind == K_COUNTER) {
			member(f, &n, indent + 4);
			fprintf(f, "\"%s\": %llu", v[i]->name, (unsigned long long)*v[i]->u.counter);
		}
	close_obj(f, n, indent + 2);
	fprintf(f, ",\n%*s\"histograms\": {", indent + 2, "");
	n = 0;
	for (size_t i = 0; i < st->n; i++)
		if (v[i]->kind == K_HIST) {
			const struct histogram *h = v[i]->u.hist;
			member(f, &n, indent + 4);
			fprintf(f, "\"%s\": {\"count\": %llu, \"sum\": %llu, \"min\": %llu, \"max\": %llu",
				v[i]->name, (unsigned long long)h->count, (unsigned long long)h->sum,
				(unsigned long long)(h->count ? h->min : 0), (unsigned long long)h->max);
			for (size_t k = 0; k < ARRAY_SIZE(qs); k++)
				fprintf(f, ", \"%s\": %llu", qnames[k], (unsigned long long)hist_quantile(h, qs[k]));
			fputc('}', f);
		}
	close_obj(f, n, indent + 2);
	fprintf(f, "\n%*s}", indent, "");
	free(v);
}

void stats_dump_csv(const struct stats *st, FILE *f)
{
	struct entry **v = sorted(st);
	fputs("name,kind,value\n", f);
	for (size_t i = 0; i < st->n; i++) {
		if (v[i]->kind == K_COUNTER) {
			fprintf(f, "%s,counter,%llu\n", v[i]->name, (unsigned long long)*v[i]->u.counter);
			continue;
		}
		const struct histogram *h = v[i]->u.hist;
		fprintf(f, "%s.count,hist,%llu\n%s.sum,hist,%llu\n%s.min,hist,%llu\n%s.max,hist,%llu\n", v[i]->name,
			(unsigned long long)h->count, v[i]->name, (unsigned long long)h->sum, v[i]->name,
			(unsigned long long)(h->count ? h->min : 0), v[i]->name, (unsigned long long)h->max);
		for (size_t k = 0; k < ARRAY_SIZE(qs); k++)
			fprintf(f, "%s.%s,hist,%llu\n", v[i]->name, qnames[k],
				(unsigned long long)hist_quantile(h, qs[k]));
	}
	free(v);
}
