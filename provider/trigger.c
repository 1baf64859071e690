/* Triggered operations (FI_TRIGGER) and deferred work (fi_control(FI_QUEUE_WORK / FI_FLUSH_WORK)).
 *
 * A triggered operation is built by the ordinary data path (msg.c, rma.c, atomic.c) into the command it
 * would put on the endpoint's queue; cxip_ep_emit hands it here instead, and it goes to the daemon with
 * CTL_TRIG_QUEUE, which holds it in a trigger list entry of the endpoint's NIC against the counter until
 * the counter reaches the threshold (sim/cxisimd/trigger.c, sim/nic/trig.c).  The trigger comes from the
 * operation's context (struct fi_triggered_context, FI_TRIGGER_THRESHOLD) for calls with FI_TRIGGER (an
 * op flag, or an fi_ep_alias whose op flags carry it), or from the deferred work being queued.  A
 * triggered operation's buffer is read when it fires (no IDC unless FI_INJECT), as on Cassini.
 *
 * Upstream rules kept: counter work takes no completion counter; triggered receives only with threshold
 * 0; every endpoint of the work must use the domain's VNI; FI_MORE is ignored; FI_CANCEL_WORK is
 * -FI_EINVAL (cxip_dom_control has no case for it). */
#include <rdma/fi_trigger.h>

#include "cxip.h"

struct cxip_trig {
	struct cxip_cntr *trig;
	uint64_t threshold;
	struct cxip_cntr *comp;
	bool deferred;
};

/* Deferred work under FI_CXI_ENABLE_TRIG_OP_LIMIT: refused (-FI_ENOSPC) past the service's TLEs less 8. */
static uint32_t work_flags(void)
{
	return TRIGF_COMP_CT | (cxip_env.enable_trig_op_limit ? TRIGF_LIMIT : 0);
}

/* Deferred work being queued by this thread (the data-path call it makes ends in cxip_trig_emit). */
static __thread const struct cxip_trig *trig_pending;

bool cxip_trig_active(void)
{
	return trig_pending != NULL;
}

static struct cxip_cntr *cntr_of(struct fid_cntr *f, struct cxip_domain *dom)
{
	if (!f || f->fid.fclass != FI_CLASS_CNTR)
		return NULL;
	struct cxip_cntr *c = (struct cxip_cntr *)f;
	return c->dom == dom ? c : NULL;
}

ssize_t cxip_trig_emit(struct cxip_ep *ep, struct cxs_cmd *cmd, const void *inline_data, size_t inline_len)
{
	struct cxip_trig t;
	if (trig_pending) {
		t = *trig_pending;
	} else {
		const struct fi_triggered_context *tc = (const void *)(uintptr_t)cmd->context;
		if (!tc)
			return -FI_EINVAL;
		if (tc->event_type != FI_TRIGGER_THRESHOLD)
			return tc->event_type == FI_TRIGGER_XPU ? -FI_EOPNOTSUPP : -FI_EINVAL;
		t = (struct cxip_trig){ .trig = cntr_of(tc->trigger.threshold.cntr, ep->dom),
					.threshold = tc->trigger.threshold.threshold };
		if (!t.trig)
			return -FI_EINVAL;
	}
	if (!(ep->caps & FI_TRIGGER))
		return -FI_EINVAL;
	if (cmd->op == CXS_CMD_RECV && t.threshold)
		return -FI_EINVAL; /* upstream: non-zero thresholds for triggered receives are not supported */
	size_t bytes = sizeof(*cmd) + inline_len;
	uint32_t nslots = (uint32_t)((bytes + RING_SLOT - 1) / RING_SLOT);
	struct {
		struct ctl_trig_queue_req req;
		unsigned char cmd[8 * RING_SLOT];
	} m;
	if (nslots > 8)
		return -FI_EINVAL;
	memset(&m, 0, sizeof(m));
	m.req = (struct ctl_trig_queue_req){ .kind = TRIG_CMD, .ep = ep->id, .trig_ct = t.trig->id,
					     .comp_ct = t.comp ? t.comp->id : 0, .threshold = t.threshold,
					     .flags = t.deferred ? work_flags() : 0, .nslots = nslots };
	cmd->flags &= ~CXS_F_TRIGGER;
	cmd->nslots = (uint16_t)nslots;
	memcpy(m.cmd, cmd, sizeof(*cmd));
	if (inline_len)
		memcpy(m.cmd + sizeof(*cmd), inline_data, inline_len);
	return cxip_dev_call(ep->dom->dev, CTL_TRIG_QUEUE, &m, sizeof(m.req) + (size_t)nslots * RING_SLOT, NULL, 0,
			     NULL, NULL);
}

/* The endpoint named by deferred work: a cxi endpoint (or alias) of this domain on the domain's VNI. */
static struct cxip_ep *work_ep(struct cxip_domain *dom, struct fid_ep *f)
{
	if (!f || f->fid.fclass != FI_CLASS_EP)
		return NULL;
	struct cxip_ep *ep = (struct cxip_ep *)f;
	if (ep->dom != dom || ep->auth_key.vni != dom->auth_key.vni)
		return NULL;
	return ep;
}

