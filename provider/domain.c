/* The domain: one simulated Cassini NIC (cxiN) of this node, with its authorization key (CXI service and
 * VNI) and the MR policy switches (optimized MRs, provider key cache, match events) that fi_control
 * changes with the upstream option numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cxip.h"

/* ---- default authorization key (SLINGSHOT_* as set by the workload manager, else FI_CXI_DEFAULT_VNI) ---- */

static int slingshot_vni(void)
{
	const char *s = getenv("SLINGSHOT_VNIS");
	if (!s || !*s)
		return -1;
	/* The first token is the job step's VNI; the second (inter-job-step) is not used. */
	char *end;
	long v = strtol(s, &end, 10);
	if (end == s || v < 0 || v > 0xffff)
		return -1;
	return (int)v;
}

static int slingshot_svc_id(const char *device)
{
	const char *devs = getenv("SLINGSHOT_DEVICES"), *svcs = getenv("SLINGSHOT_SVC_IDS");
	if (!devs || !svcs)
		return -1;
	char *d = strdup(devs), *s = strdup(svcs), *sd = NULL, *ss = NULL;
	int pos = -1, i = 0, svc = -1;
	for (char *t = d ? strtok_r(d, ",", &sd) : NULL; t; t = strtok_r(NULL, ",", &sd), i++)
		if (!strcmp(t, device)) {
			pos = i;
			break;
		}
	i = 0;
	for (char *t = (s && pos >= 0) ? strtok_r(s, ",", &ss) : NULL; t; t = strtok_r(NULL, ",", &ss), i++)
		if (i == pos) {
			svc = atoi(t);
			break;
		}
	free(d);
	free(s);
	return svc;
}

static void default_auth_key(const char *device, struct cxi_auth_key *key)
{
	int vni = slingshot_vni(), svc = slingshot_svc_id(device);
	key->vni = (uint16_t)(vni >= 0 ? vni : cxip_env.default_vni);
	key->svc_id = svc > 0 ? (uint32_t)svc : CXIP_DEFAULT_SVC_ID;
}

/* ---- fi_control options ---- */

static int dom_set_get(struct cxip_domain *dom, int name, void *arg)
{
	bool prov_key = !(dom->mr_mode & FI_MR_ENDPOINT) || (dom->mr_mode & FI_MR_PROV_KEY);
	if (!arg)
		return -FI_EINVAL;
	switch (name) {
	case FI_OPT_CXI_SET_OPTIMIZED_MRS:
		if (!prov_key)
			return -FI_EINVAL; /* requires FI_MR_PROV_KEY, as upstream */
		dom->optimized_mrs = *(bool *)arg;
		return 0;
	case FI_OPT_CXI_GET_OPTIMIZED_MRS:
		*(bool *)arg = dom->optimized_mrs;
		return 0;
	case FI_OPT_CXI_SET_MR_MATCH_EVENTS:
		dom->mr_match_events = *(bool *)arg;
		return 0;
	case FI_OPT_CXI_GET_MR_MATCH_EVENTS:
		*(bool *)arg = dom->mr_match_events;
		return 0;
	case FI_OPT_CXI_SET_PROV_KEY_CACHE:
		if (!prov_key)
			return -FI_EINVAL;
		dom->prov_key_cache = *(bool *)arg;
		return 0;
	case FI_OPT_CXI_GET_PROV_KEY_CACHE:
		*(bool *)arg = dom->prov_key_cache;
		return 0;
	case FI_OPT_CXI_SET_RX_MATCH_MODE_OVERRIDE: {
		int m = cxip_match_mode_parse((const char *)arg);
		if (m < 0)
			return -FI_EINVAL;
		dom->match_mode = m;
		return 0;
	}
	case FI_OPT_CXI_GET_RX_MATCH_MODE_OVERRIDE:
		strcpy((char *)arg, cxip_match_mode_str(dom->match_mode));
		return 0;
	case FI_OPT_CXI_SET_REQ_BUF_SIZE_OVERRIDE:
		if (!*(size_t *)arg)
			return -FI_EINVAL;
		dom->req_buf_size = *(size_t *)arg;
		return 0;
	case FI_OPT_CXI_GET_REQ_BUF_SIZE_OVERRIDE:
		*(size_t *)arg = dom->req_buf_size;
		return 0;
	default:
		return -FI_EINVAL;
	}
}

