/* PCT connections: the source (SCT) and target (TCT) connection tables of a Cassini NIC.
 *
 * Cassini's reliability layer (the PCT) carries every request on a connection between two NICs.  The
 * initiator keeps a source connection (SCT) per destination class, the target a target connection (TCT) per
 * source connection.  The class is the destination NIC, the low bits of the destination PID (the driver's
 * `sct_pid_mask`, 0x7, HPE shs-cxi-driver cass_core.c) and whether the request goes to a portal index of 128
 * or more (the top bit of the DFA's endpoint field: unrestricted Gets and Puts get different connections).
 * A connection opens with its first request (no handshake) and closes once it has been idle for the SCT
 * idle epoch (2^15 cycles of Cassini 1's 1 GHz clock, 32.8 us: C1_DEFAULT_SCT_IDLE_EPOCH in shs-cxi-driver,
 * converted as shs-libcxi's retry handler does); the close request frees the TCT and its response the SCT.
 *
 * Tables: 4,096 SCTs and 8,192 TCTs per NIC (shs-cassini-headers C_PCT_CFG_SCT_CAM_ENTRIES,
 * C_PCT_CFG_TCT_CAM_ENTRIES).  A request that needs a new TCT when all are held is NACKed with
 * C_RC_NO_TARGET_CONN (counted as C_CNTR_PCT_NO_TCT_NACKS) and resent by the initiator's retry handler
 * (shs-libcxi retry_handler/ordered.c), the same path as a request refused for want of a TRS.  An initiator
 * with every SCT held makes the request wait until one closes; how long is not in the sources we read, so the
 * model counts such opens (`sim.pct_sct_full`) and lets them through.
 *
 * The model keeps, per NIC and table, each class it has seen with the time of its last request and whether
 * it is open, and a FIFO of (class, use time) records: a connection whose newest record is older than the
 * idle time is closed when the FIFO reaches it, so the open count is exact at every use and the high-water
 * mark is the table occupancy real hardware would need.  The close handshake's round trip (a few us, well
 * under the idle time) is not added.
 */
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

/* An open connection.  Closed ones leave the table: every Aurora NIC talks to thousands of classes over a
 * millisecond but holds only those of the last idle epoch open (keeping every class seen cost ~0.5 GB of
 * tables across the whole machine at 1 ms, growing with the run). */
struct pct_conn {
	uint64_t key; /* class + 1; 0: empty slot */
	simtime_t last;
};

struct pct_use {
	uint64_t key;
	simtime_t at;
};

/* First sizes: a client NIC holds a few connections at a time; tables double as needed (so both sizes are
 * powers of two: FIFO positions wrap with a mask, not a division). */
enum { PCT_SLOTS_MIN = 16, PCT_FIFO_MIN = 16 };
_Static_assert((PCT_FIFO_MIN & (PCT_FIFO_MIN - 1)) == 0, "FIFO positions wrap with a mask");

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

static struct pct_conn *slot_of(struct nic_pct_table *t, uint64_t key)
{
	uint32_t i = (uint32_t)mix(key) & (t->cap - 1);
	while (t->slots[i].key && t->slots[i].key != key)
		i = (i + 1) & (t->cap - 1);
	return &t->slots[i];
}

/* Empty slot c, moving later entries of its probe run back so that every lookup still finds its key. */
static void slot_delete(struct nic_pct_table *t, struct pct_conn *c)
{
	uint32_t mask = t->cap - 1, i = (uint32_t)(c - t->slots), j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!t->slots[j].key)
			break;
		uint32_t home = (uint32_t)mix(t->slots[j].key) & mask;
		/* j's entry may fill the hole at i unless its home lies cyclically in (i, j]. */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	t->slots[i].key = 0;
}

static void grow_slots(struct nic_pct_table *t)
{
	struct pct_conn *old = t->slots;
	uint32_t ocap = t->cap;
	t->cap = ocap ? ocap * 2 : PCT_SLOTS_MIN;
	t->slots = xcalloc(t->cap, sizeof(*t->slots));
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i].key)
			*slot_of(t, old[i].key) = old[i];
	free(old);
}

static void fifo_push(struct nic_pct_table *t, uint64_t key, simtime_t at)
{
	if (t->flen == t->fcap) {
		uint32_t ncap = t->fcap ? t->fcap * 2 : PCT_FIFO_MIN;
		struct pct_use *n = xmalloc(ncap * sizeof(*n));
		for (uint32_t i = 0; i < t->flen; i++)
			n[i] = t->fifo[(t->fhead + i) & (t->fcap - 1)];
		free(t->fifo);
		t->fifo = n;
		t->fcap = ncap;
		t->fhead = 0;
	}
	if (!t->flen)
		t->head_at = at;
	t->fifo[(t->fhead + t->flen++) & (t->fcap - 1)] = (struct pct_use){ key, at };
}

/* Close every connection idle for `idle` or longer at `now`: the FIFO record of its newest use closes it (a
 * connection's older records, and records of one closed already, find it used later or gone). */
static void expire(struct nic_pct_table *t, simtime_t now, simtime_t idle)
{
	while (t->flen && t->head_at + idle <= now) {
		struct pct_use u = t->fifo[t->fhead];
		t->fhead = (t->fhead + 1) & (t->fcap - 1);
		if (--t->flen)
			t->head_at = t->fifo[t->fhead].at;
		struct pct_conn *c = slot_of(t, u.key);
		if (c->key && c->last == u.at) {
			slot_delete(t, c);
			t->open--;
		}
	}
}

