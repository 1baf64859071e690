/* The RDM endpoint: bindings, enable (which opens the endpoint's command queue and asks the daemon for a
 * pid on the NIC with its PtlTEs), naming, options (fi_setopt, fi_control/fi_set_val with upstream
 * numbers), and the command emission shared by the data paths in msg.c and rma.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cxip.h"

/* ---- command emission ---- */

ssize_t cxip_ep_emit(struct cxip_ep *ep, struct cxs_cmd *cmd, const void *inline_data, size_t inline_len)
{
	if (ep->alias_of)
		ep = ep->alias_of;
	if ((cmd->flags & CXS_F_TRIGGER) || cxip_trig_active())
		return cxip_trig_emit(ep, cmd, inline_data, inline_len);
	struct cxip_dev *dev = ep->dom->dev;
	if (cxip_dev_dead(dev))
		return -FI_EIO;
	/* Virtual mode: the application's span ends here (cxip_vt_stamp below reads no clock again); then the
	 * host mapping of the command's buffer, which upstream makes before it emits the command. */
	if (dev->virt) {
		cxip_vt_enter(dev);
		cxip_iomm_data_path(ep->dom, cmd);
	}
	int tslot = cxip_dev_thread_slot(dev);
	cmd->tslot = (uint16_t)(tslot >= 0 ? tslot : CXISIM_MAX_THREADS - 1);
	cmd->vt = 0; /* realtime mode: the daemon stamps commands */
	size_t bytes = sizeof(*cmd) + inline_len;
	pthread_mutex_lock(&ep->lock);
	/* Virtual mode: the command takes effect at the thread's virtual time.  Until it is in the queue the
	 * daemon must not let time pass this stamp (the stall rule skips an emitting thread). */
	_Atomic uint32_t *emitting = dev->virt ? cxip_vt_emitting(dev) : NULL;
	if (emitting) {
		atomic_store(emitting, 1);
		cmd->vt = cxip_vt_stamp(dev, &ep->last_stamp);
	}
	uint16_t ns;
	void *slot = ring_reserve(&ep->cmdq.ring, bytes, &ns);
	if (!slot) {
		pthread_mutex_unlock(&ep->lock);
		if (emitting)
			atomic_store(emitting, 0);
		/* The NIC has not fetched yet: in virtual time the thread waits a command fetch before its retry
		 * (else a retry loop with CPU time free would hold virtual time forever). */
		if (dev->virt) {
			cxip_vt_idle(dev, PCB_WAIT_NONE, cmd->vt + dev->pcb->retry_ps, NULL, NULL);
			cxip_vt_rebase(dev);
		}
		return -FI_EAGAIN;
	}
	cmd->nslots = ns;
	memcpy(slot, cmd, sizeof(*cmd));
	if (inline_len)
		memcpy((char *)slot + sizeof(*cmd), inline_data, inline_len);
	ring_publish(&ep->cmdq.ring, ns);
	bool bell = ring_need_doorbell(&ep->cmdq.ring);
	pthread_mutex_unlock(&ep->lock);
	if (emitting)
		atomic_store(emitting, 0);
	if (bell) {
		uint64_t one = 1;
		if (write(ep->cmdq.efd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN) {
			if (dev->virt)
				cxip_vt_rebase(dev);
			return -FI_EIO;
		}
	}
	if (dev->virt)
		cxip_vt_rebase(dev);
	return 0;
}

/* ---- argument helpers of the data paths (msg.c, rma.c) ---- */

int cxip_ep_cmd_peer(struct cxip_ep *ep, fi_addr_t dest, struct cxs_cmd *cmd)
{
	struct cxip_addr a;
	uint16_t vni = 0;
	if (dest == FI_ADDR_UNSPEC || dest == FI_ADDR_NOTAVAIL)
		return -FI_EINVAL;
	int ret = cxip_av_lookup_addr(ep->av, dest, &a, &vni);
	if (ret)
		return ret;
	cmd->peer = ((uint32_t)a.nic << CXIP_PID_BITS) | a.pid;
	cmd->vni = ep->dom->av_auth_key ? vni : ep->auth_key.vni;
	return 0;
}

bool cxip_ep_want_completion(const struct cxip_ep *ep, uint64_t flags, bool tx)
{
	if (tx && (flags & CXIP_NO_COMPLETION))
		return false;
	uint64_t sel = tx ? ep->tx_cq_flags : ep->rx_cq_flags;
	if (!(sel & FI_SELECTIVE_COMPLETION))
		return true;
	return (flags & FI_COMPLETION) != 0;
}

uint32_t cxip_tx_cmd_flags(uint64_t flags)
{
	uint32_t f = 0;
	if (flags & FI_REMOTE_CQ_DATA)
		f |= CXS_F_REMOTE_CQ_DATA;
	if (flags & FI_DELIVERY_COMPLETE)
		f |= CXS_F_DELIVERY;
	if (flags & FI_FENCE)
		f |= CXS_F_FENCE;
	if (flags & FI_TRIGGER)
		f |= CXS_F_TRIGGER;
	return f;
}

int cxip_one_iov(const struct iovec *iov, size_t count, void **buf, size_t *len)
{
	if (count > 1)
		return -FI_EINVAL;
	if (count == 0) {
		*buf = NULL;
		*len = 0;
		return 0;
	}
	if (!iov)
		return -FI_EINVAL;
	*buf = iov[0].iov_base;
	*len = iov[0].iov_len;
	return 0;
}

/* ---- bind ---- */

static int bind_cq(struct cxip_ep *ep, struct cxip_cq *cq, uint64_t flags)
{
	/* libfabric's bind rules, as upstream applies them: unknown flags are -FI_EBADFLAGS; a bind that names
	 * neither direction binds nothing and succeeds. */
	if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EBADFLAGS;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return 0;
	if (cq->dom != ep->dom)
		return -FI_EINVAL;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;
	int ret = 0;
	if (flags & FI_TRANSMIT) {
		ret = cxip_cq_bind_ep(cq, ep);
		if (ret)
			return ret;
		ep->tx_cq = cq;
		ep->tx_cq_flags = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		if (!(flags & FI_TRANSMIT) || ep->tx_cq != cq)
			ret = cxip_cq_bind_ep(cq, ep);
		if (ret)
			return ret;
		ep->rx_cq = cq;
		ep->rx_cq_flags = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

static int bind_cntr(struct cxip_ep *ep, struct cxip_cntr *c, uint64_t flags)
{
	static const uint64_t kinds[] = { FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE };
	struct cxip_cntr **slots[] = { &ep->send_cntr, &ep->recv_cntr, &ep->read_cntr, &ep->write_cntr,
				       &ep->rem_read_cntr, &ep->rem_write_cntr };
	if (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE))
		return -FI_EBADFLAGS;
	if (c->dom != ep->dom)
		return -FI_EINVAL;
	if (!flags)
		return 0; /* as upstream: a bind naming no event binds nothing */
	/* Remote-access counters are accepted on any endpoint, as upstream; they count on an FI_RMA_EVENT
	 * endpoint (fi_endpoint(3): the capability that makes remote accesses visible), where upstream never
	 * counts them. */
	for (int i = 0; i < 6; i++)
		if ((flags & kinds[i]) && *slots[i])
			return -FI_EINVAL;
	for (int i = 0; i < 6; i++)
		if (flags & kinds[i]) {
			*slots[i] = c;
			atomic_fetch_add(&c->ref, 1);
		}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (!bfid)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_AV: {
		struct cxip_av *av = (struct cxip_av *)bfid;
		if (flags)
			return -FI_EBADFLAGS;
		if (ep->av)
			return -FI_EINVAL;
		if (av->dom != ep->dom)
			return -FI_EINVAL;
		ep->av = av;
		atomic_fetch_add(&av->ref, 1);
		return 0;
	}
	case FI_CLASS_CQ:
		return bind_cq(ep, (struct cxip_cq *)bfid, flags);
	case FI_CLASS_CNTR:
		return bind_cntr(ep, (struct cxip_cntr *)bfid, flags);
	case FI_CLASS_EQ:
		if (flags)
			return -FI_EBADFLAGS;
		if (ep->eq)
			return -FI_EINVAL;
		ep->eq = (struct cxip_eq *)bfid;
		atomic_fetch_add(&ep->eq->ref, 1);
		return 0;
	case FI_CLASS_MR:
		return -FI_EINVAL; /* MRs bind to endpoints, not the reverse */
	default:
		return -FI_EINVAL;
	}
}

/* ---- enable ---- */

static uint32_t ring_slots_for(size_t entries)
{
	uint32_t p = 256;
	while (p < entries * 2 && p < (1u << 16))
		p <<= 1;
	return p;
}

static uint32_t open_flags(const struct cxip_ep *ep)
{
	const struct cxip_domain *dom = ep->dom;
	uint32_t f = 0;
	if (ep->tx_cq_flags & FI_SELECTIVE_COMPLETION)
		f |= EPF_TX_SELECTIVE;
	if (ep->rx_cq_flags & FI_SELECTIVE_COMPLETION)
		f |= EPF_RX_SELECTIVE;
	if (ep->protocol == FI_PROTO_CXI_RNR)
		f |= EPF_RNR;
	if (cxip_env.trunc_ok)
		f |= EPF_TRUNC_OK;
	if (cxip_env.hybrid_preemptive)
		f |= EPF_HYBRID_PREEMPTIVE;
	if (cxip_env.hybrid_recv_preemptive)
		f |= EPF_HYBRID_RECV_PREEMPTIVE;
	if (cxip_env.hybrid_posted_recv_preemptive)
		f |= EPF_HYBRID_POSTED_RECV_PREEMPTIVE;
	if (cxip_env.hybrid_unexpected_msg_preemptive)
		f |= EPF_HYBRID_UNEXPECTED_MSG_PREEMPTIVE;
	if (ep->caps & (FI_SOURCE | FI_SOURCE_ERR))
		f |= EPF_SOURCE;
	if ((ep->caps & FI_RMA) && (ep->caps & (FI_REMOTE_READ | FI_REMOTE_WRITE)))
		f |= EPF_REMOTE_ACCESS;
	if (dom->optimized_mrs)
		f |= EPF_OPTIMIZED_MRS;
	if (dom->prov_key_cache)
		f |= EPF_PROV_KEY_CACHE;
	if (dom->mr_match_events)
		f |= EPF_MR_MATCH_EVENTS;
	if (dom->mr_mode & FI_MR_PROV_KEY)
		f |= EPF_PROV_KEYS;
	if (dom->av_auth_key)
		f |= EPF_MULTI_AUTH_KEY;
	if (dom->writedata)
		f |= EPF_ENABLE_WRITEDATA;
	return f;
}

/* An alias is a copy of its endpoint's state with its own op flags (fi_ep_alias, below). */
static void alias_refresh(struct cxip_ep *a)
{
	struct cxip_ep keep = *a;
	memcpy(a, a->alias_of, sizeof(*a));
	a->ep_fid = keep.ep_fid;
	a->alias_of = keep.alias_of;
	a->aliases = NULL;
	a->alias_next = keep.alias_next;
	a->tx_op_flags = keep.tx_op_flags;
	a->rx_op_flags = keep.rx_op_flags;
	a->tx_msg_order = keep.tx_msg_order;
	atomic_store(&a->ref, 0);
}

static int ep_enable(struct cxip_ep *ep)
{
	struct cxip_domain *dom = ep->dom;
	if (ep->enabled)
		return 0;
	if (!ep->av)
		return -FI_ENOAV;
	if ((ep->caps & (FI_SEND | FI_MSG | FI_TAGGED | FI_RMA)) && !ep->tx_cq && !ep->send_cntr && !ep->read_cntr &&
	    !ep->write_cntr)
		return -FI_ENOCQ;
	struct ctl_ep_open_req req = {
		.nic_index = dom->nic_index,
		.pid = ep->pid,
		.svc_id = ep->auth_key.svc_id,
		.tx_evq = ep->tx_cq ? ep->tx_cq->q.id : 0,
		.rx_evq = ep->rx_cq ? ep->rx_cq->q.id : 0,
		.match_mode = (uint32_t)ep->match_mode,
		.tx_size = (uint32_t)ep->tx_size,
		.rx_size = (uint32_t)ep->rx_size,
		.cq_fill_percent = (uint32_t)cxip_env.cq_fill_percent,
		.fc_retry_usec = (uint32_t)cxip_env.fc_retry_usec_delay,
		.sw_rx_tx_init_max = (uint32_t)cxip_env.sw_rx_tx_init_max,
		.tclass = dom->tclass,
		.rdzv_threshold = cxip_env.rdzv_threshold,
		.rdzv_get_min = cxip_env.rdzv_get_min,
		.rdzv_eager_size = cxip_env.rdzv_eager_size,
		.oflow_buf_size = cxip_env.oflow_buf_size,
		.oflow_buf_min_posted = cxip_env.oflow_buf_min_posted,
		.req_buf_size = ep->req_buf_size,
		.req_buf_min_posted = cxip_env.req_buf_min_posted,
		.req_buf_max_cached = cxip_env.req_buf_max_cached,
		.rnr_max_timeout_us = ep->rnr_max_timeout_us,
		.min_multi_recv = ep->min_multi_recv,
	};
	if (dom->av_auth_key) {
		req.nvnis = (uint32_t)cxip_av_vnis(ep->av, req.vnis, CXISIM_MAX_AUTH_KEYS);
		if (!req.nvnis)
			return -FI_EINVAL; /* multiple-key domains take their keys from the AV */
		req.svc_id = ep->av->auth_keys[0].svc_id;
	} else {
		req.nvnis = 1;
		req.vnis[0] = ep->auth_key.vni;
	}
	struct cxip_cntr *cts[EPC_COUNT] = { ep->send_cntr, ep->recv_cntr, ep->read_cntr,
					     ep->write_cntr, ep->rem_read_cntr, ep->rem_write_cntr };
	for (int i = 0; i < EPC_COUNT; i++)
		req.cts[i] = cts[i] ? cts[i]->id : 0;
	req.flags = open_flags(ep);
	req.caps = ep->caps;
	int ret = cxip_queue_open(dom->dev, QUEUE_CMD, ring_slots_for(ep->tx_size + ep->rx_size), &ep->cmdq);
	if (ret)
		return ret;
	req.cmdq = ep->cmdq.id;
	struct ctl_ep_open_rep rep;
	ret = cxip_dev_call(dom->dev, CTL_EP_OPEN, &req, sizeof(req), &rep, sizeof(rep), NULL, NULL);
	if (ret) {
		cxip_queue_close(dom->dev, &ep->cmdq);
		return ret;
	}
	ep->id = rep.id;
	ep->pid = rep.pid;
	ep->enabled = true;
	cxip_domain_ep_enabled(dom, ep);
	for (struct cxip_ep *a = ep->aliases; a; a = a->alias_next)
		alias_refresh(a);
	return 0;
}

static int ep_ctrl(struct cxip_ep *ep, uint32_t op, uint64_t value, void *rep, size_t rep_len)
{
	struct ctl_ep_ctrl_req req = { .id = ep->id, .op = op, .value = value };
	return cxip_dev_call(ep->dom->dev, CTL_EP_CTRL, &req, sizeof(req), rep, rep_len, NULL, NULL);
}

/* ---- options ---- */

static int ep_set_val(struct cxip_ep *ep, int name, void *val)
{
	if (!val)
		return -FI_EINVAL;
	switch (name) {
	case FI_OPT_CXI_SET_TCLASS: {
		uint32_t tc = *(uint32_t *)val;
		if (tc != FI_TC_UNSPEC && (tc < FI_TC_BEST_EFFORT || tc > FI_TC_SCAVENGER))
			return -FI_EINVAL;
		ep->dom->tclass = tc;
		return ep->enabled ? ep_ctrl(ep, EPCTRL_TCLASS, tc, NULL, 0) : 0;
	}
	case FI_OPT_CXI_SET_MSG_ORDER: {
		uint64_t order = *(uint64_t *)val;
		if (order & ~CXIP_MSG_ORDER)
			return -FI_EINVAL;
		ep->tx_msg_order = order;
		return 0;
	}
	case FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME: {
		if (ep->protocol != FI_PROTO_CXI_RNR)
			return -FI_EINVAL;
		ep->rnr_max_timeout_us = *(uint64_t *)val;
		return ep->enabled ? ep_ctrl(ep, EPCTRL_RNR_MAX_TIMEOUT, ep->rnr_max_timeout_us, NULL, 0) : 0;
	}
	default:
		return -FI_EINVAL;
	}
}

/* FI_GETOPSFLAG / FI_SETOPSFLAG: the default op flags of one direction (FI_TRANSMIT or FI_RECV, not both). */
static int ep_opsflag(struct cxip_ep *ep, int command, uint64_t *f)
{
	if (!f || ((*f & FI_TRANSMIT) && (*f & FI_RECV)) || !(*f & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if (command == FI_GETOPSFLAG)
		*f = (*f & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
	else if (*f & FI_TRANSMIT)
		ep->tx_op_flags = *f & ~FI_TRANSMIT;
	else
		ep->rx_op_flags = *f & ~FI_RECV;
	return 0;
}

/* fi_ep_alias: another fid for the same endpoint with its own default op flags (FI_TRANSMIT or FI_RECV
 * and the flags, as FI_SETOPSFLAG takes them; e.g. FI_TRANSMIT | FI_TRIGGER).  The alias shares the
 * endpoint's queue (cxip_ep_emit); it holds a copy of the endpoint's state, refreshed when the endpoint is
 * enabled (bindings end there), and is closed before it. */
static int alias_close(struct fid *fid)
{
	struct cxip_ep *a = (struct cxip_ep *)fid;
	for (struct cxip_ep **pp = &a->alias_of->aliases; *pp; pp = &(*pp)->alias_next)
		if (*pp == a) {
			*pp = a->alias_next;
			break;
		}
	atomic_fetch_sub(&a->alias_of->ref, 1);
	free(a);
	return 0;
}

static int ep_alias(struct cxip_ep *ep, struct fi_alias *al);

/* As upstream, an alias's op flags and message order are its own (copied from the endpoint when it is made,
 * not changed by later settings of the endpoint); what upstream keeps in the shared endpoint object (the
 * RNR retry time, min_multi_recv, enable) is the endpoint's, through either fid. */
static int alias_control(struct fid *fid, int command, void *arg)
{
	struct cxip_ep *a = (struct cxip_ep *)fid;
	switch (command) {
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG:
		return ep_opsflag(a, command, arg);
	case FI_ENABLE:
		return ep_enable(a->alias_of);
	case FI_ALIAS:
		return ep_alias(a, arg);
	case FI_SET_VAL: {
		struct fi_fid_var *v = arg;
		if (!v)
			return -FI_EINVAL;
		return ep_set_val(v->name == FI_OPT_CXI_SET_MSG_ORDER ? a : a->alias_of, v->name, v->val);
	}
	case FI_OPT_CXI_SET_MSG_ORDER:
		return ep_set_val(a, command, arg);
	case FI_OPT_CXI_SET_TCLASS:
	case FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME:
		return ep_set_val(a->alias_of, command, arg);
	default:
		return -FI_EINVAL;
	}
}

static int alias_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid, (void)bfid, (void)flags;
	return -FI_EINVAL;
}

static struct fi_ops alias_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = alias_close,
	.bind = alias_bind,
	.control = alias_control,
	.ops_open = cxip_no_ops_open,
};

static int ep_alias(struct cxip_ep *ep, struct fi_alias *al)
{
	if (!al || !al->fid)
		return -FI_EINVAL;
	if (ep->alias_of)
		ep = ep->alias_of;
	uint64_t f = al->flags;
	if (((f & FI_TRANSMIT) && (f & FI_RECV)) || !(f & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if ((f & FI_TRANSMIT) && (f & ~(FI_TRANSMIT | CXIP_TX_CALL_FLAGS)))
		return -FI_EINVAL;
	if ((f & FI_RECV) && (f & ~(FI_RECV | CXIP_RX_OP_FLAGS)))
		return -FI_EINVAL;
	struct cxip_ep *a = malloc(sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	memcpy(a, ep, sizeof(*a));
	a->alias_of = ep;
	a->ep_fid.fid.ops = &alias_fid_ops;
	if (f & FI_TRANSMIT)
		a->tx_op_flags = f & ~FI_TRANSMIT;
	else
		a->rx_op_flags = f & ~FI_RECV;
	a->alias_next = ep->aliases;
	ep->aliases = a;
	alias_refresh(a);
	atomic_fetch_add(&ep->ref, 1);
	*al->fid = &a->ep_fid.fid;
	return 0;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	switch (command) {
	case FI_ENABLE:
		return ep_enable(ep);
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG:
		return ep_opsflag(ep, command, arg);
	case FI_SET_VAL: {
		struct fi_fid_var *v = arg;
		if (!v)
			return -FI_EINVAL;
		return ep_set_val(ep, v->name, v->val);
	}
	case FI_OPT_CXI_SET_TCLASS:
	case FI_OPT_CXI_SET_MSG_ORDER:
	case FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME:
		return ep_set_val(ep, command, arg);
	case FI_ALIAS:
		return ep_alias(ep, arg);
	default:
		return -FI_EINVAL;
	}
}

static int ep_getopt(struct fid *fid, int level, int optname, void *optval, size_t *optlen)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (ep->alias_of) /* (options are the shared endpoint's, as upstream's ep_obj) */
		ep = ep->alias_of;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV:
		if (!optval || !optlen)
			return -FI_EINVAL;
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	case FI_OPT_CXI_GET_RNR_APPEND_RETRY_ATTEMPTS: {
		if (!optval || !optlen)
			return -FI_EINVAL;
		if (*optlen < sizeof(uint64_t))
			return -FI_ETOOSMALL;
		if (ep->protocol != FI_PROTO_CXI_RNR)
			return -FI_EINVAL;
		struct ctl_ep_stats st = { 0 };
		if (ep->enabled) {
			int ret = ep_ctrl(ep, EPCTRL_GET_STATS, 0, &st, sizeof(st));
			if (ret)
				return ret;
		}
		*(uint64_t *)optval = st.rnr_append_retries;
		*optlen = sizeof(uint64_t);
		return 0;
	}
	default:
		return -FI_ENOPROTOOPT;
	}
}

static int ep_setopt(struct fid *fid, int level, int optname, const void *optval, size_t optlen)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (ep->alias_of)
		ep = ep->alias_of;
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_MIN_MULTI_RECV: {
		if (!optval || optlen < sizeof(size_t))
			return -FI_EINVAL;
		size_t v = *(const size_t *)optval;
		if (v > CXIP_EP_MAX_MULTI_RECV)
			return -FI_EINVAL;
		/* As upstream, it may change at any time; it applies to multi-receive buffers posted afterwards
		 * (fi_endpoint(3)).  The daemon applies control requests after the commands queued before them. */
		if (ep->enabled) {
			int ret = ep_ctrl(ep, EPCTRL_MIN_MULTI_RECV, v, NULL, 0);
			if (ret)
				return ret;
		}
		ep->min_multi_recv = v;
		return 0;
	}
	default:
		return -FI_ENOPROTOOPT;
	}
}

/* ---- naming ---- */

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (!addrlen)
		return -FI_EINVAL;
	struct cxip_addr a = { .nic = ep->nic_addr, .pid = ep->pid, .vni = 0 };
	size_t have = *addrlen;
	*addrlen = cxip_addrlen;
	if (have < cxip_addrlen)
		return -FI_ETOOSMALL;
	if (!addr)
		return -FI_EINVAL;
	if (!ep->enabled && ep->pid == CXIP_PID_ANY)
		return -FI_EOPBADSTATE; /* the pid is chosen when the endpoint is enabled */
	memcpy(addr, &a, cxip_addrlen);
	return 0;
}

