/* Completion queue: the consumer side of an event queue the daemon writes into shared memory.  Reading a
 * CQ costs no system call; a thread that wants to block arms the queue and sleeps on its eventfd, which is
 * also the FI_WAIT_FD wait object (fi_trywait arms it).  Source addresses are resolved here (FI_SOURCE,
 * FI_AV_USER_ID), and a completion from an unknown source becomes the FI_EADDRNOTAVAIL error of
 * FI_SOURCE_ERR, as the real provider does when it writes the completion. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cxip.h"

int cxip_cq_trywait(struct cxip_cq *cq);

static uint64_t evt_flags_to_fi(uint32_t f)
{
	uint64_t r = 0;
	if (f & CXS_EF_SEND) r |= FI_SEND;
	if (f & CXS_EF_RECV) r |= FI_RECV;
	if (f & CXS_EF_TAGGED) r |= FI_TAGGED;
	if (f & CXS_EF_MSG) r |= FI_MSG;
	if (f & CXS_EF_RMA) r |= FI_RMA;
	if (f & CXS_EF_READ) r |= FI_READ;
	if (f & CXS_EF_WRITE) r |= FI_WRITE;
	if (f & CXS_EF_REMOTE_READ) r |= FI_REMOTE_READ;
	if (f & CXS_EF_REMOTE_WRITE) r |= FI_REMOTE_WRITE;
	if (f & CXS_EF_REMOTE_CQ_DATA) r |= FI_REMOTE_CQ_DATA;
	if (f & CXS_EF_MULTI_RECV) r |= FI_MULTI_RECV;
	if (f & CXS_EF_TRUNC) r |= FI_CXI_TRUNC;
	return r;
}

static struct cxip_ep *cq_find_ep(struct cxip_cq *cq, uint32_t id)
{
	for (size_t i = 0; i < cq->neps; i++)
		if (cq->eps[i]->id == id)
			return cq->eps[i];
	return NULL;
}

static void fill_entry(struct cxip_cq *cq, void *buf, const struct cxs_evt *e)
{
	uint64_t flags = evt_flags_to_fi(e->flags);
	switch (cq->format) {
	case FI_CQ_FORMAT_TAGGED: {
		struct fi_cq_tagged_entry *t = buf;
		t->op_context = (void *)(uintptr_t)e->context;
		t->flags = flags;
		t->len = e->len;
		t->buf = (void *)(uintptr_t)e->buf;
		t->data = e->data;
		t->tag = e->tag;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *d = buf;
		d->op_context = (void *)(uintptr_t)e->context;
		d->flags = flags;
		d->len = e->len;
		d->buf = (void *)(uintptr_t)e->buf;
		d->data = e->data;
		break;
	}
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *m = buf;
		m->op_context = (void *)(uintptr_t)e->context;
		m->flags = flags;
		m->len = e->len;
		break;
	}
	default: {
		struct fi_cq_entry *c = buf;
		c->op_context = (void *)(uintptr_t)e->context;
		break;
	}
	}
}

static void set_error(struct cxip_cq *cq, const struct cxs_evt *e, const struct cxs_evt_err *x)
{
	struct fi_cq_err_entry *err = &cq->err;
	memset(err, 0, sizeof(*err));
	err->op_context = (void *)(uintptr_t)e->context;
	err->flags = evt_flags_to_fi(e->flags);
	err->len = e->len;
	err->buf = (void *)(uintptr_t)e->buf;
	err->data = e->data;
	err->tag = e->tag;
	err->olen = x->olen;
	err->err = x->err;
	err->prov_errno = x->prov_errno;
	cq->err_pending = true;
	atomic_store(&cq->err_flag, true);
}

/* FI_SOURCE_ERR: a message from a source the AV does not know becomes an FI_EADDRNOTAVAIL error whose
 * err_data names the source. */
static void set_source_error(struct cxip_cq *cq, struct cxip_ep *ep, const struct cxs_evt *e)
{
	struct cxs_evt_err x = { .err = FI_EADDRNOTAVAIL };
	set_error(cq, e, &x);
	struct cxip_addr a = { .nic = e->src >> CXIP_PID_BITS, .pid = e->src & CXIP_PID_ANY, .vni = e->src_vni };
	memcpy(cq->err_data.addr, &a, sizeof(a));
	cq->err_data.auth_key_addr = ep->av ? cxip_av_auth_key_addr(ep->av, e->src_vni) : FI_ADDR_NOTAVAIL;
	cq->err.err_data = &cq->err_data;
	/* 4-byte address mode: the application reads err_data as its 4-byte address. */
	cq->err.err_data_size = cxip_addrlen == 4 ? 4 : sizeof(cq->err_data);
}

