#include "stats.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum kind { K_COUNTER, K_HIST };

/* Every record an index points at begins with its name and the name's hash. */
struct key {
	const char *name;
	uint64_t hash;
};

struct entry {
	struct key k;
	enum kind kind;
	union {
		uint64_t *counter;
		struct histogram *hist;
	} u;
};

/* Open addressing from names to positions in an array of records (power-of-two capacity, at most half
 * full).  A slot holds the hash's high 32 bits above the position + 1 (0 = empty), so a probe rejects
 * nearly every other name without touching its record, and growing rehashes nothing. */
struct index {
	uint64_t *slot;
	size_t cap;
};

#define CHUNK 1024
#define NAME_ARENA (64 * 1024)
#define NAME_MAX_LEN 256

struct stats {
	struct entry *ent; /* registration order */
	size_t n, ent_cap;
	struct index ix;
	uint64_t **chunks; /* counter storage: stable addresses */
	size_t nchunks, chunk_used;
	char **arena; /* names, bump-allocated: a million names cost no million mallocs */
	size_t narena, arena_used;
};

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

static const struct key *rec_key(const void *recs, size_t stride, size_t pos)
{
	return (const struct key *)((const char *)recs + pos * stride);
}

/* The slot holding name, or the empty slot where it belongs. */
static uint64_t *index_slot(const struct index *ix, const void *recs, size_t stride, const char *name, uint64_t h)
{
	uint64_t tag = h >> 32;
	for (size_t i = h & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
		uint64_t s = ix->slot[i];
		if (!s)
			return &ix->slot[i];
		if (s >> 32 == tag) {
			const struct key *k = rec_key(recs, stride, (s & 0xffffffffu) - 1);
			if (k->hash == h && !strcmp(k->name, name))
				return &ix->slot[i];
		}
	}
}

static void index_set(uint64_t *slot, uint64_t h, size_t pos)
{
	if (pos >= 0xffffffffu)
		die("stats: more than 2^32 names");
	*slot = (h >> 32) << 32 | (uint64_t)(pos + 1);
}

/* Makes room for one more record (nrec are in use), rebuilding from the records' stored hashes. */
static void index_reserve(struct index *ix, const void *recs, size_t stride, size_t nrec)
{
	if ((nrec + 1) * 2 <= ix->cap)
		return;
	free(ix->slot);
	ix->cap = ix->cap ? ix->cap * 2 : 1024;
	ix->slot = xcalloc(ix->cap, sizeof(*ix->slot));
	for (size_t p = 0; p < nrec; p++) {
		uint64_t h = rec_key(recs, stride, p)->hash;
		size_t i = h & (ix->cap - 1);
		while (ix->slot[i])
			i = (i + 1) & (ix->cap - 1);
		index_set(&ix->slot[i], h, p);
	}
}

struct stats *stats_create(void)
{
	struct stats *st = xcalloc(1, sizeof(*st));
	index_reserve(&st->ix, NULL, sizeof(struct entry), 0);
	st->chunk_used = CHUNK;
	st->arena_used = NAME_ARENA;
	return st;
}

void stats_destroy(struct stats *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n; i++)
		if (st->ent[i].kind == K_HIST)
			free(st->ent[i].u.hist);
	for (size_t i = 0; i < st->nchunks; i++)
		free(st->chunks[i]);
	for (size_t i = 0; i < st->narena; i++)
		free(st->arena[i]);
	free(st->chunks);
	free(st->arena);
	free(st->ent);
	free(st->ix.slot);
	free(st);
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

static const char *new_name(struct stats *st, const char *name, size_t len)
{
	if (st->arena_used + len + 1 > NAME_ARENA) {
		st->arena = xrealloc(st->arena, (st->narena + 1) * sizeof(*st->arena));
		st->arena[st->narena++] = xmalloc(NAME_ARENA);
		st->arena_used = 0;
	}
	char *p = st->arena[st->narena - 1] + st->arena_used;
	memcpy(p, name, len + 1);
	st->arena_used += len + 1;
	return p;
}