static int ep_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid, (void)addr, (void)addrlen;
	return -FI_ENOSYS;
}

static int ep_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep, (void)addr, (void)addrlen;
	return -FI_ENOSYS;
}

static int ep_no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	(void)ep, (void)addr, (void)param, (void)paramlen;
	return -FI_ENOSYS;
}

static int ep_no_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

static int ep_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	(void)ep, (void)param, (void)paramlen;
	return -FI_ENOSYS;
}

static int ep_no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	(void)pep, (void)handle, (void)param, (void)paramlen;
	return -FI_ENOSYS;
}

static int ep_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep, (void)flags;
	return -FI_ENOSYS;
}

static int ep_no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc, void *context)
{
	(void)ep, (void)addr, (void)flags, (void)mc, (void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_no_setname,
	.getname = ep_getname,
	.getpeer = ep_no_getpeer,
	.connect = ep_no_connect,
	.listen = ep_no_listen,
	.accept = ep_no_accept,
	.reject = ep_no_reject,
	.shutdown = ep_no_shutdown,
	.join = ep_no_join,
};

/* ---- statistics extension ---- */

static int ep_stats_get(struct fid_ep *fid, struct fi_cxi_ep_stats *stats)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (!stats)
		return -FI_EINVAL;
	memset(stats, 0, sizeof(*stats));
	if (!ep->enabled)
		return 0;
	struct ctl_ep_stats st;
	int ret = ep_ctrl(ep, EPCTRL_GET_STATS, 0, &st, sizeof(st));
	if (ret)
		return ret;
	stats->total_rnr_nacks = st.total_rnr_nacks;
	stats->total_retries = st.total_retries;
	stats->mr_hazards = st.mr_hazards;
	return 0;
}

