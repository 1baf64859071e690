/* Virtual time of the process's threads (virtual mode, docs/provider.md "Time"; the daemon's side is
 * sim/cxisimd/vclock.c).
 *
 * Each thread that uses the provider owns a slot of the process control block: its virtual clock and its
 * state.  While BUSY, the thread charges its CPU time (CLOCK_THREAD_CPUTIME_ID x cpu_scale) to its clock
 * whenever it enters the provider, and stamps its commands with the clock.  The places where a thread waits
 * -- an empty CQ/counter/EQ poll, fi_trywait, a blocking read, a control request -- make it IDLE: the
 * daemon then runs virtual time without it and wakes it (BUSY again, clock set) when something becomes
 * visible to it or its deadline comes.  A waiting thread is parked on a futex in its slot, so it burns no
 * CPU the daemon needs; after park_timeout of wall time with nothing changing it returns anyway (progress
 * made outside the provider -- another thread's flag, a socket -- is never lost).
 *
 * The same entry points serve the clock interposer (libcxisim-clock.so, cxisim_clock.h): now, sleep_until
 * and wait.  The provider itself never reads a clock the interposer may answer: CPU time comes from a raw
 * system call, and its waits use futex timeouts relative to the wall clock or virtual deadlines.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cxip.h"
#include "cxisim_clock.h"

/* Raw system calls: libc's wrappers of clock_gettime and syscall() may be interposed (also iomm.c's reads
 * of its userfaultfd, which no wrapper should see). */
long cxip_raw_syscall4(long nr, long a, long b, long c, long d)
{
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = d;
	__asm__ volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return ret;
#else
	long ret = syscall(nr, a, b, c, d);
	return ret < 0 ? -errno : ret;
#endif
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (cxip_raw_syscall4(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, (long)&ts, 0, 0))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What one CPU clock read costs the thread's CPU clock.  Every charged interval runs from one read to the
 * next, so it holds the cost of one read (the end of the system call that sampled the base, the start of the
 * one that samples now) -- 330 to 820 ns in this VM, far more than the application code between two provider
 * calls (~150 ns in fi_pingpong).  It is the emulation's own work, so it is never charged.  The cost is not
 * a constant: it moves between levels (330, 440, 500, 600, 820 ns measured back to back) for periods of
 * milliseconds, with host load and from run to run, so one figure calibrated at start charged up to ~0.5 us
 * per call of the emulation's cost in some runs and not in others.  So the charges measure it: a second
 * read right after the one that ends the span, back to back, every READ_COST_EVERY charges (span_read_cost).  The smallest of 64 reads at
 * start (read_cost_floor) only bounds that sample: one above READ_COST_CAP x the floor was interrupted (a
 * tick, a preemption between the two reads) and the last good sample stands in for it. */
static _Atomic uint64_t read_cost_ns = UINT64_MAX;
#define READ_COST_CAP 4

static uint64_t read_cost_floor(void)
{
	uint64_t c = atomic_load_explicit(&read_cost_ns, memory_order_relaxed);
	if (c != UINT64_MAX)
		return c;
	uint64_t min = UINT64_MAX, a = thread_cpu_ns();
	for (int i = 0; i < 64; i++) {
		uint64_t b = thread_cpu_ns();
		if (b - a < min)
			min = b - a;
		a = b;
	}
	atomic_store_explicit(&read_cost_ns, min, memory_order_relaxed);
	return min;
}

static __thread uint64_t last_read_cost;
static __thread unsigned read_cost_age;
/* A sample every READ_COST_EVERY charges: the levels last milliseconds, a sample costs a system call. */
#define READ_COST_EVERY 4

/* The cost of the read that returned `cpu` (the one that ends the span being charged); cpu 0: of a read now
 * (the span's end was read by someone else: a trapped instruction, op_now_trapped). */
static uint64_t span_read_cost(uint64_t cpu)
{
	if (last_read_cost && ++read_cost_age < READ_COST_EVERY)
		return last_read_cost;
	read_cost_age = 0;
	if (!cpu)
		cpu = thread_cpu_ns();
	uint64_t c = thread_cpu_ns() - cpu, floor = read_cost_floor();
	if (c <= READ_COST_CAP * floor)
		last_read_cost = c;
	else if (!last_read_cost)
		last_read_cost = floor;
	return last_read_cost;
}

static long futex_wait(_Atomic uint32_t *w, uint32_t val, uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull) };
	return cxip_raw_syscall4(SYS_futex, (long)w, FUTEX_WAIT, (long)val, (long)&ts);
}

static void futex_wake(_Atomic uint32_t *w)
{
	cxip_raw_syscall4(SYS_futex, (long)w, FUTEX_WAKE, INT_MAX, 0);
}

/* ---- this thread's slot ---- */