/* Source of a receive completion, or FI_ADDR_NOTAVAIL.  *unknown tells FI_SOURCE_ERR to fire. */
static fi_addr_t resolve_src(struct cxip_ep *ep, const struct cxs_evt *e, bool *unknown)
{
	*unknown = false;
	if (!ep || !(e->flags & CXS_EF_SOURCE) || !(ep->caps & FI_SOURCE) || !ep->av)
		return FI_ADDR_NOTAVAIL;
	fi_addr_t a = cxip_av_reverse(ep->av, e->src >> CXIP_PID_BITS, e->src & CXIP_PID_ANY, e->src_vni);
	*unknown = a == FI_ADDR_NOTAVAIL && (ep->caps & FI_SOURCE_ERR);
	return a;
}

/* Read up to count completions; the caller holds cq->lock. */
static ssize_t cq_read_locked(struct cxip_cq *cq, void *buf, size_t count, fi_addr_t *src, uint64_t *max_vt)
{
	if (cq->err_pending)
		return -FI_EAVAIL;
	size_t n = 0;
	unsigned char slot[2 * RING_SLOT];
	while (n < count) {
		uint16_t ns;
		enum ring_peek r = ring_peek(&cq->q.ring, slot, sizeof(slot), &ns);
		if (r == RING_EMPTY)
			break;
		if (r == RING_CORRUPT) {
			CXIP_WARN(FI_LOG_CQ, "event queue corrupt\n");
			return n ? (ssize_t)n : -FI_EIO;
		}
		const struct cxs_evt *e = (const void *)slot;
		struct cxip_ep *ep = cq_find_ep(cq, e->ep);
		if (e->op == CXS_EVT_ERR) {
			if (n)
				break;
			if (ns < 2)
				return -FI_EIO;
			set_error(cq, e, (const void *)(slot + RING_SLOT));
			ring_retire(&cq->q.ring, ns);
			return -FI_EAVAIL;
		}
		if (e->op != CXS_EVT_COMP) {
			ring_retire(&cq->q.ring, ns);
			continue;
		}
		bool unknown;
		fi_addr_t a = resolve_src(ep, e, &unknown);
		if (unknown) {
			if (n)
				break;
			set_source_error(cq, ep, e);
			ring_retire(&cq->q.ring, ns);
			return -FI_EAVAIL;
		}
		fill_entry(cq, (char *)buf + n * cq->entry_size, e);
		if (e->vt > *max_vt)
			*max_vt = e->vt;
		if (src)
			src[n] = a;
		ring_retire(&cq->q.ring, ns);
		n++;
	}
	if (n)
		return (ssize_t)n;
	return cxip_dev_dead(cq->dom->dev) ? -FI_EIO : -FI_EAGAIN;
}

bool cxip_cq_has_entries(struct cxip_cq *cq, uint64_t *changes)
{
	struct ring_shm *r = cq->q.ring.shm;
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	bool err = atomic_load(&cq->err_flag);
	if (changes)
		*changes = head + tail + err; /* both counters only grow */
	return err || head != tail;
}

static bool cq_ready(void *arg)
{
	return cxip_cq_has_entries(arg, NULL);
}

static ssize_t cq_read_once(struct cxip_cq *cq, void *buf, size_t count, fi_addr_t *src_addr)
{
	uint64_t max_vt = 0;
	pthread_mutex_lock(&cq->lock);
	ssize_t r = cq_read_locked(cq, buf, count, src_addr, &max_vt);
	pthread_mutex_unlock(&cq->lock);
	if (max_vt && cq->dom->dev->virt)
		cxip_vt_observe(cq->dom->dev, max_vt);
	return r;
}

/* An empty poll.  Realtime: it gives the processor away (the daemon, which emulates the NIC, competes for
 * the same CPUs as the applications that spin on their CQs).  Virtual: the thread is idle until a
 * completion or anything else becomes visible to the process, parked meanwhile; then it reads again. */
