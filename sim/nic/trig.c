/* The trigger list: triggered commands held against a CT until its success count reaches their threshold
 * (nic.h "Triggered operations").  Each held entry (TLE) sits on its CT's list, sorted by threshold and, for
 * equal thresholds, by the order it was queued.  When the count changes, every entry whose threshold it has
 * reached leaves the list in that order for the trigger engine, which releases one entry per
 * trig_release_ns: a hardware command goes to the transmit engine, a software continuation is called. */
#include <errno.h>
#include <stdlib.h>

#include "../util.h"
#include "nic_impl.h"

int nic_rsrc_get(struct nic_lni *lni, enum nic_rsrc r);
void nic_rsrc_put(struct nic_lni *lni, enum nic_rsrc r);

struct nic_tle {
	struct nic_tle *next;     /* on its CT's list */
	uint64_t threshold;
	uint64_t seq;             /* order queued on the NIC */
	uint32_t ctn;
	struct nic_lni *lni;      /* charged to its service */
	struct nic_work *w;       /* hardware command (NULL: software continuation) */
	nic_trig_fn fn;
	void *ctx;
};

/* An entry of a stalled trigger queue: waits for a TLE. */
struct nic_tle_wait {
	struct nic_tle_wait *next;
	uint32_t ctn;
	uint64_t threshold;
	nic_trig_fn fn;
	void *ctx;
};

static void stall_admit(struct nic *nic);

struct nic_tle *nic_tle_take(struct nic_lni *lni, uint32_t ctn, uint64_t threshold, int *rc)
{
	struct nic *nic = lni->nic;
	struct nic_ct *c = nic_ct_lookup(nic, ctn);
	if (!c || c->lni != lni) {
		*rc = -ENOENT;
		return NULL;
	}
	if (threshold >= (1ULL << 48)) { /* the CT's success count is 48 bits (c_ct_cmd.threshold) */
		*rc = -EINVAL;
		return NULL;
	}
	if (nic->tles_used >= nic->p->tles) {
		nic_count_limit(nic);
		*rc = -ENOSPC;
		return NULL;
	}
	*rc = nic_rsrc_get(lni, NIC_RSRC_TLE);
	if (*rc)
		return NULL;
	struct nic_tle *t = xcalloc(1, sizeof(*t));
	t->threshold = threshold;
	t->ctn = ctn;
	t->lni = lni;
	nic->tles_used++;
	if (nic->active && nic->tles_used > NIC_C(nic, tle_high_water))
		NIC_C(nic, tle_high_water) = nic->tles_used;
	return t;
}

void nic_tle_give_back(struct nic *nic, struct nic_tle *t)
{
	nic_rsrc_put(t->lni, NIC_RSRC_TLE);
	nic->tles_used--;
	if (t->w) {
		nic_payload_free(t->w->idc);
		pool_put(&nic->rec->le_work, t->w);
	}
	free(t);
	if (nic->tles_stalled)
		stall_admit(nic);
}

static void tle_drop(struct nic *nic, struct nic_tle *t)
{
	NIC_C(nic, trig_canceled)++;
	if (t->fn)
		t->fn(t->ctx, nic, t->ctn, t->threshold, C_RC_CANCELED);
	nic_tle_give_back(nic, t);
}

static void tle_release(struct sim *sim, void *obj, uint64_t arg)
{
	struct nic_tle *t = obj;
	struct nic *nic = t->lni->nic;
	(void)sim;
	(void)arg;
	if (!t->lni->live) { /* its LNI was freed while the entry was being released: dropped, no call */
		t->fn = NULL;
		tle_drop(nic, t);
		return;
	}
	NIC_C(nic, trig_cmds)++;
	if (t->w) {
		struct nic_work *w = t->w;
		t->w = NULL;
		nic_tx_submit(nic, w);
	} else {
		t->fn(t->ctx, nic, t->ctn, t->threshold, C_RC_OK);
	}
	nic_tle_give_back(nic, t);
}

/* To the trigger engine: released after the entries before it, trig_release_ns each. */
static void tle_fire(struct nic *nic, struct nic_tle *t)
{
	simtime_t now = sim_now(nic->sim);
	simtime_t at = (now > nic->trig_free ? now : nic->trig_free) + nic->p->trig_release;
	nic->trig_free = at;
	sim_schedule_at(nic->sim, at, tle_release, t, 0);
}

void nic_trig_ct_changed(struct nic *nic, uint32_t ctn, struct nic_ct *c)
{
	(void)ctn;
	while (c->tles && c->tles->threshold <= c->success) {
		struct nic_tle *t = c->tles;
		c->tles = t->next;
		c->ntles--;
		tle_fire(nic, t);
	}
}

/* Drop the stalled entries waiting on CT c (with a call, as held ones). */
static void stall_drop_ct(struct nic *nic, struct nic_ct *c)
{
	struct nic_lni *lni = c->lni;
	if (!lni || !lni->stalled)
		return;
	struct nic_tle_wait **pp = &lni->stall_head;
	while (*pp) {
		struct nic_tle_wait *w = *pp;
		if (nic_ct_lookup(nic, w->ctn) != c) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		lni->stalled--;
		nic->tles_stalled--;
		NIC_C(nic, trig_canceled)++;
		w->fn(w->ctx, nic, w->ctn, w->threshold, C_RC_CANCELED);
		free(w);
	}
	lni->stall_tail = pp;
	while (*lni->stall_tail)
		lni->stall_tail = &(*lni->stall_tail)->next;
}

