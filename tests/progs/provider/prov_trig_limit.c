/* Deferred work under FI_CXI_ENABLE_TRIG_OP_LIMIT=1, and the time at which deferred work takes effect.
 *  - Upstream cxi keeps 8 of its service's TLEs in reserve: with the limit enabled, FI_QUEUE_WORK is refused
 *    with -FI_ENOSPC once the service's TLEs in use reach its reservation less 8 (the dwq depth, 2040 for
 *    the default service's 2048); a flush gives them back.
 *  - A request to queue work takes effect at the calling thread's virtual time, not at the engine's earlier
 *    now: a thread burns 2 ms of CPU time, then queues a counter add whose threshold is already reached;
 *    another thread blocked on that counter must wake no earlier than the time the request was made, and
 *    (virtual time) not much later either: the waiter's own 30 s deadline must not come first. */
#include <pthread.h>
#include <sys/syscall.h>
#include <rdma/fi_trigger.h>

#include "common.h"

static struct t_ep t;

static struct fid_cntr *cntr_open(void)
{
	struct fi_cntr_attr a = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	struct fid_cntr *c;
	T_OK(fi_cntr_open(t.dom, &a, &c, NULL));
	return c;
}

struct waiter {
	struct fid_cntr *c;
	int rc;
	uint64_t woke;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	w->rc = fi_cntr_wait(w->c, 1, 30000);
	w->woke = t_mono_ns();
	return NULL;
}

int main(void)
{
	setenv("FI_CXI_ENABLE_TRIG_OP_LIMIT", "1", 1);
	t_open(&t, FI_RMA | FI_MSG | FI_TRIGGER);
	struct fi_cxi_dom_ops *dops;
	size_t depth = 0;
	T_OK(fi_open_ops(&t.dom->fid, FI_CXI_DOM_OPS_5, 0, (void **)&dops, NULL));
	T_OK(dops->get_dwq_depth(&t.dom->fid, &depth));

	struct fid_cntr *trig = cntr_open(), *sum = cntr_open();
	struct fi_op_cntr add1 = { .cntr = sum, .value = 1 };
	struct fi_deferred_work w = { .threshold = 1, .triggering_cntr = trig, .op_type = FI_OP_CNTR_ADD };
	w.op.cntr = &add1;
	size_t queued = 0;
	int ret = 0;
	while (queued < 3000 && (ret = fi_control(&t.dom->fid, FI_QUEUE_WORK, &w)) == 0)
		queued++;
	T_CHECK(queued == depth && depth == 2040 && ret == -FI_ENOSPC,
		"%zu entries (dwq depth %zu: 2048 TLEs less 8 reserved), then %d (-FI_ENOSPC)", queued, depth, ret);
	T_OK(fi_control(&t.dom->fid, FI_FLUSH_WORK, NULL));
	queued = 0;
	while (queued < 3000 && (ret = fi_control(&t.dom->fid, FI_QUEUE_WORK, &w)) == 0)
		queued++;
	T_CHECK(queued == 2040 && ret == -FI_ENOSPC, "after a flush: %zu again, then %d", queued, ret);
	T_OK(fi_control(&t.dom->fid, FI_FLUSH_WORK, NULL));
	T_CHECK(fi_cntr_read(sum) == 0, "flushed work never ran");

	/* The request's time. */
	struct fid_cntr *go = cntr_open(), *seen = cntr_open();
	struct fi_op_cntr add_seen = { .cntr = seen, .value = 1 };
	struct fi_deferred_work now = { .threshold = 0, .triggering_cntr = go, .op_type = FI_OP_CNTR_ADD };
	now.op.cntr = &add_seen;
	struct waiter wt = { .c = seen };
	pthread_t th;
	pthread_create(&th, NULL, wait_thread, &wt);
	t_burn_cpu(2000000);
	uint64_t t0 = t_mono_ns();
	T_OK(fi_control(&t.dom->fid, FI_QUEUE_WORK, &now));
	pthread_join(th, NULL);
	T_CHECK(wt.rc == 0 && wt.woke >= t0, "the counter add took effect at the caller's time: the waiter woke %.3f us "
		"after the request was made (rc %d)", ((double)wt.woke - (double)t0) / 1e3, wt.rc);
	/* Virtual time: and at once -- before the fix the engine could run to the waiter's 30 s deadline while the
	 * request was still on its way (the caller idles before sending it), 4 runs in 6. */
	if (t_virtual_time())
		T_CHECK(wt.woke - t0 < 100000, "within 100 us of virtual time: %.3f us", ((double)wt.woke - (double)t0) / 1e3);
	T_OK(fi_close(&go->fid));
	T_OK(fi_close(&seen->fid));
	T_OK(fi_close(&trig->fid));
	T_OK(fi_close(&sum->fid));
	t_close(&t);
	return t_finish("prov_trig_limit");
}