static __thread uint64_t my_cpu_base;  /* CPU time already charged */
/* Inside a provider call that charged at entry and re-bases at exit (cxip_vt_enter .. cxip_vt_rebase): one
 * CPU clock read at each end, shared by the charge and the re-base.  Meanwhile the published base is
 * CPU_BASE_IN_CALL: the daemon's stall rule extrapolates nothing from it (the provider's own CPU is never
 * charged), and further charges within the call read no clock (nothing of the application to charge). */
static __thread bool in_call;
#define CPU_BASE_IN_CALL UINT64_MAX
/* Clock reads through the interposer in a row (no provider call, no wait since).  With cpu_scale 0 nothing
 * else moves a busy thread's clock, so a program that spins on the clock outside the provider (a busy wait
 * for 1 ms) would read the same time forever and hold the engine back -- with nothing else pending, for good
 * (Shadow's deadlock): past emulation.spin_free_reads in a row, each read costs emulation.spin_read_ns,
 * what the read itself costs on a real core.  The first ones are free, so a program that reads the clock a few times
 * between provider calls (Open MPI's progress loop, NetPIPE's timer, two reads around a computation) and the
 * interposer's own reads in a timed wait (its timers' expiry checks) move nothing: the timed-wait tests
 * (test_clock_timers.py, test_clock_syscalls.py) measure their waits to the nanosecond, and charging from the
 * second read on added 35 ns to them. */
static __thread uint32_t reads_in_row;

/* The thread's CPU time, or 0 when CPU time is free (cpu_scale 0: nothing uses it, so no read at all). */
static uint64_t cpu_sample(struct cxip_dev *dev)
{
	return dev->cpu_scale > 0 ? thread_cpu_ns() : 0;
}

/* A new base of charging: the CPU time now, published (or, inside a call, the in-call mark).  The read is
 * the last thing before the application runs again: the store after it only publishes (a release store,
 * which waits for nothing), so no wait for the slot's cache line, which the daemon shares, is charged. */
static void set_base_after(struct cxip_dev *dev, struct pcb_thread *t, uint64_t post_ns)
{
	if (in_call) {
		atomic_store(&t->cpu_ns, CPU_BASE_IN_CALL);
		return;
	}
	my_cpu_base = cpu_sample(dev);
	if (my_cpu_base)
		my_cpu_base += post_ns;
	atomic_store_explicit(&t->cpu_ns, my_cpu_base, memory_order_release);
}

static void set_base(struct cxip_dev *dev, struct pcb_thread *t)
{
	set_base_after(dev, t, 0);
}
static __thread bool internal_thread;  /* the provider's own threads (watchdog) keep the real clock */

void cxip_vt_internal_thread(void)
{
	internal_thread = true;
}

static struct pcb_thread *self(struct cxip_dev *dev)
{
	if (!dev->virt || internal_thread)
		return NULL;
	int s = cxip_dev_thread_slot(dev);
	return s >= 0 ? &dev->pcb->threads[s] : NULL;
}

static void ring_daemon(struct cxip_dev *dev, bool idle, uint64_t clock)
{
	struct pcb_shm *p = dev->pcb;
	if (!atomic_load(&p->daemon_waiting))
		return;
	if (!idle && clock < atomic_load(&p->daemon_want_ps))
		return;
	if (atomic_exchange(&p->daemon_waiting, 0)) {
		uint64_t one = 1;
		ssize_t r = write(dev->pcb_efd, &one, sizeof(one));
		(void)r;
	}
}

static void advance_to(struct pcb_thread *t, uint64_t ps)
{
	if (atomic_load(&t->vclock_ps) < ps)
		atomic_store(&t->vclock_ps, ps);
}

/* IDLE -> BUSY by the thread itself.  Returns true when someone else woke it first (its clock is set). */
static bool resume(struct cxip_dev *dev, struct pcb_thread *t)
{
	uint32_t st = PCB_THREAD_IDLE;
	if (!atomic_compare_exchange_strong(&t->state, &st, PCB_THREAD_BUSY)) {
		while (atomic_load(&t->state) == PCB_THREAD_WAKING)
			sched_yield();
		set_base(dev, t);
		return true;
	}
	/* Time went on while it was idle: it starts at the horizon the daemon announced (Dekker with the
	 * daemon's publish-then-rescan: either the daemon saw it busy, or it sees the new horizon here). */
	atomic_thread_fence(memory_order_seq_cst);
	advance_to(t, atomic_load(&dev->pcb->horizon_ps));
	atomic_store(&t->deadline_ps, UINT64_MAX);
	set_base(dev, t);
	atomic_fetch_add(&t->pub_seq, 1);
	return false;
}

