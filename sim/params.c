#include "params.h"

#include <string.h>

#include "util.h"

double param_get(const struct cfg *c, const struct param *p)
{
	return cfg_double(c, p->key, p->def, p->min, p->max);
}

uint64_t param_get_u64(const struct cfg *c, const struct param *p)
{
	return cfg_u64(c, p->key, (uint64_t)p->def, (uint64_t)p->min, (uint64_t)p->max);
}

const struct param *param_find(const struct param *table, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(table[i].key, key))
			return &table[i];
	die("no parameter '%s' in table", key);
}

void params_print(FILE *f, const char *component, const struct param *t, size_t n)
{
	fprintf(f, "## %s\n\n| parameter | default | unit | range | provenance |\n|---|---|---|---|---|\n",
		component);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "| %s.%s | %.10g | %s | %.10g .. %.10g | %s |\n", component, t[i].key, t[i].def,
			t[i].unit, t[i].min, t[i].max, t[i].provenance);
	fputc('\n', f);
}
