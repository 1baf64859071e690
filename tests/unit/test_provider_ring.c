/* The shared-memory rings between the provider and the daemon (sim/cxisimd/ring.h): order, wrap-around
 * with padding, full and empty, the doorbell handshake, and a consumer that survives a corrupted ring. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/cxisimd/ring.h"

struct entry {
	uint16_t op, nslots;
	uint32_t seq;
	unsigned char body[56 + 64 * 3];
};

static struct ring_shm *new_ring(uint32_t nslots, struct ring *prod, struct ring *cons)
{
	struct ring_shm *shm = aligned_alloc(64, ring_bytes(nslots));
	ring_format(shm, nslots);
	ring_attach(prod, shm, nslots, 4);
	ring_attach(cons, shm, nslots, 4);
	return shm;
}

static bool push(struct ring *r, uint32_t seq, uint32_t slots)
{
	uint16_t ns;
	struct entry *e = ring_reserve(r, (size_t)slots * RING_SLOT, &ns);
	if (!e)
		return false;
	e->op = 1;
	e->nslots = ns;
	e->seq = seq;
	memset(e->body, (int)(seq & 0xff), (size_t)slots * RING_SLOT - 8);
	ring_publish(r, ns);
	return true;
}

Test(provider_ring, fifo_order_across_wraps_with_mixed_sizes)
{
	struct ring p, c;
	struct ring_shm *shm = new_ring(64, &p, &c);
	uint32_t next_push = 0, next_pop = 0;
	for (int round = 0; round < 2000; round++) {
		while (push(&p, next_push, 1 + next_push % 3))
			next_push++;
		cr_assert_lt(ring_free_slots(&p), 4u, "stops only when full");
		int pops = 1 + round % 7;
		for (int i = 0; i < pops; i++) {
			struct entry e;
			uint16_t ns;
			if (ring_peek(&c, &e, sizeof(e), &ns) != RING_ENTRY)
				break;
			cr_assert_eq(e.seq, next_pop, "entry %u out of order (got %u)", next_pop, e.seq);
			cr_assert_eq(ns, 1 + next_pop % 3);
			for (size_t b = 0; b < (size_t)ns * RING_SLOT - 8; b++)
				cr_assert_eq(e.body[b], (unsigned char)(next_pop & 0xff));
			ring_retire(&c, ns);
			next_pop++;
		}
	}
	cr_assert_gt(next_pop, 5000u);
	free(shm);
}

Test(provider_ring, empty_and_doorbell_handshake)
{
	struct ring p, c;
	struct ring_shm *shm = new_ring(16, &p, &c);
	struct entry e;
	uint16_t ns;
	cr_assert_eq(ring_peek(&c, &e, sizeof(e), &ns), RING_EMPTY);
	cr_assert(ring_arm(&c), "an empty ring may be slept on");
	cr_assert(push(&p, 7, 1));
	cr_assert(ring_need_doorbell(&p), "the sleeping consumer must be woken");
	cr_assert_not(ring_need_doorbell(&p), "one doorbell per arming");
	cr_assert(push(&p, 8, 1));
	cr_assert_not(ring_need_doorbell(&p), "a consumer that did not arm is not woken");
	cr_assert_eq(ring_peek(&c, &e, sizeof(e), &ns), RING_ENTRY);
	cr_assert_eq(e.seq, 7u);
	ring_retire(&c, ns);
	cr_assert_not(ring_arm(&c), "arming with entries pending says: do not sleep");
	free(shm);
}

Test(provider_ring, oversized_entries_are_refused)
{
	struct ring p, c;
	struct ring_shm *shm = new_ring(16, &p, &c);
	uint16_t ns;
	cr_assert_null(ring_reserve(&p, 5 * RING_SLOT, &ns), "above the per-entry limit");
	cr_assert_null(ring_reserve(&p, 0, &ns));
	free(shm);
}

Test(provider_ring, corrupted_ring_is_reported_not_followed)
{
	struct ring p, c;
	struct ring_shm *shm = new_ring(16, &p, &c);
	cr_assert(push(&p, 1, 1));
	struct entry e;
	uint16_t ns;
	/* A hostile producer claims an entry larger than what it published. */
	((struct ring_entry_hdr *)shm->slots)->nslots = 9;
	cr_assert_eq(ring_peek(&c, &e, sizeof(e), &ns), RING_CORRUPT);
	/* ...or publishes a head far beyond the ring. */
	((struct ring_entry_hdr *)shm->slots)->nslots = 1;
	atomic_store(&shm->head, 1000);
	c.cached_head = 0; /* as a consumer that last saw the ring empty */
	cr_assert_eq(ring_peek(&c, &e, sizeof(e), &ns), RING_CORRUPT);
	/* ...or a zero-length entry. */
	atomic_store(&shm->head, 1);
	((struct ring_entry_hdr *)shm->slots)->nslots = 0;
	c.cached_head = 0;
	cr_assert_eq(ring_peek(&c, &e, sizeof(e), &ns), RING_CORRUPT);
	free(shm);
}