/* A park that times out (park_timeout of wall time, nobody woke the thread) hands the thread back to the
 * application with an empty poll, so that progress made outside the provider is never lost.  How many of
 * them a wait gets depends on wall time: on how fast the daemon and the peers ran (under CPU hogs ~50 per
 * NetPIPE rank and run, 1-3 idle; thousands with a 10 us park_timeout).  The CPU the application spends in
 * such an excursion must not move its virtual clock, or its figures depend on that race: charged, each
 * excursion of Open MPI's progress loop added ~1 us to a clock that then passed the reply's arrival
 * (NetPIPE 8 B 1.5 -> 2.0-2.1 us, fi_pingpong 1.25 -> 1.6-1.7 us with park_timeout_us 10).  So an
 * excursion's CPU time is charged only if the application does something with it: the charge at its next
 * provider entry is held back (exc_ps) and dropped if that call is the same poll again with nothing
 * changed (the thread goes idle as before: it went round its poll loop, which virtual time treats as
 * free anyway), and applied as soon as it does anything else -- a command, a completion read, a different
 * wait, a clock read between.  Clock reads through the interposer during the excursion (Open MPI reads the
 * cycle counter in its progress loop) are held back alike, so the clock they return is the one the drop
 * leaves. */
/* Whether the thread is in an excursion (back from a park by its timeout, no provider entry since) is its
 * slot's `excursion`: the daemon's stall rule reads it too (sim/cxisimd/vclock.c). */
static __thread bool exc_held;   /* exc_ps is held back (decided by the call now running) */
static __thread uint64_t exc_ps;

/* ---- accounting (CXISIM_VT_ACCOUNT=1): what each thread's CPU time became ----
 * For a measurement by hand (which side of a client/server pair the virtual time goes to): when the thread
 * ends (or the process exits, for the thread that calls exit) it prints to stderr
 *   cxisim-vt-account pid=P tid=T cpu_ns=C charged_ns=X dropped_ns=D vclock_ns=V
 * C: the thread's CPU time since it took its slot; X: virtual time its CPU time was charged (after
 * cpu_scale, the read-cost deduction and the span clip; excursions applied); D: excursions' charges
 * dropped (the poll loop itself); V: its virtual clock when it last charged.  The daemon's stall rule
 * (extrapolation) and waits move the clock too: V - X is not all idle time. */
static int acct_on = -1;
static __thread struct {
	bool on;
	uint64_t cpu0, charged_ps, dropped_ps, vclock_ps;
} vt_acct;
static pthread_key_t acct_key;
static pthread_once_t acct_once = PTHREAD_ONCE_INIT;

static void acct_report(void)
{
	if (!vt_acct.on)
		return;
	vt_acct.on = false;
	fprintf(stderr,
		"cxisim-vt-account pid=%d tid=%d cpu_ns=%" PRIu64 " charged_ns=%" PRIu64 " dropped_ns=%" PRIu64
		" vclock_ns=%" PRIu64 "\n",
		(int)getpid(), (int)syscall(SYS_gettid), thread_cpu_ns() - vt_acct.cpu0, vt_acct.charged_ps / 1000u,
		vt_acct.dropped_ps / 1000u, vt_acct.vclock_ps / 1000u);
}

static void acct_thread_end(void *p)
{
	(void)p;
	acct_report();
}

static void acct_init(void)
{
	pthread_key_create(&acct_key, acct_thread_end);
	atexit(acct_report); /* the thread that calls exit (its key destructor does not run) */
}

/* A thread took its slot: its accounting starts (once per thread). */
static void acct_start(void)
{
	if (acct_on < 0) {
		const char *e = getenv("CXISIM_VT_ACCOUNT");
		acct_on = e && *e == '1';
	}
	if (!acct_on || vt_acct.on)
		return;
	pthread_once(&acct_once, acct_init);
	vt_acct.on = true;
	vt_acct.cpu0 = thread_cpu_ns();
	pthread_setspecific(acct_key, &vt_acct);
}

/* The held excursion was the poll loop itself (the same poll again): it is not charged. */
static void exc_drop(void)
{
	vt_acct.dropped_ps += exc_ps;
	exc_ps = 0;
	exc_held = false;
}

static void exc_apply(struct pcb_thread *t)
{
	if (!exc_held && !atomic_load_explicit(&t->excursion, memory_order_relaxed))
		return;
	if (exc_ps)
		atomic_store(&t->vclock_ps, atomic_load(&t->vclock_ps) + exc_ps);
	vt_acct.charged_ps += exc_ps;
	exc_ps = 0;
	exc_held = false;
	atomic_store(&t->excursion, 0);
}

/* Where the application's span ended when the emulation read the CPU clock itself, before the provider was
 * called (a trapped rdtsc: cxisim_clock_ops.now_trapped). */
struct span_end {
	uint64_t cpu_ns;  /* the thread's CPU time when the application's span ended */
	uint64_t post_ns; /* CPU the way back to the application will cost after this call returns */
};

