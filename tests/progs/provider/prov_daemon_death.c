/* When the daemon dies, every call fails with -FI_EIO within a second instead of hanging: a thread blocked
 * in fi_cq_sread with no timeout, a thread asleep in poll() on the CQ's wait fd, fi_cntr_wait, and the
 * polling main thread.  Prints READY once set up (the test then kills the daemon), and for each waiter
 * the CLOCK_MONOTONIC time at which it saw the failure. */
#include <pthread.h>

#include "common.h"

static struct t_ep t;
static struct fid_cntr *cntr;
static double t_sread, t_poll, t_cntr;
static long r_sread, r_cntr;

static void *sread_thread(void *arg)
{
	(void)arg;
	struct fi_cq_tagged_entry e;
	r_sread = fi_cq_sread(t.cq, &e, 1, NULL, -1);
	t_sread = t_now();
	return NULL;
}

static void *poll_thread(void *arg)
{
	(void)arg;
	int fd;
	if (fi_control(&t.cq->fid, FI_GETWAIT, &fd))
		return NULL;
	struct fid *f = &t.cq->fid;
	if (fi_trywait(t.fab, &f, 1) == 0) {
		struct pollfd p = { fd, POLLIN, 0 };
		poll(&p, 1, 30000);
	}
	t_poll = t_now();
	return NULL;
}

static void *cntr_thread(void *arg)
{
	(void)arg;
	r_cntr = fi_cntr_wait(cntr, 1, 30000);
	t_cntr = t_now();
	return NULL;
}

int main(void)
{
	t_open(&t, FI_TAGGED);
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	T_OK(fi_cntr_open(t.dom, &ca, &cntr, NULL));
	char buf[64];
	T_OK(fi_trecv(t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, buf));
	pthread_t th[3];
	pthread_create(&th[0], NULL, sread_thread, NULL);
	pthread_create(&th[1], NULL, poll_thread, NULL);
	pthread_create(&th[2], NULL, cntr_thread, NULL);
	usleep(100000);
	printf("READY\n");
	fflush(stdout);
	struct fi_cq_tagged_entry e;
	ssize_t r;
	while ((r = fi_cq_read(t.cq, &e, 1)) == -FI_EAGAIN)
		;
	double t_read = t_now();
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("DEAD read=%.6f sread=%.6f poll=%.6f cntr=%.6f\n", t_read, t_sread, t_poll, t_cntr);
	T_CHECK(r == -FI_EIO, "fi_cq_read: -FI_EIO (%zd)", r);
	T_CHECK(r_sread == -FI_EIO, "fi_cq_sread without timeout: -FI_EIO (%ld)", r_sread);
	T_CHECK(r_cntr == -FI_EIO, "fi_cntr_wait: -FI_EIO (%ld)", r_cntr);
	fi_addr_t self = t_insert(&t, t.name);
	T_CHECK(fi_tsend(t.ep, buf, 8, NULL, self, 1, NULL) == -FI_EIO, "fi_tsend: -FI_EIO");
	T_CHECK(fi_trecv(t.ep, buf, 8, NULL, FI_ADDR_UNSPEC, 1, 0, NULL) == -FI_EIO, "fi_trecv: -FI_EIO");
	struct fid_cq *cq2;
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_CONTEXT };
	T_CHECK(fi_cq_open(t.dom, &cqa, &cq2, NULL) == -FI_EIO, "fi_cq_open: -FI_EIO");
	/* Objects still close (the daemon freed their NIC side already). */
	T_OK(fi_close(&cntr->fid));
	t_close(&t);
	return t_finish("prov_daemon_death");
}
