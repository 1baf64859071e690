/* Host mappings of the NIC (upstream prov/cxi cxip_iomm.c: cxip_map / cxip_unmap) through a model of
 * libfabric's MR cache (prov/util util_mr_cache.c), priced in virtual time.
 *
 * Upstream, fi_mr_regattr maps the region for the NIC at once (cxil_map: a driver call that pins the pages
 * and writes their translations into the NIC's ATU) and fi_close(mr) releases it, both through the
 * domain's MR cache when a memory monitor is running: a search that finds a cached mapping covering the
 * buffer costs a lookup; a miss maps (and caches the mapping); a release puts an unused mapping on an LRU
 * list, and a cache full by FI_MR_CACHE_MAX_COUNT (cxi: 4096) or FI_MR_CACHE_MAX_SIZE (cxi: unlimited)
 * unmaps from that list's head at the next search.  The monitor drops a mapping whose memory the process
 * unmapped (munmap, brk, madvise(MADV_DONTNEED), mremap), so a buffer freed and allocated again at the same
 * address maps again.  FI_MR_CACHE_MONITOR=disabled, or FI_MR_CACHE_MAX_COUNT=0, turn the cache off: every
 * registration maps and every close unmaps.
 *
 * Here nothing is mapped (the daemon reaches the process's memory itself); what remains is the time.  In
 * virtual mode the calling thread's clock advances by the modelled cost (cxip_vt_spend) with the "cxi"
 * parameters the daemon hands over at attach -- the same ones its simulated processes are priced with
 * (sim/nic/sw_env.c): a map is kernel_call_ns + map_page_ns per 4 KiB page, an unmap kernel_call_ns +
 * unmap_page_ns per page, a cache search that hits or a release mr_cache_lookup_ns (a miss: two lookups,
 * upstream's find then search, and the map).  In realtime mode nothing is modelled (no monitor either).
 *
 * The monitor is a userfaultfd (upstream's "userfaultfd" monitor, here for every monitor name): each cached
 * range is registered in write-protect mode without protecting any page, so no fault ever reaches it, but
 * the kernel reports the range's unmaps and removals (UFFD_EVENT_UNMAP, _REMOVE, _REMAP) and holds the
 * unmapping thread until the event is read.  A provider thread reads them and queues them in one critical
 * section; a search takes the same lock before it looks at the queue, so an unmap that returned before the
 * search (its event was read) is always seen, without a system call on the data path.  Without userfaultfd (a container's seccomp filter refuses the call; an old kernel) the cache
 * stays on and every range is unwatched, like the private file mappings below: the modelled machine's figures
 * must not depend on the host that runs the simulation (upstream turns its cache off when its monitor
 * fails, which would make the same program print other virtual times on another host). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cxip.h"

#define IOMM_PAGE 4096ull /* map_page_ns / unmap_page_ns are per 4 KiB page */
#define CXIP_MR_CACHE_MAX_CNT 4096 /* upstream CXIP_DEFAULT_MR_CACHE_MAX_CNT (overrides libfabric's 1024) */

struct cxip_iomm_entry {
	uint64_t start, end;   /* the mapping: the buffer's pages */
	uint32_t use;          /* registrations and internal mappings holding it */
	bool cached;           /* in the cache (else freed, i.e. unmapped, by its last release) */
	struct cxip_iomm_entry *lru_prev, *lru_next; /* unused cached mappings, oldest first */
};

struct cxip_iomm {
	pthread_mutex_t lock;
	struct cxip_dev *dev;
	bool enabled;            /* a cache (else every map maps, every release unmaps) */
	uint64_t max_cnt, max_size, cnt, size;
	struct cxip_iomm_entry **tab; /* cached entries, by start */
	size_t ntab, cap;
	struct cxip_iomm_entry *lru_head, *lru_tail;
	uint64_t seen;           /* monitor events applied */
	uint64_t gen;            /* mon.gen when it last looked */
	uint64_t call_ps, map_page_ps, unmap_page_ps, lookup_ps;
	struct cxip_iomm_stats st;
};

/* ---- the monitor (one per process) ---- */

#define MON_QUEUE 256
static struct {
	pthread_mutex_t lock;  /* held only to read the uffd and queue ranges: never across anything that unmaps */
	int fd;                /* -1: not started; -2: unavailable */
	pid_t pid;             /* the process that started it (a forked child starts its own) */
	uint64_t seq;          /* events queued so far */
	uint64_t gen;          /* bumped when a fork drops the parent's monitor: caches forget everything */
	uint64_t start[MON_QUEUE], end[MON_QUEUE];
} mon = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

