/* Event queue (fi_eq): control-path events of the process.  With FI_EP_RDM there is no connection
 * management, so the only producers are fi_eq_write and asynchronous errors; the queue lives in the
 * process and its wait object is an eventfd. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cxip.h"

int cxip_eq_trywait(struct cxip_eq *eq);

static ssize_t eq_pop(struct cxip_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags, bool want_err)
{
	pthread_mutex_lock(&eq->lock);
	struct cxip_eq_entry *e = eq->head;
	ssize_t ret;
	if (!e) {
		ret = -FI_EAGAIN;
	} else if (e->err != want_err) {
		ret = want_err ? -FI_EAGAIN : -FI_EAVAIL;
	} else {
		size_t sz = want_err ? sizeof(e->err_entry) : sizeof(e->entry);
		if (!want_err && len < sz) {
			ret = -FI_ETOOSMALL;
		} else {
			memcpy(buf, &e->entry, want_err ? sizeof(e->err_entry) : sz);
			if (event)
				*event = e->event;
			ret = (ssize_t)sz;
			if (!(flags & FI_PEEK)) {
				eq->head = e->next;
				if (!eq->head)
					eq->tail = NULL;
				eq->changes++;
				free(e);
			}
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

bool cxip_eq_has_entries(struct cxip_eq *eq, uint64_t *changes)
{
	pthread_mutex_lock(&eq->lock);
	bool any = eq->head != NULL;
	if (changes)
		*changes = eq->changes;
	pthread_mutex_unlock(&eq->lock);
	return any;
}

static bool eq_ready(void *arg)
{
	return cxip_eq_has_entries(arg, NULL);
}

static struct cxip_dev *eq_dev(struct cxip_eq *eq)
{
	struct cxip_dev *dev = eq->fab->dev;
	return dev && dev->virt ? dev : NULL;
}

/* Virtual mode: an empty read is an empty poll (idle until something changes for the process). */
static ssize_t eq_read(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	struct cxip_eq *eq = (struct cxip_eq *)fid;
	if (!buf && len)
		return -FI_EINVAL;
	struct cxip_dev *dev = eq_dev(eq);
	if (dev)
		cxip_vt_enter(dev); /* a provider call: charged up to here, its own work not */
	ssize_t r = eq_pop(eq, event, buf, len, flags, false);
	if (r == -FI_EAGAIN && dev) {
		uint64_t changes;
		cxip_eq_has_entries(eq, &changes);
		if (cxip_vt_idle_poll(dev, eq, &eq->poll_seen, changes, eq_ready, eq) == 0)
			r = eq_pop(eq, event, buf, len, flags, false);
	}
	if (dev)
		cxip_vt_rebase(dev);
	return r;
}

static ssize_t eq_readerr(struct fid_eq *fid, struct fi_eq_err_entry *buf, uint64_t flags)
{
	if (!buf)
		return -FI_EINVAL;
	return eq_pop((struct cxip_eq *)fid, NULL, buf, sizeof(*buf), flags, true);
}

static ssize_t eq_write(struct fid_eq *fid, uint32_t event, const void *buf, size_t len, uint64_t flags)
{
	struct cxip_eq *eq = (struct cxip_eq *)fid;
	if (!buf || len > sizeof(struct fi_eq_err_entry))
		return -FI_EINVAL;
	struct cxip_eq_entry *e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	e->event = event;
	(void)flags;
	memcpy(&e->entry, buf, len);
	pthread_mutex_lock(&eq->lock);
	if (eq->tail)
		eq->tail->next = e;
	else
		eq->head = e;
	eq->tail = e;
	eq->changes++;
	pthread_mutex_unlock(&eq->lock);
	struct cxip_dev *dev = eq_dev(eq);
	uint64_t vt = dev ? cxip_vt_enter(dev) : 0;
	/* The wait fd first: a thread woken in poll() on it looks at it at once (sim/cxisimd/endpoint.c). */
	uint64_t one = 1;
	ssize_t r = write(eq->efd, &one, sizeof(one));
	(void)r;
	if (dev) {
		cxip_vt_wake_local(dev, eq->vt_id, vt); /* the wake-ups are the provider's work */
		cxip_vt_rebase(dev);
	}
	return (ssize_t)len;
}

