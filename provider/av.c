/* Address vector (FI_AV_TABLE semantics for both table and map types): fi_addr_t is an index into a table
 * of 8-byte cxi addresses.  A reverse map (nic, pid, vni) -> fi_addr serves FI_SOURCE, and user ids
 * (FI_AV_USER_ID) replace fi_addr in completions.  AVs of a domain opened with auth_key_size ==
 * FI_AV_AUTH_KEY also hold up to 4 auth keys (the server side of multiple VNIs per endpoint); they are
 * managed through the fi_cxi_av_auth_key_ops extension. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxip.h"

static uint64_t rkey(uint32_t nic, uint32_t pid, uint16_t vni)
{
	return ((uint64_t)vni << 32) | ((uint64_t)nic << CXIP_PID_BITS) | pid | (1ULL << 63);
}

static size_t rhash(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

static int rmap_grow(struct cxip_av *av)
{
	size_t cap = av->rmap_cap ? av->rmap_cap * 2 : 64;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	uint32_t *vals = calloc(cap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -FI_ENOMEM;
	}
	for (size_t i = 0; i < av->rmap_cap; i++) {
		if (!av->rmap_key[i])
			continue;
		size_t j = rhash(av->rmap_key[i], cap);
		while (keys[j])
			j = (j + 1) & (cap - 1);
		keys[j] = av->rmap_key[i];
		vals[j] = av->rmap_val[i];
	}
	free(av->rmap_key);
	free(av->rmap_val);
	av->rmap_key = keys;
	av->rmap_val = vals;
	av->rmap_cap = cap;
	return 0;
}

/* First inserted wins: a duplicate address keeps resolving to its first fi_addr. */
static int rmap_put(struct cxip_av *av, uint64_t k, uint32_t v)
{
	if ((av->rmap_used + 1) * 2 > av->rmap_cap && rmap_grow(av))
		return -FI_ENOMEM;
	size_t j = rhash(k, av->rmap_cap);
	while (av->rmap_key[j]) {
		if (av->rmap_key[j] == k)
			return 0;
		j = (j + 1) & (av->rmap_cap - 1);
	}
	av->rmap_key[j] = k;
	av->rmap_val[j] = v;
	av->rmap_used++;
	return 0;
}

static bool rmap_get(struct cxip_av *av, uint64_t k, uint32_t *v)
{
	if (!av->rmap_cap)
		return false;
	size_t j = rhash(k, av->rmap_cap);
	while (av->rmap_key[j]) {
		if (av->rmap_key[j] == k) {
			*v = av->rmap_val[j];
			return true;
		}
		j = (j + 1) & (av->rmap_cap - 1);
	}
	return false;
}

static void rmap_rebuild(struct cxip_av *av)
{
	memset(av->rmap_key, 0, av->rmap_cap * sizeof(*av->rmap_key));
	av->rmap_used = 0;
	for (size_t i = 0; i < av->count; i++) {
		struct cxip_av_entry *e = &av->tab[i];
		if (e->valid)
			rmap_put(av, rkey(e->addr.nic, e->addr.pid, av->nauth_keys ? av->auth_keys[e->auth_idx].vni : 0),
				 (uint32_t)i);
	}
}

static uint16_t entry_vni(struct cxip_av *av, const struct cxip_av_entry *e)
{
	return av->nauth_keys ? av->auth_keys[e->auth_idx].vni : 0;
}

/* Insert one address; returns its fi_addr or FI_ADDR_NOTAVAIL. */
static fi_addr_t insert_one(struct cxip_av *av, const struct cxip_addr *a, uint32_t auth_idx, fi_addr_t user_id)
{
	if (av->count == av->cap) {
		size_t cap = av->cap ? av->cap * 2 : 64;
		struct cxip_av_entry *t = realloc(av->tab, cap * sizeof(*t));
		if (!t)
			return FI_ADDR_NOTAVAIL;
		av->tab = t;
		av->cap = cap;
	}
	struct cxip_av_entry *e = &av->tab[av->count];
	memset(e, 0, sizeof(*e));
	e->addr = *a;
	e->addr.pad = 0;
	e->addr.pad2 = 0;
	e->user_id = user_id;
	e->auth_idx = auth_idx;
	e->valid = true;
	if (rmap_put(av, rkey(a->nic, a->pid, entry_vni(av, e)), (uint32_t)av->count))
		return FI_ADDR_NOTAVAIL;
	return av->count++;
}

