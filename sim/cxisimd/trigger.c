/* Triggered operations and deferred work of attached processes (FI_TRIGGER, fi_control(FI_QUEUE_WORK)).
 *
 * A process's counters are the daemon's (struct dct, written back into shared memory).  A counter that a
 * triggered operation waits on gets a CT on the NIC of the operation's endpoint, in an LNI the daemon
 * keeps per process and NIC, and its value is mirrored into that CT on every change (ct_add).  The
 * operation itself waits in a trigger list entry of that NIC (sim/nic/trig.c: thresholds, order, release
 * latency, TLE limits); when the NIC releases it, the command runs on its endpoint exactly as if it had
 * come from the endpoint's command queue at that moment (ep_exec).  Counter work (FI_OP_CNTR_SET/ADD)
 * sets or adds to a counter when released.  FI_FLUSH_WORK cancels every entry still held (CT_CANCEL):
 * nothing runs and no completion is written, as upstream frees its flushed requests silently. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "daemon.h"

#define TRIG_MAX_SLOTS 16
/* Upstream cxi keeps TLE_RESERVED (8) of its service's TLEs out of deferred work (cxip_dom.c: dwq depth =
 * the service's TLE reservation less 8, enforced with FI_CXI_ENABLE_TRIG_OP_LIMIT), and sizes its trigger
 * command queue to MAX(dwq depth, 64) commands (cxip_ep.c): the depth of a stalled trigger queue here. */
#define TRIG_TLE_RESERVED 8u
#define TRIG_QUEUE_MIN 64u

struct dtrig {
	struct dtrig *next, *prev;  /* the client's list */
	struct client *c;
	struct dep *ep;             /* TRIG_CMD; NULL once the endpoint closed */
	struct dct *comp_ct, *target_ct; /* held (users) while the entry lives */
	uint32_t kind, flags;
	uint64_t value;
	sim_timer retry;            /* the NIC was full when it was released: tried again */
	uint16_t nslots;
	_Alignas(8) unsigned char cmd[]; /* read as struct cxs_cmd */
};

static void ct_hold(struct dct *ct)
{
	if (ct)
		ct->users++;
}

static void ct_unhold(struct dct *ct)
{
	if (ct && ct->users)
		ct->users--;
}

static void trig_free(struct dtrig *t)
{
	struct client *c = t->c;
	sim_timer_cancel(c->d->sim, &t->retry);
	if (t->prev)
		t->prev->next = t->next;
	else
		c->trigs = t->next;
	if (t->next)
		t->next->prev = t->prev;
	ct_unhold(t->comp_ct);
	ct_unhold(t->target_ct);
	free(t);
}

static void trig_run(struct dtrig *t);

static void trig_retry(struct sim *sim, void *obj, uint64_t arg)
{
	(void)sim;
	(void)arg;
	trig_run(obj);
}

static void trig_run(struct dtrig *t)
{
	switch (t->kind) {
	case TRIG_CMD:
		if (t->ep && ep_exec(t->ep, t->cmd, t->nslots, t->flags & TRIGF_COMP_CT, t->comp_ct) == -EAGAIN) {
			t->retry = sim_timer_start(t->c->d->sim, t->c->d->emu->retry, trig_retry, t, 0);
			return;
		}
		break;
	case TRIG_CNTR_SET:
		atomic_store(&t->target_ct->shm->success, t->value);
		ct_add(t->target_ct, false, 0);
		break;
	case TRIG_CNTR_ADD:
		ct_add(t->target_ct, false, t->value);
		break;
	}
	trig_free(t);
}

/* The NIC released the entry (rc C_RC_OK) or dropped it. */
static void trig_fire(void *ctx, struct nic *nic, uint32_t ctn, uint64_t threshold, int rc)
{
	(void)nic;
	(void)ctn;
	(void)threshold;
	struct dtrig *t = ctx;
	if (rc != C_RC_OK) {
		trig_free(t);
		return;
	}
	trig_run(t);
}

/* The process's LNI on `nic` for its counters' CTs (one per NIC, in the service of the first user). */
static struct nic_lni *client_tlni(struct client *c, struct nic *nic, uint32_t svc_id, int *rc)
{
	for (uint32_t i = 0; i < c->ntlnis; i++)
		if (c->tlnis[i].nic == nic)
			return c->tlnis[i].lni;
	if (c->ntlnis == CXISIM_MAX_NICS_PER_NODE) {
		*rc = -ENOSPC;
		return NULL;
	}
	struct nic_lni *lni;
	*rc = nic_lni_alloc(nic, svc_id, NULL, NULL, &lni);
	if (*rc)
		return NULL;
	c->tlnis[c->ntlnis].nic = nic;
	c->tlnis[c->ntlnis++].lni = lni;
	return lni;
}

/* The counter's CT on lni (allocated at first use; a counter waits on one NIC only). */
static int ct_bind(struct dct *ct, struct nic_lni *lni)
{
	if (ct->tlni)
		return ct->tlni == lni ? 0 : -EINVAL;
	int rc = nic_ct_alloc(lni, NULL, NULL, &ct->ctn);
	if (rc)
		return rc;
	ct->tlni = lni;
	trig_ct_changed(ct);
	return 0;
}

void trig_ct_changed(struct dct *ct)
{
	nic_ct_write(ct->tlni, ct->ctn, atomic_load(&ct->shm->success), (uint32_t)atomic_load(&ct->shm->failure));
}