/* ---- the span clip (emulation.span_clip_ns > 0, cpu_scale > 0) ----
 * On the simulated machine each rank owns its core and spins: its caches, TLB and predictors stay warm.  On
 * this shared host a span that follows a sleep pays for the state a CPU hog or the daemon left cold: the
 * lower part of a site's span distribution is stable under load, its upper part is not.  So a span at a site
 * whose running quantile m is known is charged x - min(max(0, x - m), clip): continuous, monotone, at most
 * clip forgiven per span (a compute loop of 1 ms is charged 1 ms - clip).  The quantile is
 * emulation.span_clip_quantile (0.5: the median; a low one charges the site's warm cost).  A site is the pair
 * (where the previous span ended, where this one ends), or with span_clip_site end the ending site alone:
 * return addresses of provider entries, so the key is general (no table per program).  With
 * span_clip_after_park only the spans that began when the thread came back from a park (the cold ones) are
 * clipped; every span still feeds its site's estimate.
 * Per thread, SPAN_SITES slots hashed (collisions share an estimate).  The estimate is the sign-step
 * quantile estimator: m moves up by 2q x step and down by 2(1-q) x step (step m/32, at least 1 ns), so it
 * settles where a fraction q of the samples lies below it (q 0.5: one step each way, the median);
 * deterministic for the same spans, and a long burn moves it by one step only.  The first SPAN_WARM samples
 * of a site charge x; m starts at their smallest (from the first alone, a cold first span took ~130 samples
 * to walk down at m/32 a step). */
#define SPAN_SITES 64
#define SPAN_WARM 8
struct span_site {
	uintptr_t key;
	uint32_t m_ns, n;
};
static __thread struct span_site span_sites[SPAN_SITES];
static __thread uintptr_t span_prev_site, span_site_now;
static __thread bool span_after_park; /* the span now measured began when the thread came back from a park */

static uint64_t span_clipped(struct cxip_dev *dev, uint64_t x, bool cold)
{
	uintptr_t key = dev->span_clip_flags & PCB_CLIP_END_SITE ? span_site_now
								  : (span_prev_site * 0x9e3779b97f4a7c15ull) ^ span_site_now;
	span_prev_site = span_site_now;
	struct span_site *s = &span_sites[(key ^ (key >> 29)) % SPAN_SITES];
	atomic_fetch_add_explicit(&dev->pcb->spans, 1, memory_order_relaxed);
	if (cold)
		atomic_fetch_add_explicit(&dev->pcb->spans_after_park, 1, memory_order_relaxed);
	if (s->key != key || !s->n) {
		s->key = key;
		s->m_ns = x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
		s->n = 1;
		return x;
	}
	uint64_t m = s->m_ns, step = m / 32 ? m / 32 : 1;
	if (s->n < SPAN_WARM) { /* the smallest of the first samples: the site's first span may be far above */
		if (x < m)
			s->m_ns = (uint32_t)x;
		s->n++;
		return x;
	}
	uint64_t q = dev->span_clip_q_pm;
	if (x <= m) {
		uint64_t down = step * 2 * (1000 - q) / 1000;
		down = down ? down : 1;
		if (x < m)
			s->m_ns = (uint32_t)(m - (down < m ? down : m));
		return x;
	}
	uint64_t up = step * 2 * q / 1000;
	up = up ? up : 1;
	s->m_ns = (uint32_t)(m + up > UINT32_MAX ? UINT32_MAX : m + up);
	if ((dev->span_clip_flags & PCB_CLIP_AFTER_PARK) && !cold)
		return x;
	uint64_t credit = x - m < dev->span_clip_ns ? x - m : dev->span_clip_ns;
	atomic_fetch_add_explicit(&dev->pcb->spans_clipped, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&dev->pcb->span_clip_credit_ns, credit, memory_order_relaxed);
	return x - credit;
}

/* Charge the CPU time used since the last charge and publish the clock (the thread is BUSY after it).
 * enter: the caller re-bases at its exit (cxip_vt_rebase), so this read is the only one until then.
 * end: NULL, or where the span ended if the caller read it (then the base is set post_ns late). */