static int dom_control(struct fid *fid, int command, void *arg)
{
	struct cxip_domain *dom = (struct cxip_domain *)fid;
	if (command == FI_QUEUE_WORK || command == FI_FLUSH_WORK || command == FI_CANCEL_WORK)
		return cxip_dom_trig_control(dom, command, arg);
	if (command == FI_SET_VAL || command == FI_GET_VAL) {
		struct fi_fid_var *v = arg;
		if (!v)
			return -FI_EINVAL;
		return dom_set_get(dom, v->name, v->val);
	}
	return dom_set_get(dom, command, arg);
}

/* ---- domain ops extension (FI_CXI_DOM_OPS_*) ---- */

static int dom_cntr_read(struct fid *fid, unsigned int cntr, uint64_t *value, struct timespec *ts)
{
	(void)fid;
	(void)cntr;
	(void)value;
	(void)ts;
	return -FI_EOPNOTSUPP; /* NIC telemetry is reported by the daemon (telemetry.csv), not per process */
}

static int dom_topology(struct fid *fid, unsigned int *group_id, unsigned int *switch_id, unsigned int *port_id)
{
	struct cxip_domain *dom = (struct cxip_domain *)fid;
	if (!group_id || !switch_id || !port_id)
		return -FI_EINVAL;
	/* Without a dragonfly topology every NIC hangs off one switch: its port is its address. */
	*group_id = 0;
	*switch_id = 0;
	*port_id = dom->nic_addr;
	return 0;
}

static int dom_hybrid_mr_desc(struct fid *fid, bool enable)
{
	(void)fid;
	(void)enable;
	return 0; /* MR descriptors are never needed for local buffers here */
}

static size_t dom_unexp_msgs(struct fid_ep *ep, struct fi_cq_tagged_entry *entry, size_t count, fi_addr_t *src,
			     size_t *ux_count)
{
	(void)ep;
	(void)entry;
	(void)count;
	(void)src;
	if (ux_count)
		*ux_count = 0;
	return 0;
}

static int dom_dwq_depth(struct fid *fid, size_t *depth)
{
	(void)fid;
	if (!depth)
		return -FI_EINVAL;
	*depth = CXIP_DWQ_DEPTH; /* upstream: the service's TLEs less TLE_RESERVED */
	return 0;
}

static int dom_enable_match_events(struct fid *fid, bool enable)
{
	return dom_set_get((struct cxip_domain *)fid, FI_OPT_CXI_SET_MR_MATCH_EVENTS, &enable);
}

static int dom_enable_optimized(struct fid *fid, bool enable)
{
	return dom_set_get((struct cxip_domain *)fid, FI_OPT_CXI_SET_OPTIMIZED_MRS, &enable);
}

static struct fi_cxi_dom_ops dom_ext_ops = {
	.cntr_read = dom_cntr_read,
	.topology = dom_topology,
	.enable_hybrid_mr_desc = dom_hybrid_mr_desc,
	.ep_get_unexp_msgs = dom_unexp_msgs,
	.get_dwq_depth = dom_dwq_depth,
	.enable_mr_match_events = dom_enable_match_events,
	.enable_optimized_mrs = dom_enable_optimized,
};

