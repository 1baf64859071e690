/* The fabric object: a handle on the simulated Slingshot fabric, i.e. on the attached daemon. */
#include <stdlib.h>
#include <string.h>

#include "cxip.h"

int cxip_cq_trywait(struct cxip_cq *cq);
int cxip_cntr_trywait(struct cxip_cntr *cntr);
int cxip_eq_trywait(struct cxip_eq *eq);

static int fabric_close(struct fid *fid)
{
	struct cxip_fabric *fab = (struct cxip_fabric *)fid;
	if (atomic_load(&fab->ref))
		return -FI_EBUSY;
	free(fab);
	return 0;
}

/* fi_trywait over a set of objects: -FI_EAGAIN if any of them has something to read. */
static int trywait_all(struct fid **fids, int count)
{
	if (count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		int ret;
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ: ret = cxip_cq_trywait((struct cxip_cq *)fids[i]); break;
		case FI_CLASS_CNTR: ret = cxip_cntr_trywait((struct cxip_cntr *)fids[i]); break;
		case FI_CLASS_EQ: ret = cxip_eq_trywait((struct cxip_eq *)fids[i]); break;
		default: return -FI_EINVAL;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric;
	/* Virtual mode: a provider call like the others, charged up to its entry; its own work (the eventfd
	 * drains, the arming) is not the application's. */
	struct cxip_dev *dev = cxip_dev_current();
	if (dev && !dev->virt)
		dev = NULL;
	if (dev)
		cxip_vt_enter(dev);
	int ret = trywait_all(fids, count);
	if (dev)
		cxip_vt_rebase(dev);
	return ret;
}

static int fabric_pep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep, void *context)
{
	(void)fabric;
	(void)info;
	(void)pep;
	(void)context;
	return -FI_ENOSYS; /* FI_EP_RDM only: no connection management */
}

static int fabric_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	(void)fabric;
	(void)attr;
	(void)waitset;
	return -FI_ENOSYS;
}

static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom, uint64_t flags,
			  void *context)
{
	if (flags)
		return -FI_EINVAL;
	return cxip_domain_open(fabric, info, dom, context);
}

static struct fi_ops fabric_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = cxip_no_bind,
	.control = cxip_no_control,
	.ops_open = cxip_no_ops_open,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = cxip_domain_open,
	.passive_ep = fabric_pep,
	.eq_open = cxip_eq_open,
	.wait_open = fabric_wait_open,
	.trywait = fabric_trywait,
	.domain2 = fabric_domain2,
};

int cxip_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (!attr || !fabric)
		return -FI_EINVAL;
	if (attr->name && strcmp(attr->name, CXIP_PROV_NAME))
		return -FI_ENODATA;
	struct cxip_dev *dev;
	int ret = cxip_dev_get(&dev);
	if (ret)
		return ret == -FI_ENODEV ? -FI_ENODATA : ret;
	struct cxip_fabric *fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->dev = dev;
	fab->fab_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fab_fid.fid.context = context;
	fab->fab_fid.fid.ops = &fabric_fid_ops;
	fab->fab_fid.ops = &fabric_ops;
	*fabric = &fab->fab_fid;
	return 0;
}