int trig_queue(struct client *c, const struct ctl_trig_queue_req *req, const unsigned char *cmd, size_t len)
{
	struct daemon *d = c->d;
	struct dct *trig = (struct dct *)client_find(c, req->trig_ct, OBJ_CT);
	struct dct *comp = req->comp_ct ? (struct dct *)client_find(c, req->comp_ct, OBJ_CT) : NULL;
	if (!trig || (req->comp_ct && !comp) || (req->flags & ~(TRIGF_COMP_CT | TRIGF_LIMIT)))
		return -EINVAL;
	struct dep *ep = NULL;
	struct dct *target = NULL;
	struct nic *nic;
	uint32_t svc = NIC_SVC_DEFAULT;
	bool recv = false;
	if (req->kind == TRIG_CMD) {
		ep = (struct dep *)client_find(c, req->ep, OBJ_EP);
		if (!ep || ep->closing || req->nslots == 0 || req->nslots > TRIG_MAX_SLOTS ||
		    len != (size_t)req->nslots * RING_SLOT)
			return -EINVAL;
		struct cxs_cmd h;
		memcpy(&h, cmd, sizeof(h)); /* the request buffer gives no alignment */
		if (h.op != CXS_CMD_SEND && h.op != CXS_CMD_RECV && h.op != CXS_CMD_WRITE && h.op != CXS_CMD_READ &&
		    h.op != CXS_CMD_ATOMIC)
			return -EINVAL;
		nic = ep->nic;
		svc = ep->svc_id;
		recv = h.op == CXS_CMD_RECV;
		if (recv && req->threshold)
			return -EINVAL; /* the provider refuses these first (upstream: threshold 0 only) */
	} else if (req->kind == TRIG_CNTR_SET || req->kind == TRIG_CNTR_ADD) {
		target = (struct dct *)client_find(c, req->target_ct, OBJ_CT);
		if (!target || len || req->nic_index >= d->emu->nics_per_node)
			return -EINVAL;
		nic = nic_get(d->sim, emu_nic_addr(d->emu, c->node, req->nic_index));
		if (!nic)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	int rc;
	struct nic_lni *lni = client_tlni(c, nic, svc, &rc);
	if (!lni)
		return rc;
	rc = ct_bind(trig, lni);
	if (rc)
		return rc;
	/* The service's TLEs less upstream's reserve: the deferred-work budget (and the trigger queue's depth). */
	uint32_t in_use = 0, res = 0;
	nic_svc_rsrc_use(nic, nic_lni_svc(lni), NIC_RSRC_TLE, &in_use, &res);
	uint32_t budget = res > TRIG_TLE_RESERVED ? res - TRIG_TLE_RESERVED : 0;
	if ((req->flags & TRIGF_LIMIT) && in_use + 1 > budget)
		return -ENOSPC;
	struct dtrig *t = xcalloc(1, sizeof(*t) + len);
	t->c = c;
	t->ep = ep;
	t->kind = req->kind;
	t->flags = req->flags;
	t->value = req->value;
	t->comp_ct = comp;
	t->target_ct = target;
	t->nslots = (uint16_t)req->nslots;
	memcpy(t->cmd, cmd, len);
	if (len)
		((struct cxs_cmd *)(void *)t->cmd)->flags &= ~(uint32_t)CXS_F_TRIGGER;
	t->next = c->trigs;
	if (c->trigs)
		c->trigs->prev = t;
	c->trigs = t;
	ct_hold(comp);
	ct_hold(target);
	/* A receive is posted at once: an Append is not an operation a Cassini trigger list can hold, and
	 * upstream takes deferred receives with threshold 0 only, met when queued.  Through the trigger list it
	 * was appended one release latency later, so a receive cancelled right after FI_QUEUE_WORK (no CPU time
	 * between the two at cpu_scale 0) was not there yet and no FI_ECANCELED came (prov_trigger). */
	if (recv) {
		trig_run(t);
		return 0;
	}
	rc = nic_trig_append_stall(lni, trig->ctn, req->threshold, trig_fire, t,
				   budget > TRIG_QUEUE_MIN ? budget : TRIG_QUEUE_MIN);
	if (rc < 0)
		trig_free(t);
	return rc < 0 ? rc : 0;
}

void trig_flush(struct client *c)
{
	for (struct obj *o = c->objs; o; o = o->next) {
		struct dct *ct = (struct dct *)o;
		if (o->kind == OBJ_CT && ct->tlni)
			nic_ct_cancel(ct->tlni, ct->ctn);
	}
}

void trig_ep_closed(struct dep *ep)
{
	for (struct dtrig *t = ep->o.c->trigs; t; t = t->next)
		if (t->ep == ep)
			t->ep = NULL;
}

void trig_ct_free(struct dct *ct)
{
	if (ct->tlni) /* (trig_client_free clears tlni: its LNIs are gone) */
		nic_ct_free(ct->tlni, ct->ctn);
	ct->tlni = NULL;
}

void trig_client_free(struct client *c)
{
	/* Freeing the LNIs drops every entry held (their records go with them), then those retrying. */
	for (uint32_t i = 0; i < c->ntlnis; i++)
		nic_lni_free(c->tlnis[i].lni);
	c->ntlnis = 0;
	while (c->trigs)
		trig_free(c->trigs);
	for (struct obj *o = c->objs; o; o = o->next)
		if (o->kind == OBJ_CT)
			((struct dct *)o)->tlni = NULL;
}