static struct entry *lookup(struct stats *st, enum kind kind, const char *fmt, va_list ap)
{
	char name[NAME_MAX_LEN];
	int len = vsnprintf(name, sizeof(name), fmt, ap);
	if (len < 0)
		die("stats: bad name format '%s'", fmt);
	if ((size_t)len >= sizeof(name))
		len = sizeof(name) - 1;
	uint64_t h = hash(name);
	uint64_t *s = index_slot(&st->ix, st->ent, sizeof(*st->ent), name, h);
	if (*s) {
		struct entry *e = &st->ent[(*s & 0xffffffffu) - 1];
		if (e->kind != kind)
			die("stat '%s' registered as both counter and histogram", name);
		return e;
	}
	if ((st->n + 1) * 2 > st->ix.cap) {
		index_reserve(&st->ix, st->ent, sizeof(*st->ent), st->n);
		s = index_slot(&st->ix, st->ent, sizeof(*st->ent), name, h);
	}
	if (st->n == st->ent_cap) {
		st->ent_cap = st->ent_cap ? st->ent_cap * 2 : 1024;
		st->ent = xrealloc(st->ent, st->ent_cap * sizeof(*st->ent));
	}
	struct entry *e = &st->ent[st->n];
	e->k.name = new_name(st, name, (size_t)len);
	e->k.hash = h;
	e->kind = kind;
	if (kind == K_COUNTER)
		e->u.counter = new_counter(st);
	else
		e->u.hist = xcalloc(1, sizeof(struct histogram));
	index_set(s, h, st->n++);
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

static struct entry *find(struct stats *st, const char *name, enum kind kind)
{
	uint64_t *s = index_slot(&st->ix, st->ent, sizeof(*st->ent), name, hash(name));
	struct entry *e = *s ? &st->ent[(*s & 0xffffffffu) - 1] : NULL;
	return e && e->kind == kind ? e : NULL;
}

uint64_t *stats_find_counter(struct stats *st, const char *name)
{
	struct entry *e = find(st, name, K_COUNTER);
	return e ? e->u.counter : NULL;
}

struct histogram *stats_find_hist(struct stats *st, const char *name)
{
	struct entry *e = find(st, name, K_HIST);
	return e ? e->u.hist : NULL;
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
		uint64_t n = h->bucket[i];
		if (seen + n <= rank) {
			seen += n;
			continue;
		}
		/* The samples of the bucket taken as spread evenly over it: the (rank - seen)-th of n sits at the
		 * middle of its share of the bucket's width. */
		uint64_t lo = hist_lower(i);
		uint64_t width = i + 1 < HIST_BUCKETS ? hist_lower(i + 1) - lo : UINT64_MAX - lo;
		double v = (double)lo + ((double)(rank - seen) + 0.5) / (double)n * (double)width;
		uint64_t x = v >= (double)h->max ? h->max : (uint64_t)v;
		return x < h->min ? h->min : x;
	}
	return h->max;
}

static void hist_merge(struct histogram *into, const struct histogram *h)
{
	if (!h->count)
		return;
	if (into->count == 0 || h->min < into->min)
		into->min = h->min;
	if (h->max > into->max)
		into->max = h->max;
	into->count += h->count;
	into->sum += h->sum;
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		into->bucket[i] += h->bucket[i];
}

/* ---------------------------------------------------------------- output */

bool stats_family_name(const char *name, char *buf, size_t size)
{
	bool entity = false;
	size_t o = 0;
	for (const char *p = name; *p;) {
		size_t len = strcspn(p, ".");
		bool num = len > 0 && strspn(p, "0123456789") >= len;
		const char *src = num ? "*" : p;
		size_t n = num ? 1 : len;
		entity |= num;
		if (o + n + 2 > size)
			die("stats: family of '%s' longer than %zu", name, size);
		memcpy(buf + o, src, n);
		o += n;
		p += len;
		if (*p)
			buf[o++] = *p++;
	}
	buf[o] = '\0';
	return entity;
}

/* The aggregate of one family of per-entity counters or histograms. */
struct family {
	struct key k;
	uint64_t members, nonzero; /* nonzero: counters above 0, histograms with a sample */
	uint64_t sum, min, max;    /* counters */
	const char *max_at;        /* first name in name order holding max */
	struct histogram *merged;  /* histograms */
};

struct families {
	struct family *f;
	size_t n, cap;
	struct index ix;
};

static struct family *family_get(struct families *fs, const char *key)
{
	uint64_t h = hash(key);
	index_reserve(&fs->ix, fs->f, sizeof(*fs->f), fs->n); /* few families: room for one more, always */
	uint64_t *s = index_slot(&fs->ix, fs->f, sizeof(*fs->f), key, h);
	if (*s)
		return &fs->f[(*s & 0xffffffffu) - 1];
	if (fs->n == fs->cap) {
		fs->cap = fs->cap ? fs->cap * 2 : 64;
		fs->f = xrealloc(fs->f, fs->cap * sizeof(*fs->f));
	}
	struct family *f = &fs->f[fs->n];
	*f = (struct family){ .k = { xstrdup(key), h }, .min = UINT64_MAX };
	index_set(s, h, fs->n++);
	return f;
}

