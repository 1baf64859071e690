/* A CQ much smaller than the number of completions it receives while the application is not reading it:
 * the daemon holds what does not fit and delivers it, in order, as the application drains the queue.
 * No completion is lost or reordered. */
#include "common.h"

#ifndef N
#define N 300
#endif

static int sender(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct t_ep t;
	t_open(&t, FI_TAGGED);
	char name[8];
	t_recv(c, name, 8);
	fi_addr_t rx = t_insert(&t, name);
	t_sync(c);
	for (uint32_t i = 0; i < N; i++) {
		ssize_t r;
		while ((r = fi_tinject(t.ep, &i, sizeof(i), rx, 5)) == -FI_EAGAIN)
			;
		T_OK(r);
	}
	t_sync(c);
	t_close(&t);
	return 0;
}

int main(void)
{
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(sender, &l, "sender");
	struct t_chan c = t_link_a(&l);
	t_who = "receiver";
	struct fi_info *h = t_hints(FI_TAGGED);
	struct t_ep t;
	t_open_with(&t, h, NULL, false);
	/* Replace the helper's CQ with a 16-entry one. */
	T_OK(fi_close(&t.ep->fid));
	T_OK(fi_close(&t.cq->fid));
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .size = 16 };
	T_OK(fi_cq_open(t.dom, &ca, &t.cq, NULL));
	T_OK(fi_endpoint(t.dom, t.info, &t.ep, NULL));
	T_OK(fi_ep_bind(t.ep, &t.av->fid, 0));
	T_OK(fi_ep_bind(t.ep, &t.cq->fid, FI_TRANSMIT | FI_RECV));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	static uint32_t vals[N];
	for (int i = 0; i < N; i++)
		T_OK(fi_trecv(t.ep, &vals[i], sizeof(vals[i]), NULL, FI_ADDR_UNSPEC, 5, 0, &vals[i]));
	t_send(c, t.name, 8);
	t_sync(c);
	t_sync(c); /* every message sent; none read yet */
	usleep(300 * 1000);
	int in_order = 0, right = 0;
	for (int i = 0; i < N; i++) {
		struct fi_cq_tagged_entry e;
		t_cq_expect(t.cq, &e, "completion");
		in_order += e.op_context == &vals[i];
		right += vals[i] == (uint32_t)i;
	}
	T_CHECK(in_order == N, "%d of %d completions in posting order", in_order, N);
	T_CHECK(right == N, "%d of %d messages in the right buffers", right, N);
	struct fi_cq_tagged_entry e;
	T_CHECK(fi_cq_read(t.cq, &e, 1) == -FI_EAGAIN, "nothing more");
	t_join(p, "sender");
	t_close(&t);
	fi_freeinfo(h);
	return t_finish("prov_cq_overflow");
}
