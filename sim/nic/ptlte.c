/* Portal table entries: allocation, the (VNI, pid, index) mapping table the NIC consults for every
 * incoming packet, the four LE lists, and status reads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

int nic_rsrc_get(struct nic_lni *lni, enum nic_rsrc r);
void nic_rsrc_put(struct nic_lni *lni, enum nic_rsrc r);
bool nic_svc_vni_ok(struct nic *nic, uint32_t svc_id, uint16_t vni);
uint8_t nic_svc_le_pool(struct nic *nic, uint32_t svc_id);

/* ---------------------------------------------------------------- open-addressing maps */

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

/* Keys are never 0 (0 marks an empty slot); deleted slots are re-packed (backward shift). */
static uint32_t *map_find(uint64_t *keys, uint32_t *vals, uint32_t cap, uint64_t key)
{
	if (!cap)
		return NULL;
	for (uint32_t i = (uint32_t)(mix(key) & (cap - 1));; i = (i + 1) & (cap - 1)) {
		if (keys[i] == key)
			return &vals[i];
		if (!keys[i])
			return NULL;
	}
}

static void map_insert(uint64_t **keys, uint32_t **vals, uint32_t *cap, uint32_t *n, uint64_t key, uint32_t val);

static void map_grow(uint64_t **keys, uint32_t **vals, uint32_t *cap, uint32_t *n)
{
	uint32_t ocap = *cap;
	uint64_t *ok = *keys;
	uint32_t *ov = *vals;
	*cap = ocap ? ocap * 2 : 16;
	*keys = xcalloc(*cap, sizeof(**keys));
	*vals = xcalloc(*cap, sizeof(**vals));
	*n = 0;
	for (uint32_t i = 0; i < ocap; i++)
		if (ok[i])
			map_insert(keys, vals, cap, n, ok[i], ov[i]);
	free(ok);
	free(ov);
}

static void map_insert(uint64_t **keys, uint32_t **vals, uint32_t *cap, uint32_t *n, uint64_t key, uint32_t val)
{
	if ((*n + 1) * 2 > *cap)
		map_grow(keys, vals, cap, n);
	uint32_t i = (uint32_t)(mix(key) & (*cap - 1));
	while ((*keys)[i])
		i = (i + 1) & (*cap - 1);
	(*keys)[i] = key;
	(*vals)[i] = val;
	(*n)++;
}

static void map_delete(uint64_t *keys, uint32_t *vals, uint32_t cap, uint32_t *n, uint64_t key)
{
	uint32_t i = (uint32_t)(mix(key) & (cap - 1));
	while (keys[i] != key) {
		if (!keys[i])
			return;
		i = (i + 1) & (cap - 1);
	}
	keys[i] = 0;
	(*n)--;
	/* Re-insert the rest of the cluster so lookups never stop early. */
	for (uint32_t j = (i + 1) & (cap - 1); keys[j]; j = (j + 1) & (cap - 1)) {
		uint64_t k = keys[j];
		uint32_t v = vals[j];
		keys[j] = 0;
		uint32_t h = (uint32_t)(mix(k) & (cap - 1));
		while (keys[h])
			h = (h + 1) & (cap - 1);
		keys[h] = k;
		vals[h] = v;
	}
}

static uint64_t map_key(uint16_t vni, uint32_t pid, uint32_t index)
{
	return (((uint64_t)vni << 17) | ((uint64_t)pid << 8) | index) + 1;
}

/* ---------------------------------------------------------------- lists */

void nic_le_list_append(struct nic_le_list *l, struct nic_le *le)
{
	le->next = NULL;
	le->prev = l->tail;
	if (l->tail)
		l->tail->next = le;
	else
		l->head = le;
	l->tail = le;
	l->count++;
	if (l->ix)
		nic_le_index_added(l, le);
}

void nic_le_list_remove(struct nic_le_list *l, struct nic_le *le)
{
	if (le->prev)
		le->prev->next = le->next;
	else
		l->head = le->next;
	if (le->next)
		le->next->prev = le->prev;
	else
		l->tail = le->prev;
	le->next = le->prev = NULL;
	l->count--;
	if (l->ix)
		nic_le_index_removed(l, le);
	if (!l->count)
		l->ix_off = false;
}

/* Free an LE that is on no list, returning its pool entry. */
void nic_le_free(struct nic *nic, struct nic_le *le)
{
	nic_le_release(nic, le->pte);
	pool_put(le->ule ? &nic->rec->pkt_ule : &nic->rec->le_work, le);
}

/* ---------------------------------------------------------------- PtlTEs */

struct nic_pte *nic_pte_lookup(struct nic *nic, uint32_t ptn)
{
	struct nic_pte *p = nic_table_at(&nic->ptes, ptn);
	return p && p->live ? p : NULL;
}