static int queue_cntr_work(struct cxip_domain *dom, const struct fi_deferred_work *w, struct cxip_cntr *trig)
{
	struct cxip_cntr *target = w->op.cntr ? cntr_of(w->op.cntr->cntr, dom) : NULL;
	if (!target || w->completion_cntr)
		return -FI_EINVAL;
	struct ctl_trig_queue_req req = { .kind = w->op_type == FI_OP_CNTR_SET ? TRIG_CNTR_SET : TRIG_CNTR_ADD,
					  .trig_ct = trig->id, .threshold = w->threshold, .nic_index = dom->nic_index,
					  .target_ct = target->id, .value = w->op.cntr->value,
					  .flags = work_flags() & ~TRIGF_COMP_CT };
	return cxip_dev_call(dom->dev, CTL_TRIG_QUEUE, &req, sizeof(req), NULL, 0, NULL, NULL);
}

static int queue_work(struct cxip_domain *dom, struct fi_deferred_work *w)
{
	if (!w)
		return -FI_EINVAL;
	struct cxip_cntr *trig = cntr_of(w->triggering_cntr, dom);
	if (!trig)
		return -FI_EINVAL;
	struct cxip_cntr *comp = NULL;
	if (w->completion_cntr && !(comp = cntr_of(w->completion_cntr, dom)))
		return -FI_EINVAL;
	if (w->op_type == FI_OP_CNTR_SET || w->op_type == FI_OP_CNTR_ADD)
		return queue_cntr_work(dom, w, trig);
	struct fid_ep *f = NULL;
	switch (w->op_type) {
	case FI_OP_SEND:
	case FI_OP_RECV: f = w->op.msg ? w->op.msg->ep : NULL; break;
	case FI_OP_TSEND:
	case FI_OP_TRECV: f = w->op.tagged ? w->op.tagged->ep : NULL; break;
	case FI_OP_READ:
	case FI_OP_WRITE: f = w->op.rma ? w->op.rma->ep : NULL; break;
	case FI_OP_ATOMIC: f = w->op.atomic ? w->op.atomic->ep : NULL; break;
	case FI_OP_FETCH_ATOMIC: f = w->op.fetch_atomic ? w->op.fetch_atomic->ep : NULL; break;
	case FI_OP_COMPARE_ATOMIC: f = w->op.compare_atomic ? w->op.compare_atomic->ep : NULL; break;
	default: return -FI_EINVAL;
	}
	if (!work_ep(dom, f))
		return -FI_EINVAL;
	struct cxip_trig t = { .trig = trig, .threshold = w->threshold, .comp = comp, .deferred = true };
	ssize_t ret;
	trig_pending = &t;
	switch (w->op_type) {
	case FI_OP_SEND:
		ret = fi_sendmsg(f, &w->op.msg->msg, w->op.msg->flags & ~FI_MORE);
		break;
	case FI_OP_RECV:
		ret = fi_recvmsg(f, &w->op.msg->msg, w->op.msg->flags & ~FI_MORE);
		break;
	case FI_OP_TSEND:
		ret = fi_tsendmsg(f, &w->op.tagged->msg, w->op.tagged->flags & ~FI_MORE);
		break;
	case FI_OP_TRECV:
		ret = fi_trecvmsg(f, &w->op.tagged->msg, w->op.tagged->flags & ~FI_MORE);
		break;
	case FI_OP_READ:
		ret = fi_readmsg(f, &w->op.rma->msg, w->op.rma->flags & ~FI_MORE);
		break;
	case FI_OP_WRITE:
		ret = fi_writemsg(f, &w->op.rma->msg, w->op.rma->flags & ~FI_MORE);
		break;
	case FI_OP_ATOMIC:
		ret = fi_atomicmsg(f, &w->op.atomic->msg, w->op.atomic->flags & ~FI_MORE);
		break;
	case FI_OP_FETCH_ATOMIC: {
		struct fi_op_fetch_atomic *a = w->op.fetch_atomic;
		ret = fi_fetch_atomicmsg(f, &a->msg, a->fetch.msg_iov, a->fetch.desc, a->fetch.iov_count,
					 a->flags & ~FI_MORE);
		break;
	}
	default: {
		struct fi_op_compare_atomic *a = w->op.compare_atomic;
		ret = fi_compare_atomicmsg(f, &a->msg, a->compare.msg_iov, a->compare.desc, a->compare.iov_count,
					   a->fetch.msg_iov, a->fetch.desc, a->fetch.iov_count, a->flags & ~FI_MORE);
		break;
	}
	}
	trig_pending = NULL;
	return (int)ret;
}

int cxip_dom_trig_control(struct cxip_domain *dom, int command, void *arg)
{
	switch (command) {
	case FI_QUEUE_WORK:
		return queue_work(dom, arg);
	case FI_FLUSH_WORK:
		return cxip_dev_call(dom->dev, CTL_TRIG_FLUSH, NULL, 0, NULL, 0, NULL, NULL);
	default: /* FI_CANCEL_WORK, as upstream */
		return -FI_EINVAL;
	}
}