void nic_trig_ct_drop(struct nic *nic, struct nic_ct *c)
{
	stall_drop_ct(nic, c);
	while (c->tles) {
		struct nic_tle *t = c->tles;
		c->tles = t->next;
		c->ntles--;
		tle_drop(nic, t);
	}
}

void nic_tle_hold(struct nic *nic, struct nic_tle *t, struct nic_work *w)
{
	t->w = w;
	t->seq = nic->tle_seq++;
	struct nic_ct *c = nic_ct_lookup(nic, t->ctn);
	if (!c || c->lni != t->lni) { /* freed between emit and fetch */
		tle_drop(nic, t);
		return;
	}
	/* Every entry on the list waits for a count above the current one: a reached threshold goes now. */
	if (c->success >= t->threshold) {
		tle_fire(nic, t);
		return;
	}
	/* Behind every entry of a lower or equal threshold (the list is released from its head). */
	struct nic_tle **pp = &c->tles;
	while (*pp && (*pp)->threshold <= t->threshold)
		pp = &(*pp)->next;
	t->next = *pp;
	*pp = t;
	c->ntles++;
}

int nic_trig_append(struct nic_lni *lni, uint32_t ctn, uint64_t threshold, nic_trig_fn fn, void *ctx)
{
	if (!lni || !lni->live || !fn)
		return -EINVAL;
	int rc;
	struct nic_tle *t = nic_tle_take(lni, ctn, threshold, &rc);
	if (!t)
		return rc;
	t->fn = fn;
	t->ctx = ctx;
	nic_tle_hold(lni->nic, t, NULL);
	return 0;
}

/* The head of each stalled queue takes a TLE while there is one (an LNI whose service is at its limit
 * stays stalled; the others go on). */
static void stall_admit(struct nic *nic)
{
	for (uint32_t i = 0; i < nic->nlnis && nic->tles_stalled; i++) {
		struct nic_lni *lni = nic->lnis[i];
		while (lni->live && lni->stall_head && nic->tles_used < nic->p->tles) {
			struct nic_tle_wait *w = lni->stall_head;
			int rc;
			struct nic_tle *t = nic_tle_take(lni, w->ctn, w->threshold, &rc);
			if (!t && rc == -ENOSPC)
				break;
			lni->stall_head = w->next;
			if (!lni->stall_head)
				lni->stall_tail = &lni->stall_head;
			lni->stalled--;
			nic->tles_stalled--;
			if (!t) { /* (its CT is gone: cannot happen, freeing a CT drops its stalled entries) */
				w->fn(w->ctx, nic, w->ctn, w->threshold, C_RC_CANCELED);
			} else {
				t->fn = w->fn;
				t->ctx = w->ctx;
				nic_tle_hold(nic, t, NULL);
			}
			free(w);
		}
	}
}

int nic_trig_append_stall(struct nic_lni *lni, uint32_t ctn, uint64_t threshold, nic_trig_fn fn, void *ctx,
			  uint32_t max_stalled)
{
	if (!lni || !lni->live || !fn)
		return -EINVAL;
	struct nic *nic = lni->nic;
	struct nic_ct *c = nic_ct_lookup(nic, ctn);
	if (!c || c->lni != lni)
		return -ENOENT;
	if (threshold >= (1ULL << 48))
		return -EINVAL;
	if (!lni->stalled) { /* nothing ahead of it in the queue */
		int rc = nic_trig_append(lni, ctn, threshold, fn, ctx);
		if (rc != -ENOSPC)
			return rc;
	}
	if (lni->stalled >= max_stalled)
		return -EAGAIN;
	struct nic_tle_wait *w = xcalloc(1, sizeof(*w));
	*w = (struct nic_tle_wait){ .ctn = ctn, .threshold = threshold, .fn = fn, .ctx = ctx };
	if (!lni->stall_tail)
		lni->stall_tail = &lni->stall_head;
	*lni->stall_tail = w;
	lni->stall_tail = &w->next;
	lni->stalled++;
	nic->tles_stalled++;
	return 1;
}

uint32_t nic_lni_tles_stalled(const struct nic_lni *lni)
{
	return lni ? lni->stalled : 0;
}

int nic_ct_cancel(struct nic_lni *lni, uint32_t ctn)
{
	if (!lni || !lni->live)
		return -EINVAL;
	struct nic_ct *c = nic_ct_lookup(lni->nic, ctn);
	if (!c || c->lni != lni)
		return -ENOENT;
	int n = (int)c->ntles;
	for (struct nic_tle_wait *w = lni->stall_head; w; w = w->next)
		n += nic_ct_lookup(lni->nic, w->ctn) == c;
	nic_trig_ct_drop(lni->nic, c);
	return n;
}

uint32_t nic_ct_tles(struct nic *nic, uint32_t ctn)
{
	struct nic_ct *c = nic_ct_lookup(nic, ctn);
	return c ? c->ntles : 0;
}

uint32_t nic_tles_used(struct nic *nic)
{
	return nic->tles_used;
}