/* Queues every event the kernel holds (mon.lock held). */
static void mon_drain(void)
{
	struct uffd_msg m[16];
	for (;;) {
		long n = cxip_raw_syscall4(SYS_read, mon.fd, (long)m, (long)sizeof(m), 0);
		if (n <= 0)
			return;
		for (size_t i = 0; i < (size_t)n / sizeof(m[0]); i++) {
			uint64_t s, e;
			switch (m[i].event) {
			case UFFD_EVENT_REMOVE:
			case UFFD_EVENT_UNMAP:
				s = m[i].arg.remove.start;
				e = m[i].arg.remove.end;
				break;
			case UFFD_EVENT_REMAP:
				s = m[i].arg.remap.from;
				e = s + m[i].arg.remap.len;
				break;
			default: continue;
			}
			size_t k = mon.seq++ % MON_QUEUE;
			mon.start[k] = s;
			mon.end[k] = e;
		}
	}
}

static void *mon_thread(void *arg)
{
	int fd = (int)(intptr_t)arg;
	cxip_vt_internal_thread(); /* real clocks: its poll is not a virtual wait */
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		/* Raw system calls: the clock interposer wraps poll and read, and nothing of it concerns this fd. */
		long r = cxip_raw_syscall4(SYS_ppoll, (long)&p, 1, 0, 0);
		if (r < 0 && r != -EINTR)
			return NULL;
		pthread_mutex_lock(&mon.lock);
		if (mon.fd != fd) { /* forked away (cannot happen in this process) or stopped */
			pthread_mutex_unlock(&mon.lock);
			return NULL;
		}
		mon_drain();
		pthread_mutex_unlock(&mon.lock);
	}
}

static void mon_atfork_child(void)
{
	/* The child's mappings lost their registration (no UFFD_FEATURE_EVENT_FORK) and it has no reader. */
	if (mon.fd >= 0)
		close(mon.fd);
	mon.fd = -1;
	mon.gen++;
	pthread_mutex_init(&mon.lock, NULL);
}

static void mon_register_atfork(void)
{
	pthread_atfork(NULL, NULL, mon_atfork_child);
}

/* Starts the monitor if needed (mon.lock held); false when userfaultfd is not available. */
static bool mon_start(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	if (mon.fd >= 0 && mon.pid == getpid())
		return true;
	if (mon.fd == -2)
		return false;
	/* User-mode faults only: the unprivileged form, and nothing here wants faults anyway. */
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |
					      UFFD_FEATURE_EVENT_REMAP };
	if (fd < 0 || ioctl(fd, UFFDIO_API, &api)) {
		if (fd >= 0)
			close(fd);
		mon.fd = -2;
		return false;
	}
	pthread_once(&once, mon_register_atfork);
	mon.fd = fd;
	mon.pid = getpid();
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, mon_thread, (void *)(intptr_t)fd)) {
		pthread_attr_destroy(&a);
		close(fd);
		mon.fd = -2;
		return false;
	}
	pthread_attr_destroy(&a);
	return true;
}

static bool mon_watch(uint64_t start, uint64_t end)
{
	struct uffdio_register r = { .range = { .start = start, .len = end - start }, .mode = UFFDIO_REGISTER_MODE_WP };
	pthread_mutex_lock(&mon.lock);
	bool ok = mon.fd >= 0 && ioctl(mon.fd, UFFDIO_REGISTER, &r) == 0;
	pthread_mutex_unlock(&mon.lock);
	return ok;
}

/* ---- the cache ---- */

static uint64_t pages(const struct cxip_iomm_entry *e)
{
	return (e->end - e->start) / IOMM_PAGE;
}