static struct fi_cxi_ep_stats_ops ep_stats_ops = { .get = ep_stats_get };

static int ep_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	(void)fid;
	(void)flags;
	(void)context;
	if (!name || !ops)
		return -FI_EINVAL;
	if (strcmp(name, FI_CXI_EP_STATS_OPS))
		return -FI_ENOSYS;
	*ops = &ep_stats_ops;
	return 0;
}

/* ---- close ---- */

static void put_cntr(struct cxip_cntr *c)
{
	if (c)
		atomic_fetch_sub(&c->ref, 1);
}

static int ep_close(struct fid *fid)
{
	struct cxip_ep *ep = (struct cxip_ep *)fid;
	if (atomic_load(&ep->ref))
		return -FI_EBUSY; /* aliases must be closed first */
	if (ep->mrs)
		return -FI_EBUSY; /* bound MRs must be closed first */
	if (ep->enabled) {
		cxip_domain_ep_closed(ep->dom, ep);
		cxip_dev_close_obj(ep->dom->dev, ep->id);
		cxip_queue_close(ep->dom->dev, &ep->cmdq);
	}
	if (ep->tx_cq)
		cxip_cq_unbind_ep(ep->tx_cq, ep);
	if (ep->rx_cq && ep->rx_cq != ep->tx_cq)
		cxip_cq_unbind_ep(ep->rx_cq, ep);
	/* cxip_cq_bind_ep counts one reference per distinct CQ */
	put_cntr(ep->send_cntr);
	put_cntr(ep->recv_cntr);
	put_cntr(ep->read_cntr);
	put_cntr(ep->write_cntr);
	put_cntr(ep->rem_read_cntr);
	put_cntr(ep->rem_write_cntr);
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->ref, 1);
	atomic_fetch_sub(&ep->dom->ref, 1);
	pthread_mutex_destroy(&ep->lock);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static struct fi_ops ep_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = ep_ops_open,
};

