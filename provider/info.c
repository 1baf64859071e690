/* fi_getinfo for the "cxi" provider: one domain per NIC of the simulated node (cxi0..cxiN), each offered
 * with provider and client MR keys, for FI_PROTO_CXI and FI_PROTO_CXI_RNR, with the attributes of the real
 * provider (cassini-reference: fi_info).  Hints are checked and the offers narrowed with libfabric's own
 * rules, which a DL provider has to apply itself (the util helpers are not exported). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cxip.h"

#define MR_MODE_RMA_TARGET (FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_RMA_EVENT)

static const struct fi_tx_attr tx_attr_tmpl = {
	.caps = CXIP_EP_CAPS & ~CXIP_TX_IGNORED_CAPS,
	.op_flags = CXIP_TX_OP_FLAGS,
	.msg_order = CXIP_MSG_ORDER,
	.inject_size = CXIP_INJECT_SIZE,
	.size = CXIP_DEFAULT_TX_SIZE,
	.iov_limit = 1,
	.rma_iov_limit = 1,
};

static const struct fi_rx_attr rx_attr_tmpl = {
	.caps = CXIP_EP_CAPS & ~CXIP_RX_IGNORED_CAPS,
	.op_flags = CXIP_RX_OP_FLAGS,
	.msg_order = CXIP_MSG_ORDER,
	.size = CXIP_DEFAULT_RX_SIZE,
	.iov_limit = 1,
};

static const struct fi_ep_attr ep_attr_tmpl = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_CXI,
	.protocol_version = CXIP_WIRE_PROTO_VERSION,
	.max_msg_size = CXIP_EP_MAX_MSG_SZ,
	.max_order_raw_size = 0,
	.max_order_war_size = 0,
	.max_order_waw_size = (size_t)-1,
	.mem_tag_format = CXIP_TAG_FORMAT,
	.auth_key_size = sizeof(struct cxi_auth_key),
};

static const struct fi_domain_attr domain_attr_tmpl = {
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = FI_MR_PROV_KEY | FI_MR_ALLOCATED | FI_MR_ENDPOINT,
	.mr_key_size = CXIP_MR_PROV_KEY_SIZE,
	.cq_data_size = CXIP_REMOTE_CQ_DATA_SZ,
	.cq_cnt = 32,
	.ep_cnt = 128,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = 0,
	.max_ep_srx_ctx = 0,
	.cntr_cnt = 16,
	.mr_iov_limit = 1,
	.mr_cnt = 100,
	.caps = CXIP_DOM_CAPS,
	.auth_key_size = sizeof(struct cxi_auth_key),
	.max_err_data = sizeof(struct fi_cxi_src_err),
};

/* ---- fid_nic: device, bus and link attributes of a simulated Cassini ---- */

struct cxip_nic_fid {
	struct fid_nic nic;
	struct fi_device_attr dev;
	struct fi_bus_attr bus;
	struct fi_link_attr link;
	struct cxip_nic_attr pattr;
};

static int nic_close(struct fid *fid);
static int nic_control(struct fid *fid, int command, void *arg);
static struct fi_ops nic_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = nic_close,
	.bind = cxip_no_bind,
	.control = nic_control,
	.ops_open = cxip_no_ops_open,
};

