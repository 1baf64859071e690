/* Named model parameters with defaults and provenance.
 *
 * Every timing or sizing constant of a model is a row in that model's parameter table: its scenario key,
 * unit, default, allowed range and where the default comes from (a seed figure, a vendor document, the
 * upstream provider, or "assumed").  `cxisim-engine --params` prints every table.
 */
#ifndef CXISIM_PARAMS_H
#define CXISIM_PARAMS_H

#include <stddef.h>
#include <stdio.h>
#include "cfg.h"

struct param {
	const char *key;        /* scenario field within the model's section */
	const char *unit;       /* "ns", "bytes", "count", "Gb/s", ... */
	double def;
	double min, max;
	const char *provenance; /* e.g. "seed 000 Fig 9", "cassini-reference: FI_CXI_RDZV_THRESHOLD", "assumed" */
};

/* Read a parameter from a section (default when absent; range-checked). */
double param_get(const struct cfg *c, const struct param *p);
uint64_t param_get_u64(const struct cfg *c, const struct param *p);
/* Look a row up by key in a table (aborts on a missing key: a programming error). */
const struct param *param_find(const struct param *table, size_t n, const char *key);

void params_print(FILE *f, const char *component, const struct param *table, size_t n);

#endif