static ssize_t eq_sread(struct fid_eq *fid, uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags)
{
	struct cxip_eq *eq = (struct cxip_eq *)fid;
	struct cxip_dev *dev = eq_dev(eq);
	if (dev) {
		/* Virtual mode: idle until an entry (another thread's fi_eq_write) or the virtual timeout. */
		uint64_t deadline = cxip_vt_deadline(dev, timeout);
		for (;;) {
			ssize_t r = eq_pop(eq, event, buf, len, flags, false);
			if (r != -FI_EAGAIN)
				return r;
			r = cxip_vt_idle(dev, eq->vt_id, deadline, eq_ready, eq);
			if (r == -FI_ETIMEDOUT)
				return -FI_EAGAIN;
			if (r == -FI_EIO)
				return -FI_EIO;
		}
	}
	for (;;) {
		ssize_t r = eq_read(fid, event, buf, len, flags);
		if (r != -FI_EAGAIN)
			return r;
		struct pollfd p = { eq->efd, POLLIN, 0 };
		int n = poll(&p, 1, timeout);
		if (n == 0)
			return -FI_EAGAIN;
		if (n < 0 && errno != EINTR)
			return -errno;
		uint64_t v;
		ssize_t rr = read(eq->efd, &v, sizeof(v));
		(void)rr;
	}
}

static const char *eq_strerror(struct fid_eq *fid, int prov_errno, const void *err_data, char *buf, size_t len)
{
	(void)fid;
	(void)err_data;
	const char *s = fi_strerror(prov_errno);
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = 0;
		return buf;
	}
	return s;
}

int cxip_eq_trywait(struct cxip_eq *eq)
{
	uint64_t v;
	ssize_t r = read(eq->efd, &v, sizeof(v));
	(void)r;
	pthread_mutex_lock(&eq->lock);
	int ret = eq->head ? -FI_EAGAIN : 0;
	pthread_mutex_unlock(&eq->lock);
	struct cxip_dev *dev = eq_dev(eq);
	if (!ret && dev)
		cxip_vt_idle_lazy(dev, eq->vt_id);
	return ret;
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	struct cxip_eq *eq = (struct cxip_eq *)fid;
	return cxip_wait_control(command, arg, eq->wait_obj, eq->efd);
}

static int eq_close(struct fid *fid)
{
	struct cxip_eq *eq = (struct cxip_eq *)fid;
	if (atomic_load(&eq->ref))
		return -FI_EBUSY;
	while (eq->head) {
		struct cxip_eq_entry *e = eq->head;
		eq->head = e->next;
		free(e);
	}
	if (eq->fab->dev)
		cxip_dev_del_pollable(eq->fab->dev, eq);
	close(eq->efd);
	pthread_mutex_destroy(&eq->lock);
	atomic_fetch_sub(&eq->fab->ref, 1);
	free(eq);
	return 0;
}

static struct fi_ops eq_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = cxip_no_bind,
	.control = eq_control,
	.ops_open = cxip_no_ops_open,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

int cxip_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **out, void *context)
{
	struct cxip_fabric *fab = (struct cxip_fabric *)fabric;
	/* As upstream (libfabric's util EQ checks): no attributes means the defaults; FI_AFFINITY is accepted
	 * and its signaling vector ignored; peer EQs are not offered. */
	struct fi_eq_attr def = { .wait_obj = FI_WAIT_NONE };
	if (!fabric || !out)
		return -FI_EINVAL;
	if (!attr)
		attr = &def;
	if (attr->flags & FI_PEER)
		return -FI_ENOSYS;
	if (attr->flags & ~(FI_WRITE | FI_AFFINITY))
		return -FI_EINVAL;
	enum fi_wait_obj wait = attr->wait_obj;
	if (cxip_wait_obj_choose(&wait, false))
		return -FI_ENOSYS;
	struct cxip_eq *eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (eq->efd < 0) {
		free(eq);
		return -FI_ENOMEM;
	}
	eq->fab = fab;
	eq->wait_obj = wait;
	pthread_mutex_init(&eq->lock, NULL);
	static _Atomic uint32_t next_local_id;
	eq->vt_id = CXIP_VT_LOCAL_ID | (atomic_fetch_add(&next_local_id, 1) & 0x7fffffffu);
	if (fab->dev)
		cxip_dev_add_pollable(fab->dev, FI_CLASS_EQ, eq);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &eq_fid_ops;
	eq->eq_fid.ops = &eq_ops;
	atomic_fetch_add(&fab->ref, 1);
	*out = &eq->eq_fid;
	return 0;
}
