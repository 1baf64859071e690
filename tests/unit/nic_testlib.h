/* Helpers for the NIC unit tests: build a simulation from an inline JSON scenario, and drain EQs. */
#ifndef CXISIM_TEST_NICLIB_H
#define CXISIM_TEST_NICLIB_H

#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/cfg.h"
#include "../../sim/engine.h"
#include "../../sim/model.h"
#include "../../sim/nic/nic.h"
#include "../../sim/stats.h"

struct tsim {
	struct sim *sim;
	struct json_object *root;
};

/* json: a full scenario object, e.g. {"fabric": {...}, "nic": {...}} */
static inline struct tsim tsim_new(const char *json, uint64_t seed)
{
	struct tsim t;
	t.root = json_tokener_parse(json);
	if (!t.root) {
		fprintf(stderr, "bad test json: %s\n", json);
		abort();
	}
	t.sim = sim_create(seed);
	struct cfg root = cfg_root(t.root, "test.json");
	for (const struct model *m = model_first(); m; m = m->next) {
		if (!cfg_has(&root, m->key))
			continue;
		struct cfg sec = cfg_section(&root, m->key);
		m->build(t.sim, &sec);
	}
	cfg_check_unknown(&root);
	return t;
}

static inline void tsim_free(struct tsim *t)
{
	sim_destroy(t->sim);
	json_object_put(t->root);
}

static inline uint64_t tctr(struct tsim *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline uint64_t tctr(struct tsim *t, const char *fmt, ...)
{
	char name[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	uint64_t *c = stats_find_counter(sim_stats(t->sim), name);
	return c ? *c : 0;
}

#define TWO_NICS "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2}, \"nic\": {}}"

#endif