static struct fid_nic *nic_alloc(uint32_t addr, uint32_t index, uint16_t vni)
{
	struct cxip_nic_fid *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	char buf[64];
	n->nic.fid.fclass = FI_CLASS_NIC;
	n->nic.fid.ops = &nic_fid_ops;
	n->nic.device_attr = &n->dev;
	n->nic.bus_attr = &n->bus;
	n->nic.link_attr = &n->link;
	n->nic.prov_attr = &n->pattr;
	snprintf(buf, sizeof(buf), "cxi%u", index);
	n->dev.name = strdup(buf);
	n->dev.device_id = strdup("0x0501");   /* Cassini 1 */
	n->dev.device_version = strdup("2");
	n->dev.vendor_id = strdup("0x17db");   /* Cray */
	n->dev.driver = strdup("cxisim");
	n->dev.firmware = strdup("cxisim");
	n->bus.bus_type = FI_BUS_PCI;
	n->bus.attr.pci.domain_id = 0;
	n->bus.attr.pci.bus_id = (uint8_t)(0x21 + index);
	n->bus.attr.pci.device_id = 0;
	n->bus.attr.pci.function_id = 0;
	snprintf(buf, sizeof(buf), "0x%05x", addr);
	n->link.address = strdup(buf);
	n->link.mtu = 2048;
	n->link.speed = 200000000000ULL;
	n->link.state = FI_LINK_UP;
	n->link.network_type = strdup("HPC Ethernet");
	n->pattr.version = FI_CXI_NIC_ATTR_VER;
	*(unsigned int *)&n->pattr.addr = addr;
	*(unsigned int *)&n->pattr.default_rgroup_id = CXIP_DEFAULT_SVC_ID;
	*(unsigned int *)&n->pattr.default_vni = vni;
	if (!n->dev.name || !n->dev.device_id || !n->dev.device_version || !n->dev.vendor_id || !n->dev.driver ||
	    !n->dev.firmware || !n->link.address || !n->link.network_type) {
		nic_close(&n->nic.fid);
		return NULL;
	}
	return &n->nic;
}

static int nic_close(struct fid *fid)
{
	struct cxip_nic_fid *n = (struct cxip_nic_fid *)fid;
	free(n->dev.name);
	free(n->dev.device_id);
	free(n->dev.device_version);
	free(n->dev.vendor_id);
	free(n->dev.driver);
	free(n->dev.firmware);
	free(n->link.address);
	free(n->link.network_type);
	free(n);
	return 0;
}

static int nic_control(struct fid *fid, int command, void *arg)
{
	struct cxip_nic_fid *n = (struct cxip_nic_fid *)fid;
	if (command != FI_DUP)
		return -FI_ENOSYS;
	struct fid_nic *dup = nic_alloc(n->pattr.addr, (uint32_t)atoi(n->dev.name + 3), (uint16_t)n->pattr.default_vni);
	if (!dup)
		return -FI_ENOMEM;
	*(struct fid_nic **)arg = dup;
	return 0;
}

/* ---- node / service parsing ---- */

/* node: "cxiN", a NIC address (decimal or 0x hex), or a MAC "aa:bb:cc:dd:ee:ff" (low 20 bits). */
static int parse_nic(const char *node, const struct ctl_attach_rep *rep, int *index, uint32_t *addr)
{
	unsigned v;
	char tail;
	if (sscanf(node, "cxi%u%c", &v, &tail) == 1) {
		if (v >= rep->nnics)
			return -FI_ENODATA;
		*index = (int)v;
		*addr = rep->nics[v].addr;
		return 0;
	}
	unsigned m[6];
	if (sscanf(node, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) == 6) {
		v = ((m[3] & 0xf) << 16) | (m[4] << 8) | m[5];
	} else {
		char *end;
		errno = 0;
		unsigned long l = strtoul(node, &end, 0);
		if (errno || *end || end == node || l >= (1ul << CXIP_NIC_BITS))
			return -FI_ENODATA;
		v = (unsigned)l;
	}
	*addr = v;
	*index = -1;
	for (uint32_t i = 0; i < rep->nnics; i++)
		if (rep->nics[i].addr == v)
			*index = (int)i;
	return 0;
}

static int parse_pid(const char *service, uint32_t *pid)
{
	char *end;
	errno = 0;
	unsigned long l = strtoul(service, &end, 0);
	if (errno || *end || end == service || l >= CXIP_PID_ANY)
		return -FI_EINVAL;
	*pid = (uint32_t)l;
	return 0;
}

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

