/* The "fabric" scenario section: picks the topology implementation. */
#include <string.h>

#include "../model.h"
#include "../util.h"
#include "fabric.h"

void fabric_direct_build(struct sim *sim, const struct cfg *c);
const struct param *fabric_direct_params(size_t *n);

static void fabric_build(struct sim *sim, const struct cfg *c)
{
	static const char *const topologies[] = { "direct", NULL };
	switch (cfg_enum(c, "topology", 0, topologies)) {
	case 0: fabric_direct_build(sim, c); break;
	}
}

static struct model fabric_model = {
	.key = "fabric",
	.order = 10,
	.build = fabric_build,
};

__attribute__((constructor)) static void fabric_model_register(void)
{
	size_t n;
	fabric_model.params = fabric_direct_params(&n);
	fabric_model.nparams = n;
	model_register(&fabric_model);
}
