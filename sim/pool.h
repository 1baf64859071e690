/* Fixed-size object pool: slabs carved into objects, recycled through a free list.
 *
 * Used for event records and for any per-packet or per-message record of a model, so the hot paths never
 * call malloc.  Objects are not zeroed on reuse.
 */
#ifndef CXISIM_POOL_H
#define CXISIM_POOL_H

#include <stddef.h>
#include <stdint.h>

struct pool {
	size_t obj_size;
	size_t per_slab;
	void *free_list;
	void **slabs;
	size_t nslabs, slabs_cap;
	uint64_t live;      /* objects handed out and not yet returned */
	uint64_t allocated; /* objects ever carved from slabs */
};

void pool_init(struct pool *p, size_t obj_size, size_t per_slab);
void pool_free_all(struct pool *p);

static inline void *pool_get(struct pool *p);
static inline void pool_put(struct pool *p, void *obj);

void pool_grow(struct pool *p); /* slow path */

static inline void *pool_get(struct pool *p)
{
	if (__builtin_expect(!p->free_list, 0))
		pool_grow(p);
	void *o = p->free_list;
	p->free_list = *(void **)o;
	p->live++;
	return o;
}

static inline void pool_put(struct pool *p, void *obj)
{
	*(void **)obj = p->free_list;
	p->free_list = obj;
	p->live--;
}

#endif