static ssize_t cq_readfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src_addr)
{
	struct cxip_cq *cq = (struct cxip_cq *)fid;
	if (!buf && count)
		return -FI_EINVAL;
	struct cxip_dev *dev = cq->dom->dev;
	if (dev->virt)
		cxip_vt_enter(dev); /* every path below re-bases at exit */
	ssize_t r = cq_read_once(cq, buf, count, src_addr);
	if (r != -FI_EAGAIN) {
		if (dev->virt)
			cxip_vt_rebase(dev);
		return r;
	}
	if (!dev->virt) {
		sched_yield();
		return r;
	}
	uint64_t changes;
	cxip_cq_has_entries(cq, &changes);
	if (cxip_vt_idle_poll(dev, cq, &cq->poll_seen, changes, cq_ready, cq) == 0)
		r = cq_read_once(cq, buf, count, src_addr);
	cxip_vt_rebase(dev);
	return r;
}

static ssize_t cq_read(struct fid_cq *fid, void *buf, size_t count)
{
	return cq_readfrom(fid, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fid, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct cxip_cq *cq = (struct cxip_cq *)fid;
	if (!buf || flags)
		return -FI_EINVAL;
	pthread_mutex_lock(&cq->lock);
	if (!cq->err_pending) {
		/* An error may be the next ring entry without a read having surfaced it yet. */
		unsigned char slot[2 * RING_SLOT];
		uint16_t ns;
		if (ring_peek(&cq->q.ring, slot, sizeof(slot), &ns) == RING_ENTRY) {
			const struct cxs_evt *e = (const void *)slot;
			bool unknown = false;
			struct cxip_ep *ep = cq_find_ep(cq, e->ep);
			if (e->op == CXS_EVT_COMP)
				resolve_src(ep, e, &unknown);
			if (e->op == CXS_EVT_ERR && ns >= 2) {
				set_error(cq, e, (const void *)(slot + RING_SLOT));
				ring_retire(&cq->q.ring, ns);
			} else if (unknown) {
				set_source_error(cq, ep, e);
				ring_retire(&cq->q.ring, ns);
			}
		}
	}
	if (!cq->err_pending) {
		pthread_mutex_unlock(&cq->lock);
		return cxip_dev_dead(cq->dom->dev) ? -FI_EIO : -FI_EAGAIN;
	}
	/* err_data: provider buffer when the caller offers none (err_data_size 0), else copied. */
	void *user_data = buf->err_data;
	size_t user_size = buf->err_data_size;
	uint32_t api = cq->dom->fab->fab_fid.api_version;
	*buf = cq->err;
	if (FI_VERSION_GE(api, FI_VERSION(1, 5)) && user_size && user_data) {
		size_t n = cq->err.err_data_size < user_size ? cq->err.err_data_size : user_size;
		if (cq->err.err_data && n)
			memcpy(user_data, cq->err.err_data, n);
		buf->err_data = user_data;
		buf->err_data_size = n;
	}
	cq->err_pending = false;
	atomic_store(&cq->err_flag, false);
	pthread_mutex_unlock(&cq->lock);
	return 1;
}

static int64_t ms_left(const struct timespec *deadline)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t ms = (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms;
}

/* Virtual mode: idle until a completion of this CQ, fi_cq_signal, or the timeout in virtual time. */
static ssize_t cq_sread_virtual(struct cxip_cq *cq, void *buf, size_t count, fi_addr_t *src_addr, int timeout)
{
	struct cxip_dev *dev = cq->dom->dev;
	uint64_t deadline = cxip_vt_deadline(dev, timeout);
	for (;;) {
		ssize_t r = -FI_EAGAIN;
		if (count)
			r = cq_read_once(cq, buf, count, src_addr);
		else if (cxip_cq_has_entries(cq, NULL))
			return 0;
		if (r != -FI_EAGAIN)
			return r;
		if (cxip_dev_dead(dev))
			return -FI_EIO;
		if (atomic_exchange(&cq->signaled, false))
			return -FI_EAGAIN;
		r = cxip_vt_idle(dev, cq->q.id, deadline, cq_ready, cq);
		if (r == -FI_ETIMEDOUT)
			return -FI_EAGAIN;
		if (r == -FI_EIO)
			return count ? cq_read_once(cq, buf, count, src_addr) : -FI_EIO;
	}
}

static ssize_t cq_sreadfrom(struct fid_cq *fid, void *buf, size_t count, fi_addr_t *src_addr, const void *cond,
			    int timeout)
{
	struct cxip_cq *cq = (struct cxip_cq *)fid;
	(void)cond;
	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	if (cq->dom->dev->virt)
		return cq_sread_virtual(cq, buf, count, src_addr, timeout);
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	if (timeout >= 0) {
		deadline.tv_sec += timeout / 1000;
		deadline.tv_nsec += (long)(timeout % 1000) * 1000000;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000;
		}
	}
	for (;;) {
		if (!count) {
			/* A pure wait: return once something is there to read. */
			pthread_mutex_lock(&cq->lock);
			bool ready = cq->err_pending || !ring_empty(&cq->q.ring);
			pthread_mutex_unlock(&cq->lock);
			if (ready)
				return 0;
			if (cxip_dev_dead(cq->dom->dev))
				return -FI_EIO;
		}
		ssize_t r = count ? cq_readfrom(fid, buf, count, src_addr) : -FI_EAGAIN;
		if (r != -FI_EAGAIN)
			return r;
		if (atomic_exchange(&cq->signaled, false))
			return -FI_EAGAIN;
		int wait_ms = timeout < 0 ? 1000 : (int)ms_left(&deadline);
		if (timeout >= 0 && wait_ms == 0)
			return -FI_EAGAIN;
		if (wait_ms > 1000)
			wait_ms = 1000; /* re-check the daemon at least once a second */
		if (cxip_cq_trywait(cq))
			continue;
		r = cxip_wait_fd(cq->dom->dev, cq->q.efd, wait_ms);
		if (r == -FI_EIO)
			return cq_readfrom(fid, buf, count, src_addr); /* what is left, then -FI_EIO */
	}
}