static ssize_t ep_cancel_op(fid_t fid, void *context)
{
	return cxip_ep_cancel(fid, context);
}

static ssize_t ep_rx_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;
}

static ssize_t ep_tx_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;
}

static int ep_no_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **ep, void *ctx)
{
	(void)sep, (void)index, (void)attr, (void)ep, (void)ctx;
	return -FI_ENOSYS; /* no scalable endpoints */
}

static int ep_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **ep, void *ctx)
{
	(void)sep, (void)index, (void)attr, (void)ep, (void)ctx;
	return -FI_ENOSYS;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel_op,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = ep_no_ctx,
	.rx_ctx = ep_no_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};


static int ep_check_info(const struct cxip_domain *dom, const struct fi_info *info)
{
	if (info->ep_attr) {
		if (info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_UNSPEC)
			return -FI_EINVAL;
		if (info->ep_attr->protocol != FI_PROTO_UNSPEC && info->ep_attr->protocol != FI_PROTO_CXI &&
		    info->ep_attr->protocol != FI_PROTO_CXI_RNR)
			return -FI_EINVAL;
		if (info->ep_attr->tx_ctx_cnt > 1 || info->ep_attr->rx_ctx_cnt > 1)
			return -FI_EINVAL;
		if (info->ep_attr->auth_key && info->ep_attr->auth_key_size != sizeof(struct cxi_auth_key))
			return -FI_EINVAL;
	}
	if (info->caps & ~CXIP_CAPS)
		return -FI_EINVAL;
	if (info->tx_attr && (info->tx_attr->size > CXIP_MAX_TX_SIZE || info->tx_attr->iov_limit > 1))
		return -FI_EINVAL;
	if (info->rx_attr && (info->rx_attr->size > CXIP_MAX_RX_SIZE || info->rx_attr->iov_limit > 1))
		return -FI_EINVAL;
	if (info->src_addr) {
		if (info->src_addrlen < cxip_addrlen)
			return -FI_EINVAL;
		struct cxip_addr a = cxip_addr_load(info->src_addr);
		if (a.nic != dom->nic_addr)
			return -FI_EINVAL;
	}
	return 0;
}