static uint64_t charge_how(struct cxip_dev *dev, struct pcb_thread *t, bool entered, bool enter,
			   const struct span_end *end)
{
	/* An excursion's charges are held back at a provider call's entry and at clock reads (see above);
	 * anything else the thread does applies them first. */
	bool hold = atomic_load_explicit(&t->excursion, memory_order_relaxed) && (!entered || (enter && !in_call));
	if (!hold)
		exc_apply(t);
	/* The CPU clock is read before anything else, so that the span charged ends where the application's
	 * code does: the loads below touch lines the daemon writes (the slot, the pcb), and waiting for them is
	 * the emulation's cost, not the application's. */
	bool sample = !in_call && dev->cpu_scale > 0;
	uint64_t cpu = !sample ? 0 : end ? end->cpu_ns : thread_cpu_ns();
	/* Resuming sets the base (one read): what follows it here is the provider's own work. */
	bool resumed = atomic_load(&t->state) != PCB_THREAD_BUSY;
	if (resumed)
		resume(dev, t);
	bool cold = span_after_park;
	if (sample)
		span_after_park = false;
	if (sample && !resumed) {
		uint64_t cost = span_read_cost(end ? 0 : cpu);
		if (cpu > my_cpu_base + cost) {
			uint64_t x = cpu - my_cpu_base - cost;
			if (dev->span_clip_ns)
				x = span_clipped(dev, x, cold);
			uint64_t ps = (uint64_t)((double)x * 1e3 * dev->cpu_scale);
			if (hold) {
				exc_ps += ps;
			} else {
				atomic_store(&t->vclock_ps, atomic_load(&t->vclock_ps) + ps);
				vt_acct.charged_ps += ps;
			}
		}
		my_cpu_base = cpu;
	}
	bool plain_read = !entered && !enter && !in_call;
	reads_in_row = plain_read && !resumed ? reads_in_row + 1 : plain_read;
	if (reads_in_row > dev->spin_free_reads && !(dev->cpu_scale > 0) && dev->spin_read_ps) {
		if (hold)
			exc_ps += dev->spin_read_ps; /* an excursion's, as its CPU would be */
		else
			atomic_store(&t->vclock_ps, atomic_load(&t->vclock_ps) + dev->spin_read_ps);
	}
	if (hold && entered) {
		atomic_store(&t->excursion, 0); /* the call decides: the same poll again drops exc_ps, else applies it */
		exc_held = true;
	}
	if (enter && !in_call) {
		in_call = true;
		atomic_store(&t->cpu_ns, CPU_BASE_IN_CALL);
	}
	/* A clock read through the interposer publishes the clock but is not an entry into the provider: a
	 * loop that only reads clocks stays subject to the stall rule (with cpu_scale 0 it never advances). */
	if (entered)
		atomic_fetch_add(&t->pub_seq, 1);
	/* Dekker with the daemon's stall rule: it sets `stalled`, then re-reads pub_seq. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&t->stalled)) {
		atomic_store(&t->stalled, 0);
		atomic_thread_fence(memory_order_seq_cst);
		advance_to(t, atomic_load(&dev->pcb->horizon_ps));
	}
	uint64_t clock = atomic_load(&t->vclock_ps);
	vt_acct.vclock_ps = clock;
	ring_daemon(dev, false, clock);
	/* The provider's own work (and this clock read) is not the application's.  The daemon's stall rule
	 * extrapolates the clock from the published base: it must be this one, or a stalled thread's
	 * extrapolated clock runs ahead of what the thread will charge (and it jumps there).  Inside a call
	 * the exit's re-base takes the read; meanwhile the in-call mark stops extrapolation. */
	if (!in_call)
		set_base_after(dev, t, end ? end->post_ns : 0);
	return clock;
}

static uint64_t charge(struct cxip_dev *dev, struct pcb_thread *t)
{
	return charge_how(dev, t, true, false, NULL);
}

/* At the end of a provider call: what the provider did since the last charge is not application time. */
void cxip_vt_rebase(struct cxip_dev *dev)
{
	struct pcb_thread *t = dev->virt ? self(dev) : NULL;
	bool was_in_call = in_call;
	in_call = false;
	if (t && exc_held)
		exc_apply(t); /* the call ended without going idle on the same poll: the excursion did something */
	if (t && atomic_load(&t->state) == PCB_THREAD_BUSY)
		set_base(dev, t);
	else if (t && was_in_call)
		atomic_store(&t->cpu_ns, my_cpu_base); /* idle: resuming re-bases; drop the in-call mark */
}

uint64_t cxip_vt_enter_at(struct cxip_dev *dev, const void *site)
{
	struct pcb_thread *t = self(dev);
	span_site_now = (uintptr_t)site;
	return t ? charge_how(dev, t, true, true, NULL) : 0;
}

void cxip_vt_slot_claimed(struct cxip_dev *dev, int slot)
{
	/* A new thread starts idle (nobody wakes it: PCB_WAIT_NONE), then resumes at the horizon, so the daemon
	 * never sees it busy with a clock it has not set yet. */
	in_call = false;
	reads_in_row = 0;
	if (dev->cpu_scale > 0)
		read_cost_floor();
	my_cpu_base = cpu_sample(dev);
	acct_start();
	struct pcb_thread *t = &dev->pcb->threads[slot];
	atomic_store(&t->excursion, 0);
	uint32_t hwm = atomic_load(&dev->pcb->slots_hwm);
	while (hwm < (uint32_t)slot + 1 && !atomic_compare_exchange_weak(&dev->pcb->slots_hwm, &hwm, (uint32_t)slot + 1))
		;
	resume(dev, t);
}

_Atomic uint32_t *cxip_vt_emitting(struct cxip_dev *dev)
{
	struct pcb_thread *t = self(dev);
	return t ? &t->emitting : NULL;
}

uint64_t cxip_vt_charge(struct cxip_dev *dev)
{
	struct pcb_thread *t = self(dev);
	span_site_now = (uintptr_t)__builtin_return_address(0);
	return t ? charge(dev, t) : 0;
}

/* Host work whose cost the model prices rather than measures (the driver call that maps memory for the NIC,
 * provider/iomm.c): the calling thread's clock advances by ps, published like a charge.  Called inside a
 * provider call, after its entry charge (the thread is busy). */
