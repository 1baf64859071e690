/* libfabric's generic rules for fi_getinfo hints (prov/util's ofi_check_info and ofi_alter_info, as the
 * util layer that upstream prov/cxi is built on applies them): which offers a hint admits, and how an
 * admitted offer is narrowed to it.  A DL provider has to apply them itself (the util helpers are not
 * exported by the system libfabric).  The cxi provider's own rules on top of these are in info.c. */
#include <stdlib.h>
#include <string.h>

#include "cxip.h"

#define MR_MODE_RMA_TARGET (FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_RMA_EVENT)

/* ---- hint checks (libfabric's semantics) ---- */

static int thread_level(enum fi_threading t)
{
	switch (t) {
	case FI_THREAD_SAFE: return 1;
	case FI_THREAD_FID: return 2;
	case FI_THREAD_ENDPOINT: return 3;
	case FI_THREAD_COMPLETION: return 4;
	case FI_THREAD_DOMAIN: return 5;
	case FI_THREAD_UNSPEC: return 6;
	default: return -1;
	}
}

static int progress_level(enum fi_progress p)
{
	switch (p) {
	case FI_PROGRESS_AUTO: return 1;
	case FI_PROGRESS_MANUAL: return 2;
	case FI_PROGRESS_UNSPEC: return 3;
	default: return -1;
	}
}

static int rm_level(enum fi_resource_mgmt r)
{
	switch (r) {
	case FI_RM_ENABLED: return 1;
	case FI_RM_DISABLED: return 2;
	case FI_RM_UNSPEC: return 3;
	default: return -1;
	}
}

static bool rma_target_allowed(uint64_t caps)
{
	if (!(caps & (FI_RMA | FI_ATOMIC)))
		return false;
	if (caps & (FI_REMOTE_WRITE | FI_REMOTE_READ))
		return true;
	return !(caps & (FI_WRITE | FI_READ));
}

/* MR mode bits that matter for the capabilities asked for. */
static int mr_mode_for_caps(uint64_t caps, int mr_mode)
{
	if (!(caps & FI_HMEM))
		mr_mode &= ~FI_MR_HMEM;
	if (!rma_target_allowed(caps)) {
		if (!(mr_mode & (FI_MR_LOCAL | FI_MR_HMEM)))
			return 0;
		mr_mode &= ~MR_MODE_RMA_TARGET;
	}
	return mr_mode & ~(FI_MR_BASIC | FI_MR_SCALABLE);
}

static bool mr_mode_ok(uint32_t version, int prov_mode, const struct fi_info *hints)
{
	int user = hints->domain_attr->mr_mode;
	if ((prov_mode & FI_MR_LOCAL) && !((hints->mode & FI_LOCAL_MR) || (user & FI_MR_LOCAL)))
		return false;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return false; /* the v1.0 modes (FI_MR_BASIC, FI_MR_SCALABLE) are not offered */
	if (user & (FI_MR_BASIC | FI_MR_SCALABLE))
		return false;
	int need = mr_mode_for_caps(hints->caps, prov_mode);
	/* CXISIM_DOMAIN_MRS: an application that does not take FI_MR_ENDPOINT gets domain-scoped MRs. */
	if (cxip_domain_mrs)
		need &= ~FI_MR_ENDPOINT;
	return user == FI_MR_UNSPEC || (user & need) == need;
}

static bool domain_ok(uint32_t version, const struct fi_domain_attr *p, const struct fi_info *hints)
{
	const struct fi_domain_attr *u = hints->domain_attr;
	if (thread_level(u->threading) < thread_level(p->threading) ||
	    progress_level(u->control_progress) < progress_level(p->control_progress) ||
	    progress_level(u->data_progress) < progress_level(p->data_progress) ||
	    rm_level(u->resource_mgmt) < rm_level(p->resource_mgmt))
		return false;
	if (u->av_type != FI_AV_UNSPEC && u->av_type != FI_AV_MAP && u->av_type != FI_AV_TABLE)
		return false;
	if (u->cq_data_size > p->cq_data_size)
		return false;
	if (!mr_mode_ok(version, p->mr_mode, hints))
		return false;
	if (u->name && strcmp(u->name, p->name))
		return false;
	if (u->auth_key_size && u->auth_key_size != sizeof(struct cxi_auth_key) && u->auth_key_size != FI_AV_AUTH_KEY)
		return false;
	if (u->auth_key && u->auth_key_size == sizeof(struct cxi_auth_key)) {
		const struct cxi_auth_key *k = (const void *)u->auth_key;
		if (k->vni == 0 && k->svc_id == 0)
			return false;
	}
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return true;
	if (u->cntr_cnt > p->cntr_cnt || u->mr_iov_limit > p->mr_iov_limit || (u->caps & ~p->caps) ||
	    (u->mode & p->mode) != p->mode || u->max_err_data > p->max_err_data || u->mr_cnt > p->mr_cnt)
		return false;
	return true;
}

