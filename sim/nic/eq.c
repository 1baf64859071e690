/* Event queues: rings of 64-B events written by the NIC and consumed by software.
 *
 * An event occupies its slot from the moment the NIC decides to write it (so the NIC never overcommits the
 * ring) but becomes readable only when its PCIe write lands, `delay` later.  Ordinary events cannot use the
 * slots reserved for flow-control state changes; an event that finds no slot is dropped and the EQ
 * remembers it (status.dropped), which the provider treats as fatal. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

int nic_rsrc_get(struct nic_lni *lni, enum nic_rsrc r);
void nic_rsrc_put(struct nic_lni *lni, enum nic_rsrc r);

struct nic_eq *nic_eq_lookup(struct nic *nic, uint32_t eqn)
{
	struct nic_eq *q = nic_table_at(&nic->eqs, eqn);
	return q && q->live ? q : NULL;
}

int nic_eq_alloc(struct nic_lni *lni, const struct nic_eq_attr *a, uint32_t *eqn)
{
	if (!lni || !lni->live || !a || !eqn || a->slots < 2 || a->status_thresh_pct > 100)
		return -EINVAL;
	struct nic *nic = lni->nic;
	if (a->slots > nic->p->eq_slots_max || a->reserved_fc >= a->slots)
		return -EINVAL;
	uint32_t i;
	for (i = 0; i < nic->eqs.n; i++)
		if (!nic_eq_lookup(nic, i))
			break;
	if (i == C_NUM_EQS) {
		nic_count_limit(nic);
		return -ENOSPC;
	}
	int rc = nic_rsrc_get(lni, NIC_RSRC_EQ);
	if (rc)
		return rc;
	struct nic_eq *q = nic_table_slot(&nic->eqs, i, &nic->rec->eq);
	q->gen = ++nic->eq_gen;
	q->live = true;
	q->lni = lni;
	q->slots = a->slots;
	q->reserved_fc = a->reserved_fc;
	q->thresh_pct = a->status_thresh_pct;
	q->notify = a->notify;
	q->notify_ctx = a->notify_ctx;
	/* The ring starts as the record's one slot and grows on demand up to `slots`: endpoints size EQs
	 * generously (131,072 events by default) but rarely hold more than one unacked event, and many never
	 * see an event (a million client endpoints' EQs at 64 slots were 13 GB). */
	q->ring_cap = 1;
	q->ring = &q->inl;
	*eqn = i;
	return 0;
}

void nic_eq_ring_free(struct nic_eq *q)
{
	if (q->ring != &q->inl)
		free(q->ring);
	q->ring = &q->inl;
	q->ring_cap = 1;
}

static void eq_release(struct nic_eq *q)
{
	nic_rsrc_put(q->lni, NIC_RSRC_EQ);
	nic_eq_ring_free(q);
	q->live = false;
}

int nic_eq_free(struct nic_lni *lni, uint32_t eqn)
{
	if (!lni)
		return -EINVAL;
	struct nic_eq *q = nic_eq_lookup(lni->nic, eqn);
	if (!q || q->lni != lni)
		return -ENOENT;
	if (q->refs)
		return -EBUSY;
	eq_release(q);
	return 0;
}

void nic_eqs_free_lni(struct nic *nic, struct nic_lni *lni)
{
	for (uint32_t i = 0; i < nic->eqs.n; i++) {
		struct nic_eq *q = nic_eq_lookup(nic, i);
		if (q && q->lni == lni)
			eq_release(q);
	}
}

const struct nic_event *nic_eq_peek(struct nic *nic, uint32_t eqn)
{
	struct nic_eq *q = nic_eq_lookup(nic, eqn);
	if (!q || q->rd == q->wr)
		return NULL;
	return &q->ring[q->rd % q->ring_cap];
}

void nic_eq_next(struct nic *nic, uint32_t eqn)
{
	struct nic_eq *q = nic_eq_lookup(nic, eqn);
	if (q && q->rd < q->wr)
		q->rd++;
}