int nic_pte_alloc(struct nic_lni *lni, uint32_t eqn, const struct nic_pte_opts *opts, uint32_t *ptn)
{
	if (!lni || !lni->live || !opts || !ptn)
		return -EINVAL;
	struct nic *nic = lni->nic;
	struct nic_eq *eq = nic_eq_lookup(nic, eqn);
	if (!eq || eq->lni != lni)
		return -EINVAL;
	uint32_t i;
	for (i = 0; i < nic->ptes.n; i++)
		if (!nic_pte_lookup(nic, i))
			break;
	if (i == C_NUM_PTLTES) {
		nic_count_limit(nic);
		return -ENOSPC;
	}
	int rc = nic_rsrc_get(lni, NIC_RSRC_PTLTE);
	if (rc)
		return rc;
	struct nic_pte *p = nic_table_slot(&nic->ptes, i, &nic->rec->pte);
	p->live = true;
	p->ptn = i;
	p->lni = lni;
	p->eqn = eqn;
	p->opts = *opts;
	p->state = C_PTLTE_DISABLED;
	p->pe = (uint8_t)(i % C_PE_COUNT);
	p->pool = (uint16_t)(p->pe * C_LE_POOLS_PER_PE + nic_svc_le_pool(nic, lni->svc_id));
	eq->refs++;
	*ptn = i;
	return 0;
}

static void pte_drop_maps(struct nic *nic, struct nic_pte *p)
{
	if (!p->nmaps)
		return;
	for (uint32_t i = 0; i < nic->map_cap && p->nmaps;) {
		if (nic->map_keys[i] && nic->map_vals[i] == p->ptn) {
			uint16_t vni = (uint16_t)((nic->map_keys[i] - 1) >> 17);
			map_delete(nic->map_keys, nic->map_vals, nic->map_cap, &nic->map_n, nic->map_keys[i]);
			uint32_t *cnt = map_find(nic->vni_keys, nic->vni_counts, nic->vni_cap, (uint64_t)vni + 1);
			if (cnt && --*cnt == 0)
				map_delete(nic->vni_keys, nic->vni_counts, nic->vni_cap, &nic->vni_n, (uint64_t)vni + 1);
			p->nmaps--;
			continue; /* the slot may now hold a shifted entry */
		}
		i++;
	}
}

static void pte_release(struct nic *nic, struct nic_pte *p)
{
	pte_drop_maps(nic, p);
	for (unsigned l = 0; l < 4; l++) {
		while (p->lists[l].head) {
			struct nic_le *le = p->lists[l].head;
			nic_le_list_remove(&p->lists[l], le);
			nic_le_free(nic, le);
		}
	}
	struct nic_eq *eq = nic_eq_lookup(nic, p->eqn);
	if (eq && eq->refs)
		eq->refs--;
	nic_rsrc_put(p->lni, NIC_RSRC_PTLTE);
	p->live = false;
}

int nic_pte_free(struct nic_lni *lni, uint32_t ptn)
{
	if (!lni)
		return -EINVAL;
	struct nic_pte *p = nic_pte_lookup(lni->nic, ptn);
	if (!p || p->lni != lni)
		return -ENOENT;
	pte_release(lni->nic, p);
	return 0;
}

void nic_ptes_free_lni(struct nic *nic, struct nic_lni *lni)
{
	for (uint32_t i = 0; i < nic->ptes.n; i++) {
		struct nic_pte *p = nic_pte_lookup(nic, i);
		if (p && p->lni == lni)
			pte_release(nic, p);
	}
}

int nic_pte_map(struct nic_lni *lni, uint32_t ptn, uint16_t vni, uint32_t pid, uint32_t index)
{
	if (!lni || pid >= C_PID_ANY || index >= C_PID_GRANULE)
		return -EINVAL;
	struct nic *nic = lni->nic;
	struct nic_pte *p = nic_pte_lookup(nic, ptn);
	if (!p || p->lni != lni)
		return -ENOENT;
	if (!nic_svc_vni_ok(nic, lni->svc_id, vni))
		return -EPERM;
	uint64_t key = map_key(vni, pid, index);
	if (map_find(nic->map_keys, nic->map_vals, nic->map_cap, key))
		return -EADDRINUSE;
	map_insert(&nic->map_keys, &nic->map_vals, &nic->map_cap, &nic->map_n, key, ptn);
	uint32_t *cnt = map_find(nic->vni_keys, nic->vni_counts, nic->vni_cap, (uint64_t)vni + 1);
	if (cnt)
		(*cnt)++;
	else
		map_insert(&nic->vni_keys, &nic->vni_counts, &nic->vni_cap, &nic->vni_n, (uint64_t)vni + 1, 1);
	p->nmaps++;
	return 0;
}