static uint64_t max_tag(uint64_t fmt)
{
	return fmt ? UINT64_MAX >> __builtin_clzll(fmt) : 0;
}

static bool ep_ok(const struct fi_info *prov, const struct fi_info *hints)
{
	const struct fi_ep_attr *p = prov->ep_attr, *u = hints->ep_attr;
	if (u->type != FI_EP_UNSPEC && u->type != p->type)
		return false;
	if (u->protocol != FI_PROTO_UNSPEC && u->protocol != p->protocol)
		return false;
	if (u->protocol_version && u->protocol_version > p->protocol_version)
		return false;
	if (u->max_msg_size > p->max_msg_size)
		return false;
	if (u->tx_ctx_cnt > prov->domain_attr->max_ep_tx_ctx || u->rx_ctx_cnt > prov->domain_attr->max_ep_rx_ctx)
		return false;
	if ((hints->caps & (FI_RMA | FI_ATOMIC)) &&
	    (u->max_order_raw_size > p->max_order_raw_size || u->max_order_war_size > p->max_order_war_size ||
	     u->max_order_waw_size > p->max_order_waw_size))
		return false;
	if (u->auth_key_size && u->auth_key_size != p->auth_key_size)
		return false;
	if ((hints->caps & FI_TAGGED) && u->mem_tag_format && max_tag(u->mem_tag_format) > max_tag(p->mem_tag_format))
		return false;
	return true;
}

static bool rx_ok(const struct fi_info *prov, const struct fi_rx_attr *u, uint64_t mode)
{
	const struct fi_rx_attr *p = prov->rx_attr;
	mode = u->mode ? u->mode : mode;
	return !((u->caps & ~CXIP_RX_IGNORED_CAPS) & ~p->caps) && (mode & p->mode) == p->mode &&
	       !(u->op_flags & ~p->op_flags) && !(u->msg_order & ~p->msg_order) &&
	       !(u->comp_order & ~p->comp_order) && u->total_buffered_recv <= p->total_buffered_recv &&
	       u->size <= CXIP_MAX_RX_SIZE && u->iov_limit <= p->iov_limit;
}

static bool tx_ok(const struct fi_info *prov, const struct fi_tx_attr *u, uint64_t mode)
{
	const struct fi_tx_attr *p = prov->tx_attr;
	mode = u->mode ? u->mode : mode;
	return !((u->caps & ~CXIP_TX_IGNORED_CAPS) & ~p->caps) && (mode & p->mode) == p->mode &&
	       !(u->op_flags & ~p->op_flags) && !(u->msg_order & ~p->msg_order) &&
	       !(u->comp_order & ~p->comp_order) && u->inject_size <= p->inject_size && u->size <= CXIP_MAX_TX_SIZE &&
	       u->iov_limit <= p->iov_limit && u->rma_iov_limit <= p->rma_iov_limit;
}

bool cxip_info_ok(uint32_t version, const struct fi_info *prov, const struct fi_info *hints)
{
	if (!hints)
		return true;
	if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC && hints->ep_attr->type != FI_EP_RDM)
		return false;
	if (hints->caps & ~prov->caps)
		return false;
	if ((hints->mode & prov->mode) != prov->mode)
		return false;
	if (hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != FI_ADDR_CXI)
		return false;
	if (hints->fabric_attr) {
		const struct fi_fabric_attr *f = hints->fabric_attr;
		if (f->prov_version > CXIP_PROV_VERSION)
			return false;
		if (f->name && strcmp(f->name, prov->fabric_attr->name))
			return false;
	}
	if (hints->domain_attr && !domain_ok(version, prov->domain_attr, hints))
		return false;
	if (hints->ep_attr && !ep_ok(prov, hints))
		return false;
	if (hints->rx_attr && !rx_ok(prov, hints->rx_attr, hints->mode))
		return false;
	if (hints->tx_attr && !tx_ok(prov, hints->tx_attr, hints->mode))
		return false;
	return true;
}

uint64_t cxip_caps_narrow(uint64_t info_caps, uint64_t hint_caps, uint64_t attr_caps)
{
	uint64_t caps;
	if (!hint_caps) {
		caps = (info_caps & attr_caps & CXIP_PRIMARY_CAPS) | (attr_caps & CXIP_SECONDARY_CAPS);
	} else {
		caps = (hint_caps & CXIP_PRIMARY_CAPS) | (attr_caps & CXIP_SECONDARY_CAPS);
		caps = (caps & ~FI_SOURCE) | (hint_caps & FI_SOURCE);
	}
	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & (FI_SEND | FI_RECV)))
		caps |= attr_caps & (FI_SEND | FI_RECV);
	if ((caps & (FI_RMA | FI_ATOMIC)) && !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		caps |= attr_caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
	return caps;
}