static int av_insert_common(struct cxip_av *av, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
			    int auth_idx)
{
	if (!addr && count)
		return -FI_EINVAL;
	if (flags & ~(FI_MORE | FI_AV_USER_ID | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if ((flags & FI_AV_USER_ID) && ((av->flags & FI_AV_USER_ID) || !fi_addr))
		return -FI_EINVAL; /* an AV open flag or an insert flag, not both; ids come in fi_addr */
	const char *in = addr;
	int n = 0;
	pthread_rwlock_wrlock(&av->lock);
	for (size_t i = 0; i < count; i++) {
		uint32_t ai = 0;
		struct cxip_addr a = cxip_addr_load(in + i * cxip_addrlen);
		if (auth_idx >= 0) {
			ai = (uint32_t)auth_idx;
		} else if (av->nauth_keys && a.vni) {
			for (size_t k = 0; k < av->nauth_keys; k++)
				if (av->auth_keys[k].vni == a.vni)
					ai = (uint32_t)k;
		}
		fi_addr_t uid = (flags & FI_AV_USER_ID) ? fi_addr[i] : FI_ADDR_NOTAVAIL;
		fi_addr_t fa = insert_one(av, &a, ai, uid);
		if (fa != FI_ADDR_NOTAVAIL) {
			if (!(flags & FI_AV_USER_ID) && uid == FI_ADDR_NOTAVAIL)
				av->tab[fa].user_id = fa;
			n++;
		}
		if (fi_addr)
			fi_addr[i] = fa;
	}
	pthread_rwlock_unlock(&av->lock);
	return n;
}

static int av_insert(struct fid_av *fid, const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
		     void *context)
{
	(void)context;
	return av_insert_common((struct cxip_av *)fid, addr, count, fi_addr, flags, -1);
}

static int parse_svc_addr(struct cxip_av *av, const char *node, const char *service, struct cxip_addr *a)
{
	if (!node || !service)
		return -FI_EINVAL;
	char *end;
	unsigned long pid = strtoul(service, &end, 0);
	if (*end || end == service || pid >= CXIP_PID_ANY)
		return -FI_EINVAL;
	unsigned idx;
	char tail;
	unsigned long nic;
	if (sscanf(node, "cxi%u%c", &idx, &tail) == 1) {
		if (idx >= av->dom->dev->info.nnics)
			return -FI_EINVAL;
		nic = av->dom->dev->info.nics[idx].addr;
	} else {
		nic = strtoul(node, &end, 0);
		if (*end || end == node || nic >= (1ul << CXIP_NIC_BITS))
			return -FI_EINVAL;
	}
	memset(a, 0, sizeof(*a));
	a->nic = (uint32_t)nic;
	a->pid = (uint32_t)pid;
	return 0;
}

static int av_insertsvc(struct fid_av *fid, const char *node, const char *service, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	struct cxip_addr a;
	int ret = parse_svc_addr(av, node, service, &a);
	if (ret)
		return ret;
	return av_insert(fid, &a, 1, fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *fid, const char *node, size_t nodecnt, const char *service, size_t svccnt,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	struct cxip_addr base;
	int ret = parse_svc_addr(av, node, service, &base), n = 0;
	if (ret)
		return ret;
	for (size_t i = 0; i < nodecnt; i++)
		for (size_t j = 0; j < svccnt; j++) {
			struct cxip_addr a = base;
			a.nic = base.nic + (uint32_t)i;
			a.pid = base.pid + (uint32_t)j;
			ret = av_insert(fid, &a, 1, fi_addr ? &fi_addr[i * svccnt + j] : NULL, flags, context);
			if (ret < 0)
				return ret;
			n += ret;
		}
	return n;
}

static int av_remove(struct fid_av *fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	if (flags)
		return -FI_EBADFLAGS;
	if (!fi_addr && count)
		return -FI_EINVAL;
	pthread_rwlock_wrlock(&av->lock);
	int ret = 0;
	for (size_t i = 0; i < count; i++) {
		if (fi_addr[i] >= av->count || !av->tab[fi_addr[i]].valid) {
			ret = -FI_EINVAL;
			continue;
		}
		av->tab[fi_addr[i]].valid = false;
	}
	rmap_rebuild(av);
	pthread_rwlock_unlock(&av->lock);
	return ret;
}

static int av_lookup(struct fid_av *fid, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	if (!addrlen || (!addr && *addrlen))
		return -FI_EINVAL;
	struct cxip_addr a;
	int ret = cxip_av_lookup_addr(av, fi_addr, &a, NULL);
	if (ret)
		return ret;
	memcpy(addr, &a, *addrlen < cxip_addrlen ? *addrlen : cxip_addrlen);
	size_t have = *addrlen;
	*addrlen = cxip_addrlen;
	return have < cxip_addrlen ? -FI_ETOOSMALL : 0;
}

static const char *av_straddr(struct fid_av *fid, const void *addr, char *buf, size_t *len)
{
	(void)fid;
	if (!addr || !buf || !len)
		return NULL;
	struct cxip_addr a = cxip_addr_load(addr);
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "fi_addr_cxi://0x%08x", cxip_addr_first32(&a));
	if (*len)
		snprintf(buf, *len, "%s", tmp);
	*len = (size_t)n + 1;
	return buf;
}

static int av_close(struct fid *fid)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	if (atomic_load(&av->ref))
		return -FI_EBUSY;
	atomic_fetch_sub(&av->dom->ref, 1);
	pthread_rwlock_destroy(&av->lock);
	free(av->tab);
	free(av->rmap_key);
	free(av->rmap_val);
	free(av);
	return 0;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid;
	(void)bfid;
	(void)flags;
	return -FI_ENOSYS; /* FI_EVENT AVs are not supported: inserts complete synchronously */
}

/* ---- auth key extension ---- */

static int ext_insert_auth_key(struct fid_av *fid, const void *auth_key, size_t auth_key_size, fi_addr_t *fi_addr,
			       uint64_t flags)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	if (!av->dom->av_auth_key)
		return -FI_EINVAL;
	if (!auth_key || auth_key_size != sizeof(struct cxi_auth_key) || !fi_addr || (flags & ~FI_AV_USER_ID))
		return -FI_EINVAL;
	struct cxi_auth_key k;
	memcpy(&k, auth_key, sizeof(k));
	if (!k.vni)
		return -FI_EINVAL;
	if (!k.svc_id)
		k.svc_id = CXIP_DEFAULT_SVC_ID;
	pthread_rwlock_wrlock(&av->lock);
	int ret = 0;
	if (av->keys_frozen) {
		ret = -FI_EBUSY; /* keys must be in place before an endpoint using the AV is enabled */
	} else if (av->nauth_keys >= CXIP_MAX_AUTH_KEYS) {
		ret = -FI_ENOSPC;
	} else if (av->nauth_keys && k.svc_id != av->auth_keys[0].svc_id) {
		ret = -FI_EINVAL; /* one service per domain */
	} else {
		for (size_t i = 0; i < av->nauth_keys; i++)
			if (av->auth_keys[i].vni == k.vni)
				ret = -FI_EALREADY;
	}
	if (!ret) {
		size_t i = av->nauth_keys++;
		av->auth_keys[i] = k;
		av->auth_key_user_id[i] = (flags & FI_AV_USER_ID) ? *fi_addr : CXIP_AV_AUTH_KEY_BASE + i;
		*fi_addr = CXIP_AV_AUTH_KEY_BASE + i;
	}
	pthread_rwlock_unlock(&av->lock);
	return ret;
}