static void lru_remove(struct cxip_iomm *c, struct cxip_iomm_entry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else if (c->lru_head == e)
		c->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else if (c->lru_tail == e)
		c->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_append(struct cxip_iomm *c, struct cxip_iomm_entry *e)
{
	e->lru_prev = c->lru_tail;
	e->lru_next = NULL;
	if (c->lru_tail)
		c->lru_tail->lru_next = e;
	else
		c->lru_head = e;
	c->lru_tail = e;
}

/* First index whose entry starts at or after addr. */
static size_t tab_lower(const struct cxip_iomm *c, uint64_t addr)
{
	size_t lo = 0, hi = c->ntab;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->tab[mid]->start < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t unmap_cost(const struct cxip_iomm *c, const struct cxip_iomm_entry *e)
{
	return c->call_ps + pages(e) * c->unmap_page_ps;
}

/* Out of the cache: an unused mapping is unmapped now (its cost returned), one in use at its last release. */
static uint64_t uncache_at(struct cxip_iomm *c, size_t i)
{
	struct cxip_iomm_entry *e = c->tab[i];
	memmove(&c->tab[i], &c->tab[i + 1], (c->ntab - i - 1) * sizeof(c->tab[0]));
	c->ntab--;
	c->cnt--;
	c->size -= e->end - e->start;
	e->cached = false;
	if (e->use)
		return 0;
	lru_remove(c, e);
	uint64_t cost = unmap_cost(c, e);
	c->st.unmaps++;
	free(e);
	return cost;
}

static uint64_t uncache_range(struct cxip_iomm *c, uint64_t s, uint64_t e)
{
	uint64_t cost = 0;
	for (size_t i = 0; i < c->ntab;) {
		if (c->tab[i]->start < e && s < c->tab[i]->end) {
			c->st.invalidated++;
			cost += uncache_at(c, i);
		} else {
			i++;
		}
	}
	return cost;
}

/* The monitor's news since this cache last looked (c->lock held). */
static uint64_t apply_monitor(struct cxip_iomm *c)
{
	uint64_t cost = 0;
	/* No read here: an unmap that returned before this search had its event read by the monitor thread,
	 * which reads and queues under mon.lock -- so taking the lock waits for the queueing to end. */
	pthread_mutex_lock(&mon.lock);
	uint64_t seq = mon.seq;
	bool lost = seq - c->seen > MON_QUEUE;
	uint64_t from = lost ? seq : c->seen;
	uint64_t s[MON_QUEUE], e[MON_QUEUE];
	size_t n = 0;
	for (uint64_t q = from; q < seq; q++) {
		s[n] = mon.start[q % MON_QUEUE];
		e[n++] = mon.end[q % MON_QUEUE];
	}
	pthread_mutex_unlock(&mon.lock);
	c->seen = seq;
	if (lost) {
		/* More unmaps than the queue holds since this cache looked: forget everything. */
		while (c->ntab)
			cost += uncache_at(c, c->ntab - 1);
	}
	for (size_t i = 0; i < n; i++)
		cost += uncache_range(c, s[i], e[i]);
	return cost;
}

static bool cache_full(const struct cxip_iomm *c)
{
	return c->cnt >= c->max_cnt || c->size >= c->max_size;
}

static uint64_t env_size(const char *name, uint64_t def, bool *set)
{
	const char *s = getenv(name);
	*set = false;
	if (!s || !*s)
		return def;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || *end || end == s)
		return def; /* libfabric's fi_param_get leaves the default for a value it cannot read */
	*set = true;
	return v < 0 ? UINT64_MAX : (uint64_t)v;
}

int cxip_iomm_init(struct cxip_domain *dom)
{
	struct cxip_iomm *c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	struct cxip_dev *dev = dom->dev;
	c->dev = dev;
	dom->iomm = c;
	if (!dev->virt)
		return 0; /* realtime: nothing modelled */
	c->call_ps = dev->pcb->map_call_ps;
	c->map_page_ps = dev->pcb->map_page_ps;
	c->unmap_page_ps = dev->pcb->unmap_page_ps;
	c->lookup_ps = dev->pcb->map_cache_hit_ps;
	/* Upstream: libfabric's defaults (1024 entries; size: memory / cores / 2 when FI_MR_CACHE_MAX_SIZE is 0),
	 * then cxi's own (4096 entries, no size limit) unless the variables are set; a count of 0 disables the
	 * cache (ofi_mr_cache_init fails), as does the monitor "disabled". */
	bool cnt_set, size_set;
	c->max_cnt = env_size("FI_MR_CACHE_MAX_COUNT", CXIP_MR_CACHE_MAX_CNT, &cnt_set);
	c->max_size = env_size("FI_MR_CACHE_MAX_SIZE", UINT64_MAX, &size_set);
	if (size_set && !c->max_size) {
		long pg = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE), ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		c->max_size = pg > 0 && psz > 0 && ncpu > 0 ? (uint64_t)pg * (uint64_t)psz / (uint64_t)ncpu / 2 : UINT64_MAX;
	}
	const char *m = getenv("FI_MR_CACHE_MONITOR");
	bool off = (m && !strcmp(m, "disabled")) || !c->max_cnt;
	if (!off) {
		pthread_mutex_lock(&mon.lock);
		(void)mon_start();
		c->enabled = true; /* with or without a monitor: see the file's head */
		c->seen = mon.seq;
		c->gen = mon.gen;
		pthread_mutex_unlock(&mon.lock);
	}
	return 0;
}

