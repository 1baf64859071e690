/* cxisim discrete-event engine: virtual clock, event scheduling, run loop.
 *
 * Time is uint64 picoseconds.  Events fire in (time, insertion sequence) order, which makes a run a pure
 * function of its config and seed.  Components talk to each other only through scheduled events: a handler
 * never calls into another NIC or switch directly, so the engine can later be partitioned (by dragonfly
 * group, lookahead = minimum link latency) without touching the models.
 */
#ifndef CXISIM_ENGINE_H
#define CXISIM_ENGINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

typedef uint64_t simtime_t; /* picoseconds */

#define SIM_PS(x) ((simtime_t)(x))
#define SIM_NS(x) ((simtime_t)(x) * 1000ULL)
#define SIM_US(x) ((simtime_t)(x) * 1000000ULL)
#define SIM_MS(x) ((simtime_t)(x) * 1000000000ULL)
#define SIM_S(x) ((simtime_t)(x) * 1000000000000ULL)
#define SIM_TIME_MAX UINT64_MAX

struct sim;
struct stats;

/* An event handler.  `obj` and `arg` are whatever the scheduler passed. */
typedef void (*sim_fn)(struct sim *sim, void *obj, uint64_t arg);

/* A cancellable event ("timer").  Plain events are stored by value in the queue and cannot be cancelled;
 * timers carry a pooled record so they can be.  A handle stays safe after its timer fired or was
 * cancelled and its record reused: cancel compares the sequence number.  A zeroed handle is "no timer". */
struct sim_timer_rec;
typedef struct {
	struct sim_timer_rec *rec;
	uint64_t seq;
} sim_timer;

enum sim_stop_reason {
	SIM_STOP_NONE = 0,
	SIM_STOP_QUIESCENT,  /* no event left */
	SIM_STOP_TIME_LIMIT, /* next event lies past the virtual-time limit */
	SIM_STOP_EVENT_LIMIT,
	SIM_STOP_REQUESTED, /* a model called sim_stop() */
};

const char *sim_stop_reason_name(enum sim_stop_reason r);

struct sim_limits {
	simtime_t time_limit;   /* SIM_TIME_MAX: none */
	uint64_t event_limit;   /* 0: none */
};

struct sim *sim_create(uint64_t seed);
void sim_destroy(struct sim *sim);

uint64_t sim_seed(const struct sim *sim);
simtime_t sim_now(const struct sim *sim);
uint64_t sim_events_processed(const struct sim *sim);
size_t sim_pending(const struct sim *sim);
struct stats *sim_stats(struct sim *sim);

/* Schedule fn(sim, obj, arg) at now + delay, or at an absolute time (>= now). */
void sim_schedule(struct sim *sim, simtime_t delay, sim_fn fn, void *obj, uint64_t arg);
void sim_schedule_at(struct sim *sim, simtime_t when, sim_fn fn, void *obj, uint64_t arg);
/* A cancellable event.  A cancelled timer neither fires nor advances time nor keeps the run alive. */
sim_timer sim_timer_start(struct sim *sim, simtime_t delay, sim_fn fn, void *obj, uint64_t arg);
/* Returns false if it already fired or was cancelled (or h is zeroed). */
bool sim_timer_cancel(struct sim *sim, sim_timer *h);
bool sim_timer_pending(const sim_timer *h);

/* A prefetch hook: when an event of handler `fn` is five events away from running, the run loop calls
 * pf(obj, arg), which may only issue prefetches (__builtin_prefetch) for the records the handler will
 * reach through obj and arg -- the second level of what the queue prefetches itself (the object and a
 * pointer-like arg, one pop earlier, so those are in cache by then).  It must not change any state:
 * results never depend on hooks.  At most SIM_PREFETCH_HOOKS handlers; registering one twice is harmless. */
#define SIM_PREFETCH_HOOKS 16
typedef void (*sim_prefetch_fn)(const void *obj, uint64_t arg);
void sim_prefetch_hook(struct sim *sim, sim_fn fn, sim_prefetch_fn pf);
/* Later stages, for chains that go deeper: stage k (1 .. SIM_PREFETCH_STAGES - 1) is called for the entry
 * stage k - 1 saw, one pop later, so what that stage prefetched may now be read to reach the next level
 * (a packet -> its switch record -> the output port's record -> its credit ring; a client's post -> its
 * provider endpoint -> the NIC -> the EQ table -> the EQ record).  At a million endpoints
 * an event costs about a microsecond, ample to hide a DRAM miss issued an event early.  Same rules:
 * prefetches only, no state changes.  sim_prefetch_hook is stage 0. */
#define SIM_PREFETCH_STAGES 5
void sim_prefetch_hook_stage(struct sim *sim, sim_fn fn, unsigned stage, sim_prefetch_fn pf);

void sim_set_limits(struct sim *sim, struct sim_limits lim);
/* Progress line on stderr (virtual time, events/s, ETA), only drawn when stderr is a terminal. */
void sim_set_progress(struct sim *sim, bool on);
/* Progress record for a program watching the run from outside (tests/bench/speed_ratio.py): the run loop
 * stores its event count and virtual time into *rec every SIM_PROGRESS_EVERY events, and phase is
 * SIM_PHASE_SETUP until sim_run starts, SIM_PHASE_RUN while it runs, SIM_PHASE_DONE after.  rec is
 * normally a shared mapping of a file (cxisim-engine --progress-file); NULL stops the stores.  Results do
 * not depend on it. */
#define SIM_PROGRESS_MAGIC 0x31474f5250584343ull /* "CCXPROG1" little-endian */
#define SIM_PROGRESS_EVERY 1024u
enum { SIM_PHASE_SETUP = 0, SIM_PHASE_RUN = 1, SIM_PHASE_DONE = 2 };
struct sim_progress_rec {
	uint64_t magic;
	uint64_t events;
	uint64_t now_ps;
	uint64_t phase;
};
void sim_set_progress_record(struct sim *sim, volatile struct sim_progress_rec *rec);
/* Ask the run loop to return after the current handler. */
void sim_stop(struct sim *sim);

/* Run until a stop condition.  May be called again to continue (e.g. with a larger limit). */
enum sim_stop_reason sim_run(struct sim *sim);
/* Run every event with time <= until (daemon use: advance virtual time to `until`).  Afterwards now ==
 * until, also when the queue ran empty (unless a stop condition ended the run earlier). */
enum sim_stop_reason sim_run_until(struct sim *sim, simtime_t until);
/* Time of the earliest pending (non-cancelled) event; false when none.  Lets an event loop that is driven
 * from outside (the emulation daemon) sleep until the simulation next has work. */
bool sim_next_event_time(struct sim *sim, simtime_t *when);

/* Named singletons shared between models (e.g. "fabric" so NICs can find it at build time). */
void sim_world_set(struct sim *sim, const char *name, void *obj);
void *sim_world_get(const struct sim *sim, const char *name);

/* The engine's own storage (event queue at its peak, timers, stats registry), for the memory accounting. */
struct mem_report;
void sim_memory(struct sim *sim, struct mem_report *r);

/* Run `fn(obj)` when the simulation is destroyed (models free their state here). */
void sim_on_destroy(struct sim *sim, void (*fn)(void *obj), void *obj);

#endif
