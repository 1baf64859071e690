/* Two processes with four threads each, every thread blocking a different way while it waits for its
 * completions: fi_cq_sread, fi_cntr_wait, fi_trywait + poll() on the CQ's wait fd, fi_trywait +
 * epoll_wait() on it.  Thread k of one process plays ping-pong with thread k of the other (tag k).  Run
 * under `cxisim exec` in either time mode: in virtual time every blocked thread is idle until its
 * completion, so the daemon must wake each of them at the right time -- no deadlock, every message
 * delivered intact. */
#include <pthread.h>
#include <sys/epoll.h>

#include "common.h"

#define NTHREADS 4
#define ROUNDS 40
#define MSG 64

enum how { BY_SREAD, BY_CNTR, BY_POLL, BY_EPOLL };
static const char *const how_name[] = { "fi_cq_sread", "fi_cntr_wait", "poll on the CQ fd", "epoll_wait on the CQ fd" };

struct th {
	int k;
	bool pinger;
	struct t_ep t;
	struct fid_cntr *cntr;
	int fd, epfd;
	fi_addr_t peer;
	uint64_t seen;     /* completions read so far */
	int delivered, bad;
};

/* Block the thread's own way until the CQ may have something. */
static void block(struct th *h)
{
	struct fi_cq_tagged_entry e;
	switch (h->k) {
	case BY_SREAD: {
		/* count 0: wait only (the entries are read by the caller). */
		ssize_t r = fi_cq_sread(h->t.cq, &e, 0, NULL, 30000);
		if (r < 0 && r != -FI_EAGAIN && r != -FI_EAVAIL)
			T_OK(r);
		break;
	}
	case BY_CNTR: {
		int r = fi_cntr_wait(h->cntr, h->seen + 1, 30000);
		if (r && r != -FI_ETIMEDOUT)
			T_OK(r);
		break;
	}
	case BY_POLL:
	case BY_EPOLL: {
		struct fid *f = &h->t.cq->fid;
		if (fi_trywait(h->t.fab, &f, 1) != 0)
			return;
		if (h->k == BY_POLL) {
			struct pollfd p = { h->fd, POLLIN, 0 };
			T_OK(poll(&p, 1, 30000));
		} else {
			struct epoll_event ev;
			T_OK(epoll_wait(h->epfd, &ev, 1, 30000));
		}
		break;
	}
	}
}

/* Wait for `n` more completions; returns the receive's entry in *rx when one is among them. */
static void wait_comps(struct th *h, int n, struct fi_cq_tagged_entry *rx)
{
	double end = t_now() + 60;
	while (n > 0) {
		struct fi_cq_tagged_entry e;
		ssize_t r = fi_cq_read(h->t.cq, &e, 1);
		if (r == 1) {
			h->seen++;
			n--;
			if (e.flags & FI_RECV)
				*rx = e;
			continue;
		}
		if (r != -FI_EAGAIN) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(h->t.cq, &err, 0);
			printf("FAIL [%s] thread %d: completion error %zd (err %d)\n", t_who, h->k, r, err.err);
			exit(1);
		}
		if (t_now() > end) {
			printf("FAIL [%s] thread %d (%s): no completion for 60 s\n", t_who, h->k, how_name[h->k]);
			exit(1);
		}
		block(h);
	}
}

static void *run(void *arg)
{
	struct th *h = arg;
	char out[MSG], in[MSG];
	for (int i = 0; i < ROUNDS; i++) {
		struct fi_cq_tagged_entry rx = { 0 };
		memset(in, 0, sizeof(in));
		T_OK(fi_trecv(h->t.ep, in, sizeof(in), NULL, h->peer, (uint64_t)h->k, 0, in));
		if (h->pinger) {
			t_fill(out, sizeof(out), (uint32_t)(h->k * 1000 + i));
			T_OK(fi_tsend(h->t.ep, out, sizeof(out), NULL, h->peer, (uint64_t)h->k, out));
			wait_comps(h, 2, &rx);
			if (t_verify(in, sizeof(in), (uint32_t)(h->k * 1000 + i + 500)) && rx.len == MSG)
				h->delivered++;
			else
				h->bad++;
		} else {
			wait_comps(h, 1, &rx);
			if (t_verify(in, sizeof(in), (uint32_t)(h->k * 1000 + i)) && rx.len == MSG)
				h->delivered++;
			else
				h->bad++;
			t_fill(out, sizeof(out), (uint32_t)(h->k * 1000 + i + 500));
			T_OK(fi_tsend(h->t.ep, out, sizeof(out), NULL, h->peer, (uint64_t)h->k, out));
			wait_comps(h, 1, &rx);
		}
	}
	return NULL;
}

static int side(struct t_chan c, bool pinger)
{
	static struct th th[NTHREADS];
	char names[NTHREADS][8], peers[NTHREADS][8];
	for (int k = 0; k < NTHREADS; k++) {
		struct th *h = &th[k];
		h->k = k;
		h->pinger = pinger;
		struct fi_info *hi = t_hints(FI_TAGGED | FI_MSG);
		t_open_with(&h->t, hi, NULL, false);
		fi_freeinfo(hi);
		/* The counter counts both directions: fi_cntr_wait for "one more completion". */
		struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
		T_OK(fi_cntr_open(h->t.dom, &ca, &h->cntr, NULL));
		T_OK(fi_ep_bind(h->t.ep, &h->cntr->fid, FI_SEND | FI_RECV));
		T_OK(fi_enable(h->t.ep));
		h->t.namelen = sizeof(h->t.name);
		T_OK(fi_getname(&h->t.ep->fid, h->t.name, &h->t.namelen));
		T_OK(fi_control(&h->t.cq->fid, FI_GETWAIT, &h->fd));
		h->epfd = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN };
		T_OK(epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->fd, &ev));
		memcpy(names[k], h->t.name, 8);
	}
	t_send(c, names, sizeof(names));
	t_recv(c, peers, sizeof(peers));
	for (int k = 0; k < NTHREADS; k++)
		th[k].peer = t_insert(&th[k].t, peers[k]);
	t_sync(c);
	pthread_t tid[NTHREADS];
	for (int k = 0; k < NTHREADS; k++)
		pthread_create(&tid[k], NULL, run, &th[k]);
	for (int k = 0; k < NTHREADS; k++)
		pthread_join(tid[k], NULL);
	for (int k = 0; k < NTHREADS; k++)
		T_CHECK(th[k].delivered == ROUNDS && !th[k].bad, "thread %d (%s): %d of %d messages delivered intact",
			k, how_name[k], th[k].delivered, ROUNDS);
	t_sync(c);
	for (int k = 0; k < NTHREADS; k++) {
		close(th[k].epfd);
		T_OK(fi_close(&th[k].t.ep->fid));
		T_OK(fi_close(&th[k].cntr->fid));
		th[k].t.ep = NULL;
		t_close(&th[k].t);
	}
	return 0;
}

static int pinger(void *arg)
{
	return side(t_link_a(arg), true);
}

static int ponger(void *arg)
{
	return side(t_link_b(arg), false);
}

int main(void)
{
	struct t_link l;
	t_link_init(&l);
	pid_t a = t_fork(pinger, &l, "pinger");
	pid_t b = t_fork(ponger, &l, "ponger");
	t_join(a, "pinger");
	t_join(b, "ponger");
	return t_finish("prov_vtime_threads");
}