static bool info_ok(uint32_t version, const struct fi_info *prov, const struct fi_info *hints)
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
	if (!hint_caps)
		caps = (info_caps & attr_caps & CXIP_PRIMARY_CAPS) | (attr_caps & CXIP_SECONDARY_CAPS);
	else
		caps = (hint_caps & CXIP_PRIMARY_CAPS) | (attr_caps & CXIP_SECONDARY_CAPS);
	/* Domain capabilities (FI_AV_USER_ID) are kept when asked for; libfabric 1.17's primary/secondary sets
	 * do not list them. */
	caps |= hint_caps & attr_caps & CXIP_DOM_CAPS;
	if (!hint_caps)
		caps |= info_caps & attr_caps & CXIP_DOM_CAPS;
	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & (FI_SEND | FI_RECV)))
		caps |= attr_caps & (FI_SEND | FI_RECV);
	if ((caps & (FI_RMA | FI_ATOMIC)) && !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
		caps |= attr_caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
	return caps;
}

/* Narrow an offer to the hints (libfabric's alter-info rules). */
static void info_alter(struct fi_info *fi, const struct fi_info *hints, uint32_t version)
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

/* ---- building offers ---- */

struct offer_kind {
	bool client_key;
	bool rnr;
};

static const struct offer_kind offer_kinds[] = {
	{ false, false },
	{ true, false },
	{ false, true },
	{ true, true },
};

static struct fi_info *offer_build(const struct ctl_nic_info *nic, const struct offer_kind *k, uint16_t vni)
{
	struct fi_info *fi = fi_allocinfo();
	if (!fi)
		return NULL;
	char name[16];
	snprintf(name, sizeof(name), "cxi%u", nic->index);
	fi->caps = CXIP_CAPS;
	fi->addr_format = FI_ADDR_CXI;
	*fi->tx_attr = tx_attr_tmpl;
	*fi->rx_attr = rx_attr_tmpl;
	*fi->ep_attr = ep_attr_tmpl;
	*fi->domain_attr = domain_attr_tmpl;
	fi->domain_attr->name = strdup(name);
	fi->fabric_attr->name = strdup(CXIP_PROV_NAME);
	fi->fabric_attr->prov_version = CXIP_PROV_VERSION;
	if (k->client_key) {
		fi->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED;
		fi->domain_attr->mr_key_size = CXIP_MR_KEY_SIZE;
	}
	if (k->rnr) {
		/* FI_PROTO_CXI_RNR: directed receive, 40-bit tags, no send-after-send ordering, no FI_INJECT. */
		fi->ep_attr->protocol = FI_PROTO_CXI_RNR;
		fi->ep_attr->mem_tag_format = CXIP_RNR_TAG_FORMAT;
		fi->tx_attr->msg_order = CXIP_MSG_ORDER & ~FI_ORDER_SAS;
		fi->rx_attr->msg_order = CXIP_MSG_ORDER & ~FI_ORDER_SAS;
		fi->tx_attr->inject_size = 0;
		fi->rx_attr->total_buffered_recv = 0;
	}
	struct cxip_addr src = { .nic = nic->addr, .pid = CXIP_PID_ANY };
	fi->src_addr = calloc(1, sizeof(src));
	fi->nic = nic_alloc(nic->addr, nic->index, vni);
	if (!fi->domain_attr->name || !fi->fabric_attr->name || !fi->src_addr || !fi->nic) {
		fi_freeinfo(fi);
		return NULL;
	}
	memcpy(fi->src_addr, &src, cxip_addrlen);
	fi->src_addrlen = cxip_addrlen;
	return fi;
}

static bool device_allowed(uint32_t index)
{
	if (!cxip_env.device_name)
		return true;
	char want[16];
	snprintf(want, sizeof(want), "cxi%u", index);
	char *list = strdup(cxip_env.device_name), *save = NULL;
	bool ok = false;
	for (char *t = list ? strtok_r(list, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, want))
			ok = true;
	free(list);
	return ok;
}

struct addr_req {
	int src_index;          /* NIC to offer (-1: every NIC) */
	bool have_src;
	struct cxip_addr src;
	bool have_dest;
	struct cxip_addr dest;
};

