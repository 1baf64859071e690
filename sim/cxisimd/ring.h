/* Single-producer single-consumer rings in shared memory, the emulated counterpart of Cassini's command
 * queues (software produces 64-byte command slots, the NIC consumes) and event queues (the NIC produces
 * 64-byte events, software consumes).
 *
 * A ring is a header followed by a power-of-two number of 64-byte slots.  An entry occupies one or more
 * contiguous slots; its first slot starts with a struct ring_entry_hdr giving the slot count.  An entry
 * never wraps: when it does not fit before the end, the producer fills the rest with a PAD entry.
 *
 * The consumer never trusts the other side: slot counts are re-validated, indexes are compared with the
 * ring size it keeps privately (not the copy in shared memory), and entries are copied out before use.
 * Both peers can therefore survive a corrupted or hostile ring; a malformed entry is reported, not
 * followed.
 *
 * `armed` is the doorbell handshake.  A consumer that is about to sleep sets armed, re-checks the ring,
 * then blocks on its eventfd; a producer that sees armed set after publishing clears it and rings the
 * eventfd.  Consumers that poll (a busy CQ) never arm, so the common path costs no system call.
 */
#ifndef CXISIM_RING_H
#define CXISIM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RING_SLOT 64u
#define RING_MAGIC 0x63787372u /* "cxsr" */
#define RING_PAD_OP 0xffffu

struct ring_shm {
	uint32_t magic;
	uint32_t nslots; /* informational; peers use their private copy */
	uint32_t pad0[14];
	_Alignas(64) _Atomic uint64_t head; /* producer: slots published */
	uint64_t pad1[7];
	_Alignas(64) _Atomic uint64_t tail; /* consumer: slots retired */
	_Atomic uint32_t armed;             /* consumer asleep, wants a doorbell */
	_Atomic uint32_t dead;              /* the far side declared this ring unusable */
	uint64_t pad2[6];
	_Alignas(64) unsigned char slots[];
};

struct ring_entry_hdr {
	uint16_t op;     /* RING_PAD_OP for padding, otherwise user-defined */
	uint16_t nslots; /* slots this entry occupies, >= 1 */
};

/* A process's private view of a ring mapped in its address space. */
struct ring {
	struct ring_shm *shm;
	uint32_t nslots; /* power of two, trusted copy */
	uint32_t max_entry_slots;
	uint64_t cached_head, cached_tail; /* producer keeps tail cache, consumer keeps head cache */
};

static inline size_t ring_bytes(uint32_t nslots)
{
	return sizeof(struct ring_shm) + (size_t)nslots * RING_SLOT;
}

static inline void ring_format(struct ring_shm *shm, uint32_t nslots)
{
	memset(shm, 0, sizeof(*shm));
	shm->magic = RING_MAGIC;
	shm->nslots = nslots;
}

static inline void ring_attach(struct ring *r, void *mem, uint32_t nslots, uint32_t max_entry_slots)
{
	r->shm = mem;
	r->nslots = nslots;
	r->max_entry_slots = max_entry_slots;
	r->cached_head = atomic_load_explicit(&r->shm->head, memory_order_acquire);
	r->cached_tail = atomic_load_explicit(&r->shm->tail, memory_order_acquire);
}

static inline unsigned char *ring_slot(const struct ring *r, uint64_t idx)
{
	return r->shm->slots + (size_t)(idx & (r->nslots - 1)) * RING_SLOT;
}

/* ---- producer ---- */

/* Reserve room for an entry of `bytes` (header included).  Returns a pointer to write the entry into, or
 * NULL when the ring is full.  Publish with ring_publish. */
