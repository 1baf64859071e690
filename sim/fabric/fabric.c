/* The "fabric" scenario section: picks the topology implementation (fabric.topology: direct | dragonfly).
 * The parameter table printed by --params is the union of both: dragonfly rows first, then the rows only
 * the direct crossbar reads (shared keys such as link_gbps mean the same thing in both). */
#include <stdio.h>
#include <string.h>

#include "../model.h"
#include "../util.h"
#include "fabric.h"

void fabric_direct_build(struct sim *sim, const struct cfg *c);
const struct param *fabric_direct_params(size_t *n);
void fabric_dragonfly_build(struct sim *sim, const struct cfg *c);
const struct param *fabric_dragonfly_params(size_t *n);
void df_summary(struct sim *sim, FILE *f);
void df_memory(struct sim *sim, struct mem_report *r);
void direct_memory(struct sim *sim, struct mem_report *r);

static void fabric_build(struct sim *sim, const struct cfg *c)
{
	static const char *const topologies[] = { "direct", "dragonfly", NULL };
	switch (cfg_enum(c, "topology", 0, topologies)) {
	case 0: fabric_direct_build(sim, c); break;
	case 1: fabric_dragonfly_build(sim, c); break;
	}
}

static void fabric_summary(struct sim *sim, FILE *f)
{
	if (sim_world_get(sim, "fabric.dragonfly"))
		df_summary(sim, f);
	else
		fputs("{\"topology\": \"direct\"}", f);
}

static void fabric_memory(struct sim *sim, struct mem_report *r)
{
	if (sim_world_get(sim, "fabric.dragonfly"))
		df_memory(sim, r);
	else
		direct_memory(sim, r);
}

static struct model fabric_model = {
	.key = "fabric",
	.order = 10,
	.build = fabric_build,
	.summary = fabric_summary,
	.memory = fabric_memory,
};

static struct param fabric_params[64];
static char direct_only[8][160];

__attribute__((constructor)) static void fabric_model_register(void)
{
	size_t nd, nx, n = 0;
	const struct param *df = fabric_dragonfly_params(&nd), *dx = fabric_direct_params(&nx);
	for (size_t i = 0; i < nd && n < ARRAY_SIZE(fabric_params); i++)
		fabric_params[n++] = df[i];
	for (size_t i = 0; i < nx && n < ARRAY_SIZE(fabric_params); i++) {
		bool dup = false;
		for (size_t k = 0; k < nd; k++)
			dup |= !strcmp(dx[i].key, df[k].key);
		if (dup)
			continue;
		fabric_params[n] = dx[i];
		if (i < ARRAY_SIZE(direct_only)) {
			snprintf(direct_only[i], sizeof(direct_only[i]), "topology direct only: %s", dx[i].provenance);
			fabric_params[n].provenance = direct_only[i];
		}
		n++;
	}
	fabric_model.params = fabric_params;
	fabric_model.nparams = n;
	model_register(&fabric_model);
}
