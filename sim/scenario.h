/* Building a simulation from a resolved scenario config, and writing its outputs.
 * Shared by the engine binary and the emulation daemon, so both read scenarios the same way. */
#ifndef CXISIM_SCENARIO_H
#define CXISIM_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"

struct json_object;

struct scenario_opts {
	const char *shown_name; /* file name used in error messages (the template the user wrote) */
	bool seed_override;
	uint64_t seed;
};

struct scenario {
	struct sim *sim;
	struct json_object *root;
	const char *name;
	simtime_t ts_interval;
	enum sim_stop_reason stop;
	double wall_s;
	double cpu_s; /* CPU time of the run (process, all threads) */
	struct mem_report *mem; /* taken after the run */
	char *run_extra; /* NULL, or JSON members run.json adds (the emulation daemon's "host_idle"); freed with sc */
};

/* Parse and validate; config errors exit with status 2 before anything is written. */
struct scenario *scenario_load(const char *json_path, const struct scenario_opts *o);
void scenario_run(struct scenario *sc);
/* Writes metrics.json, telemetry.csv, timeseries.csv and run.json into dir (which must exist).
 * Returns 0, or -1 with errno set. */
int scenario_write_outputs(struct scenario *sc, const char *dir);
void scenario_free(struct scenario *sc);

/* Every registered model's parameter table, as markdown. */
void scenario_print_params(FILE *f);

#endif
