/* Memory regions.  Keys follow the real provider: client keys are 4 bytes (a key of 2^32 or more is
 * rejected, a duplicate gives -FI_ENOKEY, a key under 100 is optimized when FI_CXI_OPTIMIZED_MRS is on);
 * provider keys are 8 bytes and encode an id (optimized when the id is under 92), whether the MR is
 * cached (FI_CXI_PROV_KEY_CACHE), and a generation.  With FI_MR_ENDPOINT an MR is bound to an endpoint
 * and then enabled; the NIC model then exposes it as an LE on the endpoint's MR PtlTE, checks every
 * remote access against it and, after close, either fails accesses (FI_EIO) or, for cached MRs, lets them
 * through and counts a hazard. */
#include <stdlib.h>
#include <string.h>

#include "cxip.h"


struct mr_binding {
	struct cxip_ep *ep;
	uint32_t id;
};

#define MR_MAX_BINDINGS 16

struct cxip_mr_priv {
	struct cxip_mr mr;
	struct mr_binding b[MR_MAX_BINDINGS];
	size_t nb;
	struct cxip_mr *ep_next;
};

static bool dom_prov_keys(const struct cxip_domain *dom)
{
	/* The application gives the keys unless it accepted FI_MR_PROV_KEY (also for domain-scoped MRs:
	 * fabtests register with FT_MR_KEY and use it at the peer without an exchange). */
	return (dom->mr_mode & FI_MR_PROV_KEY) != 0;
}

static uint32_t mr_flags(const struct cxip_mr *mr)
{
	uint32_t f = 0;
	if (mr->access & FI_REMOTE_READ)
		f |= MRF_REMOTE_READ;
	if (mr->access & FI_REMOTE_WRITE)
		f |= MRF_REMOTE_WRITE;
	if (mr->prov_key) {
		f |= MRF_PROV_KEY;
	} else if (mr->dom->optimized_mrs && mr->key < CXIP_OPT_MR_KEY_MAX) {
		f |= MRF_OPTIMIZED;
	}
	/* Upstream uses the provider key cache only for a region whose host mapping is cached (cxip_mr_enable:
	 * md->cached); a zero-length one has none.  Known in virtual mode, where the mapping is modelled. */
	if (mr->dom->dev->virt && !cxip_iomm_cached(mr->md))
		f |= MRF_UNCACHED_MAP;
	if (mr->dom->mr_match_events)
		f |= MRF_MATCH_EVENTS;
	if (mr->flags & FI_RMA_EVENT)
		f |= MRF_RMA_EVENT;
	if (mr->cntr_flags & FI_REMOTE_WRITE)
		f |= MRF_CT_REMOTE_WRITE;
	if (mr->cntr_flags & FI_REMOTE_READ)
		f |= MRF_CT_REMOTE_READ;
	return f;
}

int cxip_mr_enable_on(struct cxip_mr *mr, struct cxip_ep *ep)
{
	struct cxip_mr_priv *p = (struct cxip_mr_priv *)mr;
	if (p->nb == MR_MAX_BINDINGS)
		return -FI_ENOSPC;
	struct ctl_mr_reg_req req = {
		.ep = ep->id,
		.flags = mr_flags(mr),
		.key = mr->key,
		.addr = (uint64_t)(uintptr_t)mr->buf,
		.len = mr->len,
		.ct = mr->cntr ? mr->cntr->id : 0,
		.context = (uint64_t)(uintptr_t)mr->mr_fid.fid.context,
	};
	if (!(mr->dom->mr_mode & FI_MR_ENDPOINT))
		req.flags |= MRF_DOMAIN_KEY;
	struct ctl_mr_reg_rep rep;
	int ret = cxip_dev_call(mr->dom->dev, CTL_MR_REG, &req, sizeof(req), &rep, sizeof(rep), NULL, NULL);
	if (ret)
		return ret;
	if (mr->prov_key && (mr->dom->mr_mode & FI_MR_ENDPOINT)) {
		/* Provider keys are chosen by the NIC software layer when the MR is enabled. */
		mr->key = rep.key;
		mr->mr_fid.key = rep.key;
	}
	p->b[p->nb].ep = ep;
	p->b[p->nb].id = rep.id;
	p->nb++;
	return 0;
}

