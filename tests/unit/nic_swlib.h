/* Helpers for tests of the provider software layer: endpoints whose completions are collected. */
#ifndef CXISIM_TEST_NIC_SWLIB_H
#define CXISIM_TEST_NIC_SWLIB_H

#include "../../sim/nic/sw.h"
#include "nic_testlib.h"

struct tcomp {
	struct sw_comp c;
	simtime_t t;
};

struct tep {
	struct sw_ep *ep;
	struct sim *sim;
	struct tcomp *comps;
	size_t n, cap;
	char fatal[512];
};

static inline void tep_comp(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct tep *t = ctx;
	(void)ep;
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->comps = realloc(t->comps, t->cap * sizeof(*t->comps));
	}
	t->comps[t->n].c = *c;
	t->comps[t->n].t = sim_now(t->sim);
	t->n++;
}

static inline void tep_fatal(void *ctx, struct sw_ep *ep, const char *msg)
{
	struct tep *t = ctx;
	(void)ep;
	snprintf(t->fatal, sizeof(t->fatal), "%s", msg);
}

/* Open an endpoint; `tweak` may adjust the attributes (NULL: defaults, host memory, VNI 10). */
static inline int tep_open(struct tep *t, struct tsim *s, uint32_t nic, void (*tweak)(struct sw_ep_attr *a))
{
	memset(t, 0, sizeof(*t));
	t->sim = s->sim;
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	a.mem = &nic_mem_host;
	a.comp = tep_comp;
	a.comp_ctx = t;
	a.on_fatal = tep_fatal;
	a.fatal_ctx = t;
	if (tweak)
		tweak(&a);
	return sw_ep_open(nic_get(s->sim, nic), &a, &t->ep);
}

static inline void tep_close(struct tep *t)
{
	sw_ep_close(t->ep);
	free(t->comps);
}

/* Records the software layer holds for the messages of every endpoint of the simulation (unexpected
 * messages, rendezvous messages being received): 0 once every message is done. */
static inline uint64_t tsw_msg_records(struct sim *sim)
{
	return sw_ux_live(sim) + sw_rmsgs_live(sim);
}

/* ... and the requests: 0 once every endpoint is closed. */
static inline uint64_t tsw_records(struct sim *sim)
{
	return sw_reqs_live(sim) + tsw_msg_records(sim);
}

static inline size_t tep_count(const struct tep *t, uint64_t flag, int err)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		if ((t->comps[i].c.flags & flag) && t->comps[i].c.err == err)
			n++;
	return n;
}

#endif