static uint64_t eq_used(const struct nic_eq *q)
{
	return (q->wr - q->ack) + q->pending;
}

void nic_eq_ack(struct nic *nic, uint32_t eqn)
{
	struct nic_eq *q = nic_eq_lookup(nic, eqn);
	if (!q)
		return;
	q->ack = q->rd;
	if (q->wr == q->ack && q->ring != &q->inl)
		nic_eq_ring_free(q); /* a burst is over: back to the record's own slot */
	if (q->above_thresh && eq_used(q) * 100 < (uint64_t)q->thresh_pct * q->slots)
		q->above_thresh = false;
}

int nic_eq_adjust_reserved_fc(struct nic *nic, uint32_t eqn, int delta)
{
	struct nic_eq *q = nic_eq_lookup(nic, eqn);
	if (!q)
		return -ENOENT;
	int64_t nr = (int64_t)q->reserved_fc + delta;
	if (nr < 0)
		return -EINVAL;
	if ((uint64_t)nr + eq_used(q) >= q->slots)
		return -ENOSPC;
	q->reserved_fc = (uint32_t)nr;
	return 0;
}

int nic_eq_status(struct nic *nic, uint32_t eqn, struct nic_eq_status *st)
{
	struct nic_eq *q = nic_eq_lookup(nic, eqn);
	if (!q || !st)
		return -ENOENT;
	uint64_t used = eq_used(q);
	st->slots = q->slots;
	st->used = (uint32_t)used;
	st->unread = (uint32_t)(q->wr - q->rd);
	st->reserved_fc = q->reserved_fc;
	st->free = used + q->reserved_fc >= q->slots ? 0 : (uint32_t)(q->slots - used - q->reserved_fc);
	st->writebacks = q->writebacks;
	st->dropped = q->dropped;
	st->written = q->written;
	return 0;
}

void nic_eq_prefetch(const struct nic *nic, uint32_t eqn, unsigned stage)
{
	if (stage == 0) {
		__builtin_prefetch(&nic->eqs);
	} else if (eqn < nic->eqs.n) {
		if (stage == 1) {
			__builtin_prefetch(&nic->eqs.rec[eqn]);
		} else {
			const char *q = nic->eqs.rec[eqn];
			__builtin_prefetch(q); /* the fields before the slot may straddle two lines: both */
			__builtin_prefetch(q + offsetof(struct nic_eq, inl) - 1);
		}
	}
}

/* Room for one ordinary event (what a flow-control PtlTE checks before it accepts a message). */
bool nic_eq_has_room(struct nic *nic, uint32_t eqn)
{
	struct nic_eq *q = nic_eq_lookup(nic, eqn);
	return q && eq_used(q) + q->reserved_fc < q->slots;
}

static void eq_grow(struct nic_eq *q)
{
	uint32_t ncap = q->ring_cap < 4 ? 4 : q->ring_cap * 2;
	if (ncap > q->slots)
		ncap = q->slots;
	struct nic_event *nr = xcalloc(ncap, sizeof(*nr));
	for (uint64_t i = q->ack; i < q->wr; i++)
		nr[i % ncap] = q->ring[i % q->ring_cap];
	if (q->ring != &q->inl)
		free(q->ring);
	q->ring = nr;
	q->ring_cap = ncap;
}

/* An event on its way to its EQ.  It points at the EQ's record (records stay where they are for the NIC's
 * life, a freed number's record being reused: nic_table), so publishing does not go through the NIC's
 * table: in a large run the NIC record and the table are two more cache misses per event. */
struct evrec {
	struct nic *nic;
	struct nic_eq *q;
	uint32_t eqn;
	uint32_t gen;
	struct nic_event ev;
};