static inline void *ring_reserve(struct ring *r, size_t bytes, uint16_t *nslots_out)
{
	uint32_t n = (uint32_t)((bytes + RING_SLOT - 1) / RING_SLOT);
	if (n == 0 || n > r->max_entry_slots || n > r->nslots / 2)
		return NULL;
	uint64_t head = atomic_load_explicit(&r->shm->head, memory_order_relaxed);
	uint32_t to_end = r->nslots - (uint32_t)(head & (r->nslots - 1));
	uint32_t need = n + (to_end < n ? to_end : 0);
	if (head + need - r->cached_tail > r->nslots) {
		r->cached_tail = atomic_load_explicit(&r->shm->tail, memory_order_acquire);
		if (head + need - r->cached_tail > r->nslots)
			return NULL;
	}
	if (to_end < n) {
		struct ring_entry_hdr *pad = (struct ring_entry_hdr *)ring_slot(r, head);
		pad->op = RING_PAD_OP;
		pad->nslots = (uint16_t)to_end;
		atomic_store_explicit(&r->shm->head, head + to_end, memory_order_release);
		head += to_end;
	}
	*nslots_out = (uint16_t)n;
	return ring_slot(r, head);
}

static inline void ring_publish(struct ring *r, uint16_t nslots)
{
	uint64_t head = atomic_load_explicit(&r->shm->head, memory_order_relaxed);
	atomic_store_explicit(&r->shm->head, head + nslots, memory_order_release);
}

/* After publishing: true when the consumer is asleep and must be woken through its eventfd. */
static inline bool ring_need_doorbell(struct ring *r)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&r->shm->armed, memory_order_relaxed))
		return false;
	return atomic_exchange_explicit(&r->shm->armed, 0, memory_order_acq_rel) != 0;
}

static inline uint32_t ring_free_slots(struct ring *r)
{
	uint64_t head = atomic_load_explicit(&r->shm->head, memory_order_relaxed);
	r->cached_tail = atomic_load_explicit(&r->shm->tail, memory_order_acquire);
	uint64_t used = head - r->cached_tail;
	return used > r->nslots ? 0 : r->nslots - (uint32_t)used;
}

/* ---- consumer ---- */

enum ring_peek {
	RING_EMPTY = 0,
	RING_ENTRY = 1,
	RING_CORRUPT = -1,
};

/* Look at the next entry without retiring it.  Copies at most `cap` bytes of it into `out` (entries are
 * copied so that the producer cannot change them under the consumer's feet) and reports its size in
 * slots.  PAD entries are skipped internally. */
static inline enum ring_peek ring_peek(struct ring *r, void *out, size_t cap, uint16_t *nslots)
{
	for (;;) {
		uint64_t tail = atomic_load_explicit(&r->shm->tail, memory_order_relaxed);
		if (tail == r->cached_head) {
			r->cached_head = atomic_load_explicit(&r->shm->head, memory_order_acquire);
			if (tail == r->cached_head)
				return RING_EMPTY;
		}
		uint64_t avail = r->cached_head - tail;
		if (avail > r->nslots)
			return RING_CORRUPT;
		const unsigned char *s = ring_slot(r, tail);
		struct ring_entry_hdr h;
		memcpy(&h, s, sizeof(h));
		uint32_t to_end = r->nslots - (uint32_t)(tail & (r->nslots - 1));
		if (h.nslots == 0 || h.nslots > avail || h.nslots > to_end)
			return RING_CORRUPT;
		if (h.op == RING_PAD_OP) {
			atomic_store_explicit(&r->shm->tail, tail + h.nslots, memory_order_release);
			continue;
		}
		if (h.nslots > r->max_entry_slots)
			return RING_CORRUPT;
		size_t bytes = (size_t)h.nslots * RING_SLOT;
		memcpy(out, s, bytes < cap ? bytes : cap);
		*nslots = h.nslots;
		return RING_ENTRY;
	}
}

static inline void ring_retire(struct ring *r, uint16_t nslots)
{
	uint64_t tail = atomic_load_explicit(&r->shm->tail, memory_order_relaxed);
	atomic_store_explicit(&r->shm->tail, tail + nslots, memory_order_release);
}

static inline bool ring_empty(struct ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->shm->tail, memory_order_relaxed);
	if (tail != r->cached_head)
		return false;
	r->cached_head = atomic_load_explicit(&r->shm->head, memory_order_acquire);
	return tail == r->cached_head;
}

/* Consumer about to sleep: arm, then re-check.  Returns true if it may sleep (still empty). */
static inline bool ring_arm(struct ring *r)
{
	atomic_store_explicit(&r->shm->armed, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	return ring_empty(r);
}

#endif