static ssize_t cq_sread(struct fid_cq *fid, void *buf, size_t count, const void *cond, int timeout)
{
	return cq_sreadfrom(fid, buf, count, NULL, cond, timeout);
}

/* fi_cq_signal: a thread blocked in fi_cq_sread (or the next one to call it while nothing is there to read)
 * returns -FI_EAGAIN. */
static int cq_signal(struct fid_cq *fid)
{
	struct cxip_cq *cq = (struct cxip_cq *)fid;
	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_ENOSYS;
	atomic_store(&cq->signaled, true);
	struct cxip_dev *dev = cq->dom->dev;
	uint64_t vt = dev->virt ? cxip_vt_enter(dev) : 0;
	/* The wait fd first: a thread woken in poll() on it looks at it at once (sim/cxisimd/endpoint.c). */
	uint64_t one = 1;
	int ret = write(cq->q.efd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
	if (dev->virt) { /* the wake-ups are the provider's work */
		cxip_vt_wake_local(dev, cq->q.id, vt);
		cxip_vt_rebase(dev);
	}
	return ret;
}

static const char *cq_strerror(struct fid_cq *fid, int prov_errno, const void *err_data, char *buf, size_t len)
{
	(void)fid;
	(void)err_data;
	static const struct {
		int rc;
		const char *s;
	} names[] = {
		{ 1, "C_RC_OK" }, { 2, "C_RC_UNDELIVERABLE" }, { 3, "C_RC_PT_DISABLED" }, { 4, "C_RC_DROPPED" },
		{ 5, "C_RC_PERM_VIOLATION" }, { 6, "C_RC_OP_VIOLATION" }, { 8, "C_RC_NO_MATCH" },
		{ 16, "C_RC_NO_SPACE" }, { 18, "C_RC_ENTRY_NOT_FOUND" }, { 25, "C_RC_VNI_NOT_FOUND" },
		{ 26, "C_RC_PTLTE_NOT_FOUND" }, { 27, "C_RC_PTLTE_SW_MANAGED" }, { 29, "C_RC_MST_CANCELLED" },
	};
	const char *s = "unknown NIC return code";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].rc == prov_errno)
			s = names[i].s;
	if (buf && len) {
		strncpy(buf, s, len - 1);
		buf[len - 1] = 0;
		return buf;
	}
	return s;
}

int cxip_cq_trywait(struct cxip_cq *cq)
{
	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	if (cxip_dev_dead(cq->dom->dev))
		return -FI_EIO;
	pthread_mutex_lock(&cq->lock);
	uint64_t v;
	ssize_t r = read(cq->q.efd, &v, sizeof(v)); /* drain stale doorbells before sleeping */
	(void)r;
	int ret = (cq->err_pending || !ring_arm(&cq->q.ring)) ? -FI_EAGAIN : 0;
	pthread_mutex_unlock(&cq->lock);
	/* Virtual mode: the caller is about to sleep on the wait fd: idle until this CQ has something (only
	 * this CQ: a thread woken for another object's event would stay blocked in poll() holding time). */
	if (!ret && cq->dom->dev->virt)
		cxip_vt_idle_lazy(cq->dom->dev, cq->q.id);
	return ret;
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct cxip_cq *cq = (struct cxip_cq *)fid;
	return cxip_wait_control(command, arg, cq->wait_obj, cq->q.efd);
}

