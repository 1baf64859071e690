/* Counters: Cassini counting events.  The daemon keeps each counter's success and failure values in a
 * shared page (the NIC's counter writeback), so fi_cntr_read is a load; set/add go to the NIC as CT
 * commands through the control socket; fi_cntr_wait sleeps on the counter's eventfd, which the daemon
 * rings when a waiter armed the page. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cxip.h"

int cxip_cntr_trywait(struct cxip_cntr *cntr);

struct cntr_cond {
	struct cxip_cntr *c;
	uint64_t success, failure, threshold;
};

static bool cntr_changed(void *arg)
{
	struct cntr_cond *k = arg;
	return atomic_load(&k->c->ct->success) != k->success || atomic_load(&k->c->ct->failure) != k->failure;
}

/* Virtual mode: a read that finds the value the previous read found is an empty poll (a loop on fi_cntr_read
 * waits for the counter): from the second such read on, the thread is idle until the counter or anything
 * else of the process changes (cxip_vt_idle_poll). */
static uint64_t cntr_read(struct fid_cntr *fid)
{
	struct cxip_cntr *c = (struct cxip_cntr *)fid;
	uint64_t v = atomic_load_explicit(&c->ct->success, memory_order_acquire);
	struct cxip_dev *dev = c->dom->dev;
	if (!dev->virt)
		return v;
	cxip_vt_enter(dev); /* a provider call: charged up to here, its own work not */
	struct cntr_cond k = { c, v, atomic_load(&c->ct->failure), 0 };
	if (cxip_vt_idle_poll(dev, c, &c->poll_seen, v, cntr_changed, &k) == 0)
		v = atomic_load_explicit(&c->ct->success, memory_order_acquire);
	cxip_vt_rebase(dev);
	return v;
}

static uint64_t cntr_readerr(struct fid_cntr *fid)
{
	struct cxip_cntr *c = (struct cxip_cntr *)fid;
	if (!c->dom->dev->virt)
		return atomic_load_explicit(&c->ct->failure, memory_order_acquire);
	cxip_vt_enter(c->dom->dev);
	uint64_t v = atomic_load_explicit(&c->ct->failure, memory_order_acquire);
	cxip_vt_rebase(c->dom->dev);
	return v;
}

static bool cntr_wait_done(void *arg)
{
	struct cntr_cond *k = arg;
	return atomic_load(&k->c->ct->success) >= k->threshold || atomic_load(&k->c->ct->failure) != k->failure;
}

/* Virtual mode: idle until the threshold, an error, or the timeout in virtual time. */
static int cntr_wait_virtual(struct cxip_cntr *c, uint64_t threshold, int timeout)
{
	struct cxip_dev *dev = c->dom->dev;
	uint64_t deadline = cxip_vt_deadline(dev, timeout);
	struct cntr_cond k = { c, 0, atomic_load(&c->ct->failure), threshold };
	for (;;) {
		if (atomic_load(&c->ct->failure) != k.failure)
			return -FI_EAVAIL;
		if (atomic_load(&c->ct->success) >= threshold)
			return 0;
		if (cxip_dev_dead(dev))
			return -FI_EIO;
		int r = cxip_vt_idle(dev, c->id, deadline, cntr_wait_done, &k);
		if (r == -FI_ETIMEDOUT)
			return cntr_wait_done(&k) ? 0 : -FI_ETIMEDOUT;
		if (r == -FI_EIO)
			return -FI_EIO;
	}
}

static int cntr_update(struct cxip_cntr *c, uint32_t which, uint32_t add, uint64_t value)
{
	struct ctl_ct_set_req req = { .id = c->id, .which = which, .add = add, .value = value };
	return cxip_dev_call(c->dom->dev, CTL_CT_SET, &req, sizeof(req), NULL, 0, NULL, NULL);
}

static int cntr_add(struct fid_cntr *fid, uint64_t value)
{
	return cntr_update((struct cxip_cntr *)fid, 0, 1, value);
}

static int cntr_set(struct fid_cntr *fid, uint64_t value)
{
	return cntr_update((struct cxip_cntr *)fid, 0, 0, value);
}

static int cntr_adderr(struct fid_cntr *fid, uint64_t value)
{
	return cntr_update((struct cxip_cntr *)fid, 1, 1, value);
}

static int cntr_seterr(struct fid_cntr *fid, uint64_t value)
{
	return cntr_update((struct cxip_cntr *)fid, 1, 0, value);
}