void cxip_iomm_fini(struct cxip_domain *dom)
{
	struct cxip_iomm *c = dom->iomm;
	if (!c)
		return;
	if (getenv("CXISIM_IOMM_STATS"))
		fprintf(stderr, "cxisim iomm: pid %d maps %" PRIu64 " unmaps %" PRIu64 " hits %" PRIu64 " evictions %" PRIu64
			" invalidated %" PRIu64 " unwatched %" PRIu64 " cached %" PRIu64 "%s\n", (int)getpid(), c->st.maps,
			c->st.unmaps, c->st.hits, c->st.evictions, c->st.invalidated, c->st.unwatched, c->cnt,
			c->enabled ? "" : " (no cache)");
	/* The domain goes: unused cached mappings are freed (upstream's ofi_mr_cache_cleanup, at fi_close of
	 * the domain, unmaps them; not charged: a domain close is not timed).  Mappings still held by open MRs
	 * are the application's leak; their entries go with the cache. */
	for (size_t i = 0; i < c->ntab; i++)
		if (!c->tab[i]->use)
			free(c->tab[i]);
		else
			c->tab[i]->cached = false; /* freed by its last release */
	free(c->tab);
	pthread_mutex_destroy(&c->lock);
	free(c);
	dom->iomm = NULL;
}

/* Acquires a mapping of [buf, buf + len) for the NIC, charging its cost to the calling thread (which is
 * inside a provider call: cxip_vt_enter .. cxip_vt_rebase).  *out: the mapping to release, NULL when
 * nothing is modelled. */
int cxip_iomm_map(struct cxip_domain *dom, const void *buf, size_t len, struct cxip_iomm_entry **out)
{
	struct cxip_iomm *c = dom->iomm;
	*out = NULL;
	if (!c || !c->dev->virt || !len)
		return 0;
	uint64_t a = (uint64_t)(uintptr_t)buf, b = a + len;
	uint64_t s = a & ~(IOMM_PAGE - 1), e = (b + IOMM_PAGE - 1) & ~(IOMM_PAGE - 1);
	uint64_t cost = 0;
	pthread_mutex_lock(&c->lock);
	if (c->enabled) {
		if (c->gen != mon.gen) {
			/* A forked child: the parent's registrations are gone, and so is its monitor. */
			c->gen = mon.gen;
			while (c->ntab)
				cost += uncache_at(c, c->ntab - 1);
			pthread_mutex_lock(&mon.lock);
			(void)mon_start();
			c->seen = mon.seq;
			pthread_mutex_unlock(&mon.lock);
		}
		cost += apply_monitor(c);
		/* A full cache first unmaps unused mappings, oldest first (ofi_mr_cache_flush). */
		while (cache_full(c) && c->lru_head) {
			struct cxip_iomm_entry *old = c->lru_head;
			size_t i = tab_lower(c, old->start);
			while (c->tab[i] != old)
				i++;
			c->st.evictions++;
			cost += uncache_at(c, i);
		}
		/* A cached mapping that covers the buffer: a hit.  Entries may overlap (upstream keeps both of two
		 * mappings that only overlap); look back from the last one starting at or before the buffer. */
		size_t i = tab_lower(c, a + 1);
		for (size_t j = i; j-- > 0;) {
			struct cxip_iomm_entry *x = c->tab[j];
			if (x->start <= a && x->end >= b) {
				if (x->use++ == 0)
					lru_remove(c, x);
				c->st.hits++;
				*out = x;
				pthread_mutex_unlock(&c->lock);
				cxip_vt_spend(c->dev, cost + c->lookup_ps);
				return 0;
			}
		}
		/* A miss: mappings inside the buffer's range give way to the new one (upstream purges the regions
		 * its search finds, those within the buffer). */
		for (size_t j = tab_lower(c, s); j < c->ntab && c->tab[j]->start < e;) {
			if (c->tab[j]->end <= e) {
				c->st.invalidated++;
				cost += uncache_at(c, j);
			} else {
				j++;
			}
		}
		cost += c->lookup_ps; /* the find before the search */
	}
	struct cxip_iomm_entry *x = calloc(1, sizeof(*x));
	if (!x) {
		pthread_mutex_unlock(&c->lock);
		return -FI_ENOMEM;
	}
	x->start = s;
	x->end = e;
	x->use = 1;
	cost += (c->enabled ? c->lookup_ps : 0) + c->call_ps + pages(x) * c->map_page_ps;
	c->st.maps++;
	/* Cached unless the cache is full of mappings in use.  A range userfaultfd cannot watch (a private file
	 * mapping: a program's .data/.bss) is cached all the same, as upstream's default monitor, memhooks, never
	 * refuses one; its unmaps then go unnoticed (counted: unwatched). */
	if (c->enabled && !cache_full(c)) {
		if (!mon_watch(s, e))
			c->st.unwatched++;
		if (c->ntab == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 64;
			struct cxip_iomm_entry **t = realloc(c->tab, cap * sizeof(*t));
			if (!t) {
				free(x);
				pthread_mutex_unlock(&c->lock);
				return -FI_ENOMEM;
			}
			c->tab = t;
			c->cap = cap;
		}
		size_t at = tab_lower(c, s);
		memmove(&c->tab[at + 1], &c->tab[at], (c->ntab - at) * sizeof(c->tab[0]));
		c->tab[at] = x;
		c->ntab++;
		c->cnt++;
		c->size += e - s;
		x->cached = true;
	}
	*out = x;
	pthread_mutex_unlock(&c->lock);
	cxip_vt_spend(c->dev, cost);
	return 0;
}

