/* See clock_owner.h. */
#include "clock_owner.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "cxisim_clock.h"

static _Atomic uint64_t vt_ps;
static uint64_t step_ps;
static _Atomic int attached;
static _Atomic uint64_t n_now, n_sleep, n_wait;

static int op_now(uint64_t *ps)
{
	n_now++;
	if (!attached)
		return -1;
	*ps = vt_ps;
	return 0;
}

static void advance_to(uint64_t t)
{
	uint64_t cur = vt_ps;
	while (cur < t && !atomic_compare_exchange_weak(&vt_ps, &cur, t))
		;
}

static int op_sleep_until(uint64_t deadline, uint64_t *now)
{
	n_sleep++;
	if (!attached)
		return -1;
	advance_to(deadline);
	*now = vt_ps;
	return 0;
}

static int op_wait(uint64_t deadline, uint64_t *now)
{
	n_wait++;
	if (!attached)
		return -1;
	/* Called from the interposer: this nanosleep is the real one (the caller is the registering library). */
	struct timespec ms = {0, 1000000};
	nanosleep(&ms, NULL);
	uint64_t cur = vt_ps, t = cur + step_ps;
	advance_to(t < deadline ? t : deadline);
	*now = vt_ps;
	return 0;
}

static const struct cxisim_clock_ops ops = {
	.version = CXISIM_CLOCK_OPS_VERSION, .now = op_now, .sleep_until = op_sleep_until, .wait = op_wait,
	.cpu_scale = -1 /* none: CXISIM_CPU_SCALE, or real CPU clocks */};

static void (*get_register(void))(const struct cxisim_clock_ops *)
{
	return (void (*)(const struct cxisim_clock_ops *))dlsym(RTLD_DEFAULT, "cxisim_clock_register");
}

int clock_owner_start(uint64_t start_ns, uint64_t wait_step_ns)
{
	void (*reg)(const struct cxisim_clock_ops *) = get_register();
	if (!reg)
		return -1;
	vt_ps = start_ns * 1000u;
	step_ps = wait_step_ns * 1000u;
	attached = 1;
	reg(&ops);
	return 0;
}

void clock_owner_stop(void)
{
	void (*reg)(const struct cxisim_clock_ops *) = get_register();
	attached = 0;
	if (reg)
		reg(NULL);
}

uint64_t clock_owner_vt_ns(void)
{
	return vt_ps / 1000u;
}

uint64_t clock_owner_real_ns(int clock_id)
{
	struct timespec ts;
	clock_gettime(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_owner_calls(const char *op)
{
	return !strcmp(op, "now") ? n_now : !strcmp(op, "sleep_until") ? n_sleep : n_wait;
}