int cxip_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out, void *context)
{
	struct cxip_domain *dom = (struct cxip_domain *)domain;
	if (!domain || !info || !out)
		return -FI_EINVAL;
	int ret = ep_check_info(dom, info);
	if (ret)
		return ret;
	struct cxip_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->dom = dom;
	ep->caps = info->caps ? info->caps : CXIP_EP_CAPS;
	ep->protocol = (info->ep_attr && info->ep_attr->protocol == FI_PROTO_CXI_RNR) ? FI_PROTO_CXI_RNR : FI_PROTO_CXI;
	ep->tx_size = info->tx_attr && info->tx_attr->size ? info->tx_attr->size : cxip_env.default_tx_size;
	ep->rx_size = info->rx_attr && info->rx_attr->size ? info->rx_attr->size : cxip_env.default_rx_size;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->tx_msg_order = info->tx_attr ? info->tx_attr->msg_order : CXIP_MSG_ORDER;
	ep->auth_key = dom->auth_key;
	if (info->ep_attr && info->ep_attr->auth_key) {
		struct cxi_auth_key k;
		memcpy(&k, info->ep_attr->auth_key, sizeof(k));
		if (k.svc_id && k.svc_id != dom->auth_key.svc_id) {
			fi_freeinfo(ep->info);
			free(ep);
			return -FI_EINVAL; /* an endpoint's service must be its domain's */
		}
		ep->auth_key.vni = k.vni;
	}
	ep->pid = CXIP_PID_ANY;
	if (info->src_addr)
		ep->pid = cxip_addr_load(info->src_addr).pid;
	ep->nic_addr = dom->nic_addr;
	ep->min_multi_recv = CXIP_EP_MIN_MULTI_RECV;
	ep->rnr_max_timeout_us = (uint64_t)cxip_env.rnr_max_timeout_us;
	ep->match_mode = dom->match_mode;
	ep->req_buf_size = dom->req_buf_size;
	pthread_mutex_init(&ep->lock, NULL);
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &ep_fid_ops;
	ep->ep_fid.ops = &ep_ops;
	ep->ep_fid.cm = &ep_cm_ops;
	ep->ep_fid.msg = &cxip_msg_ops;
	ep->ep_fid.tagged = &cxip_tagged_ops;
	ep->ep_fid.rma = &cxip_rma_ops;
	ep->ep_fid.atomic = &cxip_atomic_ops;
	ep->ep_fid.collective = &cxip_collective_ops;
	atomic_fetch_add(&dom->ref, 1);
	*out = &ep->ep_fid;
	return 0;
}