static int mr_enable(struct cxip_mr *mr)
{
	if (mr->enabled)
		return 0;
	if (!mr->ep)
		return -FI_EOPBADSTATE; /* FI_MR_ENDPOINT: bind an endpoint first */
	if (!mr->ep->enabled)
		return -FI_EOPBADSTATE;
	int ret = cxip_mr_enable_on(mr, mr->ep);
	if (!ret)
		mr->enabled = true;
	return ret;
}

static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct cxip_mr *mr = (struct cxip_mr *)fid;
	struct cxip_mr_priv *p = (struct cxip_mr_priv *)mr;
	if (!bfid)
		return -FI_EINVAL;
	if (mr->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_EP: {
		struct cxip_ep *ep = (struct cxip_ep *)bfid;
		if (flags)
			return -FI_EBADFLAGS;
		if (!(mr->dom->mr_mode & FI_MR_ENDPOINT) || mr->ep || ep->dom != mr->dom)
			return -FI_EINVAL;
		if ((mr->flags & FI_RMA_EVENT) && !(ep->caps & FI_RMA_EVENT))
			return -FI_EINVAL; /* fi_mr(3): the endpoint needs FI_RMA_EVENT (upstream checks it here) */
		mr->ep = ep;
		p->ep_next = ep->mrs;
		ep->mrs = mr;
		return 0;
	}
	case FI_CLASS_CNTR: {
		struct cxip_cntr *c = (struct cxip_cntr *)bfid;
		if (!flags || (flags & ~(FI_REMOTE_WRITE | FI_REMOTE_READ)))
			return -FI_EBADFLAGS;
		/* Accepted on any MR, as upstream (cxi's mr_mode has no FI_MR_RMA_EVENT): the counter counts the
		 * accesses the flags name. */
		if (mr->cntr || c->dom != mr->dom)
			return -FI_EINVAL;
		mr->cntr = c;
		mr->cntr_flags = flags;
		atomic_fetch_add(&c->ref, 1);
		return 0;
	}
	default:
		return -FI_EINVAL;
	}
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	(void)arg;
	if (command == FI_ENABLE)
		return mr_enable((struct cxip_mr *)fid);
	return -FI_ENOSYS;
}

static void unlink_from_ep(struct cxip_mr *mr)
{
	if (!mr->ep)
		return;
	for (struct cxip_mr **q = &mr->ep->mrs; *q; q = &((struct cxip_mr_priv *)*q)->ep_next)
		if (*q == mr) {
			*q = ((struct cxip_mr_priv *)mr)->ep_next;
			break;
		}
}

static int mr_close(struct fid *fid)
{
	struct cxip_mr *mr = (struct cxip_mr *)fid;
	struct cxip_mr_priv *p = (struct cxip_mr_priv *)mr;
	struct cxip_domain *dom = mr->dom;
	pthread_mutex_lock(&dom->lock);
	for (struct cxip_mr **q = &dom->mrs; *q; q = &(*q)->next)
		if (*q == mr) {
			*q = mr->next;
			break;
		}
	for (struct cxip_mr **q = &dom->all_mrs; *q; q = &(*q)->all_next)
		if (*q == mr) {
			*q = mr->all_next;
			break;
		}
	pthread_mutex_unlock(&dom->lock);
	/* The daemon waits for pending accesses when match events are on, and keeps a cached MR's memory
	 * exposed: both are NIC-side behaviour. */
	struct cxip_dev *dev = dom->dev;
	bool timed = dev->virt && mr->md;
	if (timed)
		cxip_vt_enter(dev);
	for (size_t i = 0; i < p->nb; i++)
		cxip_dev_close_obj(dev, p->b[i].id);
	/* Then the host mapping goes (upstream cxip_mr_close: disable, then cxip_unmap). */
	cxip_iomm_unmap(dom, mr->md);
	if (timed)
		cxip_vt_rebase(dev);
	unlink_from_ep(mr);
	if (mr->cntr)
		atomic_fetch_sub(&mr->cntr->ref, 1);
	atomic_fetch_sub(&dom->ref, 1);
	free(p);
	return 0;
}

static struct fi_ops mr_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mr_bind,
	.control = mr_control,
	.ops_open = cxip_no_ops_open,
};

static bool key_in_use(struct cxip_domain *dom, uint64_t key)
{
	for (struct cxip_mr *m = dom->all_mrs; m; m = m->all_next)
		if (m->key == key)
			return true;
	return false;
}