static int dom_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	(void)fid;
	(void)flags;
	(void)context;
	if (!name || !ops)
		return -FI_EINVAL;
	if (!strcmp(name, FI_CXI_DOM_OPS_1) || !strcmp(name, FI_CXI_DOM_OPS_2) || !strcmp(name, FI_CXI_DOM_OPS_3) ||
	    !strcmp(name, FI_CXI_DOM_OPS_4) || !strcmp(name, FI_CXI_DOM_OPS_5) || !strcmp(name, FI_CXI_DOM_OPS_6)) {
		*ops = &dom_ext_ops;
		return 0;
	}
	return -FI_EINVAL;
}

/* ---- lifetime ---- */

static int dom_close(struct fid *fid)
{
	struct cxip_domain *dom = (struct cxip_domain *)fid;
	if (atomic_load(&dom->ref))
		return -FI_EBUSY;
	atomic_fetch_sub(&dom->fab->ref, 1);
	cxip_iomm_fini(dom);
	fi_freeinfo(dom->info);
	pthread_mutex_destroy(&dom->lock);
	free(dom);
	return 0;
}

static int dom_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)flags;
	if (!bfid)
		return -FI_EINVAL;
	return bfid->fclass == FI_CLASS_EQ ? 0 : -FI_EINVAL;
}

static int dom_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
			    struct fi_atomic_attr *attr, uint64_t flags)
{
	(void)domain;
	return cxip_query_atomic(datatype, op, attr, flags);
}

static int dom_no_open(void)
{
	return -FI_ENOSYS;
}

static int dom_sep(struct fid_domain *d, struct fi_info *i, struct fid_ep **e, void *c)
{
	(void)d, (void)i, (void)e, (void)c;
	return dom_no_open();
}

static int dom_poll_open(struct fid_domain *d, struct fi_poll_attr *a, struct fid_poll **p)
{
	(void)d, (void)a, (void)p;
	return dom_no_open();
}

static int dom_stx(struct fid_domain *d, struct fi_tx_attr *a, struct fid_stx **s, void *c)
{
	(void)d, (void)a, (void)s, (void)c;
	return dom_no_open();
}

static int dom_srx(struct fid_domain *d, struct fi_rx_attr *a, struct fid_ep **e, void *c)
{
	(void)d, (void)a, (void)e, (void)c;
	return dom_no_open();
}

static int dom_query_coll(struct fid_domain *d, enum fi_collective_op op, struct fi_collective_attr *a, uint64_t f)
{
	(void)d, (void)op, (void)a, (void)f;
	return -FI_EOPNOTSUPP;
}

static int dom_endpoint2(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep, uint64_t flags, void *ctx)
{
	if (flags)
		return -FI_EINVAL;
	return cxip_ep_open(d, info, ep, ctx);
}

static struct fi_ops dom_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = dom_close,
	.bind = dom_bind,
	.control = dom_control,
	.ops_open = dom_ops_open,
};

static struct fi_ops_domain dom_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = cxip_av_open,
	.cq_open = cxip_cq_open,
	.endpoint = cxip_ep_open,
	.scalable_ep = dom_sep,
	.cntr_open = cxip_cntr_open,
	.poll_open = dom_poll_open,
	.stx_ctx = dom_stx,
	.srx_ctx = dom_srx,
	.query_atomic = dom_query_atomic,
	.query_collective = dom_query_coll,
	.endpoint2 = dom_endpoint2,
};

static struct fi_ops_mr dom_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = cxip_mr_reg,
	.regv = cxip_mr_regv,
	.regattr = cxip_mr_regattr,
};

