/* Helpers shared by the provider's test programs.  Each program exercises one feature through the public
 * libfabric API only (plus fi_cxi_ext.h, the provider's extension header), usually as two or more
 * processes forked from one test: they attach to the same cxisim daemon (run the program under
 * `cxisim exec`), exchange endpoint names through pipes, and check exact results.  A program prints one
 * line per check and exits 0 only if every check passed. */
#ifndef CXISIM_TEST_COMMON_H
#define CXISIM_TEST_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "fi_cxi_ext.h"

static int t_failures;
static const char *t_who = "main";

#define T_CHECK(cond, ...)                                                                                   \
	do {                                                                                                 \
		if (cond) {                                                                                  \
			printf("ok   [%s] ", t_who);                                                     \
		} else {                                                                                     \
			printf("FAIL [%s] %s:%d: ", t_who, __FILE__, __LINE__);                              \
			t_failures++;                                                                        \
		}                                                                                            \
		printf(__VA_ARGS__);                                                                         \
		printf("\n");                                                                                \
		fflush(stdout);                                                                              \
	} while (0)

/* A libfabric call that must succeed; on failure the process stops with a message. */
#define T_OK(call)                                                                                           \
	do {                                                                                                 \
		long _r = (long)(call);                                                                      \
		if (_r < 0) {                                                                                \
			printf("FAIL [%s] %s:%d: %s = %ld (%s)\n", t_who, __FILE__, __LINE__, #call, _r,     \
			       fi_strerror((int)-_r));                                                       \
			fflush(stdout);                                                                      \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

/* Virtual time (`cxisim exec`'s default): a blocking call's timeout is virtual, so with nothing else pending
 * it passes in far less wall time than it names (without the clock interposer, t_now is the wall clock). */
static inline bool t_virtual_time(void)
{
	const char *m = getenv("CXISIM_TIME");
	return m && !strcmp(m, "virtual");
}

static inline double t_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t t_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Clock c read by the system call instruction: libc's clock_gettime and syscall() are the clock
 * interposer's under `cxisim exec`, this is the real clock (wall or the thread's CPU time). */
static inline uint64_t t_raw_clock_ns(clockid_t c)
{
	struct timespec ts = {0, 0};
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(SYS_clock_gettime), "D"(c), "S"(&ts) : "rcx", "r11", "memory");
	return r == 0 ? (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec : 0;
}

/* Spends ns of the thread's real CPU time. */
static inline void t_burn_cpu(uint64_t ns)
{
	uint64_t t0 = t_raw_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	volatile uint64_t x = 0;
	while (t_raw_clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0 < ns)
		for (int i = 0; i < 1000; i++)
			x++;
}

/* ---- pipes between the processes of one test ---- */

struct t_chan {
	int r, w;
};

/* Two pipes: a->b and b->a.  After fork, each side uses its own end. */
struct t_link {
	int ab[2], ba[2];
};

static inline void t_link_init(struct t_link *l)
{
	if (pipe(l->ab) || pipe(l->ba)) {
		perror("pipe");
		exit(1);
	}
}

static inline struct t_chan t_link_a(struct t_link *l)
{
	close(l->ab[0]);
	close(l->ba[1]);
	struct t_chan c = { l->ba[0], l->ab[1] };
	return c;
}

static inline struct t_chan t_link_b(struct t_link *l)
{
	close(l->ab[1]);
	close(l->ba[0]);
	struct t_chan c = { l->ab[0], l->ba[1] };
	return c;
}

static inline void t_send(struct t_chan c, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(c.w, p, len);
		if (n <= 0) {
			perror("t_send");
			exit(1);
		}
		p += n;
		len -= (size_t)n;
	}
}

static inline void t_recv(struct t_chan c, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(c.r, p, len);
		if (n <= 0) {
			printf("FAIL [%s] peer went away\n", t_who);
			exit(1);
		}
		p += n;
		len -= (size_t)n;
	}
}

/* A one-byte barrier. */
static inline void t_sync(struct t_chan c)
{
	char x = 's';
	t_send(c, &x, 1);
	t_recv(c, &x, 1);
}

/* ---- libfabric objects ---- */

struct t_ep {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char name[8];
	size_t namelen;
};

/* The fabric that fi_trywait goes through (set by t_open). */
static struct fid_fabric *t_fabric_of_cq;

static inline struct fi_info *t_hints(uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup("cxi");
	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->mode = FI_CONTEXT;
	return h;
}

/* Open fabric, domain, AV, one CQ (tagged format, FD wait object) for TX and RX, and an enabled endpoint. */
static inline void t_open_with(struct t_ep *t, struct fi_info *hints, const struct fi_av_attr *av_attr,
			       bool enable)
{
	memset(t, 0, sizeof(*t));
	T_OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &t->info));
	T_OK(fi_fabric(t->info->fabric_attr, &t->fab, NULL));
	t_fabric_of_cq = t->fab;
	T_OK(fi_domain(t->fab, t->info, &t->dom, NULL));
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	if (av_attr)
		aa = *av_attr;
	T_OK(fi_av_open(t->dom, &aa, &t->av, NULL));
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD, .size = 1024 };
	T_OK(fi_cq_open(t->dom, &ca, &t->cq, NULL));
	T_OK(fi_endpoint(t->dom, t->info, &t->ep, NULL));
	T_OK(fi_ep_bind(t->ep, &t->av->fid, 0));
	T_OK(fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT | FI_RECV));
	if (enable) {
		T_OK(fi_enable(t->ep));
		t->namelen = sizeof(t->name);
		T_OK(fi_getname(&t->ep->fid, t->name, &t->namelen));
	}
}

