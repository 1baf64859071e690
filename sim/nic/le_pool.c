/* LE pools: 4 processing engines (PEs) of 16,384 list entries, 16 pools per PE (index pe * 16 + pool).
 *
 * A pool may always grow up to its reservation; beyond that it competes for the PE's shared remainder
 * (LEs not reserved by any pool), and never beyond its max_alloc.  Every LE of a PtlTE (posted receives,
 * overflow and request buffers, MRs, and unexpected-header entries) is charged to the pool of the owning
 * service on the PtlTE's PE.  A refusal is a "limit hit": counted per pool and in sim.limit_hits. */
#include <stdio.h>

#include "../timeseries.h"
#include "../util.h"
#include "nic_impl.h"

static void pool_defaults(const struct nic *nic, struct nic_le_pool *pl)
{
	*pl = (struct nic_le_pool){ .max_alloc = nic->p->le_pool_max_alloc, .reserved = nic->p->le_pool_reserved };
}

struct nic_le_pool *nic_le_pool(struct nic *nic, unsigned index)
{
	if (nic->pool_at[index])
		return &nic->pools[nic->pool_at[index] - 1];
	if (nic->npools == nic->pools_cap) {
		nic->pools_cap = nic->pools_cap ? (uint8_t)(2 * nic->pools_cap) : 4;
		nic->pools = xrealloc(nic->pools, nic->pools_cap * sizeof(*nic->pools));
	}
	struct nic_le_pool *pl = &nic->pools[nic->npools++];
	pool_defaults(nic, pl);
	nic->pool_at[index] = nic->npools;
	return pl;
}

const struct nic_le_pool *nic_le_pool_peek(const struct nic *nic, unsigned index, struct nic_le_pool *tmp)
{
	if (nic->pool_at[index])
		return &nic->pools[nic->pool_at[index] - 1];
	pool_defaults(nic, tmp);
	return tmp;
}

static uint32_t pe_shared_capacity(const struct nic *nic, unsigned pe)
{
	uint32_t reserved = 0;
	struct nic_le_pool tmp;
	for (unsigned k = 0; k < C_LE_POOLS_PER_PE; k++)
		reserved += nic_le_pool_peek(nic, pe * C_LE_POOLS_PER_PE + k, &tmp)->reserved;
	return reserved >= nic->p->pe_les ? 0 : nic->p->pe_les - reserved;
}

bool nic_le_alloc(struct nic *nic, struct nic_pte *pte)
{
	struct nic_le_pool *pl = nic_le_pool(nic, pte->pool);
	struct nic_pe *pe = &nic->pe[pte->pe];
	bool shared = pl->used >= pl->reserved;
	if (pl->used >= pl->max_alloc || pe->used >= nic->p->pe_les ||
	    (shared && pe->shared_used >= pe_shared_capacity(nic, pte->pe))) {
		pl->alloc_fail++;
		if (nic->cv)
			nic->cv[nic_cix.le_pool_fail + pte->pool]++;
		nic_count_limit(nic);
		return false;
	}
	pl->used++;
	pe->used++;
	if (shared)
		pe->shared_used++;
	if (pl->used > pl->high_water)
		pl->high_water = pl->used;
	if (pl->ts_used)
		*pl->ts_used = pl->used;
	return true;
}

void nic_le_release(struct nic *nic, struct nic_pte *pte)
{
	struct nic_le_pool *pl = nic_le_pool(nic, pte->pool);
	struct nic_pe *pe = &nic->pe[pte->pe];
	if (!pl->used)
		die("nic %u: LE pool %u released below zero", nic->addr, pte->pool);
	if (pl->used > pl->reserved)
		pe->shared_used--;
	pl->used--;
	pe->used--;
	if (pl->ts_used)
		*pl->ts_used = pl->used;
}

int nic_le_pool_status(struct nic *nic, unsigned pool_index, struct nic_le_pool_status *st)
{
	if (!nic || pool_index >= C_LE_POOLS || !st)
		return -1;
	struct nic_le_pool tmp;
	const struct nic_le_pool *pl = nic_le_pool_peek(nic, pool_index, &tmp);
	st->used = pl->used;
	st->reserved = pl->reserved;
	st->max_alloc = pl->max_alloc;
	st->high_water = pl->high_water;
	st->alloc_fail = pl->alloc_fail;
	return 0;
}

uint32_t nic_pe_le_used(struct nic *nic, unsigned pe)
{
	return pe < C_PE_COUNT ? nic->pe[pe].used : 0;
}

/* Timeseries columns "nic.<addr>.le_pool.<index>.used" for one NIC's pools that a service uses. */
void nic_le_pools_timeseries(struct nic *nic, const uint8_t *svc_pools, unsigned nsvc_pools);
void nic_le_pools_timeseries(struct nic *nic, const uint8_t *svc_pools, unsigned nsvc_pools)
{
	for (unsigned pe = 0; pe < C_PE_COUNT; pe++) {
		for (unsigned k = 0; k < nsvc_pools; k++) {
			unsigned idx = pe * C_LE_POOLS_PER_PE + svc_pools[k];
			struct nic_le_pool *pl = nic_le_pool(nic, idx);
			if (pl->ts_used)
				continue;
			pl->ts_used = stats_counter(sim_stats(nic->sim), "nic.%u.le_pool.%u.used", nic->addr, idx);
			char col[64];
			snprintf(col, sizeof(col), "nic.%u.le_pool.%u.used", nic->addr, idx);
			ts_register(nic->sim, col, pl->ts_used);
		}
	}
}
