/* A small traffic driver for flow-control tests: senders keep a window of tagged sends towards one
 * target, retrying on -FI_EAGAIN, each message carrying (sender, sequence) so the receiver can check
 * exactly-once, in-order-per-peer delivery. */
#ifndef CXISIM_TEST_NIC_FCLIB_H
#define CXISIM_TEST_NIC_FCLIB_H

#include "nic_swlib.h"

#define FC_MSG_LEN 64

struct fc_sender {
	struct tep t;
	struct sw_addr dst;
	uint32_t id, next, total, window, outstanding, completed, errors;
	uint64_t tag;
	uint8_t (*bufs)[FC_MSG_LEN];
	bool pump_pending;
};

static void fc_pump(struct fc_sender *s);

static void fc_pump_ev(struct sim *sim, void *obj, uint64_t arg)
{
	struct fc_sender *s = obj;
	(void)sim;
	(void)arg;
	s->pump_pending = false;
	fc_pump(s);
}

static void fc_pump(struct fc_sender *s)
{
	while (s->outstanding < s->window && s->next < s->total) {
		uint8_t *b = s->bufs[s->next % s->window];
		memset(b, 0, FC_MSG_LEN);
		memcpy(b, &s->id, 4);
		memcpy(b + 4, &s->next, 4);
		int rc = sw_send(s->t.ep, (uint64_t)(uintptr_t)b, FC_MSG_LEN, NULL, s->dst, s->tag, 0, FI_TAGGED, NULL);
		if (rc == -FI_EAGAIN) {
			if (!s->pump_pending) {
				s->pump_pending = true;
				sim_schedule(s->t.sim, SIM_US(2), fc_pump_ev, s, 0);
			}
			return;
		}
		cr_assert_eq(rc, 0);
		s->outstanding++;
		s->next++;
	}
}

static void fc_sender_comp(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct fc_sender *s = ctx;
	tep_comp(&s->t, ep, c);
	s->outstanding--;
	s->completed++;
	if (c->err)
		s->errors++;
	fc_pump(s);
}

static inline void fc_sender_start(struct fc_sender *s, struct tsim *ts, uint32_t nic, uint32_t id, uint32_t total,
				   uint32_t window, struct sw_addr dst, void (*tweak)(struct sw_ep_attr *))
{
	cr_assert_eq(tep_open(&s->t, ts, nic, tweak), 0);
	s->id = id;
	s->total = total;
	s->window = window;
	s->dst = dst;
	s->tag = 0xbeef;
	s->bufs = calloc(window, FC_MSG_LEN);
	/* Redirect completions through the driver. */
	sw_ep_close(s->t.ep);
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	a.mem = &nic_mem_host;
	a.comp = fc_sender_comp;
	a.comp_ctx = s;
	a.on_fatal = tep_fatal;
	a.fatal_ctx = &s->t;
	if (tweak)
		tweak(&a);
	cr_assert_eq(sw_ep_open(nic_get(ts->sim, nic), &a, &s->t.ep), 0);
	fc_pump(s);
}

static inline void fc_sender_free(struct fc_sender *s)
{
	tep_close(&s->t);
	free(s->bufs);
}

#endif
