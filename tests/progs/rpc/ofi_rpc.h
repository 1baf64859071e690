/* The wire format and libfabric setup shared by ofi_rpc_server and ofi_rpc_client: a small libfabric RPC
 * service that behaves as Mercury 2.4's NA OFI plugin does on cxi.
 *
 *   request   untagged fi_senddata; the immediate data is the tag the client posted its response receive
 *             with (Mercury's unexpected messages); payload = struct rpc_req (+ padding to the size asked)
 *   response  fi_tsend with that tag (Mercury's expected messages); payload = struct rpc_resp
 *   bulk      the request names a region of the client (key, offset, length): "pull" -- the server reads
 *             it (a bulk write, seen from the client) and checks its bytes; "push" -- the server writes a
 *             pattern into it (a bulk read) that the client checks
 *
 * Byte patterns: region byte i of a client seeded s is rpc_pattern(s, i) before any push, and after a push
 * of [o, o + n) the bytes there are rpc_pattern(s ^ RPC_PUSH_SEED, i); so the same request always moves the
 * same bytes, whichever client sends it. */
#ifndef CXISIM_TESTS_OFI_RPC_H
#define CXISIM_TESTS_OFI_RPC_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define RPC_REQ_MAGIC 0x31515052u  /* "RPQ1" */
#define RPC_RESP_MAGIC 0x31535052u /* "RPS1" */
#define RPC_PUSH_SEED 0x5a5a5a5au
#define RPC_KEY_PULL 1             /* client keys of the two regions (provider keys with --prov-keys) */
#define RPC_KEY_PUSH 2

enum rpc_op { RPC_OP_NULL = 0, RPC_OP_PULL = 1, RPC_OP_PUSH = 2 };

struct rpc_req {
	uint32_t magic;
	uint32_t op;        /* enum rpc_op */
	uint64_t key;       /* bulk: the client's region */
	uint64_t offset;    /* bulk: within the region */
	uint32_t len;       /* bulk: bytes */
	uint32_t seed;      /* bulk: the client's pattern seed */
	uint8_t src[8];     /* --header-source: the client's address (fi_getname), for servers without FI_SOURCE */
};

struct rpc_resp {
	uint32_t magic;
	int32_t status;     /* 0, or -FI_E* (bulk failed, bad bytes) */
	uint64_t bytes;     /* bulk bytes moved */
};

static inline uint8_t rpc_pattern(uint32_t seed, uint64_t i)
{
	uint32_t x = (uint32_t)(seed * 2654435761u) ^ (uint32_t)(i * 40503u) ^ (uint32_t)(i >> 11);
	return (uint8_t)(x ^ (x >> 8) ^ (x >> 16));
}

#define RPC_CHECK(call)                                                                                     \
	do {                                                                                                \
		long _r = (long)(call);                                                                     \
		if (_r < 0) {                                                                               \
			fprintf(stderr, "%s:%d: %s = %ld (%s)\n", __FILE__, __LINE__, #call, _r,           \
				fi_strerror((int)-_r));                                                     \
			exit(1);                                                                            \
		}                                                                                           \
	} while (0)

static inline double rpc_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The real clock and a real sleep, for waits on things outside the simulation (another process's file).
 * Under `cxisim exec` in virtual time, clock_gettime and usleep are virtual: with nothing else pending, a
 * loop of virtual sleeps runs through any timeout in a few milliseconds of wall time.  Raw system calls
 * pass the clock interposer. */
static inline long rpc_raw_syscall2(long nr, long a, long b)
{
#if defined(__x86_64__)
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return r;
#else
	return syscall(nr, a, b);
#endif
}

static inline double rpc_real_now(void)
{
	struct timespec ts = { 0, 0 };
	rpc_raw_syscall2(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void rpc_real_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	rpc_raw_syscall2(SYS_nanosleep, (long)&ts, 0);
}

struct rpc_fab {
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	unsigned char name[8];
	size_t namelen;
};

/* Fabric, domain, AV (table), one CQ (tagged format, wait fd) and an RDM endpoint of provider "cxi". */
static inline void rpc_fab_open(struct rpc_fab *f, uint64_t caps, bool prov_keys, size_t cq_size)
{
	memset(f, 0, sizeof(*f));
	struct fi_info *h = fi_allocinfo();
	h->fabric_attr->prov_name = strdup("cxi");
	h->ep_attr->type = FI_EP_RDM;
	h->caps = caps;
	h->domain_attr->mr_mode = FI_MR_ENDPOINT | FI_MR_ALLOCATED | (prov_keys ? FI_MR_PROV_KEY : 0);
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->mode = FI_CONTEXT;
	RPC_CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &f->info));
	fi_freeinfo(h);
	/* Secondary capabilities come back unasked: keep FI_SOURCE(_ERR) only when asked for. */
	uint64_t unasked = (FI_SOURCE | FI_SOURCE_ERR) & ~caps;
	f->info->caps &= ~unasked;
	f->info->rx_attr->caps &= ~unasked;
	RPC_CHECK(fi_fabric(f->info->fabric_attr, &f->fab, NULL));
	RPC_CHECK(fi_domain(f->fab, f->info, &f->dom, NULL));
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	RPC_CHECK(fi_av_open(f->dom, &aa, &f->av, NULL));
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD, .size = cq_size };
	RPC_CHECK(fi_cq_open(f->dom, &ca, &f->cq, NULL));
	RPC_CHECK(fi_endpoint(f->dom, f->info, &f->ep, NULL));
	RPC_CHECK(fi_ep_bind(f->ep, &f->av->fid, 0));
	RPC_CHECK(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV));
}

static inline void rpc_fab_enable(struct rpc_fab *f)
{
	RPC_CHECK(fi_enable(f->ep));
	f->namelen = sizeof(f->name);
	RPC_CHECK(fi_getname(&f->ep->fid, f->name, &f->namelen));
}

/* Every close must succeed, also with requests still arriving and completions unread (a server that stops
 * while its clients go on, as hg_perf_server does at its first client's "done"). */
static inline void rpc_fab_close(struct rpc_fab *f)
{
	RPC_CHECK(fi_close(&f->ep->fid));
	RPC_CHECK(fi_close(&f->cq->fid));
	RPC_CHECK(fi_close(&f->av->fid));
	RPC_CHECK(fi_close(&f->dom->fid));
	RPC_CHECK(fi_close(&f->fab->fid));
	fi_freeinfo(f->info);
}

/* Sleep on the CQ's wait fd until something may be there (event-driven, as Mercury's progress is). */
#include <poll.h>
static inline void rpc_cq_sleep(struct rpc_fab *f, int timeout_ms)
{
	int fd = -1;
	struct fid *cq = &f->cq->fid;
	if (fi_control(cq, FI_GETWAIT, &fd) == 0 && fi_trywait(f->fab, &cq, 1) == 0) {
		struct pollfd p = { fd, POLLIN, 0 };
		poll(&p, 1, timeout_ms);
	}
}

#endif