static int ext_lookup_auth_key(struct fid_av *fid, fi_addr_t addr, void *auth_key, size_t *auth_key_size)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	if (!auth_key || !auth_key_size)
		return -FI_EINVAL;
	pthread_rwlock_rdlock(&av->lock);
	int ret = 0;
	size_t idx = 0;
	if (addr >= CXIP_AV_AUTH_KEY_BASE && addr - CXIP_AV_AUTH_KEY_BASE < av->nauth_keys)
		idx = addr - CXIP_AV_AUTH_KEY_BASE;
	else if (addr < av->count && av->tab[addr].valid && av->nauth_keys)
		idx = av->tab[addr].auth_idx;
	else
		ret = -FI_EINVAL;
	if (!ret) {
		size_t have = *auth_key_size;
		memcpy(auth_key, &av->auth_keys[idx], have < sizeof(struct cxi_auth_key) ? have : sizeof(struct cxi_auth_key));
		*auth_key_size = sizeof(struct cxi_auth_key);
		if (have < sizeof(struct cxi_auth_key))
			ret = -FI_ETOOSMALL;
	}
	pthread_rwlock_unlock(&av->lock);
	return ret;
}

static int ext_insert_addr(struct fid_av *fid, const void *addr, size_t count, fi_addr_t auth_key_addr,
			   fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	(void)context;
	if (auth_key_addr < CXIP_AV_AUTH_KEY_BASE || auth_key_addr - CXIP_AV_AUTH_KEY_BASE >= av->nauth_keys)
		return -FI_EINVAL;
	return av_insert_common(av, addr, count, fi_addr, flags, (int)(auth_key_addr - CXIP_AV_AUTH_KEY_BASE));
}

static size_t ext_max_ep_auth_key(struct fid_av *fid)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	return av->dom->av_auth_key ? CXIP_MAX_AUTH_KEYS : 1;
}

/* FI_AV_USER_ID as an AV open flag: ids are set after insertion (libfabric 1.20's fi_av_set_user_id). */
static int ext_set_user_id(struct fid_av *fid, fi_addr_t fi_addr, fi_addr_t user_id, uint64_t flags)
{
	struct cxip_av *av = (struct cxip_av *)fid;
	if (flags || !(av->flags & FI_AV_USER_ID))
		return -FI_EINVAL;
	pthread_rwlock_wrlock(&av->lock);
	int ret = 0;
	if (fi_addr >= av->count || !av->tab[fi_addr].valid)
		ret = -FI_EINVAL;
	else
		av->tab[fi_addr].user_id = user_id;
	pthread_rwlock_unlock(&av->lock);
	return ret;
}