void cxip_vt_spend(struct cxip_dev *dev, uint64_t ps)
{
	struct pcb_thread *t = self(dev);
	if (!t || !ps || atomic_load(&t->state) != PCB_THREAD_BUSY)
		return;
	uint64_t clock = atomic_load(&t->vclock_ps) + ps;
	atomic_store(&t->vclock_ps, clock);
	atomic_fetch_add(&t->pub_seq, 1);
	ring_daemon(dev, false, clock);
}

void cxip_vt_observe(struct cxip_dev *dev, uint64_t vt)
{
	struct pcb_thread *t = self(dev);
	if (t) {
		/* A CQ read that finds completions after a timed-out park is the poll the park belonged to: had
		 * the completion's wake-up beaten the park's wall-clock timeout (the daemon delivers it while the
		 * thread resumes by itself), the thread would have seen it without the excursion's CPU.  So the
		 * held excursion is dropped here as for an empty poll, or which of the two won would show in the
		 * program's figures (1 ms burnt in an excursion charged in ~1 of 60 round trips of
		 * test_park_timeout_excursions_are_not_charged). */
		if (exc_held)
			exc_drop();
		exc_apply(t);
		advance_to(t, vt); /* a completion is never seen before its virtual time */
	}
}

uint64_t cxip_vt_stamp(struct cxip_dev *dev, uint64_t *last_stamp)
{
	struct pcb_thread *t = self(dev);
	if (!t)
		return atomic_load(&dev->pcb->horizon_ps);
	uint64_t clock = charge_how(dev, t, true, true, NULL); /* the emission re-bases at its exit */
	/* The commands of one queue take effect in order: a thread that queues behind a later stamp waits. */
	if (*last_stamp > clock) {
		advance_to(t, *last_stamp);
		clock = *last_stamp;
	}
	*last_stamp = clock;
	return clock;
}

static uint64_t idle_lazy(struct cxip_dev *dev, struct pcb_thread *t, uint32_t wait_id, bool enter)
{
	uint64_t clock = charge_how(dev, t, true, enter, NULL);
	atomic_store(&t->deadline_ps, UINT64_MAX);
	atomic_store(&t->wait_id, wait_id);
	atomic_store(&t->state, PCB_THREAD_IDLE);
	ring_daemon(dev, true, clock);
	return clock;
}

void cxip_vt_idle_lazy(struct cxip_dev *dev, uint32_t wait_id)
{
	struct pcb_thread *t = self(dev);
	if (t)
		idle_lazy(dev, t, wait_id, false);
}

uint64_t cxip_vt_request_begin(struct cxip_dev *dev, uint32_t *slot)
{
	struct pcb_thread *t = self(dev);
	*slot = PCB_REQ_NO_SLOT;
	if (!t)
		return 0;
	*slot = (uint32_t)(t - dev->pcb->threads);
	return idle_lazy(dev, t, PCB_WAIT_REQUEST, true); /* the request re-bases at its exit */
}

void cxip_vt_resume(struct cxip_dev *dev)
{
	struct pcb_thread *t = self(dev);
	if (t && atomic_load(&t->state) != PCB_THREAD_BUSY)
		resume(dev, t);
}

/* Whether a thread about to wait for anything (PCB_WAIT_ANY) should rather look again: the process has
 * entries to read elsewhere.  But a thread that polls one object while another holds entries it does not
 * read (fi_pingpong waits for its send's completion while the peer's message sits in its receive CQ) must
 * still go idle, or it spins on a clock that CPU time does not move (cpu_scale 0) and holds the engine
 * back forever.  So pending entries send it back only once per object polled: once it polls the same
 * object again with no entry added to or taken from any queue of the process meanwhile, it has gone round
 * its loop without reading them, and it waits for something new.  `key` names the object polled (NULL:
 * any pending entry sends it back). */
#define POLL_KEYS 8
static __thread uint64_t poll_changes;            /* the process's queue changes when last looked at */
static __thread const void *poll_keys[POLL_KEYS]; /* objects polled empty since then */
static __thread unsigned npoll_keys;

static bool look_again(struct cxip_dev *dev, const void *key)
{
	uint64_t changes;
	if (!cxip_dev_anything_pending(dev, &changes))
		return false;
	if (!key)
		return true;
	if (changes != poll_changes) {
		poll_changes = changes;
		npoll_keys = 0;
	}
	for (unsigned i = 0; i < npoll_keys; i++)
		if (poll_keys[i] == key)
			return false; /* polled empty before with nothing changed since: it does not read them */
	if (npoll_keys == POLL_KEYS)
		return false;
	poll_keys[npoll_keys++] = key;
	return true;
}

