/* Counting events: a success and a failure count per CT, advanced by the NIC. */
#include <errno.h>
#include <string.h>

#include "../util.h"
#include "nic_impl.h"

int nic_rsrc_get(struct nic_lni *lni, enum nic_rsrc r);
void nic_rsrc_put(struct nic_lni *lni, enum nic_rsrc r);

#define CT_SUCCESS_MASK ((1ULL << 48) - 1)
#define CT_FAILURE_MASK ((1u << 7) - 1)

struct nic_ct *nic_ct_lookup(struct nic *nic, uint32_t ctn)
{
	struct nic_ct *c = nic_table_at(&nic->cts, ctn);
	return c && c->live ? c : NULL;
}
#define ct_lookup nic_ct_lookup

int nic_ct_alloc(struct nic_lni *lni, nic_ct_notify_fn notify, void *ctx, uint32_t *ctn)
{
	if (!lni || !lni->live || !ctn)
		return -EINVAL;
	struct nic *nic = lni->nic;
	uint32_t i;
	for (i = 0; i < nic->cts.n; i++)
		if (!ct_lookup(nic, i))
			break;
	if (i == C_NUM_CTS) {
		nic_count_limit(nic);
		return -ENOSPC;
	}
	int rc = nic_rsrc_get(lni, NIC_RSRC_CT);
	if (rc)
		return rc;
	struct nic_ct *c = nic_table_slot(&nic->cts, i, &nic->rec->ct);
	c->live = true;
	c->lni = lni;
	c->notify = notify;
	c->ctx = ctx;
	c->tles = NULL;
	c->ntles = 0;
	*ctn = i;
	return 0;
}

int nic_ct_free(struct nic_lni *lni, uint32_t ctn)
{
	if (!lni)
		return -EINVAL;
	struct nic_ct *c = ct_lookup(lni->nic, ctn);
	if (!c || c->lni != lni)
		return -ENOENT;
	nic_trig_ct_drop(lni->nic, c);
	nic_rsrc_put(lni, NIC_RSRC_CT);
	c->live = false;
	return 0;
}

void nic_cts_free_lni(struct nic *nic, struct nic_lni *lni)
{
	for (uint32_t i = 0; i < nic->cts.n; i++) {
		struct nic_ct *c = ct_lookup(nic, i);
		if (c && c->lni == lni)
			nic_ct_free(lni, i);
	}
}

int nic_ct_read(struct nic *nic, uint32_t ctn, uint64_t *success, uint32_t *failure)
{
	struct nic_ct *c = ct_lookup(nic, ctn);
	if (!c)
		return -ENOENT;
	if (success)
		*success = c->success;
	if (failure)
		*failure = c->failure;
	return 0;
}

static void ct_changed(struct nic *nic, uint32_t ctn, struct nic_ct *c)
{
	if (c->tles)
		nic_trig_ct_changed(nic, ctn, c);
	if (c->notify)
		c->notify(c->ctx, nic, ctn);
}

void nic_ct_add(struct nic *nic, uint32_t ctn, uint64_t success, uint32_t failure)
{
	struct nic_ct *c = ct_lookup(nic, ctn);
	if (!c)
		return;
	c->success = (c->success + success) & CT_SUCCESS_MASK;
	c->failure = (c->failure + failure) & CT_FAILURE_MASK;
	ct_changed(nic, ctn, c);
}

void nic_ct_set(struct nic *nic, uint32_t ctn, uint64_t success, uint32_t failure)
{
	struct nic_ct *c = ct_lookup(nic, ctn);
	if (!c)
		return;
	c->success = success & CT_SUCCESS_MASK;
	c->failure = failure & CT_FAILURE_MASK;
	ct_changed(nic, ctn, c);
}

int nic_ct_write(struct nic_lni *lni, uint32_t ctn, uint64_t success, uint32_t failure)
{
	if (!lni || !lni->live)
		return -EINVAL;
	struct nic_ct *c = ct_lookup(lni->nic, ctn);
	if (!c || c->lni != lni)
		return -ENOENT;
	nic_ct_set(lni->nic, ctn, success, failure);
	return 0;
}
