/* Memory registration in virtual time (docs/provider.md "Memory registration costs"): fi_mr_regattr maps the
 * buffer for the NIC through the MR cache model, fi_close(mr) releases it, and the calling thread's clock
 * moves by exactly the modelled cost (run at cpu_scale 0, so nothing else moves it).
 *
 * Usage: prov_mr_cost KERNEL_NS MAP_PAGE_NS UNMAP_PAGE_NS LOOKUP_NS BOOKKEEPING_NS LE_APPEND_NS -- the "cxi"
 * parameters the daemon was given (kernel_call_ns, map_page_ns, unmap_page_ns, mr_cache_lookup_ns,
 * mr_bookkeeping_ns, mr_le_append_ns).  Each case opens its own domain,
 * with FI_MR_CACHE_* set first (the provider reads them when a domain opens, as upstream's cxip_iomm_init).
 * Without arguments (realtime mode) only the calls' results are checked: nothing is modelled there. */
#include <sys/mman.h>

#include "common.h"

static uint64_t K, MP, UP, L, BK, LE; /* ns */
static struct fi_info *info;
static struct fid_fabric *fab;
static bool timed;

#define PAGE 4096u

static struct fid_domain *open_domain(const char *max_count, const char *max_size, const char *monitor)
{
	if (max_count)
		setenv("FI_MR_CACHE_MAX_COUNT", max_count, 1);
	else
		unsetenv("FI_MR_CACHE_MAX_COUNT");
	if (max_size)
		setenv("FI_MR_CACHE_MAX_SIZE", max_size, 1);
	else
		unsetenv("FI_MR_CACHE_MAX_SIZE");
	if (monitor)
		setenv("FI_MR_CACHE_MONITOR", monitor, 1);
	else
		unsetenv("FI_MR_CACHE_MONITOR");
	struct fid_domain *d;
	T_OK(fi_domain(fab, info, &d, NULL));
	return d;
}

/* Registers [buf, buf + len); returns the virtual time it took (ns). */
static uint64_t reg(struct fid_domain *d, void *buf, size_t len, struct fid_mr **mr)
{
	struct iovec iov = { buf, len };
	struct fi_mr_attr a = { .mr_iov = &iov, .iov_count = 1, .access = FI_REMOTE_READ | FI_REMOTE_WRITE };
	uint64_t t0 = t_mono_ns();
	T_OK(fi_mr_regattr(d, &a, 0, mr));
	return t_mono_ns() - t0;
}

static uint64_t dereg(struct fid_mr *mr)
{
	uint64_t t0 = t_mono_ns();
	T_OK(fi_close(&mr->fid));
	return t_mono_ns() - t0;
}

static void expect(uint64_t got, uint64_t want, const char *what)
{
	if (timed)
		T_CHECK(got == want, "%s: %" PRIu64 " ns of virtual time (model: %" PRIu64 ")", what, got, want);
	else
		T_CHECK(true, "%s (realtime: not modelled)", what);
}

static char *buffers(unsigned n, unsigned pages)
{
	char *p = mmap(NULL, (size_t)n * pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		printf("FAIL mmap\n");
		exit(1);
	}
	memset(p, 1, (size_t)n * pages * PAGE);
	return p;
}

