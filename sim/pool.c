#include "pool.h"

#include <stdlib.h>

#include "util.h"

void pool_init(struct pool *p, size_t obj_size, size_t per_slab)
{
	p->obj_size = (obj_size < sizeof(void *) ? sizeof(void *) : obj_size);
	p->obj_size = (p->obj_size + 7) & ~(size_t)7;
	p->per_slab = per_slab ? per_slab : 1024;
	p->free_list = NULL;
	p->slabs = NULL;
	p->nslabs = p->slabs_cap = 0;
	p->live = p->allocated = 0;
	p->poison = false;
}

void pool_grow(struct pool *p)
{
	/* Slabs start on a cache line, so objects of 32 or 64 bytes never straddle two. */
	size_t bytes = (p->obj_size * p->per_slab + 63) & ~(size_t)63;
	char *slab = aligned_alloc(64, bytes);
	if (!slab)
		die("out of memory (%zu bytes)", bytes);
	if (p->nslabs == p->slabs_cap) {
		p->slabs_cap = p->slabs_cap ? p->slabs_cap * 2 : 16;
		p->slabs = xrealloc(p->slabs, p->slabs_cap * sizeof(*p->slabs));
	}
	p->slabs[p->nslabs++] = slab;
	/* Thread the new objects so the first one handed out is the lowest address. */
	for (size_t i = p->per_slab; i-- > 0;) {
		void *o = slab + i * p->obj_size;
		*(void **)o = p->free_list;
		POOL_POISON(p, o);
		p->free_list = o;
	}
	p->allocated += p->per_slab;
}

void pool_free_all(struct pool *p)
{
	for (size_t i = 0; i < p->nslabs; i++) {
#ifdef POOL_ASAN
		ASAN_UNPOISON_MEMORY_REGION(p->slabs[i], p->obj_size * p->per_slab);
#endif
		free(p->slabs[i]);
	}
	free(p->slabs);
	bool poison = p->poison;
	pool_init(p, p->obj_size, p->per_slab);
	p->poison = poison;
}

size_t pool_bytes(const struct pool *p)
{
	return p->nslabs * ((p->obj_size * p->per_slab + 63) & ~(size_t)63) + p->slabs_cap * sizeof(*p->slabs);
}