static int mr_create(struct cxip_domain *dom, const void *buf, size_t len, uint64_t access, uint64_t offset,
		     uint64_t requested_key, uint64_t flags, struct fid_mr **out, void *context)
{
	if (!out || (!buf && len))
		return -FI_EINVAL;
	if (flags & ~(FI_RMA_EVENT))
		return -FI_EBADFLAGS;
	if (offset)
		return -FI_EINVAL; /* FI_MR_VIRT_ADDR is not offered: offsets are relative to the region */
	if (access & ~(FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV))
		return -FI_EINVAL;
	if (!access)
		access = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_SEND | FI_RECV;
	if ((flags & FI_RMA_EVENT) && !(dom->caps & FI_RMA_EVENT) && !(dom->info->caps & FI_RMA_EVENT))
		return -FI_EINVAL;
	bool prov = dom_prov_keys(dom);
	if (!prov && requested_key >= (1ULL << 32))
		return -FI_EKEYREJECTED;
	struct cxip_mr_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return -FI_ENOMEM;
	struct cxip_mr *mr = &p->mr;
	mr->dom = dom;
	mr->buf = buf;
	mr->len = len;
	mr->access = access;
	mr->flags = flags;
	mr->prov_key = prov;
	pthread_mutex_lock(&dom->lock);
	if (prov && (dom->mr_mode & FI_MR_ENDPOINT)) {
		mr->key = FI_KEY_NOTAVAIL; /* known once enabled */
	} else if (prov) {
		/* Domain-scoped MRs live on every endpoint under one key: the provider picks it, unique in the
		 * domain, and registers it as a 4-byte key on each endpoint. */
		uint32_t id;
		do
			id = dom->next_prov_key_id++;
		while (key_in_use(dom, id));
		mr->key = id;
	} else {
		if (key_in_use(dom, requested_key)) {
			pthread_mutex_unlock(&dom->lock);
			free(p);
			return -FI_ENOKEY;
		}
		mr->key = requested_key;
	}
	/* Upstream maps the region for the NIC here (cxip_regattr -> cxip_map, through the MR cache), before any
	 * endpoint: its cost is the registration's, whatever the domain's MR mode. */
	if (len && dom->dev->virt) {
		cxip_vt_enter(dom->dev);
		int ret = cxip_iomm_map(dom, buf, len, &mr->md);
		cxip_vt_rebase(dom->dev);
		if (ret) {
			pthread_mutex_unlock(&dom->lock);
			free(p);
			return ret;
		}
	}
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = context;
	mr->mr_fid.fid.ops = &mr_fid_ops;
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = mr->key;
	if (!(dom->mr_mode & FI_MR_ENDPOINT)) {
		/* Domain-scoped MR: live at once on every enabled endpoint (and later ones). */
		mr->next = dom->mrs;
		dom->mrs = mr;
		mr->enabled = true;
		for (struct cxip_ep *ep = dom->eps; ep; ep = ep->dom_next) {
			int ret = cxip_mr_enable_on(mr, ep);
			if (ret) {
				dom->mrs = mr->next;
				pthread_mutex_unlock(&dom->lock);
				for (size_t i = 0; i < p->nb; i++)
					cxip_dev_close_obj(dom->dev, p->b[i].id);
				cxip_iomm_unmap(dom, mr->md);
				free(p);
				return ret;
			}
		}
	}
	mr->all_next = dom->all_mrs;
	dom->all_mrs = mr;
	pthread_mutex_unlock(&dom->lock);
	atomic_fetch_add(&dom->ref, 1);
	*out = &mr->mr_fid;
	return 0;
}

int cxip_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	if (!fid || fid->fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	return mr_create((struct cxip_domain *)fid, buf, len, access, offset, requested_key, flags, mr, context);
}

int cxip_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
		 uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	if (!count || !iov)
		return -FI_EINVAL;
	if (count != 1)
		return -FI_ENOSYS; /* mr_iov_limit is 1 (upstream cxip_regattr: -FI_ENOSYS) */
	return cxip_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset, requested_key, flags, mr, context);
}

int cxip_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr)
{
	if (!attr)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	return cxip_mr_regv(fid, attr->mr_iov, attr->iov_count, attr->access, attr->offset, attr->requested_key, flags,
			    mr, attr->context);
}
