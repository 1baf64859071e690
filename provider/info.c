/* fi_getinfo for the "cxi" provider: one domain per NIC of the simulated node (cxi0..cxiN), each offered
 * with provider and client MR keys, for FI_PROTO_CXI and FI_PROTO_CXI_RNR, with the attributes of the real
 * provider (cassini-reference: fi_info).  Hints are checked and the offers narrowed with libfabric's own
 * rules (info_attr.c), which a DL provider has to apply itself (the util helpers are not exported). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cxip.h"

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
	fi->tx_attr->size = cxip_env.default_tx_size;
	fi->rx_attr->size = cxip_env.default_rx_size;
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

/* ---- the cxi provider's own rules (upstream cxip_info.c), on top of libfabric's generic ones ---- */

/* The protocol an offer must have: the one the hints name, else FI_PROTO_CXI (FI_PROTO_CXI_RNR is only
 * returned when asked for, or without hints). */
static bool offer_protocol_ok(const struct fi_info *fi, const struct fi_info *hints)
{
	if (!hints)
		return true;
	uint32_t proto = hints->ep_attr && hints->ep_attr->protocol ? hints->ep_attr->protocol : FI_PROTO_CXI;
	if (fi->ep_attr->protocol != proto)
		return false;
	/* RMA and atomics need an MR mode the application accepted. */
	return !((fi->caps & (FI_ATOMIC | FI_RMA)) && !fi->domain_attr->mr_mode);
}

/* Secondary capabilities that cost something on the data path are returned only when asked for:
 * FI_SOURCE and FI_SOURCE_ERR (overhead on every receive; without hints too), FI_RMA_EVENT (no restricted
 * packets), FI_FENCE (no PCIe relaxed ordering), FI_HMEM.  The transmit order is the one the hints ask for
 * (ordering prevents restricted packets).  -FI_ENODATA: FI_SOURCE_ERR asked for without FI_SOURCE. */
static int offer_cxi_alter(struct fi_info *fi, const struct fi_info *hints)
{
	if (!hints) {
		fi->caps &= ~(FI_SOURCE | FI_SOURCE_ERR);
		fi->rx_attr->caps &= ~(FI_SOURCE | FI_SOURCE_ERR);
		return 0;
	}
	if ((hints->caps & FI_SOURCE_ERR) && !(hints->caps & FI_SOURCE))
		return -FI_ENODATA;
	fi->tx_attr->msg_order = hints->tx_attr ? hints->tx_attr->msg_order : 0;
	uint64_t drop = 0, drop_tx = 0, drop_rx = 0;
	if (hints->caps && !(hints->caps & FI_RMA_EVENT))
		drop_rx |= FI_RMA_EVENT;
	if (!(hints->caps & FI_SOURCE))
		drop_rx |= FI_SOURCE;
	if (!(hints->caps & FI_SOURCE_ERR))
		drop_rx |= FI_SOURCE_ERR;
	if (hints->caps && !(hints->caps & FI_FENCE))
		drop_tx |= FI_FENCE;
	if (hints->caps && !(hints->caps & FI_HMEM))
		drop = FI_HMEM;
	fi->caps &= ~(drop | drop_tx | drop_rx);
	fi->tx_attr->caps &= ~(drop | drop_tx);
	fi->rx_attr->caps &= ~(drop | drop_rx);
	return 0;
}

/* A hint of FI_MR_ENDPOINT alone gets FI_MR_ALLOCATED added: the provider did not always say it needs
 * pinned memory, and applications written then ask for FI_MR_ENDPOINT only. */
static struct fi_info *hints_mr_allocated(const struct fi_info *hints, bool *dup)
{
	*dup = false;
	if (!hints || !hints->domain_attr || hints->domain_attr->mr_mode != FI_MR_ENDPOINT)
		return (struct fi_info *)hints;
	struct fi_info *h = fi_dupinfo(hints);
	if (!h)
		return NULL;
	h->domain_attr->mr_mode |= FI_MR_ALLOCATED;
	*dup = true;
	return h;
}

/* With hints, only the most preferred offer per domain (and address format) is returned. */
static void keep_first_per_domain(struct fi_info *head)
{
	for (struct fi_info *prev = head; prev && prev->next;) {
		struct fi_info *fi = prev->next;
		if (!strcmp(fi->domain_attr->name, prev->domain_attr->name) && fi->addr_format == prev->addr_format) {
			prev->next = fi->next;
			fi->next = NULL;
			fi_freeinfo(fi);
		} else {
			prev = fi;
		}
	}
}

static int offers_for_nic(uint32_t version, const struct ctl_nic_info *nic, const struct fi_info *hints,
			  const struct addr_req *r, struct fi_info ***tail)
{
	for (uint32_t kind = 0; kind < sizeof(offer_kinds) / sizeof(offer_kinds[0]); kind++) {
		struct fi_info *fi = offer_build(nic, &offer_kinds[kind], (uint16_t)cxip_env.default_vni);
		if (!fi)
			return -FI_ENOMEM;
		if (!cxip_info_ok(version, fi, hints)) {
			fi_freeinfo(fi);
			continue;
		}
		cxip_info_alter(fi, hints, version);
		if (!offer_protocol_ok(fi, hints)) {
			fi_freeinfo(fi);
			continue;
		}
		int ret = offer_cxi_alter(fi, hints);
		if (!ret)
			ret = set_addrs(fi, r);
		if (ret) {
			fi_freeinfo(fi);
			return ret;
		}
		**tail = fi;
		*tail = &fi->next;
	}
	return 0;
}

int cxip_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *user_hints, struct fi_info **info)
{
	*info = NULL;
	if (user_hints && user_hints->fabric_attr && user_hints->fabric_attr->prov_name &&
	    !strcasestr(user_hints->fabric_attr->prov_name, CXIP_PROV_NAME))
		return -FI_ENODATA;
	if (user_hints && user_hints->ep_attr && user_hints->ep_attr->type != FI_EP_UNSPEC &&
	    user_hints->ep_attr->type != FI_EP_RDM)
		return -FI_ENODATA;
	struct cxip_dev *dev;
	int ret = cxip_dev_get(&dev);
	if (ret)
		return -FI_ENODATA;
	struct addr_req r;
	ret = resolve_addrs(node, service, flags, user_hints, &dev->info, &r);
	if (ret)
		return ret;
	bool dup;
	struct fi_info *hints = hints_mr_allocated(user_hints, &dup);
	if (user_hints && !hints)
		return -FI_ENOMEM;
	struct fi_info *head = NULL, **tail = &head;
	for (uint32_t i = 0; i < dev->info.nnics && !ret; i++) {
		if ((r.src_index >= 0 && (uint32_t)r.src_index != i) || !device_allowed(dev->info.nics[i].index))
			continue;
		ret = offers_for_nic(version, &dev->info.nics[i], hints, &r, &tail);
	}
	if (dup)
		fi_freeinfo(hints);
	if (ret) {
		fi_freeinfo(head);
		return ret;
	}
	if (user_hints)
		keep_first_per_domain(head);
	*info = head;
	return head ? 0 : -FI_ENODATA;
}