int main(int argc, char **argv)
{
	timed = argc == 7;
	if (timed) {
		K = strtoull(argv[1], NULL, 0);
		MP = strtoull(argv[2], NULL, 0);
		UP = strtoull(argv[3], NULL, 0);
		L = strtoull(argv[4], NULL, 0);
		BK = strtoull(argv[5], NULL, 0);
		LE = strtoull(argv[6], NULL, 0);
	}
	const uint64_t MISS4 = 2 * L + K + 4 * MP; /* a 4-page buffer not in the cache: find, search, map */
	const uint64_t UNMAP4 = K + 4 * UP;
	struct fi_info *h = t_hints(FI_MSG | FI_RMA);
	T_OK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info));
	fi_freeinfo(h);
	T_OK(fi_fabric(info->fabric_attr, &fab, NULL));
	char *b = buffers(4, 4); /* four 4-page buffers */
	char *A = b, *B = b + 4 * PAGE, *C = b + 8 * PAGE;
	struct fid_mr *m1, *m2, *m3;

	/* The default cache (4096 entries, no size limit, a monitor): a miss maps, a hit is one lookup, a
	 * release one lookup (the mapping stays cached, unused). */
	struct fid_domain *d = open_domain(NULL, NULL, NULL);
	expect(reg(d, A, 4 * PAGE, &m1), MISS4, "first registration of 4 pages: lookups + driver call + 4 pages");
	expect(reg(d, A, 4 * PAGE, &m2), L, "same buffer again: a cache hit");
	expect(reg(d, A + 100, 1000, &m3), L, "a buffer inside a cached mapping: a hit");
	if (timed)
		T_CHECK(L < MISS4, "a hit (%" PRIu64 " ns) costs less than a miss (%" PRIu64 " ns)", L, MISS4);
	expect(dereg(m3), L, "close: a release into the cache");
	expect(dereg(m2), L, "close: a release into the cache");
	expect(dereg(m1), L, "close of the last user: the mapping stays cached (LRU)");
	expect(reg(d, A, 4 * PAGE, &m1), L, "registered again after every close: still a hit");
	expect(dereg(m1), L, "close");
	expect(reg(d, B + PAGE - 100, 200, &m1), 2 * L + K + 2 * MP, "200 bytes across a page boundary: 2 pages mapped");
	expect(dereg(m1), L, "close");
	expect(reg(d, B, 0, &m1), 0, "zero-length registration: nothing mapped");
	expect(dereg(m1), 0, "zero-length close: nothing unmapped");
	/* The monitor: memory unmapped while cached is dropped from the cache (unmapped at the next search),
	 * and the same address mapped again maps again. */
	expect(reg(d, C, 4 * PAGE, &m1), MISS4, "C: miss");
	expect(dereg(m1), L, "C: close");
	T_CHECK(munmap(C, 4 * PAGE) == 0, "C's memory unmapped");
	char *c2 = mmap(C, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	T_CHECK(c2 == C, "C mapped again at the same address");
	expect(reg(d, C, 4 * PAGE, &m1), UNMAP4 + MISS4, "C again: the stale mapping unmapped, then a miss");
	/* Unmapped while an MR still holds it: dropped from the cache, unmapped at that MR's close. */
	T_CHECK(munmap(C, 4 * PAGE) == 0 && mmap(C, 4 * PAGE, PROT_READ | PROT_WRITE,
						 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == C,
		"C unmapped and mapped again while registered");
	expect(reg(d, C, 4 * PAGE, &m2), MISS4, "C again: a miss (the held mapping left the cache)");
	expect(dereg(m1), UNMAP4, "close of the MR whose memory went: its mapping is unmapped");
	expect(dereg(m2), L, "close of the new one: cached");
	T_OK(fi_close(&d->fid));

	/* FI_MR_CACHE_MAX_COUNT=2: a full cache (2 entries) unmaps its oldest unused mapping first. */
	d = open_domain("2", NULL, NULL);
	expect(reg(d, A, 4 * PAGE, &m1), MISS4, "count 2: A miss");
	expect(dereg(m1), L, "count 2: A cached");
	expect(reg(d, B, 4 * PAGE, &m1), MISS4, "count 2: B miss");
	expect(dereg(m1), L, "count 2: B cached (2 entries: full)");
	expect(reg(d, C, 4 * PAGE, &m1), UNMAP4 + MISS4, "count 2: C evicts A (unmap), then maps");
	expect(dereg(m1), L, "count 2: C cached");
	/* Upstream flushes at the start of every search while the cache is full (ofi_mr_cache_search), whatever
	 * the search is for: the oldest unused mapping is B itself. */
	expect(reg(d, B, 4 * PAGE, &m1), UNMAP4 + MISS4, "count 2: B again: the full cache unmaps B (oldest), maps B");
	expect(reg(d, A, 4 * PAGE, &m2), UNMAP4 + MISS4, "count 2: A was evicted: evicts C (oldest unused), maps");
	/* Full of mappings in use: a new one is not cached, so its close unmaps it. */
	expect(reg(d, C, 4 * PAGE, &m3), MISS4, "count 2, both in use: C maps, uncached");
	expect(dereg(m3), UNMAP4, "count 2: the uncached C unmapped at its close");
	expect(dereg(m1), L, "count 2: B released");
	expect(dereg(m2), L, "count 2: A released");
	T_OK(fi_close(&d->fid));

	/* FI_MR_CACHE_MAX_SIZE=20480 (5 pages): full once 5 pages are cached. */
	d = open_domain(NULL, "20480", NULL);
	expect(reg(d, A, 4 * PAGE, &m1), MISS4, "size 5 pages: A (4 pages) miss");
	expect(dereg(m1), L, "size: A cached (16 KiB)");
	expect(reg(d, B, PAGE, &m1), 2 * L + K + MP, "size: B (1 page) miss, cached (20 KiB: full)");
	expect(dereg(m1), L, "size: B cached");
	expect(reg(d, B, PAGE, &m1), UNMAP4 + L, "size: B again: the full cache first evicts A (oldest), then hits B");
	expect(dereg(m1), L, "size: B released");
	T_OK(fi_close(&d->fid));

	/* A value libfabric cannot read leaves the default (fi_param_get): the cache is on. */
	d = open_domain("many", "lots", NULL);
	expect(reg(d, A, 4 * PAGE, &m1), MISS4, "unreadable FI_MR_CACHE_MAX_COUNT/SIZE: defaults, A miss");
	expect(reg(d, A, 4 * PAGE, &m2), L, "unreadable values: A again hits");
	expect(dereg(m2) + dereg(m1), 2 * L, "unreadable values: releases");
	T_OK(fi_close(&d->fid));

	/* FI_MR_CACHE_MONITOR=disabled, and FI_MR_CACHE_MAX_COUNT=0: no cache, every registration maps and
	 * every close unmaps. */
	const char *off[2][2] = { { NULL, "disabled" }, { "0", NULL } };
	for (int i = 0; i < 2; i++) {
		d = open_domain(off[i][0], NULL, off[i][1]);
		const char *what = i ? "count 0" : "monitor disabled";
		char msg[128];
		snprintf(msg, sizeof(msg), "%s: A maps (driver call + 4 pages, no lookup)", what);
		expect(reg(d, A, 4 * PAGE, &m1), K + 4 * MP, msg);
		snprintf(msg, sizeof(msg), "%s: A again maps again", what);
		expect(reg(d, A, 4 * PAGE, &m2), K + 4 * MP, msg);
		snprintf(msg, sizeof(msg), "%s: each close unmaps", what);
		expect(dereg(m2) + dereg(m1), 2 * UNMAP4, msg);
		T_OK(fi_close(&d->fid));
	}

	/* The data path maps every DMA buffer through the same cache (descriptors do not spare it, as upstream
	 * without hybrid MR descriptors), and the release is charged with the post: a receive of a new buffer
	 * misses, the same buffer again hits; a send beyond the IDC limit maps, one within it (and an inject)
	 * travels in the command.  Sent to itself, every message completes. */
	unsetenv("FI_MR_CACHE_MAX_COUNT");
	unsetenv("FI_MR_CACHE_MAX_SIZE");
	unsetenv("FI_MR_CACHE_MONITOR");
	struct t_ep t;
	t_open(&t, FI_MSG | FI_TAGGED | FI_RMA);
	fi_addr_t self = t_insert(&t, t.name);
	char *R = buffers(2, 4), *S = R + 4 * PAGE;
	struct fi_cq_tagged_entry ce;
	uint64_t t1 = t_mono_ns();
	T_OK(fi_recv(t.ep, R, 4 * PAGE, NULL, FI_ADDR_UNSPEC, NULL));
	expect(t_mono_ns() - t1, MISS4 + L, "fi_recv of a new 4-page buffer: a miss, and the release");
	t1 = t_mono_ns();
	T_OK(fi_send(t.ep, S, 4 * PAGE, NULL, self, NULL));
	expect(t_mono_ns() - t1, MISS4 + L, "fi_send of 4 pages (beyond the IDC limit): a miss, and the release");
	t_cq_expect(t.cq, &ce, "send completion");
	t_cq_expect(t.cq, &ce, "receive completion");
	t1 = t_mono_ns();
	T_OK(fi_recv(t.ep, R, 4 * PAGE, NULL, FI_ADDR_UNSPEC, NULL));
	expect(t_mono_ns() - t1, 2 * L, "fi_recv of the same buffer: a hit, and the release");
	t1 = t_mono_ns();
	T_OK(fi_send(t.ep, S, 100, NULL, self, NULL));
	expect(t_mono_ns() - t1, 0, "fi_send of 100 bytes: an IDC command, nothing mapped");
	t_cq_expect(t.cq, &ce, "send completion");
	t_cq_expect(t.cq, &ce, "receive completion");
	t1 = t_mono_ns();
	T_OK(fi_recv(t.ep, R, 0, NULL, FI_ADDR_UNSPEC, NULL));
	T_OK(fi_inject(t.ep, S, 0, self));
	expect(t_mono_ns() - t1, 0, "a zero-length receive and a zero-length inject: nothing mapped");
	t_cq_expect(t.cq, &ce, "receive completion");
	/* fi_mr_enable (FI_MR_ENDPOINT, provider keys): the provider key cache serves a region whose mapping is
	 * cached -- its first MR appends the shared LE -- ... */
	struct fid_mr *e1, *e2;
	T_OK(fi_mr_reg(t.dom, A, 4 * PAGE, FI_REMOTE_WRITE, 0, 0, 0, &e1, NULL));
	T_OK(fi_mr_reg(t.dom, B, 4 * PAGE, FI_REMOTE_WRITE, 0, 0, 0, &e2, NULL));
	T_OK(fi_mr_bind(e1, &t.ep->fid, 0));
	T_OK(fi_mr_bind(e2, &t.ep->fid, 0));
	t1 = t_mono_ns();
	T_OK(fi_mr_enable(e1));
	expect(t_mono_ns() - t1, BK + L + LE, "enable, mapping cached: provider key cache (and its shared LE)");
	t1 = t_mono_ns();
	T_OK(fi_mr_enable(e2));
	expect(t_mono_ns() - t1, BK + L, "enable, mapping cached: provider key cache (a lookup)");
	T_OK(fi_close(&e2->fid));
	T_OK(fi_close(&e1->fid));
	t_close(&t);
	/* ... and never one whose mapping is not cached (upstream cxip_mr_enable: md->cached): without a monitor
	 * the first provider key (id 0) is an optimized MR, a driver call and its own PtlTE. */
	setenv("FI_MR_CACHE_MONITOR", "disabled", 1);
	t_open(&t, FI_MSG | FI_RMA);
	T_OK(fi_mr_reg(t.dom, A, 4 * PAGE, FI_REMOTE_WRITE, 0, 0, 0, &e1, NULL));
	T_OK(fi_mr_bind(e1, &t.ep->fid, 0));
	t1 = t_mono_ns();
	T_OK(fi_mr_enable(e1));
	expect(t_mono_ns() - t1, BK + K + LE, "enable, mapping not cached: no provider key cache (optimized MR)");
	T_OK(fi_close(&e1->fid));
	t_close(&t);
	unsetenv("FI_MR_CACHE_MONITOR");

	/* Misuse: the right -FI_E* codes, no time charged for a refused call. */
	d = open_domain(NULL, NULL, NULL);
	struct iovec iov[2] = { { A, PAGE }, { B, PAGE } };
	struct fi_mr_attr a = { .mr_iov = iov, .iov_count = 2, .access = FI_REMOTE_READ };
	uint64_t t0 = t_mono_ns();
	int r1 = fi_mr_regattr(d, &a, 0, &m1);
	a.iov_count = 0;
	int r2 = fi_mr_regattr(d, &a, 0, &m1);
	int r3 = fi_mr_regattr(d, NULL, 0, &m1);
	int r4 = fi_mr_reg(d, NULL, PAGE, FI_REMOTE_READ, 0, 0, 0, &m1, NULL);
	int r5 = fi_mr_reg(d, A, PAGE, FI_REMOTE_READ, 0, 0, FI_DIRECTED_RECV, &m1, NULL);
	uint64_t spent = t_mono_ns() - t0;
	T_CHECK(r1 == -FI_ENOSYS, "two iovs (mr_iov_limit 1): -FI_ENOSYS, as upstream (%d)", r1);
	T_CHECK(r2 == -FI_EINVAL && r3 == -FI_EINVAL && r4 == -FI_EINVAL, "no iov, no attr, NULL buffer: -FI_EINVAL "
		"(%d %d %d)", r2, r3, r4);
	T_CHECK(r5 == -FI_EBADFLAGS, "an unknown flag: -FI_EBADFLAGS (%d)", r5);
	if (timed)
		T_CHECK(spent == 0, "refused registrations cost nothing (%" PRIu64 " ns)", spent);
	T_OK(fi_close(&d->fid));

	T_OK(fi_close(&fab->fid));
	fi_freeinfo(info);
	if (t_failures) {
		printf("FAILED prov_mr_cost: %d\n", t_failures);
		return 1;
	}
	printf("PASSED prov_mr_cost\n");
	return 0;
}