static int resolve_addrs(const char *node, const char *service, uint64_t flags, const struct fi_info *hints,
			 const struct ctl_attach_rep *rep, struct addr_req *r)
{
	memset(r, 0, sizeof(*r));
	r->src_index = -1;
	uint32_t pid = CXIP_PID_ANY;
	if (service) {
		int ret = parse_pid(service, &pid);
		if (ret)
			return ret;
	}
	if (node || service) {
		int idx = 0;
		uint32_t addr = rep->nnics ? rep->nics[0].addr : 0;
		if (node) {
			int ret = parse_nic(node, rep, &idx, &addr);
			if (ret)
				return ret;
		}
		if (flags & FI_SOURCE) {
			if (idx < 0)
				return -FI_ENODATA; /* not a NIC of this node */
			r->src_index = idx;
			r->have_src = true;
			r->src.nic = addr;
			r->src.pid = pid;
		} else if (node) {
			r->have_dest = true;
			r->dest.nic = addr;
			r->dest.pid = service ? pid : 0;
		} else {
			r->have_src = true;
			r->src.pid = pid;
		}
	}
	if (hints && hints->src_addr) {
		if (hints->addr_format != FI_ADDR_CXI && hints->addr_format != FI_FORMAT_UNSPEC)
			return -FI_ENODATA;
		if (hints->src_addrlen < cxip_addrlen)
			return -FI_EINVAL;
		r->src = cxip_addr_load(hints->src_addr);
		r->have_src = true;
		r->src_index = -2;
		for (uint32_t i = 0; i < rep->nnics; i++)
			if (rep->nics[i].addr == r->src.nic)
				r->src_index = (int)i;
		if (r->src_index == -2)
			return -FI_ENODATA;
	}
	if (hints && hints->dest_addr) {
		if (hints->dest_addrlen < cxip_addrlen)
			return -FI_EINVAL;
		r->dest = cxip_addr_load(hints->dest_addr);
		r->have_dest = true;
	}
	return 0;
}

static int set_addrs(struct fi_info *fi, const struct addr_req *r)
{
	if (r->have_src) {
		struct cxip_addr src = cxip_addr_load(fi->src_addr);
		src.pid = r->src.pid;
		memcpy(fi->src_addr, &src, cxip_addrlen);
	}
	if (r->have_dest) {
		fi->dest_addr = calloc(1, sizeof(r->dest));
		if (!fi->dest_addr)
			return -FI_ENOMEM;
		memcpy(fi->dest_addr, &r->dest, cxip_addrlen);
		fi->dest_addrlen = cxip_addrlen;
	}
	return 0;
}

int cxip_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	if (hints && hints->fabric_attr && hints->fabric_attr->prov_name &&
	    !strcasestr(hints->fabric_attr->prov_name, CXIP_PROV_NAME))
		return -FI_ENODATA;
	if (hints && hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC && hints->ep_attr->type != FI_EP_RDM)
		return -FI_ENODATA;
	struct cxip_dev *dev;
	int ret = cxip_dev_get(&dev);
	if (ret)
		return -FI_ENODATA;
	struct addr_req r;
	ret = resolve_addrs(node, service, flags, hints, &dev->info, &r);
	if (ret)
		return ret;
	struct fi_info *head = NULL, **tail = &head;
	for (uint32_t i = 0; i < dev->info.nnics; i++) {
		if ((r.src_index >= 0 && (uint32_t)r.src_index != i) || !device_allowed(dev->info.nics[i].index))
			continue;
		for (uint32_t kind = 0; kind < sizeof(offer_kinds) / sizeof(offer_kinds[0]); kind++) {
			struct fi_info *fi = offer_build(&dev->info.nics[i], &offer_kinds[kind], (uint16_t)cxip_env.default_vni);
			if (!fi) {
				fi_freeinfo(head);
				return -FI_ENOMEM;
			}
			if (!info_ok(version, fi, hints)) {
				fi_freeinfo(fi);
				continue;
			}
			info_alter(fi, hints, version);
			if (set_addrs(fi, &r)) {
				fi_freeinfo(fi);
				fi_freeinfo(head);
				return -FI_ENOMEM;
			}
			*tail = fi;
			tail = &fi->next;
		}
	}
	*info = head;
	return head ? 0 : -FI_ENODATA;
}