static void family_add_counter(struct family *f, const char *name, uint64_t v)
{
	f->members++;
	f->nonzero += v != 0;
	f->sum += v;
	if (v < f->min)
		f->min = v;
	if (!f->max_at || v > f->max || (v == f->max && strcmp(name, f->max_at) < 0)) {
		f->max = v;
		f->max_at = name;
	}
}

static void family_add_hist(struct family *f, const struct histogram *h)
{
	if (!f->merged)
		f->merged = xcalloc(1, sizeof(*f->merged));
	f->members++;
	f->nonzero += h->count != 0;
	hist_merge(f->merged, h);
}

static void families_free(struct families *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		free((char *)fs->f[i].k.name);
		free(fs->f[i].merged);
	}
	free(fs->f);
	free(fs->ix.slot);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp((*(const struct key *const *)a)->name, (*(const struct key *const *)b)->name);
}

/* The written subset, sorted by name: what the dumps print follows name order, never addresses. */
struct written {
	const struct key **counters, **hists; /* entries; in the JSON only those that are not per-entity */
	size_t ncounters, nhists;
	struct families cfam, hfam; /* JSON only */
	const struct key **cfams, **hfams; /* families with a nonzero member */
	size_t ncfams, nhfams;
	uint64_t counters_registered, counters_zero, counters_entity;
	uint64_t hists_registered, hists_empty, hists_entity;
};

static void sort_keys(const struct key **v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_key);
}

/* What metrics.json shows: nonzero counters and nonempty histograms that are not per-entity, and a summary
 * of every family of per-entity ones that has a nonzero member. */
static struct written collect(const struct stats *st)
{
	struct written w = { 0 };
	w.counters = xmalloc((st->n + 1) * sizeof(*w.counters));
	w.hists = xmalloc((st->n + 1) * sizeof(*w.hists));
	char fam[NAME_MAX_LEN];
	for (size_t i = 0; i < st->n; i++) {
		const struct entry *e = &st->ent[i];
		bool entity = stats_family_name(e->k.name, fam, sizeof(fam));
		if (e->kind == K_COUNTER) {
			uint64_t v = *e->u.counter;
			w.counters_registered++;
			w.counters_zero += v == 0;
			if (entity) {
				family_add_counter(family_get(&w.cfam, fam), e->k.name, v);
				w.counters_entity += v != 0;
			} else if (v) {
				w.counters[w.ncounters++] = &e->k;
			}
		} else {
			const struct histogram *h = e->u.hist;
			w.hists_registered++;
			w.hists_empty += h->count == 0;
			if (entity) {
				family_add_hist(family_get(&w.hfam, fam), h);
				w.hists_entity += h->count != 0;
			} else if (h->count) {
				w.hists[w.nhists++] = &e->k;
			}
		}
	}
	sort_keys(w.counters, w.ncounters);
	sort_keys(w.hists, w.nhists);
	w.cfams = xmalloc((w.cfam.n + 1) * sizeof(*w.cfams));
	w.hfams = xmalloc((w.hfam.n + 1) * sizeof(*w.hfams));
	for (size_t i = 0; i < w.cfam.n; i++)
		if (w.cfam.f[i].nonzero)
			w.cfams[w.ncfams++] = &w.cfam.f[i].k;
	for (size_t i = 0; i < w.hfam.n; i++)
		if (w.hfam.f[i].nonzero)
			w.hfams[w.nhfams++] = &w.hfam.f[i].k;
	sort_keys(w.cfams, w.ncfams);
	sort_keys(w.hfams, w.nhfams);
	return w;
}

static void written_free(struct written *w)
{
	free(w->counters);
	free(w->hists);
	free(w->cfams);
	free(w->hfams);
	families_free(&w->cfam);
	families_free(&w->hfam);
}

/* A record's key is its first member. */
static const struct entry *entry_of(const struct key *k)
{
	return (const struct entry *)k;
}