static void eq_publish(struct sim *sim, void *obj, uint64_t arg)
{
	struct evrec *r = obj;
	struct nic *nic = r->nic;
	struct nic_eq *q = r->q;
	(void)sim;
	(void)arg;
	/* An EQ freed (and maybe reallocated) while the event travelled never sees it. */
	if (!q->live || q->gen != r->gen)
		q = NULL;
	if (q) {
		q->pending--;
		if (q->wr - q->ack >= q->ring_cap)
			eq_grow(q);
		q->ring[q->wr % q->ring_cap] = r->ev;
		q->wr++;
		q->written++;
		if (q->thresh_pct && !q->above_thresh && eq_used(q) * 100 >= (uint64_t)q->thresh_pct * q->slots) {
			q->above_thresh = true;
			q->writebacks++;
		}
	}
	uint32_t eqn = r->eqn;
	pool_put(&nic->rec->evrec, r);
	if (q && q->notify)
		q->notify(q->notify_ctx, nic, eqn);
}

bool nic_eq_post(struct nic *nic, uint32_t eqn, const struct nic_event *ev, simtime_t delay, bool fc_reserved)
{
	struct nic_eq *q = nic_eq_lookup(nic, eqn);
	if (!q)
		return false;
	uint64_t limit = fc_reserved ? q->slots : q->slots - q->reserved_fc;
	if (eq_used(q) >= limit) {
		q->dropped++;
		if (fc_reserved)
			NIC_C(nic, events_dropped_fc_sc)++;
		else
			NIC_C(nic, events_dropped_ordinary)++;
		nic_count_limit(nic);
		return false;
	}
	q->pending++;
	NIC_C(nic, events_enqueued)++;
	if (ev->type < C_EVENT_TYPES && nic_cix.event_type[ev->type] != NIC_CIX_NONE)
		NIC_C(nic, event_type[ev->type])++;
	_Static_assert(sizeof(struct evrec) <= sizeof(struct nic_event) + 32, "evrec pool object size");
	struct evrec *r = pool_get(&nic->rec->evrec);
	r->nic = nic;
	r->q = q;
	r->eqn = eqn;
	r->gen = q->gen;
	r->ev = *ev;
	sim_schedule(nic->sim, delay + nic->p->pcie_latency + nic->p->event_write, eq_publish, r, 0);
	return true;
}

/* eq_publish(evrec): the EQ record with its slot (three to four lines: packed among its endpoint's records
 * at 8 bytes). */
static void eq_publish_prefetch(const void *obj, uint64_t arg)
{
	const struct evrec *r = obj;
	const char *q = (const char *)r->q;
	(void)arg;
	__builtin_prefetch(q);
	__builtin_prefetch(q + 64);
	__builtin_prefetch(q + 128, 1);
	__builtin_prefetch(q + sizeof(struct nic_eq) - 1, 1);
	/* the request the event completes (the provider reads its kind first), and the NIC's EQ table header
	 * (the notified endpoint reads the EQ back by number) */
	if (r->ev.user_ptr >= (1ULL << 32))
		__builtin_prefetch((const void *)(uintptr_t)r->ev.user_ptr);
	__builtin_prefetch(&r->nic->eqs);
}

/* ... one pop ahead: the ring slot the event is written to, the notified endpoint's record, the EQ's
 * entry in the NIC's table. */
static void eq_publish_prefetch_next(const void *obj, uint64_t arg)
{
	const struct evrec *r = obj;
	const struct nic_eq *q = r->q;
	(void)arg;
	if (q->ring != &q->inl) /* (the record's own slot came with the record) */
		__builtin_prefetch(&q->ring[q->wr % q->ring_cap], 1);
	if (q->notify_ctx)
		__builtin_prefetch(q->notify_ctx);
	const struct nic_table *t = &r->nic->eqs;
	if (r->eqn < t->n)
		__builtin_prefetch(&t->rec[r->eqn]);
}

void nic_eq_prefetch_hooks(struct sim *sim)
{
	sim_prefetch_hook(sim, eq_publish, eq_publish_prefetch);
	sim_prefetch_hook_stage(sim, eq_publish, 1, eq_publish_prefetch_next);
}