static inline void t_open(struct t_ep *t, uint64_t caps)
{
	struct fi_info *h = t_hints(caps);
	t_open_with(t, h, NULL, true);
	fi_freeinfo(h);
}

static inline void t_close(struct t_ep *t)
{
	if (t->ep)
		T_OK(fi_close(&t->ep->fid));
	if (t->cq)
		T_OK(fi_close(&t->cq->fid));
	if (t->av)
		T_OK(fi_close(&t->av->fid));
	if (t->dom)
		T_OK(fi_close(&t->dom->fid));
	if (t->fab)
		T_OK(fi_close(&t->fab->fid));
	fi_freeinfo(t->info);
	memset(t, 0, sizeof(*t));
}

static inline fi_addr_t t_insert(struct t_ep *t, const void *name)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int n = fi_av_insert(t->av, name, 1, &a, 0, NULL);
	if (n != 1) {
		printf("FAIL [%s] fi_av_insert = %d\n", t_who, n);
		exit(1);
	}
	return a;
}

/* Wait for one completion.  Returns 1 with *e filled, 0 on an error completion (*err filled), or
 * -FI_ETIMEDOUT. */
static inline int t_cq_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e, fi_addr_t *src,
			    struct fi_cq_err_entry *err, double timeout_s)
{
	/* Timed out only once timeout_s has passed in virtual time AND on the wall clock: a peer that has not
	 * attached yet is outside the simulation, and with nothing else pending virtual time alone runs out in
	 * no wall time at all (prov_multi_recv's receiver gave up before its forked sender had attached, once,
	 * in a full pytest at nice 15 on a loaded host). */
	double end = t_now() + timeout_s;
	uint64_t wall_end = t_raw_clock_ns(CLOCK_MONOTONIC) + (uint64_t)(timeout_s * 1e9);
	for (;;) {
		ssize_t n = src ? fi_cq_readfrom(cq, e, 1, src) : fi_cq_read(cq, e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry tmp;
			if (!err)
				err = &tmp;
			memset(err, 0, sizeof(*err));
			if (fi_cq_readerr(cq, err, 0) != 1) {
				printf("FAIL [%s] fi_cq_readerr after -FI_EAVAIL\n", t_who);
				exit(1);
			}
			return 0;
		}
		if (n != -FI_EAGAIN) {
			printf("FAIL [%s] fi_cq_read = %zd (%s)\n", t_who, n, fi_strerror((int)-n));
			exit(1);
		}
		if (t_now() > end && t_raw_clock_ns(CLOCK_MONOTONIC) > wall_end)
			return -FI_ETIMEDOUT;
		/* Sleep on the CQ's wait fd (FI_WAIT_FD), as event-driven applications do. */
		int fd = -1;
		struct fid *f = &cq->fid;
		if (fi_control(f, FI_GETWAIT, &fd) == 0 && fi_trywait(t_fabric_of_cq, &f, 1) == 0) {
			struct pollfd p = { fd, POLLIN, 0 };
			poll(&p, 1, 100);
		}
	}
}

/* Expect exactly one successful completion. */
static inline void t_cq_expect(struct fid_cq *cq, struct fi_cq_tagged_entry *e, const char *what)
{
	struct fi_cq_err_entry err;
	int r = t_cq_wait(cq, e, NULL, &err, 10.0);
	if (r != 1) {
		printf("FAIL [%s] %s: %s (err %d %s, prov_errno %d)\n", t_who, what,
		       r == 0 ? "error completion" : "timeout", err.err, r == 0 ? fi_strerror(err.err) : "",
		       err.prov_errno);
		fflush(stdout);
		exit(1);
	}
}

/* Fork a child running fn(arg); returns its pid. */
static inline pid_t t_fork(int (*fn)(void *), void *arg, const char *who)
{
	fflush(stdout);
	pid_t p = fork();
	if (p < 0) {
		perror("fork");
		exit(1);
	}
	if (p == 0) {
		t_who = who;
		t_failures = 0;
		int rc = fn(arg);
		fflush(stdout);
		_exit(rc || t_failures ? 1 : 0);
	}
	return p;
}

/* Wait for a child; counts a failure if it did not exit 0. */
static inline void t_join(pid_t p, const char *who)
{
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("FAIL [%s] child %s ended with status 0x%x\n", t_who, who, st);
		t_failures++;
	}
}

static inline int t_finish(const char *name)
{
	printf("%s %s\n", t_failures ? "FAILED" : "PASSED", name);
	return t_failures ? 1 : 0;
}

static inline void t_fill(void *buf, size_t len, uint32_t seed)
{
	unsigned char *p = buf;
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
}

static inline bool t_verify(const void *buf, size_t len, uint32_t seed)
{
	const unsigned char *p = buf;
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != (unsigned char)(x >> 16))
			return false;
	}
	return true;
}

#endif