static const struct family *family_at(const struct key *k)
{
	return (const struct family *)k;
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

static void hist_json(FILE *f, const struct histogram *h)
{
	fprintf(f, "\"count\": %llu, \"sum\": %llu, \"min\": %llu, \"max\": %llu", (unsigned long long)h->count,
		(unsigned long long)h->sum, (unsigned long long)(h->count ? h->min : 0), (unsigned long long)h->max);
	for (size_t k = 0; k < ARRAY_SIZE(qs); k++)
		fprintf(f, ", \"%s\": %llu", qnames[k], (unsigned long long)hist_quantile(h, qs[k]));
}

static void open_section(FILE *f, int *outer, int indent, const char *name)
{
	member(f, outer, indent + 2);
	fprintf(f, "\"%s\": {", name);
}

void stats_dump_json(const struct stats *st, FILE *f, int indent)
{
	struct written w = collect(st);
	int outer = 0, n;
	fputc('{', f);
	const struct {
		const char *name;
		uint64_t v;
	} head[] = {
		{ "counters_registered", w.counters_registered }, { "counters_zero", w.counters_zero },
		{ "counters_per_entity", w.counters_entity },     { "histograms_registered", w.hists_registered },
		{ "histograms_empty", w.hists_empty },            { "histograms_per_entity", w.hists_entity },
	};
	for (size_t i = 0; i < ARRAY_SIZE(head); i++) {
		member(f, &outer, indent + 2);
		fprintf(f, "\"%s\": %llu", head[i].name, (unsigned long long)head[i].v);
	}
	member(f, &outer, indent + 2);
	fputs("\"per_entity_values\": \"telemetry.csv\"", f);

	open_section(f, &outer, indent, "counters");
	n = 0;
	for (size_t i = 0; i < w.ncounters; i++) {
		member(f, &n, indent + 4);
		fprintf(f, "\"%s\": %llu", w.counters[i]->name, (unsigned long long)*entry_of(w.counters[i])->u.counter);
	}
	close_obj(f, n, indent + 2);

	open_section(f, &outer, indent, "counter_families");
	n = 0;
	for (size_t i = 0; i < w.ncfams; i++) {
		const struct family *fm = family_at(w.cfams[i]);
		member(f, &n, indent + 4);
		fprintf(f,
			"\"%s\": {\"members\": %llu, \"nonzero\": %llu, \"sum\": %llu, \"min\": %llu, \"max\": %llu, "
			"\"max_at\": \"%s\"}",
			fm->k.name, (unsigned long long)fm->members, (unsigned long long)fm->nonzero,
			(unsigned long long)fm->sum, (unsigned long long)fm->min, (unsigned long long)fm->max, fm->max_at);
	}
	close_obj(f, n, indent + 2);

	open_section(f, &outer, indent, "histograms");
	n = 0;
	for (size_t i = 0; i < w.nhists; i++) {
		member(f, &n, indent + 4);
		fprintf(f, "\"%s\": {", w.hists[i]->name);
		hist_json(f, entry_of(w.hists[i])->u.hist);
		fputc('}', f);
	}
	close_obj(f, n, indent + 2);

	open_section(f, &outer, indent, "histogram_families");
	n = 0;
	for (size_t i = 0; i < w.nhfams; i++) {
		const struct family *fm = family_at(w.hfams[i]);
		member(f, &n, indent + 4);
		fprintf(f, "\"%s\": {\"members\": %llu, \"nonempty\": %llu, ", fm->k.name, (unsigned long long)fm->members,
			(unsigned long long)fm->nonzero);
		hist_json(f, fm->merged);
		fputc('}', f);
	}
	close_obj(f, n, indent + 2);
	close_obj(f, outer, indent);
	written_free(&w);
}

void stats_dump_csv(const struct stats *st, FILE *f)
{
	const struct key **v = xmalloc((st->n + 1) * sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < st->n; i++) {
		const struct entry *e = &st->ent[i];
		if (e->kind == K_COUNTER ? *e->u.counter != 0 : e->u.hist->count != 0)
			v[n++] = &e->k;
	}
	sort_keys(v, n);
	fputs("name,kind,value\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct entry *e = entry_of(v[i]);
		const char *name = e->k.name;
		if (e->kind == K_COUNTER) {
			fprintf(f, "%s,counter,%llu\n", name, (unsigned long long)*e->u.counter);
			continue;
		}
		const struct histogram *h = e->u.hist;
		fprintf(f, "%s.count,hist,%llu\n%s.sum,hist,%llu\n%s.min,hist,%llu\n%s.max,hist,%llu\n", name,
			(unsigned long long)h->count, name, (unsigned long long)h->sum, name, (unsigned long long)h->min,
			name, (unsigned long long)h->max);
		for (size_t k = 0; k < ARRAY_SIZE(qs); k++)
			fprintf(f, "%s.%s,hist,%llu\n", name, qnames[k], (unsigned long long)hist_quantile(h, qs[k]));
	}
	free(v);
}
