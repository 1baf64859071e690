#include "timeseries.h"

#include <stdlib.h>

#include "util.h"

struct ts {
	const char **names;
	const uint64_t **slots;
	size_t n, cap;
	uint64_t *rows; /* (1 + n) values per row: time then slots */
	size_t nrows, rows_cap;
	simtime_t interval;
	bool started;
};

static void ts_free(void *p)
{
	struct ts *t = p;
	for (size_t i = 0; i < t->n; i++)
		free((char *)t->names[i]);
	free(t->names);
	free(t->slots);
	free(t->rows);
	free(t);
}

static struct ts *ts_get(struct sim *sim)
{
	struct ts *t = sim_world_get(sim, "timeseries");
	if (!t) {
		t = xcalloc(1, sizeof(*t));
		sim_world_set(sim, "timeseries", t);
		sim_on_destroy(sim, ts_free, t);
	}
	return t;
}

void ts_register(struct sim *sim, const char *column, const uint64_t *slot)
{
	struct ts *t = ts_get(sim);
	if (t->started)
		die("timeseries column '%s' registered after sampling started", column);
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->names = xrealloc(t->names, t->cap * sizeof(*t->names));
		t->slots = xrealloc(t->slots, t->cap * sizeof(*t->slots));
	}
	t->names[t->n] = xstrdup(column);
	t->slots[t->n++] = slot;
}

static void sample(struct sim *sim, void *obj, uint64_t arg)
{
	struct ts *t = obj;
	(void)arg;
	size_t w = 1 + t->n;
	if ((t->nrows + 1) * w > t->rows_cap) {
		t->rows_cap = t->rows_cap ? t->rows_cap * 2 : 64 * w;
		t->rows = xrealloc(t->rows, t->rows_cap * sizeof(*t->rows));
	}
	uint64_t *row = t->rows + t->nrows++ * w;
	row[0] = sim_now(sim);
	for (size_t i = 0; i < t->n; i++)
		row[1 + i] = *t->slots[i];
	/* Do not keep an otherwise finished simulation alive. */
	if (sim_pending(sim) > 0)
		sim_schedule(sim, t->interval, sample, t, 0);
}

void ts_start(struct sim *sim, simtime_t interval)
{
	struct ts *t = ts_get(sim);
	t->started = true;
	t->interval = interval;
	if (interval && t->n)
		sim_schedule(sim, 0, sample, t, 0);
}

void ts_write_csv(struct sim *sim, FILE *f)
{
	struct ts *t = ts_get(sim);
	fputs("time_ps", f);
	for (size_t i = 0; i < t->n; i++)
		fprintf(f, ",%s", t->names[i]);
	fputc('\n', f);
	size_t w = 1 + t->n;
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t i = 0; i < w; i++)
			fprintf(f, i ? ",%llu" : "%llu", (unsigned long long)t->rows[r * w + i]);
		fputc('\n', f);
	}
}
