/* Fixed-size object pool: slabs carved into objects, recycled through a free list.
 *
 * Used for event records and for any per-packet or per-message record of a model, so the hot paths never
 * call malloc.  Objects are not zeroed on reuse.
 */
#ifndef CXISIM_POOL_H
#define CXISIM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SANITIZE_ADDRESS__)
#define POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ASAN 1
#endif
#endif
#ifdef POOL_ASAN
#include <sanitizer/asan_interface.h>
#define POOL_POISON(p, o) ((p)->poison ? ASAN_POISON_MEMORY_REGION((o), (p)->obj_size) : (void)0)
#define POOL_UNPOISON(p, o) ((p)->poison ? ASAN_UNPOISON_MEMORY_REGION((o), (p)->obj_size) : (void)0)
#else
#define POOL_POISON(p, o) ((void)(p), (void)(o))
#define POOL_UNPOISON(p, o) ((void)(p), (void)(o))
#endif

struct pool {
	size_t obj_size;
	size_t per_slab;
	void *free_list;
	void **slabs;
	size_t nslabs, slabs_cap;
	uint64_t live;      /* objects handed out and not yet returned */
	uint64_t allocated; /* objects ever carved from slabs */
	/* Under AddressSanitizer, objects on the free list are poisoned, so touching a record after pool_put (a
	 * stale pointer, a second put) is reported like a use-after-free.  Set after pool_init, before the
	 * first pool_get; not for pools whose returned records are still read by design (the engine's timers
	 * compare a handle's sequence number against a recycled record). */
	bool poison;
	/* Records carved one at a time from this arena instead of slabs of their own (pool_init_from). */
	struct arena *src;
};

void pool_init(struct pool *p, size_t obj_size, size_t per_slab);
/* A pool whose records come from `src`, one per pool_get that finds the free list empty: pools of different
 * records sharing one arena lay out what is allocated together (an endpoint's EQs, queues, PtlTEs) side by
 * side, in the order of allocation.  Returned records are reused as from any pool; the arena frees them. */
struct arena;
void pool_init_from(struct pool *p, size_t obj_size, struct arena *src);
void pool_free_all(struct pool *p);

static inline void *pool_get(struct pool *p);
static inline void pool_put(struct pool *p, void *obj);

void pool_grow(struct pool *p); /* slow path */
/* Bytes the pool holds (slabs and their table): its high water, as pools never shrink. */
size_t pool_bytes(const struct pool *p);

static inline void *pool_get(struct pool *p)
{
	if (__builtin_expect(!p->free_list, 0))
		pool_grow(p);
	void *o = p->free_list;
	POOL_UNPOISON(p, o);
	p->free_list = *(void **)o;
	p->live++;
	return o;
}

static inline void pool_put(struct pool *p, void *obj)
{
	*(void **)obj = p->free_list;
	POOL_POISON(p, obj);
	p->free_list = obj;
	p->live--;
}

/* A bump arena: records that live as long as the model (a fabric's switches and ports), packed into
 * 2 MiB chunks aligned to 2 MiB.  At a million endpoints the run's state is gigabytes touched at random
 * and most accesses miss the TLB; records that nearly every event touches, allocated one by one, would be
 * spread over that whole range, one huge page each.  Packed, they sit in a few dozen huge pages that stay
 * in the TLB.  Allocations (at most a chunk) are zeroed, 64-byte aligned (or `align`, a power of two set
 * before the first), and freed all at once (arena_free). */
struct arena {
	char *cur, *end;
	void **chunks;
	size_t nchunks, cap;
	size_t used; /* bytes handed out */
	size_t align; /* 0: 64 */
};

void *arena_alloc(struct arena *a, size_t bytes);
void arena_free(struct arena *a);
/* Bytes the arena holds (its chunks). */
size_t arena_bytes(const struct arena *a);
/* Bytes of all arenas' chunks in the process (mapped outside the allocator). */
uint64_t arena_mapped_bytes(void);

#endif
