#include "model.h"

#include <string.h>

static struct model *models;

/* Keep the list sorted by (order, key) so build order never depends on link order. */
void model_register(struct model *m)
{
	struct model **pp = &models;
	while (*pp && ((*pp)->order < m->order || ((*pp)->order == m->order && strcmp((*pp)->key, m->key) < 0)))
		pp = &(*pp)->next;
	m->next = *pp;
	*pp = m;
}

const struct model *model_find(const char *key)
{
	for (struct model *m = models; m; m = m->next)
		if (!strcmp(m->key, key))
			return m;
	return NULL;
}

const struct model *model_first(void)
{
	return models;
}