int cxip_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain, void *context)
{
	struct cxip_fabric *fab = (struct cxip_fabric *)fabric;
	if (!fabric || !info || !domain || !info->domain_attr || !info->domain_attr->name)
		return -FI_EINVAL;
	if (info->fabric_attr && info->fabric_attr->prov_name && strcasecmp(info->fabric_attr->prov_name, CXIP_PROV_NAME))
		return -FI_EINVAL;
	struct cxip_dev *dev = fab->dev;
	if (cxip_dev_dead(dev))
		return -FI_EIO;
	unsigned idx;
	char tail;
	if (sscanf(info->domain_attr->name, "cxi%u%c", &idx, &tail) != 1 || idx >= dev->info.nnics)
		return -FI_ENODATA;
	const struct fi_domain_attr *da = info->domain_attr;
	if (da->auth_key_size && da->auth_key_size != FI_AV_AUTH_KEY && da->auth_key_size != sizeof(struct cxi_auth_key))
		return -FI_EINVAL;
	if (da->auth_key && da->auth_key_size != sizeof(struct cxi_auth_key))
		return -FI_EINVAL;
	struct cxip_domain *dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	dom->info = fi_dupinfo(info);
	if (!dom->info) {
		free(dom);
		return -FI_ENOMEM;
	}
	dom->fab = fab;
	dom->dev = dev;
	dom->nic_index = idx;
	dom->nic_addr = dev->info.nics[idx].addr;
	dom->caps = info->caps;
	dom->mode = info->mode;
	dom->mr_mode = da->mr_mode;
	dom->threading = da->threading;
	dom->tclass = da->tclass;
	dom->av_auth_key = da->auth_key_size == FI_AV_AUTH_KEY;
	if (da->auth_key) {
		memcpy(&dom->auth_key, da->auth_key, sizeof(dom->auth_key));
		if (!dom->auth_key.svc_id)
			dom->auth_key.svc_id = CXIP_DEFAULT_SVC_ID;
	} else {
		default_auth_key(info->domain_attr->name, &dom->auth_key);
	}
	dom->optimized_mrs = cxip_env.optimized_mrs;
	dom->mr_match_events = cxip_env.mr_match_events;
	dom->prov_key_cache = cxip_env.prov_key_cache;
	/* fi_writedata reports at the target through a second, reporting LE per MR (upstream's dual entry):
	 * provider keys only, and neither cached nor optimized MRs can have one. */
	dom->writedata = cxip_env.enable_writedata && (dom->mr_mode & FI_MR_PROV_KEY) && (dom->mr_mode & FI_MR_ENDPOINT);
	if (dom->writedata) {
		dom->prov_key_cache = false;
		dom->optimized_mrs = false;
	}
	dom->match_mode = cxip_env.msg_offload ? cxip_env.rx_match_mode : CXIP_MATCH_SOFTWARE;
	dom->req_buf_size = cxip_env.req_buf_size;
	int ret = cxip_iomm_init(dom);
	if (ret) {
		fi_freeinfo(dom->info);
		free(dom);
		return ret;
	}
	pthread_mutex_init(&dom->lock, NULL);
	dom->dom_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->dom_fid.fid.context = context;
	dom->dom_fid.fid.ops = &dom_fid_ops;
	dom->dom_fid.ops = &dom_ops;
	dom->dom_fid.mr = &dom_mr_ops;
	atomic_fetch_add(&fab->ref, 1);
	*domain = &dom->dom_fid;
	return 0;
}

void cxip_domain_ep_enabled(struct cxip_domain *dom, struct cxip_ep *ep)
{
	pthread_mutex_lock(&dom->lock);
	ep->dom_next = dom->eps;
	dom->eps = ep;
	/* MRs of a domain without FI_MR_ENDPOINT become reachable through every endpoint. */
	for (struct cxip_mr *mr = dom->mrs; mr; mr = mr->next)
		cxip_mr_enable_on(mr, ep);
	pthread_mutex_unlock(&dom->lock);
}

void cxip_domain_ep_closed(struct cxip_domain *dom, struct cxip_ep *ep)
{
	pthread_mutex_lock(&dom->lock);
	for (struct cxip_ep **p = &dom->eps; *p; p = &(*p)->dom_next)
		if (*p == ep) {
			*p = ep->dom_next;
			break;
		}
	pthread_mutex_unlock(&dom->lock);
}