static int idle_on(struct cxip_dev *dev, uint32_t wait_id, uint64_t deadline, bool (*ready)(void *), void *arg,
		   const void *key)
{
	struct pcb_thread *t = self(dev);
	if (!t) {
		sched_yield();
		return -FI_EAGAIN;
	}
	uint64_t clock = charge(dev, t);
	if (deadline <= clock)
		return -FI_ETIMEDOUT;
	atomic_store(&t->deadline_ps, deadline);
	atomic_store(&t->wait_id, wait_id);
	uint32_t w = atomic_load(&t->wake);
	atomic_store(&t->state, PCB_THREAD_IDLE);
	/* Pairs with the daemon's fence between publishing an event and looking for idle threads. */
	atomic_thread_fence(memory_order_seq_cst);
	if ((ready && ready(arg)) || (wait_id == PCB_WAIT_ANY && look_again(dev, key)) || cxip_dev_dead(dev)) {
		resume(dev, t);
		return 0;
	}
	ring_daemon(dev, true, clock);
	uint64_t park = dev->pcb->park_timeout_ns ? dev->pcb->park_timeout_ns : 2000000;
	for (;;) {
		long r = futex_wait(&t->wake, w, park);
		uint32_t st = atomic_load(&t->state);
		if (st == PCB_THREAD_BUSY || st == PCB_THREAD_WAKING)
			break;
		if (cxip_dev_dead(dev)) {
			resume(dev, t);
			return -FI_EIO;
		}
		if (r == -ETIMEDOUT) {
			/* Nothing changed for a while: let the caller look at the world again. */
			if (!resume(dev, t)) {
				atomic_fetch_add_explicit(&dev->pcb->park_timeouts, 1, memory_order_relaxed);
				/* Its CPU is charged only if it does something (above), and the daemon's stall rule
				 * does not extrapolate it from its CPU time soon: had it done so, time would have gone
				 * on by the excursion's CPU, which the drop cannot take back (sim/cxisimd/vclock.c). */
				atomic_store(&t->excursion, 1);
				span_after_park = true;
				return -FI_EAGAIN;
			}
			break;
		}
		w = atomic_load(&t->wake);
	}
	while (atomic_load(&t->state) == PCB_THREAD_WAKING)
		sched_yield();
	set_base(dev, t);
	span_after_park = true; /* the span clip: what the thread runs next runs cold */
	if (deadline != UINT64_MAX && atomic_load(&t->vclock_ps) >= deadline)
		return -FI_ETIMEDOUT;
	return 0;
}

int cxip_vt_idle(struct cxip_dev *dev, uint32_t wait_id, uint64_t deadline, bool (*ready)(void *), void *arg)
{
	return idle_on(dev, wait_id, deadline, ready, arg, NULL);
}

/* The first empty poll of an object after it changed returns at once: a program that drains a queue reads
 * it until it is empty (Open MPI's progress loop does after every completion), and that read only ends the
 * drain -- the program goes on to act on what it read (a reply to send), so idling there would charge it a
 * wait for whatever comes next (its send's acknowledgement), not for anything it waits for.  A repeated
 * empty poll, with nothing changed since, waits. */
int cxip_vt_idle_poll(struct cxip_dev *dev, const void *key, _Atomic uint64_t *seen, uint64_t changes,
		      bool (*ready)(void *), void *arg)
{
	if (seen && atomic_exchange(seen, changes) != changes)
		return -FI_EAGAIN;
	if (exc_held && seen)
		exc_drop(); /* the same poll again, nothing changed */
	return idle_on(dev, PCB_WAIT_ANY, UINT64_MAX, ready, arg, key);
}

void cxip_vt_wake_local(struct cxip_dev *dev, uint32_t wait_id, uint64_t at)
{
	if (!dev->virt)
		return;
	atomic_fetch_add(&dev->local_wakes, 1); /* for a waiter not idle yet: op_wait */
	atomic_thread_fence(memory_order_seq_cst);
	uint32_t n = atomic_load(&dev->pcb->slots_hwm);
	for (uint32_t i = 0; i < n && i < CXISIM_MAX_THREADS; i++) {
		struct pcb_thread *t = &dev->pcb->threads[i];
		uint32_t w = atomic_load(&t->wait_id);
		if (atomic_load(&t->state) != PCB_THREAD_IDLE || (w != PCB_WAIT_ANY && w != wait_id))
			continue;
		uint32_t idle = PCB_THREAD_IDLE;
		if (!atomic_compare_exchange_strong(&t->state, &idle, PCB_THREAD_WAKING))
			continue;
		advance_to(t, at);
		atomic_store(&t->deadline_ps, UINT64_MAX);
		atomic_store(&t->stalled, 0);
		atomic_store(&t->state, PCB_THREAD_BUSY);
		atomic_fetch_add(&t->wake, 1);
		futex_wake(&t->wake);
	}
}

uint64_t cxip_vt_deadline(struct cxip_dev *dev, int timeout_ms)
{
	if (timeout_ms < 0)
		return UINT64_MAX;
	return cxip_vt_charge(dev) + (uint64_t)timeout_ms * 1000000000ull;
}

/* ---- the clock interposer's operations (cxisim_clock.h) ---- */

static struct cxip_dev *ops_dev(void)
{
	struct cxip_dev *dev = cxip_dev_current();
	return dev && dev->virt && !cxip_dev_dead(dev) && !internal_thread ? dev : NULL;
}

