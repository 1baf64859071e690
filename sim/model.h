/* Model registry: each top-level section of a scenario (other than "name", "seed", "engine", "stats") is
 * built by the model registered under that key.  Models register themselves with MODEL_REGISTER in their
 * own .c file, so adding a model touches no central list.  Builders run in ascending `order`, so the fabric
 * (order 10) exists before NICs (20) and NICs before workloads (30).
 */
#ifndef CXISIM_MODEL_H
#define CXISIM_MODEL_H

#include <stdio.h>
#include "cfg.h"
#include "engine.h"
#include "params.h"

struct mem_report;

struct model {
	const char *key;  /* scenario section */
	int order;        /* build order, ascending */
	/* Build from the section; store state with sim_world_set/sim_on_destroy. */
	void (*build)(struct sim *sim, const struct cfg *section);
	/* Optional: after the run, add this model's summary to metrics.json as "key": {...}.  Must write a
	 * JSON value (object), deterministic given the seed. */
	void (*summary)(struct sim *sim, FILE *f);
	/* Optional: after the run, add what this model's structures hold to the memory accounting (run.json;
	 * sim/mem.h). */
	void (*memory)(struct sim *sim, struct mem_report *r);
	/* The model's parameter table (printed by `cxisim-engine --params`); may be NULL. */
	const struct param *params;
	size_t nparams;
	struct model *next;
};

void model_register(struct model *m);
const struct model *model_find(const char *key);
const struct model *model_first(void); /* sorted by order, then key */

#define MODEL_REGISTER(var)                                                                                  \
	__attribute__((constructor)) static void var##_register(void) { model_register(&var); }

#endif