int cxip_cntr_trywait(struct cxip_cntr *c)
{
	if (c->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	if (cxip_dev_dead(c->dom->dev))
		return -FI_EIO;
	uint64_t v;
	ssize_t r = read(c->efd, &v, sizeof(v));
	(void)r;
	atomic_store(&c->ct->armed, 1);
	if (c->dom->dev->virt)
		cxip_vt_idle_lazy(c->dom->dev, c->id);
	return 0;
}

static int cntr_wait(struct fid_cntr *fid, uint64_t threshold, int timeout)
{
	struct cxip_cntr *c = (struct cxip_cntr *)fid;
	if (c->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	if (c->dom->dev->virt)
		return cntr_wait_virtual(c, threshold, timeout);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	uint64_t err0 = cntr_readerr(fid);
	for (;;) {
		if (cntr_readerr(fid) != err0)
			return -FI_EAVAIL;
		if (cntr_read(fid) >= threshold)
			return 0;
		if (cxip_dev_dead(c->dom->dev))
			return -FI_EIO;
		int wait_ms = 1000;
		if (timeout >= 0) {
			struct timespec now;
			clock_gettime(CLOCK_MONOTONIC, &now);
			int64_t el = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
			if (el >= timeout)
				return -FI_ETIMEDOUT;
			if (timeout - el < wait_ms)
				wait_ms = (int)(timeout - el);
		}
		cxip_cntr_trywait(c);
		if (cntr_read(fid) >= threshold || cntr_readerr(fid) != err0)
			continue;
		int r = cxip_wait_fd(c->dom->dev, c->efd, wait_ms);
		if (r == -FI_EIO)
			return -FI_EIO;
	}
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	struct cxip_cntr *c = (struct cxip_cntr *)fid;
	return cxip_wait_control(command, arg, c->wait_obj, c->efd);
}

static int cntr_close(struct fid *fid)
{
	struct cxip_cntr *c = (struct cxip_cntr *)fid;
	if (atomic_load(&c->ref))
		return -FI_EBUSY;
	cxip_dev_del_waiter(c->dom->dev, c->efd);
	cxip_dev_close_obj(c->dom->dev, c->id);
	cxip_shm_unmap(&c->map);
	close(c->efd);
	atomic_fetch_sub(&c->dom->ref, 1);
	free(c);
	return 0;
}

static struct fi_ops cntr_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = cxip_no_bind,
	.control = cntr_control,
	.ops_open = cxip_no_ops_open,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

int cxip_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **out, void *context)
{
	struct cxip_domain *dom = (struct cxip_domain *)domain;
	/* Upstream cxi's rules: no attributes means the defaults; events are completions or bytes
	 * (FI_CXI_CNTR_EVENTS_BYTES); FI_CXI_CNTR_CACHED (read the last written-back value) is the only flag,
	 * and every read here is of the written-back value anyway. */
	struct fi_cntr_attr def = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_YIELD };
	if (!domain || !out)
		return -FI_EINVAL;
	if (!attr)
		attr = &def;
	if (attr->events != FI_CNTR_EVENTS_COMP && attr->events != FI_CXI_CNTR_EVENTS_BYTES)
		return -FI_ENOSYS;
	if (attr->flags & ~FI_CXI_CNTR_CACHED)
		return -FI_ENOSYS;
	enum fi_wait_obj wait = attr->wait_obj;
	if (cxip_wait_obj_choose(&wait, false))
		return -FI_ENOSYS;
	struct cxip_cntr *c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	struct ctl_ct_open_rep rep;
	int fds[2], nfds = 2;
	struct ctl_ct_open_req req = { .events = attr->events == FI_CXI_CNTR_EVENTS_BYTES };
	int ret = cxip_dev_call(dom->dev, CTL_CT_OPEN, &req, sizeof(req), &rep, sizeof(rep), fds, &nfds);
	if (ret || nfds != 2 || rep.bytes < sizeof(struct ct_shm)) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (!ret)
			cxip_dev_close_obj(dom->dev, rep.id);
		free(c);
		return ret ? ret : -FI_EIO;
	}
	ret = cxip_shm_map(fds[0], rep.bytes, &c->map);
	close(fds[0]);
	if (ret) {
		close(fds[1]);
		cxip_dev_close_obj(dom->dev, rep.id);
		free(c);
		return ret;
	}
	c->dom = dom;
	c->id = rep.id;
	c->ct = c->map.addr;
	c->efd = fds[1];
	c->wait_obj = wait;
	int fl = fcntl(c->efd, F_GETFL);
	fcntl(c->efd, F_SETFL, fl | O_NONBLOCK);
	cxip_dev_add_waiter(dom->dev, c->efd);
	c->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	c->cntr_fid.fid.context = context;
	c->cntr_fid.fid.ops = &cntr_fid_ops;
	c->cntr_fid.ops = &cntr_ops;
	atomic_fetch_add(&dom->ref, 1);
	*out = &c->cntr_fid;
	return 0;
}