/* Releases a mapping (ofi_mr_cache_delete, or cxil_unmap for one not cached), charging its cost. */
void cxip_iomm_unmap(struct cxip_domain *dom, struct cxip_iomm_entry *x)
{
	struct cxip_iomm *c = dom->iomm;
	if (!c || !x)
		return;
	uint64_t cost;
	pthread_mutex_lock(&c->lock);
	if (--x->use) {
		cost = c->lookup_ps;
	} else if (x->cached) {
		lru_append(c, x);
		cost = c->lookup_ps;
	} else {
		cost = unmap_cost(c, x);
		c->st.unmaps++;
		free(x);
	}
	pthread_mutex_unlock(&c->lock);
	cxip_vt_spend(c->dev, cost);
}

/* The data path maps, through the same cache, every buffer the NIC reads or writes by DMA: a receive's
 * buffer, a send's or an RMA's local buffer beyond the IDC limit (inject and IDC payloads travel in the
 * command), a fetching atomic's result buffer (upstream cxip_ep_obj_map from cxip_recv_req_alloc,
 * cxip_send_buf_init, cxip_rma_emit_dma, cxip_amo_emit_dma).  Descriptors do not spare it: upstream uses
 * them only with hybrid MR descriptors (off by default, and accepted here without effect).  The mapping is
 * released when the operation completes; both are charged at the post, to the posting thread. */
void cxip_iomm_data_path(struct cxip_domain *dom, const struct cxs_cmd *cmd)
{
	if (!cmd->len || !cmd->addr || (cmd->flags & CXS_F_INJECT))
		return;
	switch (cmd->op) {
	case CXS_CMD_RECV:
		if (cmd->flags & (CXS_F_PEEK | CXS_F_DISCARD))
			return; /* no data lands */
		break;
	case CXS_CMD_SEND:
	case CXS_CMD_WRITE:
	case CXS_CMD_READ:
	case CXS_CMD_ATOMIC: /* addr: the result buffer of a fetching atomic, else 0 */
		break;
	default: return;
	}
	struct cxip_iomm_entry *e;
	if (cxip_iomm_map(dom, (const void *)(uintptr_t)cmd->addr, cmd->len, &e) == 0)
		cxip_iomm_unmap(dom, e);
}

bool cxip_iomm_cached(const struct cxip_iomm_entry *e)
{
	return e && e->cached;
}

void cxip_iomm_get_stats(struct cxip_domain *dom, struct cxip_iomm_stats *st)
{
	struct cxip_iomm *c = dom->iomm;
	memset(st, 0, sizeof(*st));
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	st->cached = c->cnt;
	st->enabled = c->enabled;
	pthread_mutex_unlock(&c->lock);
}
