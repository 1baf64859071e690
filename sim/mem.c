#include "mem.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "util.h"

struct mem_line {
	char name[64];
	uint64_t count, bytes;
	uint64_t size, live;      /* pools */
};

struct mem_table {
	struct mem_line *v;
	size_t n, cap;
};

struct mem_report {
	struct mem_table kinds, units, pools;
	uint64_t heap;
};

static struct mem_line *table_add(struct mem_table *t, const char *name, uint64_t count, uint64_t bytes)
{
	for (size_t i = 0; i < t->n; i++) {
		if (!strcmp(t->v[i].name, name)) {
			t->v[i].count += count;
			t->v[i].bytes += bytes;
			return &t->v[i];
		}
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	struct mem_line *l = &t->v[t->n++];
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->count = count;
	l->bytes = bytes;
	l->size = l->live = 0;
	return l;
}

void mem_add(struct mem_report *r, const char *kind, uint64_t count, uint64_t bytes)
{
	table_add(&r->kinds, kind, count, bytes);
}

void mem_unit(struct mem_report *r, const char *unit, uint64_t count, uint64_t bytes)
{
	table_add(&r->units, unit, count, bytes);
}

void mem_pool(struct mem_report *r, const char *name, uint64_t size, uint64_t count, uint64_t live, uint64_t bytes)
{
	struct mem_line *l = table_add(&r->pools, name, count, bytes);
	l->size = size;
	l->live += live;
}

uint64_t mem_heap_in_use(void)
{
#ifdef __SANITIZE_ADDRESS__
	/* ASan's allocator replaces glibc's: mallinfo2 reports 0, which would read as "nothing in use". */
	return MEM_HEAP_UNKNOWN;
#else
	struct mallinfo2 mi = mallinfo2();
	return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd + arena_mapped_bytes(); /* arenas map their own */
#endif
}

struct mem_report *mem_report_create(void)
{
	struct mem_report *r = xcalloc(1, sizeof(*r));
	r->heap = mem_heap_in_use();
	return r;
}

void mem_report_free(struct mem_report *r)
{
	if (!r)
		return;
	free(r->kinds.v);
	free(r->units.v);
	free(r->pools.v);
	free(r);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct mem_line *)a)->name, ((const struct mem_line *)b)->name);
}

enum { T_KINDS, T_UNITS, T_POOLS };

static void put_table(const struct mem_table *t, FILE *f, int what)
{
	if (t->n) /* no table yet when no model added a line (qsort must not get NULL) */
		qsort(t->v, t->n, sizeof(*t->v), by_name);
	for (size_t i = 0; i < t->n; i++) {
		const struct mem_line *l = &t->v[i];
		fprintf(f, "%s\"%s\": {", i ? ", " : "", l->name);
		if (what == T_POOLS)
			fprintf(f, "\"size\": %llu, \"live\": %llu, ", (unsigned long long)l->size,
				(unsigned long long)l->live);
		fprintf(f, "\"count\": %llu, \"bytes\": %llu", (unsigned long long)l->count, (unsigned long long)l->bytes);
		if (what == T_UNITS)
			fprintf(f, ", \"bytes_each\": %.0f", l->count ? (double)l->bytes / (double)l->count : 0.0);
		fputs("}", f);
	}
}

void mem_report_json(const struct mem_report *r, FILE *f)
{
	uint64_t total = 0;
	for (size_t i = 0; i < r->kinds.n; i++)
		total += r->kinds.v[i].bytes;
	if (r->heap == MEM_HEAP_UNKNOWN)
		fputs("{\"heap_in_use_bytes\": null", f);
	else
		fprintf(f, "{\"heap_in_use_bytes\": %llu", (unsigned long long)r->heap);
	fprintf(f, ", \"accounted_bytes\": %llu, \"kinds\": {", (unsigned long long)total);
	put_table(&r->kinds, f, T_KINDS);
	fputs("}, \"per_object\": {", f);
	put_table(&r->units, f, T_UNITS);
	fputs("}, \"pools\": {", f);
	put_table(&r->pools, f, T_POOLS);
	fputs("}}", f);
}