int nic_pte_unmap(struct nic_lni *lni, uint32_t ptn, uint16_t vni, uint32_t pid, uint32_t index)
{
	if (!lni)
		return -EINVAL;
	struct nic *nic = lni->nic;
	struct nic_pte *p = nic_pte_lookup(nic, ptn);
	if (!p || p->lni != lni)
		return -ENOENT;
	uint64_t key = map_key(vni, pid, index);
	uint32_t *v = map_find(nic->map_keys, nic->map_vals, nic->map_cap, key);
	if (!v || *v != ptn)
		return -ENOENT;
	map_delete(nic->map_keys, nic->map_vals, nic->map_cap, &nic->map_n, key);
	uint32_t *cnt = map_find(nic->vni_keys, nic->vni_counts, nic->vni_cap, (uint64_t)vni + 1);
	if (cnt && --*cnt == 0)
		map_delete(nic->vni_keys, nic->vni_counts, nic->vni_cap, &nic->vni_n, (uint64_t)vni + 1);
	p->nmaps--;
	return 0;
}

void nic_pte_resolve_prefetch(const struct nic *nic, uint16_t vni, uint32_t pid, uint32_t index, unsigned stage)
{
	if (!nic->map_cap)
		return;
	uint64_t key = map_key(vni, pid, index);
	uint32_t i = (uint32_t)(mix(key) & (nic->map_cap - 1));
	if (stage == 0) {
		__builtin_prefetch(&nic->map_keys[i]);
		__builtin_prefetch(&nic->map_vals[i]);
		__builtin_prefetch(&nic->ptes);
		return;
	}
	/* Only the first probe: a key that collided is rare and its PtlTE is found the slow way. */
	if (nic->map_keys[i] != key || nic->map_vals[i] >= nic->ptes.n)
		return;
	if (stage == 1)
		__builtin_prefetch(&nic->ptes.rec[nic->map_vals[i]]);
	else
		__builtin_prefetch(nic->ptes.rec[nic->map_vals[i]]);
}

struct nic_pte *nic_pte_resolve(struct nic *nic, uint16_t vni, uint32_t pid, uint32_t index, bool loopback,
				uint8_t *rc)
{
	uint32_t *v = map_find(nic->map_keys, nic->map_vals, nic->map_cap, map_key(vni, pid, index));
	if (v) {
		struct nic_pte *p = nic_pte_lookup(nic, *v);
		if (p)
			return p;
	}
	/* A VNI this NIC has no endpoint for is refused at the door; loopback traffic never crosses the
	 * VNI check and only finds no PtlTE. */
	if (!loopback && !map_find(nic->vni_keys, nic->vni_counts, nic->vni_cap, (uint64_t)vni + 1))
		*rc = C_RC_VNI_NOT_FOUND;
	else
		*rc = C_RC_PTLTE_NOT_FOUND;
	return NULL;
}

int nic_pte_status(struct nic *nic, uint32_t ptn, struct nic_pte_status *st)
{
	struct nic_pte *p = nic ? nic_pte_lookup(nic, ptn) : NULL;
	if (!p || !st)
		return -ENOENT;
	st->state = p->state;
	st->pe = p->pe;
	st->le_pool = p->pool;
	st->drop_count = p->drop_count;
	st->ule_count = p->lists[C_PTL_LIST_UNEXPECTED].count;
	st->le_indexed = 0;
	for (unsigned l = 0; l < 4; l++) {
		st->le_count[l] = p->lists[l].count;
		if (p->lists[l].ix)
			st->le_indexed |= (uint8_t)(1u << l);
	}
	return 0;
}

size_t nic_pte_ule_offsets(struct nic *nic, uint32_t ptn, uint64_t *offsets, size_t max)
{
	struct nic_pte *p = nic ? nic_pte_lookup(nic, ptn) : NULL;
	if (!p)
		return 0;
	size_t n = 0;
	for (struct nic_le *le = p->lists[C_PTL_LIST_UNEXPECTED].head; le; le = le->next, n++)
		if (n < max)
			offsets[n] = le->remote_offset;
	return n;
}

int nic_pte_transition_sm(struct nic_lni *lni, uint32_t ptn, uint32_t drop_count)
{
	if (!lni)
		return -EINVAL;
	struct nic *nic = lni->nic;
	struct nic_pte *p = nic_pte_lookup(nic, ptn);
	if (!p || p->lni != lni)
		return -ENOENT;
	if (p->state != C_PTLTE_DISABLED)
		return -EINVAL;
	if (drop_count != NIC_IGNORE_DROPS && drop_count != p->drop_count)
		return -EAGAIN;
	p->state = C_PTLTE_SOFTWARE_MANAGED;
	p->drop_count = 0;
	struct nic_event ev = { 0 };
	ev.type = C_EVENT_STATE_CHANGE;
	ev.rc = C_RC_OK;
	ev.ptlte_index = (uint16_t)ptn;
	ev.sc.state = C_PTLTE_SOFTWARE_MANAGED;
	ev.sc.reason = C_SC_NONE;
	ev.pe = p->pe;
	nic_eq_post(nic, p->eqn, &ev, 0, true);
	return 0;
}

int nic_pte_set_access_hook(struct nic *nic, uint32_t ptn, nic_access_fn fn, void *ctx)
{
	struct nic_pte *p = nic ? nic_pte_lookup(nic, ptn) : NULL;
	if (!p)
		return -ENOENT;
	p->access_fn = fn;
	p->access_ctx = ctx;
	return 0;
}