static int cq_close(struct fid *fid)
{
	struct cxip_cq *cq = (struct cxip_cq *)fid;
	if (atomic_load(&cq->ref))
		return -FI_EBUSY;
	cxip_dev_del_waiter(cq->dom->dev, cq->q.efd);
	cxip_dev_del_pollable(cq->dom->dev, cq);
	cxip_queue_close(cq->dom->dev, &cq->q);
	atomic_fetch_sub(&cq->dom->ref, 1);
	pthread_mutex_destroy(&cq->lock);
	free(cq->eps);
	free(cq);
	return 0;
}

static struct fi_ops cq_fid_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = cxip_no_bind,
	.control = cq_control,
	.ops_open = cxip_no_ops_open,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.signal = cq_signal,
	.strerror = cq_strerror,
};

static uint32_t pow2_at_least(size_t n)
{
	uint32_t p = 64;
	while (p < n && p < (1u << 20))
		p <<= 1;
	return p;
}

int cxip_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **out, void *context)
{
	struct cxip_domain *dom = (struct cxip_domain *)domain;
	/* Upstream cxi's rules: no attributes means the defaults; FI_AFFINITY is accepted and its signaling
	 * vector ignored (Mercury sets it whenever the process is bound to one core); peer CQs are not
	 * offered; any other flag is invalid. */
	struct fi_cq_attr def = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_NONE };
	if (!domain || !out)
		return -FI_EINVAL;
	if (!attr)
		attr = &def;
	if (attr->flags & FI_PEER)
		return -FI_ENOSYS;
	if (attr->flags & ~FI_AFFINITY)
		return -FI_EINVAL;
	size_t esize;
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT: esize = sizeof(struct fi_cq_entry); break;
	case FI_CQ_FORMAT_MSG: esize = sizeof(struct fi_cq_msg_entry); break;
	case FI_CQ_FORMAT_DATA: esize = sizeof(struct fi_cq_data_entry); break;
	case FI_CQ_FORMAT_TAGGED: esize = sizeof(struct fi_cq_tagged_entry); break;
	default: return -FI_ENOSYS;
	}
	enum fi_wait_obj wait = attr->wait_obj;
	if (cxip_wait_obj_choose(&wait, true))
		return -FI_ENOSYS;
	if (attr->wait_cond != FI_CQ_COND_NONE && attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;
	struct cxip_cq *cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->dom = dom;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->entry_size = esize;
	cq->wait_obj = wait;
	size_t size = attr->size ? attr->size : cxip_env.default_cq_size;
	/* Error completions take two slots. */
	int ret = cxip_queue_open(dom->dev, QUEUE_EVT, pow2_at_least(size * 2), &cq->q);
	if (ret) {
		free(cq);
		return ret;
	}
	int fl = fcntl(cq->q.efd, F_GETFL);
	fcntl(cq->q.efd, F_SETFL, fl | O_NONBLOCK);
	cxip_dev_add_waiter(dom->dev, cq->q.efd);
	pthread_mutex_init(&cq->lock, NULL);
	cxip_dev_add_pollable(dom->dev, FI_CLASS_CQ, cq);
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &cq_fid_ops;
	cq->cq_fid.ops = &cq_ops;
	atomic_fetch_add(&dom->ref, 1);
	*out = &cq->cq_fid;
	return 0;
}

int cxip_cq_bind_ep(struct cxip_cq *cq, struct cxip_ep *ep)
{
	pthread_mutex_lock(&cq->lock);
	for (size_t i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep) {
			pthread_mutex_unlock(&cq->lock);
			return 0;
		}
	if (cq->neps == cq->eps_cap) {
		size_t cap = cq->eps_cap ? cq->eps_cap * 2 : 4;
		struct cxip_ep **p = realloc(cq->eps, cap * sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&cq->lock);
			return -FI_ENOMEM;
		}
		cq->eps = p;
		cq->eps_cap = cap;
	}
	cq->eps[cq->neps++] = ep;
	atomic_fetch_add(&cq->ref, 1);
	pthread_mutex_unlock(&cq->lock);
	return 0;
}

void cxip_cq_unbind_ep(struct cxip_cq *cq, struct cxip_ep *ep)
{
	pthread_mutex_lock(&cq->lock);
	for (size_t i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep) {
			cq->eps[i] = cq->eps[--cq->neps];
			atomic_fetch_sub(&cq->ref, 1);
			break;
		}
	pthread_mutex_unlock(&cq->lock);
}