/* A request on class `key` at `now`: returns 1 if it opened a connection, 0 if one was open, -1 if it needed
 * one and `limit` were already open (nothing changes then). */
int nic_pct_table_use(struct nic_pct_table *t, uint64_t key, simtime_t now, simtime_t idle, uint32_t limit)
{
	expire(t, now, idle);
	key++;
	if (!t->cap || 4 * (t->open + 1) > 3 * t->cap)
		grow_slots(t);
	struct pct_conn *c = slot_of(t, key);
	int opened = 0;
	if (!c->key) {
		if (t->open >= limit)
			return -1;
		c->key = key;
		if (++t->open > t->high)
			t->high = t->open;
		opened = 1;
	}
	c->last = now;
	fifo_push(t, key, now);
	return opened;
}

static uint64_t conn_class(const struct nic *nic, uint32_t peer, uint16_t pid, uint16_t index)
{
	return ((uint64_t)peer << 12) | ((uint64_t)(pid & nic->p->pct_pid_mask) << 1) | ((index & 0x80) ? 1 : 0);
}

uint32_t nic_pct_table_open(const struct nic_pct_table *t)
{
	return t->open;
}

struct nic_pct_table *nic_pct_table_new(void)
{
	return xcalloc(1, sizeof(struct nic_pct_table));
}

/* Returns whether the packet opened a source connection. */
bool nic_pct_sct_use(struct nic *nic, const struct nic_pkt *p)
{
	if (!nic->active)
		return false;
	struct nic_pct_table *t = &nic->sct;
	simtime_t now = sim_now(nic->sim);
	uint64_t key = conn_class(nic, p->msg.dst, p->dst_pid, p->index);
	int r = nic_pct_table_use(t, key, now, nic->p->pct_idle, UINT32_MAX);
	if (r == 1) {
		NIC_C(nic, pct_sct_open)++;
		if (t->open > nic->p->pct_sct_entries)
			NIC_C(nic, pct_sct_full)++;
	}
	if (t->high > NIC_C(nic, pct_sct_high_water))
		NIC_C(nic, pct_sct_high_water) = t->high;
	return r == 1;
}

/* Stage 1: the connection's home slot, the FIFO's tail (where this use goes) and head (what expires first);
 * stage 2, with the head in cache: the slot of the connection the head names (expire() looks it up). */
static void table_prefetch(const struct nic_pct_table *t, uint64_t key, unsigned stage)
{
	if (stage == 1) {
		if (t->cap)
			__builtin_prefetch(&t->slots[(uint32_t)mix(key + 1) & (t->cap - 1)], 1);
		if (t->fcap) {
			__builtin_prefetch(&t->fifo[(t->fhead + t->flen) & (t->fcap - 1)], 1);
			__builtin_prefetch(&t->fifo[t->fhead]);
		}
	} else if (t->flen && t->cap) {
		__builtin_prefetch(&t->slots[(uint32_t)mix(t->fifo[t->fhead].key) & (t->cap - 1)], 1);
	}
}

void nic_pct_prefetch(const struct nic *nic, const struct nic_pkt *p, bool target, unsigned stage)
{
	const struct nic_pct_table *t = target ? &nic->tct : &nic->sct;
	if (!target && !nic->active)
		return;
	if (stage == 0)
		__builtin_prefetch(t);
	else
		table_prefetch(t, target ? conn_class(nic, p->msg.src, p->dst_pid, p->index)
					 : conn_class(nic, p->msg.dst, p->dst_pid, p->index), stage);
}

/* Returns -1 when the request is refused (no TCT left), 1 when it opened a target connection, else 0. */
int nic_pct_tct_use(struct nic *nic, const struct nic_pkt *p)
{
	struct nic_pct_table *t = &nic->tct;
	uint64_t key = conn_class(nic, p->msg.src, p->dst_pid, p->index);
	int r = nic_pct_table_use(t, key, sim_now(nic->sim), nic->p->pct_idle, nic->p->pct_tct_entries);
	if (r < 0) {
		NIC_C(nic, no_tct_nacks)++;
		nic_count_limit(nic);
		return -1;
	}
	if (r == 1)
		NIC_C(nic, pct_tct_open)++;
	if (t->high > NIC_C(nic, pct_tct_high_water))
		NIC_C(nic, pct_tct_high_water) = t->high;
	return r;
}

/* The slots and FIFO (the table records themselves are part of the NIC record). */
static uint64_t table_bytes(const struct nic_pct_table *t)
{
	return (uint64_t)t->cap * sizeof(*t->slots) + (uint64_t)t->fcap * sizeof(*t->fifo);
}

uint64_t nic_pct_bytes(const struct nic *nic)
{
	return table_bytes(&nic->sct) + table_bytes(&nic->tct);
}

static void table_clear(struct nic_pct_table *t)
{
	free(t->slots);
	free(t->fifo);
	*t = (struct nic_pct_table){ 0 };
}

void nic_pct_table_free(struct nic_pct_table *t)
{
	if (!t)
		return;
	table_clear(t);
	free(t);
}

void nic_pct_free(struct nic *nic)
{
	table_clear(&nic->sct);
	table_clear(&nic->tct);
}
