#include "scenario.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cfg.h"
#include "mem.h"
#include "model.h"
#include "stats.h"
#include "timeseries.h"
#include "util.h"

static const struct param engine_params[] = {
	{ "time_limit_us", "us", 0, 0, 1e12, "run control; 0 = no limit" },
	{ "event_limit", "count", 0, 0, 1e15, "run control; 0 = no limit" },
};
static const struct param stats_params[] = {
	{ "timeseries_interval_ns", "ns", 0, 0, 1e15, "output control; 0 = no timeseries" },
};

static void build_engine(struct scenario *sc, const struct cfg *root)
{
	struct cfg e = cfg_section(root, "engine");
	double tl = param_get(&e, &engine_params[0]);
	struct sim_limits lim = {
		.time_limit = tl > 0 ? (simtime_t)(tl * 1e6) : SIM_TIME_MAX,
		.event_limit = param_get_u64(&e, &engine_params[1]),
	};
	sim_set_limits(sc->sim, lim);
	struct cfg s = cfg_section(root, "stats");
	sc->ts_interval = (simtime_t)(param_get(&s, &stats_params[0]) * 1000.0);
}

struct scenario *scenario_load(const char *json_path, const struct scenario_opts *o)
{
	const char *shown = o && o->shown_name ? o->shown_name : json_path;
	struct scenario *sc = xcalloc(1, sizeof(*sc));
	sc->root = cfg_load_file(json_path, shown);
	struct cfg root = cfg_root(sc->root, shown);
	sc->name = cfg_name(&root, "name", "unnamed"); /* written unescaped into metrics.json */
	cfg_string(&root, "description", NULL);
	uint64_t seed = cfg_u64(&root, "seed", 1, 0, UINT64_MAX);
	if (o && o->seed_override)
		seed = o->seed;
	sc->sim = sim_create(seed);
	build_engine(sc, &root);
	for (const struct model *m = model_first(); m; m = m->next) {
		if (!cfg_has(&root, m->key))
			continue;
		struct cfg sec = cfg_section(&root, m->key);
		m->build(sc->sim, &sec);
	}
	cfg_check_unknown(&root);
	return sc;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void scenario_run(struct scenario *sc)
{
	ts_start(sc->sim, sc->ts_interval);
	/* CPU seconds next to wall seconds: on a shared machine the wall time of a run depends on its
	 * neighbours, its CPU time much less, so events per CPU-second is the figure to compare runs by. */
	double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	sc->stop = sim_run(sc->sim);
	sc->wall_s = clock_s(CLOCK_MONOTONIC) - t0;
	sc->cpu_s = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	sc->mem = mem_report_create();
	sim_memory(sc->sim, sc->mem);
	struct cfg root = { .obj = sc->root };
	for (const struct model *m = model_first(); m; m = m->next)
		if (m->memory && cfg_has(&root, m->key))
			m->memory(sc->sim, sc->mem);
}

static int write_metrics(struct scenario *sc, FILE *f)
{
	struct sim *sim = sc->sim;
	fprintf(f, "{\n  \"scenario\": \"%s\",\n  \"seed\": %llu,\n", sc->name, (unsigned long long)sim_seed(sim));
	fprintf(f, "  \"engine\": {\"stop_reason\": \"%s\", \"virtual_time_ps\": %llu, \"events_processed\": %llu},\n",
		sim_stop_reason_name(sc->stop), (unsigned long long)sim_now(sim),
		(unsigned long long)sim_events_processed(sim));
	struct cfg root = { .obj = sc->root };
	for (const struct model *m = model_first(); m; m = m->next) {
		if (!m->summary || !cfg_has(&root, m->key))
			continue;
		fprintf(f, "  \"%s\": ", m->key);
		m->summary(sim, f);
		fputs(",\n", f);
	}
	fputs("  \"stats\": ", f);
	stats_dump_json(sim_stats(sim), f, 2);
	fputs("\n}\n", f);
	return ferror(f) ? -1 : 0;
}

/* This process's own peak RSS.  getrusage's ru_maxrss survives execve, so a run started by a large parent
 * (the Python front end) would report the parent's peak; VmHWM does not. */
static long peak_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb < 0) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		kb = ru.ru_maxrss;
	}
	return kb;
}

static int write_run_info(struct scenario *sc, FILE *f)
{
	uint64_t ev = sim_events_processed(sc->sim);
	fprintf(f, "{\"wall_time_s\": %.6f, \"events_per_s\": %.0f, \"cpu_time_s\": %.6f, \"events_per_cpu_s\": %.0f, "
		"\"peak_rss_kb\": %ld", sc->wall_s, sc->wall_s > 0 ? (double)ev / sc->wall_s : 0.0, sc->cpu_s,
		sc->cpu_s > 0 ? (double)ev / sc->cpu_s : 0.0, peak_rss_kb());
	if (sc->mem) {
		fputs(", \"memory\": ", f);
		mem_report_json(sc->mem, f);
	}
	if (sc->run_extra)
		fprintf(f, ", %s", sc->run_extra);
	fputs("}\n", f);
	return ferror(f) ? -1 : 0;
}

static int write_file(const char *dir, const char *name, struct scenario *sc, int (*fn)(struct scenario *, FILE *))
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int rc = fn(sc, f);
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

static int write_telemetry(struct scenario *sc, FILE *f)
{
	stats_dump_csv(sim_stats(sc->sim), f);
	return ferror(f) ? -1 : 0;
}

static int write_timeseries(struct scenario *sc, FILE *f)
{
	ts_write_csv(sc->sim, f);
	return ferror(f) ? -1 : 0;
}

int scenario_write_outputs(struct scenario *sc, const char *dir)
{
	if (write_file(dir, "metrics.json", sc, write_metrics) || write_file(dir, "telemetry.csv", sc, write_telemetry) ||
	    write_file(dir, "timeseries.csv", sc, write_timeseries) || write_file(dir, "run.json", sc, write_run_info))
		return -1;
	return 0;
}

void scenario_free(struct scenario *sc)
{
	if (!sc)
		return;
	sim_destroy(sc->sim);
	mem_report_free(sc->mem);
	free(sc->run_extra);
	json_object_put(sc->root);
	free(sc);
}

void scenario_print_params(FILE *f)
{
	params_print(f, "engine", engine_params, ARRAY_SIZE(engine_params));
	params_print(f, "stats", stats_params, ARRAY_SIZE(stats_params));
	for (const struct model *m = model_first(); m; m = m->next)
		if (m->params)
			params_print(f, m->key, m->params, m->nparams);
}