/* The slot of a thread that has used the provider; NULL for one that has not (it only reads clocks or
 * waits through the clock interposer: a runtime's progress thread).  Those never hold virtual time. */
static struct pcb_thread *user_self(struct cxip_dev *dev)
{
	int s = cxip_dev_thread_slot_existing(dev);
	return s >= 0 ? &dev->pcb->threads[s] : NULL;
}

static struct cxisim_clock_ops clock_ops;

static int now_ending(uint64_t *ps, const struct span_end *end, bool enter)
{
	struct cxip_dev *dev = ops_dev();
	if (!dev)
		return -1;
	struct pcb_thread *t = user_self(dev);
	if (!t || atomic_load(&t->state) != PCB_THREAD_BUSY) {
		/* Not a provider user, or idle: the process's time, read-only (reading a clock is not work). */
		uint64_t h = atomic_load(&dev->pcb->horizon_ps), c = t ? atomic_load(&t->vclock_ps) : 0;
		*ps = c > h ? c : h;
		return 0;
	}
	span_site_now = enter ? 2 : end ? 3 : 1; /* the interposer's clock reads: one site per kind */
	*ps = charge_how(dev, t, false, enter, end);
	return 0;
}

static int op_now(uint64_t *ps)
{
	return now_ending(ps, NULL, false);
}

static __thread uint64_t local_wakes_seen; /* op_wait */

static int op_enter(uint64_t *ps)
{
	struct cxip_dev *dev = ops_dev();
	if (dev)
		local_wakes_seen = atomic_load(&dev->local_wakes); /* before the interposer's first check: op_wait */
	return now_ending(ps, NULL, true);
}

static void op_leave(void)
{
	struct cxip_dev *dev = ops_dev();
	if (dev && in_call)
		cxip_vt_rebase(dev);
}

/* An emulated instruction (rdtsc) should cost the application what the instruction does (nothing worth
 * counting), not the trap: the interposer read the CPU clock first thing in its handler and takes off what
 * the kernel's fault and signal delivery cost before it (calibrated); the way back costs post_ns. */
static int op_now_trapped(uint64_t span_end_cpu_ns, uint64_t post_ns, uint64_t *ps)
{
	struct span_end end = {span_end_cpu_ns, post_ns};
	return now_ending(ps, span_end_cpu_ns ? &end : NULL, false);
}

static int op_sleep_until(uint64_t deadline, uint64_t *now)
{
	struct cxip_dev *dev = ops_dev();
	if (!dev || !user_self(dev))
		return -1;
	for (;;) {
		int r = cxip_vt_idle(dev, PCB_WAIT_NONE, deadline, NULL, NULL);
		if (r == -FI_EIO)
			return -1;
		uint64_t c = cxip_vt_charge(dev);
		if (r == -FI_ETIMEDOUT || c >= deadline) {
			*now = c;
			return 0;
		}
	}
}

/* The interposer checks its real fds (poll(0)) between `enter` (or the previous op_wait) and op_wait.  A
 * local wake-up (fi_cq_signal, fi_eq_write: the fd written, then the process's idle threads woken) that
 * falls between that check and the thread's going idle finds it busy and wakes nobody, and the thread
 * then slept to its timeout (100 ms in ~1 of 3 runs of test_cq_signal_ends_a_poll_on_the_cq_fd).  So
 * the thread notes the count of local wake-ups where its check begins and, once idle, returns at once
 * if it moved (Dekker with cxip_vt_wake_local's count-then-scan). */
static bool local_woken(void *arg)
{
	struct cxip_dev *dev = arg;
	return atomic_load(&dev->local_wakes) != local_wakes_seen;
}

static int op_wait(uint64_t deadline, uint64_t *now)
{
	struct cxip_dev *dev = ops_dev();
	if (!dev || !user_self(dev))
		return -1;
	/* A timed wait of the interposer (poll, epoll_wait, a condition variable...) is a poll loop too. */
	int r = idle_on(dev, PCB_WAIT_ANY, deadline, local_woken, dev, &clock_ops);
	local_wakes_seen = atomic_load(&dev->local_wakes); /* the caller checks its fds again next */
	if (r == -FI_EIO)
		return -1;
	*now = cxip_vt_charge(dev);
	return 0;
}

static struct cxisim_clock_ops clock_ops = {
	.version = CXISIM_CLOCK_OPS_VERSION,
	.now = op_now,
	.sleep_until = op_sleep_until,
	.wait = op_wait,
	.now_trapped = op_now_trapped,
	.enter = op_enter,
	.leave = op_leave,
};

typedef void (*clock_register_fn)(const struct cxisim_clock_ops *);

void cxip_vt_register(const struct cxip_dev *dev)
{
	clock_register_fn reg = (clock_register_fn)dlsym(RTLD_DEFAULT, "cxisim_clock_register");
	if (dev)
		clock_ops.cpu_scale = dev->cpu_scale; /* one daemon, one value: set once, before the ops are offered */
	if (reg)
		reg(dev ? &clock_ops : NULL);
}
