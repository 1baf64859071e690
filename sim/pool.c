#include "pool.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util.h"

/* Arena chunks are anonymous mappings, which LeakSanitizer does not scan: a block referenced only from an
 * arena record (a command queue's grown ring) was reported leaked whenever the engine stopped on a bad
 * scenario field without its teardown (SANITIZE=1 make test: test_fuzz_inputs, test_unknown_nic_field).
 * Under the sanitizers each chunk is registered as a root region, as heap memory is. */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define CHUNK_ROOT(c) __lsan_register_root_region((c), ARENA_CHUNK)
#define CHUNK_UNROOT(c) __lsan_unregister_root_region((c), ARENA_CHUNK)
#else
#define CHUNK_ROOT(c) ((void)(c))
#define CHUNK_UNROOT(c) ((void)(c))
#endif

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
	p->src = NULL;
}

void pool_init_from(struct pool *p, size_t obj_size, struct arena *src)
{
	pool_init(p, obj_size, 1);
	p->src = src;
}

void pool_grow(struct pool *p)
{
	if (p->src) {
		void *o = arena_alloc(p->src, p->obj_size);
		*(void **)o = NULL;
		POOL_POISON(p, o);
		p->free_list = o;
		p->allocated++;
		return;
	}
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
	struct arena *src = p->src; /* its records go with the arena */
	pool_init(p, p->obj_size, p->per_slab);
	p->poison = poison;
	p->src = src;
}

size_t pool_bytes(const struct pool *p)
{
	if (p->src)
		return p->allocated * p->obj_size; /* its share of the arena */
	return p->nslabs * ((p->obj_size * p->per_slab + 63) & ~(size_t)63) + p->slabs_cap * sizeof(*p->slabs);
}

enum { ARENA_CHUNK = 2u << 20 };

/* Every arena's chunks, process-wide (mem_heap_in_use counts them with the allocator's bytes). */
static uint64_t arena_mapped;

uint64_t arena_mapped_bytes(void)
{
	return arena_mapped;
}

/* A chunk: a fresh anonymous mapping, zero, on a 2 MiB boundary and nothing more (aligned_alloc kept a
 * second, untouched 2 MiB beside each), asking for a huge page. */
static char *chunk_map(void)
{
	size_t len = 2 * (size_t)ARENA_CHUNK;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("out of memory (%u bytes)", (unsigned)ARENA_CHUNK);
	char *c = (char *)(((uintptr_t)m + ARENA_CHUNK - 1) & ~(uintptr_t)(ARENA_CHUNK - 1));
	if (c > m)
		munmap(m, (size_t)(c - m));
	if (m + len > c + ARENA_CHUNK)
		munmap(c + ARENA_CHUNK, (size_t)(m + len - (c + ARENA_CHUNK)));
	(void)madvise(c, ARENA_CHUNK, MADV_HUGEPAGE); /* as glibc's heap under the engine's THP tunable */
	arena_mapped += ARENA_CHUNK;
	CHUNK_ROOT(c);
	return c;
}

void *arena_alloc(struct arena *a, size_t bytes)
{
	size_t align = a->align ? a->align : 64;
	bytes = (bytes + align - 1) & ~(align - 1);
	if (bytes > ARENA_CHUNK)
		die("arena: a %zu-byte record is larger than a chunk", bytes);
	if (!a->cur || (size_t)(a->end - a->cur) < bytes) {
		char *c = chunk_map();
		if (a->nchunks == a->cap) {
			a->cap = a->cap ? 2 * a->cap : 16;
			a->chunks = xrealloc(a->chunks, a->cap * sizeof(*a->chunks));
		}
		a->chunks[a->nchunks++] = c;
		a->cur = c;
		a->end = c + ARENA_CHUNK;
	}
	void *p = a->cur;
	a->cur += bytes;
	a->used += bytes;
	return p;
}

void arena_free(struct arena *a)
{
	for (size_t i = 0; i < a->nchunks; i++) {
		CHUNK_UNROOT(a->chunks[i]);
		munmap(a->chunks[i], ARENA_CHUNK);
	}
	arena_mapped -= a->nchunks * (uint64_t)ARENA_CHUNK;
	free(a->chunks);
	size_t align = a->align;
	memset(a, 0, sizeof(*a));
	a->align = align;
}

size_t arena_bytes(const struct arena *a)
{
	return a->nchunks * (size_t)ARENA_CHUNK + a->cap * sizeof(*a->chunks);
}