/* Narrow an offer to the hints (libfabric's alter-info rules). */
void cxip_info_alter(struct fi_info *fi, const struct fi_info *hints, uint32_t version)
{
	uint64_t caps = hints ? cxip_caps_narrow(fi->caps, hints->caps, fi->caps) : fi->caps;
	if (hints && rma_target_allowed(caps) && (fi->domain_attr->mr_mode & MR_MODE_RMA_TARGET)) {
		int um = hints->domain_attr ? hints->domain_attr->mr_mode : 0;
		int pm = fi->domain_attr->mr_mode & MR_MODE_RMA_TARGET;
		if (!hints->domain_attr || (um & pm) != pm)
			caps &= ~(FI_REMOTE_WRITE | FI_REMOTE_READ);
	}
	fi->caps = caps;
	if (!hints)
		return;
	fi->handle = hints->handle;
	struct fi_domain_attr *d = fi->domain_attr;
	const struct fi_domain_attr *hd = hints->domain_attr;
	int hm = hd ? hd->mr_mode : 0;
	d->mr_mode &= ~(FI_MR_BASIC | FI_MR_SCALABLE);
	if ((hm & d->mr_mode) != d->mr_mode)
		d->mr_mode = mr_mode_for_caps(caps, d->mr_mode & hm);
	(void)version;
	d->caps = cxip_caps_narrow(caps, hd ? hd->caps : 0, d->caps);
	if (hd) {
		if (hd->threading)
			d->threading = hd->threading;
		if (hd->control_progress)
			d->control_progress = hd->control_progress;
		if (hd->data_progress)
			d->data_progress = hd->data_progress;
		if (hd->av_type)
			d->av_type = hd->av_type;
		if (hd->auth_key_size == FI_AV_AUTH_KEY) {
			/* Multiple auth keys per endpoint: keys come from the AV, and (as upstream) no
			 * FI_DIRECTED_RECV. */
			d->auth_key_size = FI_AV_AUTH_KEY;
			fi->caps &= ~FI_DIRECTED_RECV;
			fi->rx_attr->caps &= ~FI_DIRECTED_RECV;
			fi->tx_attr->caps &= ~FI_DIRECTED_RECV;
		} else if (hd->auth_key && hd->auth_key_size == sizeof(struct cxi_auth_key)) {
			free(d->auth_key);
			d->auth_key = malloc(sizeof(struct cxi_auth_key));
			if (d->auth_key) {
				memcpy(d->auth_key, hd->auth_key, sizeof(struct cxi_auth_key));
				d->auth_key_size = sizeof(struct cxi_auth_key);
			}
		}
		if (hd->tclass)
			d->tclass = hd->tclass;
	}
	if (hints->ep_attr) {
		const struct fi_ep_attr *he = hints->ep_attr;
		if (caps & (FI_RMA | FI_ATOMIC)) {
			if (he->max_order_raw_size)
				fi->ep_attr->max_order_raw_size = he->max_order_raw_size;
			if (he->max_order_war_size)
				fi->ep_attr->max_order_war_size = he->max_order_war_size;
			if (he->max_order_waw_size)
				fi->ep_attr->max_order_waw_size = he->max_order_waw_size;
		}
		if (he->tx_ctx_cnt)
			fi->ep_attr->tx_ctx_cnt = he->tx_ctx_cnt;
		if (he->rx_ctx_cnt)
			fi->ep_attr->rx_ctx_cnt = he->rx_ctx_cnt;
	}
	const struct fi_rx_attr *hr = hints->rx_attr;
	fi->rx_attr->caps = cxip_caps_narrow(caps, hr ? hr->caps : 0, fi->rx_attr->caps);
	if (hr) {
		fi->rx_attr->op_flags = hr->op_flags;
		fi->rx_attr->total_buffered_recv = hr->total_buffered_recv;
		if (hr->size)
			fi->rx_attr->size = hr->size;
		if (hr->iov_limit)
			fi->rx_attr->iov_limit = hr->iov_limit;
	}
	const struct fi_tx_attr *ht = hints->tx_attr;
	fi->tx_attr->caps = cxip_caps_narrow(caps, ht ? ht->caps : 0, fi->tx_attr->caps);
	if (ht) {
		fi->tx_attr->op_flags = ht->op_flags;
		if (ht->inject_size)
			fi->tx_attr->inject_size = ht->inject_size;
		if (ht->size)
			fi->tx_attr->size = ht->size;
		if (ht->iov_limit)
			fi->tx_attr->iov_limit = ht->iov_limit;
		if (ht->rma_iov_limit)
			fi->tx_attr->rma_iov_limit = ht->rma_iov_limit;
	}
}