static struct fi_cxi_av_auth_key_ops av_ext_ops = {
	.insert_auth_key = ext_insert_auth_key,
	.lookup_auth_key = ext_lookup_auth_key,
	.insert_addr = ext_insert_addr,
	.max_ep_auth_key = ext_max_ep_auth_key,
	.set_user_id = ext_set_user_id,
};

static int av_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context)
{
	(void)fid;
	(void)flags;
	(void)context;
	if (!name || !ops)
		return -FI_EINVAL;
	if (strcmp(name, FI_CXI_AV_AUTH_KEY_OPS))
		return -FI_ENOSYS;
	*ops = &av_ext_ops;
	return 0;
}

static int av_control(struct fid *fid, int command, void *arg)
{
	(void)fid;
	(void)command;
	(void)arg;
	return -FI_ENOSYS;
}

static struct fi_ops av_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = av_bind,
	.control = av_control,
	.ops_open = av_ops_open,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
};

int cxip_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **out, void *context)
{
	struct cxip_domain *dom = (struct cxip_domain *)domain;
	if (!domain || !attr || !out)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP && attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	/* Upstream cxi's checks: no scalable endpoints, no shared (named or FI_READ) AVs, no FI_EVENT
	 * (inserts complete synchronously); other flags (FI_SYMMETRIC) are accepted. */
	if (attr->rx_ctx_bits || attr->name || (attr->flags & (FI_READ | FI_EVENT)))
		return -FI_EINVAL;
	if ((attr->flags & FI_AV_USER_ID) && !((dom->caps | dom->info->domain_attr->caps) & FI_AV_USER_ID))
		return -FI_EINVAL;
	struct cxip_av *av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	av->flags = attr->flags;
	pthread_rwlock_init(&av->lock, NULL);
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &av_fid_ops;
	av->av_fid.ops = &av_ops;
	if (attr->count) {
		av->cap = attr->count;
		av->tab = calloc(av->cap, sizeof(*av->tab));
		if (!av->tab) {
			free(av);
			return -FI_ENOMEM;
		}
	}
	atomic_fetch_add(&dom->ref, 1);
	*out = &av->av_fid;
	return 0;
}

/* ---- used by endpoints and CQs ---- */

int cxip_av_lookup_addr(struct cxip_av *av, fi_addr_t fi_addr, struct cxip_addr *addr, uint16_t *vni)
{
	pthread_rwlock_rdlock(&av->lock);
	int ret = 0;
	if (fi_addr >= av->count || !av->tab[fi_addr].valid) {
		ret = -FI_EINVAL;
	} else {
		*addr = av->tab[fi_addr].addr;
		if (vni)
			*vni = av->nauth_keys ? av->auth_keys[av->tab[fi_addr].auth_idx].vni : 0;
	}
	pthread_rwlock_unlock(&av->lock);
	return ret;
}

/* Source of a completion: the user id (FI_AV_USER_ID) or the fi_addr, FI_ADDR_NOTAVAIL if unknown. */
fi_addr_t cxip_av_reverse(struct cxip_av *av, uint32_t nic, uint32_t pid, uint16_t vni)
{
	pthread_rwlock_rdlock(&av->lock);
	uint32_t idx;
	fi_addr_t r = FI_ADDR_NOTAVAIL;
	if (rmap_get(av, rkey(nic, pid, av->nauth_keys ? vni : 0), &idx))
		r = av->tab[idx].user_id;
	pthread_rwlock_unlock(&av->lock);
	return r;
}

/* fi_addr naming the auth key of a VNI (FI_SOURCE_ERR on a multi-key endpoint), else FI_ADDR_NOTAVAIL. */
fi_addr_t cxip_av_auth_key_addr(struct cxip_av *av, uint16_t vni)
{
	pthread_rwlock_rdlock(&av->lock);
	fi_addr_t r = FI_ADDR_NOTAVAIL;
	for (size_t i = 0; i < av->nauth_keys; i++)
		if (av->auth_keys[i].vni == vni)
			r = av->auth_key_user_id[i];
	pthread_rwlock_unlock(&av->lock);
	return r;
}

size_t cxip_av_vnis(struct cxip_av *av, uint16_t *vnis, size_t max)
{
	pthread_rwlock_wrlock(&av->lock);
	av->keys_frozen = true;
	size_t n = av->nauth_keys < max ? av->nauth_keys : max;
	for (size_t i = 0; i < n; i++)
		vnis[i] = av->auth_keys[i].vni;
	pthread_rwlock_unlock(&av->lock);
	return n;
}
