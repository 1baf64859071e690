/* The per-message records of the provider software layer -- unexpected messages (struct sw_ux) and
 * rendezvous messages being received (struct sw_rmsg), besides the requests -- come from per-simulation
 * pools, and every one goes back exactly once: when its message is done, or when the endpoint that holds
 * it closes, wherever it is held at that moment.
 *
 * Each close test drives the receiver into one holding state, checks (white-box, through sw_impl.h) that
 * the state was reached, closes the receiver there, and checks that the live counts drop to what the
 * sender still holds, that the events still in flight for the closed endpoint change nothing (no
 * completion, no second return: the pools are poisoned under ASan), and that closing the sender brings
 * every count to 0.  The same states without the close must deliver normally and also end at 0. */
#include <criterion/criterion.h>

#include "../../sim/nic/sw_impl.h"
#include "nic_swlib.h"

/* Eager messages whose overflow-buffer DMA takes several microseconds (a window in which their header is
 * on the NIC's unexpected list but software has not seen their data), rendezvous messages above the
 * threshold, and at most one software Get in flight (the others wait on sw_get_wait). */
enum { SMALL = 1000, EAGER = 200000, RDZV = 300000, NSLOT = 8 };

/* The NIC writes an arriving message's packets to host memory as they land, so at the default PCIe rate
 * (faster than the link) an eager message's data follows its last byte by one packet's write.  The
 * header-before-data tests widen that window with a PCIe slower than the link: EAGER's writes then take
 * 80 us against its 8 us on the wire. */
#define SLOW_WRITES "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2}, \"nic\": {\"pcie_gbps\": 20}}"

static uint8_t g_src[RDZV], g_dst[NSLOT][RDZV + 16384];

static void base(struct sw_ep_attr *a)
{
	a->env.rdzv_threshold = 256 * 1024;
	a->env.oflow_buf_size = 1 << 20;
	a->env.req_buf_size = 1 << 20;
	a->env.sw_rx_tx_init_max = 1;
}

static void hw(struct sw_ep_attr *a)
{
	base(a);
	a->env.rx_match_mode = SW_MATCH_HARDWARE;
}

static void sw(struct sw_ep_attr *a)
{
	base(a);
	a->env.rx_match_mode = SW_MATCH_SOFTWARE;
	a->env.msg_offload = false;
}

static void hybrid(struct sw_ep_attr *a)
{
	base(a);
	a->env.rx_match_mode = SW_MATCH_HYBRID;
}

/* ---------------------------------------------------------------- rig */

struct rig {
	struct tsim s;
	struct tep a, r; /* sender on NIC 0, receiver on NIC 1 */
	uint64_t sends;  /* sends posted by a */
};

static void rig_open_json(struct rig *g, const char *json, void (*mode)(struct sw_ep_attr *))
{
	memset(g, 0, sizeof(*g));
	g->s = tsim_new(json, 1);
	cr_assert_eq(tep_open(&g->a, &g->s, 0, mode), 0);
	cr_assert_eq(tep_open(&g->r, &g->s, 1, mode), 0);
	sim_run(g->s.sim);
	cr_assert_eq(sw_reqs_live(g->s.sim) + sw_ux_live(g->s.sim) + sw_rmsgs_live(g->s.sim), 0);
	for (size_t i = 0; i < sizeof(g_src); i++)
		g_src[i] = (uint8_t)(i * 13 + 5);
}

static void rig_open(struct rig *g, void (*mode)(struct sw_ep_attr *))
{
	rig_open_json(g, TWO_NICS, mode);
}

static void send_msg(struct rig *g, uint64_t len, uint64_t tag, uint64_t flags)
{
	cr_assert_eq(sw_send(g->a.ep, (uint64_t)(uintptr_t)g_src, len, NULL, sw_ep_addr(g->r.ep), tag, 0, flags,
			     (void *)(uintptr_t)(1000 + tag)),
		     0);
	g->sends++;
}

static void post_recv(struct rig *g, int slot, uint64_t len, uint64_t tag, uint64_t flags)
{
	cr_assert_eq(sw_recv(g->r.ep, (uint64_t)(uintptr_t)g_dst[slot], len, NULL, tag, 0, flags,
			     (void *)(uintptr_t)(2000 + tag)),
		     0);
}

static void claim(struct rig *g, uint64_t tag, uint64_t key)
{
	size_t n = g->r.n;
	cr_assert_eq(sw_peek(g->r.ep, NULL, tag, 0, FI_TAGGED | FI_CLAIM, key, (void *)(uintptr_t)(3000 + tag)), 0);
	sim_run(g->s.sim);
	cr_assert_eq(g->r.n, n + 1);
	cr_assert_eq(g->r.comps[n].c.err, 0, "tag %llu claimed", (unsigned long long)tag);
}

/* Process events one time step at a time until cond holds; false if the simulation ran dry first. */
static bool run_until(struct rig *g, bool (*cond)(struct rig *))
{
	simtime_t t;
	while (!cond(g)) {
		if (!sim_next_event_time(g->s.sim, &t))
			return false;
		sim_run_until(g->s.sim, t);
	}
	return true;
}

/* Messages whose header the receiver's NIC has put on the unexpected list (their data lands after). */
static uint64_t g_landed_before;

static uint64_t landed(struct rig *g)
{
	return tctr(&g->s, "nic.1.C_CNTR_LPE_NET_MATCH_OVERFLOW_%u", sw_ep_rx_ptn(g->r.ep) % 4);
}

static bool header_landed(struct rig *g)
{
	return landed(g) > g_landed_before;
}

/* ---------------------------------------------------------------- where the receiver holds its records */

struct held {
	uint32_t listed;   /* on the software unexpected list */
	uint32_t claimed;  /* ... set aside by FI_CLAIM */
	uint32_t pending;  /* on pending_ux (request-buffer arrivals during a transition) */
	uint32_t mapped;   /* in the map of hardware headers */
	uint32_t waiting;  /* ... a receive waits for the data */
	uint32_t peeking;  /* ... a claim waits for the data */
	uint32_t both;     /* ... and on the unexpected list (onloaded, data still to come) */
	uint32_t rmsgs;    /* rendezvous messages of the endpoint's receives */
	uint32_t get_wait; /* ... whose software Get waits for a slot */
	uint32_t filled;   /* multi-receive buffers no longer matchable with rendezvous messages still coming */
	uint32_t peeks;    /* peeks in flight */
};

static void held_reqs(const struct sw_req_list *l, struct held *h)
{
	for (const struct sw_req *r = l->head; r; r = r->next) {
		for (const struct sw_rmsg *m = r->rmsgs; m; m = m->next)
			h->rmsgs++;
		h->filled += r->multi && r->retired && r->children && !r->hw_offloaded;
	}
}

static struct held held_of(const struct sw_ep *ep)
{
	struct held h = { 0 };
	for (const struct sw_ux *u = ep->ux.head; u; u = u->next) {
		h.listed++;
		h.claimed += u->claimed;
	}
	h.pending = ep->pending_ux.len;
	for (uint32_t i = 0; i < ep->ux_map_cap; i++) {
		const struct sw_ux *u = ep->ux_map[i];
		if (!u)
			continue;
		h.mapped++;
		h.waiting += u->waiting != NULL;
		h.peeking += u->peek != NULL;
		h.both += u->on == &ep->ux;
	}
	held_reqs(&ep->posted, &h);
	held_reqs(&ep->replay, &h);
	held_reqs(&ep->inflight, &h);
	for (const struct sw_rmsg *m = ep->sw_get_wait; m; m = m->wait_next)
		h.get_wait++;
	h.peeks = ep->peeks.len;
	return h;
}

static struct held held(struct rig *g)
{
	return held_of(g->r.ep);
}

/* Records held by the receiver: its unexpected messages are counted once even when both listed and mapped. */
static void check_live_matches_held(struct rig *g)
{
	struct held h = held(g);
	cr_assert_eq(sw_ux_live(g->s.sim), h.listed + h.pending + h.mapped - h.both, "every live record is held");
	cr_assert_eq(sw_rmsgs_live(g->s.sim), h.rmsgs);
}

/* Close the receiver where it stands, then the sender. */
static void close_and_check(struct rig *g)
{
	struct sim *sim = g->s.sim;
	check_live_matches_held(g);
	/* Every send holds its record until its completion is reported. */
	uint64_t sender = g->sends - g->a.n;
	sw_ep_close(g->r.ep);
	g->r.ep = NULL;
	cr_assert_eq(sw_ux_live(sim), 0, "the close returned every unexpected message");
	cr_assert_eq(sw_rmsgs_live(sim), 0, "the close returned every rendezvous message");
	cr_assert_eq(sw_reqs_live(sim), sender, "the close returned every request of the receiver");
	size_t rn = g->r.n;
	sim_run(sim);
	cr_assert_eq(g->r.n, rn, "no completion after the close");
	cr_assert_null(sw_ep_fatal(g->a.ep));
	cr_assert_eq(sw_ux_live(sim) + sw_rmsgs_live(sim), 0, "late events returned nothing twice");
	cr_assert_leq(sw_reqs_live(sim), sender);
	tep_close(&g->a);
	cr_assert_eq(sw_reqs_live(sim), 0);
	free(g->r.comps);
	tsim_free(&g->s);
}

/* Without a close: everything completes and every record is back while both endpoints live.  The
 * completions stay readable until rig_close. */
static void finish_and_check(struct rig *g, size_t recv_comps)
{
	struct sim *sim = g->s.sim;
	sim_run(sim);
	cr_assert_null(sw_ep_fatal(g->r.ep));
	cr_assert_null(sw_ep_fatal(g->a.ep));
	cr_assert_eq(g->r.n, recv_comps);
	for (size_t i = 0; i < g->r.n; i++)
		cr_assert_eq(g->r.comps[i].c.err, 0, "completion %zu", i);
	cr_assert_eq(g->a.n, g->sends);
	cr_assert_eq(sw_ux_live(sim), 0);
	cr_assert_eq(sw_rmsgs_live(sim), 0);
	cr_assert_eq(sw_reqs_live(sim), 0);
}

static void rig_close(struct rig *g)
{
	tep_close(&g->a);
	tep_close(&g->r);
	cr_assert_eq(tsw_records(g->s.sim), 0);
	tsim_free(&g->s);
}

/* ---------------------------------------------------------------- unexpected messages at rest */

/* Eager (small and large), zero-byte, rendezvous and untagged messages nobody has asked for. */
static void send_unexpected_mix(struct rig *g)
{
	send_msg(g, SMALL, 1, FI_TAGGED);
	send_msg(g, 0, 2, FI_TAGGED);
	send_msg(g, EAGER, 3, FI_TAGGED);
	send_msg(g, RDZV, 4, FI_TAGGED);
	send_msg(g, SMALL, 0, 0);
	sim_run(g->s.sim);
	cr_assert_eq(g->r.n, 0);
}

static void unexpected_at_rest(void (*mode)(struct sw_ep_attr *), bool software, bool do_close)
{
	struct rig g;
	rig_open(&g, mode);
	send_unexpected_mix(&g);
	struct held h = held(&g);
	if (software) {
		/* Request buffers: a record per message, zero-byte ones included. */
		cr_assert_eq(h.listed, 5);
		cr_assert_eq(h.mapped, 0);
	} else {
		/* Overflow buffers: a record per message with eager bytes; the NIC keeps the headers. */
		cr_assert_eq(h.mapped, 4);
		cr_assert_eq(h.listed, 0);
	}
	check_live_matches_held(&g);
	if (do_close) {
		close_and_check(&g);
		return;
	}
	post_recv(&g, 0, SMALL, 1, FI_TAGGED);
	post_recv(&g, 1, 0, 2, FI_TAGGED);
	post_recv(&g, 2, EAGER, 3, FI_TAGGED);
	post_recv(&g, 3, RDZV, 4, FI_TAGGED);
	post_recv(&g, 4, SMALL, 0, 0);
	finish_and_check(&g, 5);
	cr_assert_eq(memcmp(g_dst[3], g_src, RDZV), 0);
	rig_close(&g);
}

Test(nic_records, unexpected_hardware_delivered) { unexpected_at_rest(hw, false, false); }
Test(nic_records, unexpected_hardware_closed) { unexpected_at_rest(hw, false, true); }
Test(nic_records, unexpected_software_delivered) { unexpected_at_rest(sw, true, false); }
Test(nic_records, unexpected_software_closed) { unexpected_at_rest(sw, true, true); }
Test(nic_records, unexpected_hybrid_delivered) { unexpected_at_rest(hybrid, false, false); }
Test(nic_records, unexpected_hybrid_closed) { unexpected_at_rest(hybrid, false, true); }

/* ---------------------------------------------------------------- rendezvous messages in flight */

static bool three_rmsgs(struct rig *g)
{
	return held(g).rmsgs == 3;
}

/* Two unexpected rendezvous messages and an expected one, with their receives: the rendezvous records
 * live until the Gets come back. */
static void rendezvous_in_flight(void (*mode)(struct sw_ep_attr *), bool software, bool do_close)
{
	struct rig g;
	rig_open(&g, mode);
	send_msg(&g, RDZV, 1, FI_TAGGED);
	send_msg(&g, RDZV, 2, FI_TAGGED);
	sim_run(g.s.sim);
	post_recv(&g, 2, RDZV, 3, FI_TAGGED);
	sim_run(g.s.sim);
	post_recv(&g, 0, RDZV, 1, FI_TAGGED);
	post_recv(&g, 1, RDZV, 2, FI_TAGGED);
	send_msg(&g, RDZV, 3, FI_TAGGED);
	cr_assert(run_until(&g, three_rmsgs), "three rendezvous messages in flight at once");
	if (software)
		cr_assert_eq(held(&g).get_wait, 2, "one software Get in flight, the other two waiting: %u", held(&g).get_wait);
	if (do_close) {
		close_and_check(&g);
		return;
	}
	finish_and_check(&g, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(memcmp(g_dst[i], g_src, RDZV), 0, "message %d", i);
	rig_close(&g);
}

Test(nic_records, rendezvous_hardware_delivered) { rendezvous_in_flight(hw, false, false); }
Test(nic_records, rendezvous_hardware_closed) { rendezvous_in_flight(hw, false, true); }
Test(nic_records, rendezvous_software_delivered) { rendezvous_in_flight(sw, true, false); }
Test(nic_records, rendezvous_software_closed) { rendezvous_in_flight(sw, true, true); }
Test(nic_records, rendezvous_hybrid_delivered) { rendezvous_in_flight(hybrid, false, false); }
Test(nic_records, rendezvous_hybrid_closed) { rendezvous_in_flight(hybrid, false, true); }

/* ---------------------------------------------------------------- claimed messages */

static bool one_rmsg(struct rig *g)
{
	return held(g).rmsgs == 1;
}

/* FI_PEEK | FI_CLAIM sets messages aside on the software list (zero-byte ones too); the claim receive of
 * the rendezvous one is in flight. */
static void claimed(void (*mode)(struct sw_ep_attr *), bool do_close)
{
	struct rig g;
	rig_open(&g, mode);
	send_msg(&g, SMALL, 1, FI_TAGGED);
	send_msg(&g, RDZV, 2, FI_TAGGED);
	send_msg(&g, 0, 3, FI_TAGGED);
	sim_run(g.s.sim);
	claim(&g, 1, 11);
	claim(&g, 2, 12);
	claim(&g, 3, 13);
	struct held h = held(&g);
	cr_assert_eq(h.claimed, 3);
	cr_assert_eq(h.mapped, 0);
	cr_assert_eq(sw_ux_live(g.s.sim), 3);
	cr_assert_eq(sw_recv_claimed(g.r.ep, (uint64_t)(uintptr_t)g_dst[0], RDZV, 12, 0, (void *)12), 0);
	cr_assert(run_until(&g, one_rmsg));
	cr_assert_eq(held(&g).claimed, 2);
	if (do_close) {
		close_and_check(&g);
		return;
	}
	cr_assert_eq(sw_recv_claimed(g.r.ep, (uint64_t)(uintptr_t)g_dst[1], SMALL, 11, 0, (void *)11), 0);
	cr_assert_eq(sw_recv_claimed(g.r.ep, (uint64_t)(uintptr_t)g_dst[2], 0, 13, FI_DISCARD, (void *)13), 0);
	finish_and_check(&g, 3 + 3);
	cr_assert_eq(memcmp(g_dst[0], g_src, RDZV), 0);
	rig_close(&g);
}

Test(nic_records, claimed_hardware_delivered) { claimed(hw, false); }
Test(nic_records, claimed_hardware_closed) { claimed(hw, true); }
Test(nic_records, claimed_software_delivered) { claimed(sw, false); }
Test(nic_records, claimed_software_closed) { claimed(sw, true); }
Test(nic_records, claimed_hybrid_delivered) { claimed(hybrid, false); }
Test(nic_records, claimed_hybrid_closed) { claimed(hybrid, true); }

/* ---------------------------------------------------------------- headers whose data is still to come */

static bool receive_waits(struct rig *g)
{
	return held(g).waiting == 1;
}

static bool claim_waits(struct rig *g)
{
	return held(g).peeking == 1;
}

/* A receive (or a claim) posted just after a large eager message's header reached the NIC's unexpected
 * list takes the header (PUT_OVERFLOW) before software has seen the data land in the overflow buffer:
 * the record waits in the map for the data event. */
static void header_before_data(void (*mode)(struct sw_ep_attr *), bool by_claim, bool do_close)
{
	struct rig g;
	rig_open_json(&g, SLOW_WRITES, mode);
	g_landed_before = landed(&g);
	send_msg(&g, EAGER, 1, FI_TAGGED);
	cr_assert(run_until(&g, header_landed));
	if (by_claim)
		cr_assert_eq(sw_peek(g.r.ep, NULL, 1, 0, FI_TAGGED | FI_CLAIM, 7, (void *)7), 0);
	else
		post_recv(&g, 0, EAGER, 1, FI_TAGGED);
	cr_assert(run_until(&g, by_claim ? claim_waits : receive_waits), "the header came before its data");
	if (by_claim)
		cr_assert_eq(held(&g).peeks, 1);
	if (do_close) {
		close_and_check(&g);
		return;
	}
	if (by_claim) {
		sim_run(g.s.sim);
		cr_assert_eq(g.r.n, 1);
		cr_assert_eq(g.r.comps[0].c.len, EAGER);
		cr_assert_eq(held(&g).claimed, 1);
		cr_assert_eq(sw_recv_claimed(g.r.ep, (uint64_t)(uintptr_t)g_dst[0], EAGER, 7, 0, (void *)8), 0);
	}
	finish_and_check(&g, by_claim ? 2 : 1);
	cr_assert_eq(memcmp(g_dst[0], g_src, EAGER), 0);
	rig_close(&g);
}

Test(nic_records, receive_before_data_hardware_delivered) { header_before_data(hw, false, false); }
Test(nic_records, receive_before_data_hardware_closed) { header_before_data(hw, false, true); }
Test(nic_records, receive_before_data_hybrid_delivered) { header_before_data(hybrid, false, false); }
Test(nic_records, receive_before_data_hybrid_closed) { header_before_data(hybrid, false, true); }
Test(nic_records, claim_before_data_hardware_delivered) { header_before_data(hw, true, false); }
Test(nic_records, claim_before_data_hardware_closed) { header_before_data(hw, true, true); }
Test(nic_records, claim_before_data_hybrid_delivered) { header_before_data(hybrid, true, false); }
Test(nic_records, claim_before_data_hybrid_closed) { header_before_data(hybrid, true, true); }

/* Hybrid mode with FI_CXI_HYBRID_POSTED_RECV_PREEMPTIVE and rx_size 1: the second receive in hardware
 * switches the endpoint to software matching.  Posted just after a large message's header landed, the
 * onload takes that header before its data: the record is on the unexpected list and in the map. */
static void hybrid_preempt(struct sw_ep_attr *a)
{
	hybrid(a);
	a->env.hybrid_posted_recv_preemptive = true;
	a->rx_size = 1;
}

static bool onloaded_before_data(struct rig *g)
{
	return held(g).both == 1;
}

static void onload_before_data(bool do_close)
{
	struct rig g;
	rig_open_json(&g, SLOW_WRITES, hybrid_preempt);
	post_recv(&g, 0, SMALL, 900, FI_TAGGED);
	sim_run(g.s.sim);
	g_landed_before = landed(&g);
	send_msg(&g, EAGER, 1, FI_TAGGED);
	cr_assert(run_until(&g, header_landed));
	post_recv(&g, 1, SMALL, 901, FI_TAGGED);
	cr_assert(run_until(&g, onloaded_before_data), "the onload took the header before its data");
	if (do_close) {
		close_and_check(&g);
		return;
	}
	sim_run(g.s.sim);
	cr_assert_eq(sw_ep_rxc_state(g.r.ep), RXC_ENABLED_SOFTWARE);
	cr_assert_eq(held(&g).listed, 1);
	post_recv(&g, 2, EAGER, 1, FI_TAGGED);
	sim_run(g.s.sim);
	cr_assert_eq(g.r.n, 1);
	cr_assert_eq(memcmp(g_dst[2], g_src, EAGER), 0);
	/* The two receives nobody sends to go back at the close. */
	cr_assert_eq(sw_ux_live(g.s.sim), 0);
	cr_assert_eq(sw_reqs_live(g.s.sim), 2);
	close_and_check(&g);
}

Test(nic_records, onload_before_data_delivered) { onload_before_data(false); }
Test(nic_records, onload_before_data_closed) { onload_before_data(true); }

/* Hybrid mode out of LEs: the NIC goes software-managed by itself and lands the next messages in request
 * buffers while software is still onloading the hardware list -- they wait on pending_ux. */
static bool arrivals_pending(struct rig *g)
{
	return held(g).pending > 0;
}

static void pending_arrivals(bool do_close)
{
	struct rig g;
	rig_open_json(&g,
		      "{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 2},"
		      " \"nic\": {\"le_pools\": [{\"pool\": 0, \"max_alloc\": 16}]}}",
		      hybrid);
	enum { N = 24 };
	for (int i = 0; i < N; i++)
		send_msg(&g, SMALL, 1, FI_TAGGED);
	cr_assert(run_until(&g, arrivals_pending), "arrivals waited for the onload");
	if (do_close) {
		close_and_check(&g);
		return;
	}
	sim_run(g.s.sim);
	cr_assert_eq(sw_ep_rxc_state(g.r.ep), RXC_ENABLED_SOFTWARE);
	cr_assert_eq(sw_ux_live(g.s.sim), N);
	for (int i = 0; i < N; i++)
		post_recv(&g, 0, SMALL, 1, FI_TAGGED);
	finish_and_check(&g, N);
	rig_close(&g);
}

Test(nic_records, pending_arrivals_delivered) { pending_arrivals(false); }
Test(nic_records, pending_arrivals_closed) { pending_arrivals(true); }

/* ---------------------------------------------------------------- a multi-receive buffer filled at post */

static bool filled_with_rdzv(struct rig *g)
{
	return held(g).filled == 1;
}

/* Software matching: a multi-receive buffer posted when a rendezvous message waits on the software list
 * takes it, and is left with less than FI_OPT_MIN_MULTI_RECV: it takes no more messages, but is owed the
 * rendezvous data (and its completion) -- inflight keeps it. */
static void min_free_20k(struct sw_ep_attr *a)
{
	sw(a);
	a->min_multi_recv = 20000;
}

static void multi_filled_at_post(bool do_close)
{
	struct rig g;
	rig_open(&g, min_free_20k);
	send_msg(&g, RDZV, 0, 0);
	sim_run(g.s.sim);
	cr_assert_eq(sw_recv(g.r.ep, (uint64_t)(uintptr_t)g_dst[0], RDZV + 10000, NULL, 0, 0, FI_MULTI_RECV, (void *)5),
		     0);
	cr_assert(run_until(&g, filled_with_rdzv));
	cr_assert_eq(sw_reqs_live(g.s.sim), 2, "the send and the buffer");
	if (do_close) {
		close_and_check(&g);
		return;
	}
	finish_and_check(&g, 1);
	cr_assert(g.r.comps[0].c.flags & FI_MULTI_RECV, "the buffer's last completion");
	cr_assert_eq(g.r.comps[0].c.len, RDZV);
	cr_assert_eq(memcmp(g_dst[0], g_src, RDZV), 0);
	rig_close(&g);
}

Test(nic_records, multi_receive_filled_at_post_delivered) { multi_filled_at_post(false); }
Test(nic_records, multi_receive_filled_at_post_closed) { multi_filled_at_post(true); }

/* ---------------------------------------------------------------- closing at every stage of a mix */

/* Unexpected eager, zero-byte and rendezvous messages; two claimed; receives for some of them (one a claim
 * receive) and a multi-receive buffer; more messages sent meanwhile, and a peek. */
static void mix_start(struct rig *g, void (*mode)(struct sw_ep_attr *))
{
	rig_open(g, mode);
	send_unexpected_mix(g);
	send_msg(g, RDZV, 5, FI_TAGGED);
	send_msg(g, SMALL, 6, FI_TAGGED);
	sim_run(g->s.sim);
	claim(g, 5, 55);
	claim(g, 6, 66);
	post_recv(g, 0, SMALL, 1, FI_TAGGED);
	post_recv(g, 1, RDZV, 4, FI_TAGGED);
	post_recv(g, 2, EAGER, 7, FI_TAGGED);
	cr_assert_eq(sw_recv_claimed(g->r.ep, (uint64_t)(uintptr_t)g_dst[3], RDZV, 55, 0, (void *)55), 0);
	cr_assert_eq(sw_recv(g->r.ep, (uint64_t)(uintptr_t)g_dst[4], 3 * SMALL, NULL, 0, 0, FI_MULTI_RECV, (void *)4), 0);
	send_msg(g, EAGER, 7, FI_TAGGED);
	send_msg(g, RDZV, 8, FI_TAGGED);
	send_msg(g, SMALL, 0, 0);
	cr_assert_eq(sw_peek(g->r.ep, NULL, 3, 0, FI_TAGGED, 0, (void *)33), 0);
}

static void close_at_every_stage(void (*mode)(struct sw_ep_attr *))
{
	struct rig g;
	mix_start(&g, mode);
	simtime_t t0 = sim_now(g.s.sim);
	sim_run(g.s.sim);
	simtime_t span = sim_now(g.s.sim) - t0;
	cr_assert_null(sw_ep_fatal(g.r.ep));
	size_t done = g.r.n;
	tep_close(&g.a);
	tep_close(&g.r);
	tsim_free(&g.s);

	enum { CUTS = 24 };
	uint32_t max_ux = 0, max_rmsgs = 0, mid_run = 0;
	for (int k = 0; k <= CUTS; k++) {
		mix_start(&g, mode);
		sim_run_until(g.s.sim, t0 + span * (simtime_t)k / CUTS);
		struct held h = held(&g);
		uint32_t ux = h.listed + h.pending + h.mapped - h.both;
		max_ux = ux > max_ux ? ux : max_ux;
		max_rmsgs = h.rmsgs > max_rmsgs ? h.rmsgs : max_rmsgs;
		mid_run += g.r.n > 0 && g.r.n < done;
		close_and_check(&g);
	}
	cr_assert_geq(max_ux, 4, "closes with unexpected messages held");
	cr_assert_geq(max_rmsgs, 1, "closes with rendezvous messages in flight");
	cr_assert_geq(mid_run, CUTS / 2, "closes between the first and the last completion");
}

Test(nic_records, close_at_every_stage_hardware) { close_at_every_stage(hw); }
Test(nic_records, close_at_every_stage_software) { close_at_every_stage(sw); }
Test(nic_records, close_at_every_stage_hybrid) { close_at_every_stage(hybrid); }

/* ---------------------------------------------------------------- the header an unexpected record keeps */

/* Unexpected records share the requests' pool (slots of a request's size) and keep the message header in
 * the bytes a receive that waits for the data uses for its event: each completion reports its own tag,
 * remote CQ data, length and source, whether its message waited at rest (software, request buffers), as a
 * hardware header, or was taken before its data landed; and the per-type live counts stay apart. */
static void send_data(struct rig *g, uint64_t len, uint64_t tag, uint64_t data)
{
	cr_assert_eq(sw_send(g->a.ep, (uint64_t)(uintptr_t)g_src, len, NULL, sw_ep_addr(g->r.ep), tag, data,
			     FI_TAGGED | FI_REMOTE_CQ_DATA, (void *)(uintptr_t)(1000 + tag)),
		     0);
	g->sends++;
}

static void check_header(const struct tcomp *c, uint64_t len, uint64_t tag, uint64_t data)
{
	cr_assert_eq(c->c.err, 0);
	cr_assert_eq(c->c.tag, tag, "tag %llu, expected %llu", (unsigned long long)c->c.tag, (unsigned long long)tag);
	cr_assert_eq(c->c.len, len, "tag %llu: len %llu", (unsigned long long)tag, (unsigned long long)c->c.len);
	cr_assert(c->c.flags & FI_REMOTE_CQ_DATA, "tag %llu: no CQ data", (unsigned long long)tag);
	cr_assert_eq(c->c.data, data, "tag %llu: data %#llx", (unsigned long long)tag, (unsigned long long)c->c.data);
}

static void headers_at_rest(void (*mode)(struct sw_ep_attr *), uint32_t uxs)
{
	struct rig g;
	rig_open(&g, mode);
	for (uint64_t t = 1; t <= 4; t++)
		send_data(&g, t == 2 ? 0 : SMALL + t, t, 0xda7a0000 + t);
	sim_run(g.s.sim);
	cr_assert_eq(g.a.n, 4, "the sends completed");
	cr_assert_eq(sw_reqs_live(g.s.sim), 0, "no request is held: the records live are unexpected messages");
	cr_assert_eq(sw_ux_live(g.s.sim), uxs);
	check_live_matches_held(&g);
	for (int t = 4; t >= 1; t--)
		post_recv(&g, t, SMALL + 8, (uint64_t)t, FI_TAGGED);
	finish_and_check(&g, 4);
	for (size_t i = 0; i < 4; i++) {
		uint64_t t = (uint64_t)(uintptr_t)g.r.comps[i].c.op_context - 2000;
		check_header(&g.r.comps[i], t == 2 ? 0 : SMALL + t, t, 0xda7a0000 + t);
	}
	rig_close(&g);
}

Test(nic_records, header_kept_software) { headers_at_rest(sw, 4); }
Test(nic_records, header_kept_hardware) { headers_at_rest(hw, 3); }

Test(nic_records, header_of_a_receive_waiting_for_data)
{
	struct rig g;
	rig_open_json(&g, SLOW_WRITES, hw);
	g_landed_before = landed(&g);
	send_data(&g, EAGER, 5, 0xfeed5);
	cr_assert(run_until(&g, header_landed));
	post_recv(&g, 0, EAGER, 5, FI_TAGGED);
	cr_assert(run_until(&g, receive_waits), "the header came before its data");
	finish_and_check(&g, 1);
	check_header(&g.r.comps[0], EAGER, 5, 0xfeed5);
	cr_assert_eq(memcmp(g_dst[0], g_src, EAGER), 0);
	rig_close(&g);
}

/* ---------------------------------------------------------------- shared environments */

static void small_rdzv(struct sw_ep_attr *a)
{
	hw(a);
	a->env.rdzv_threshold = 4096;
}

/* Endpoints keep their own options and share one read-only copy of each distinct FI_CXI_* environment,
 * resolved as each endpoint resolved its own (request buffer count, message offload). */
Test(nic_records, endpoints_share_their_environment)
{
	struct tsim s = tsim_new("{\"fabric\": {\"topology\": \"direct\", \"endpoints\": 3}, \"nic\": {}}", 1);
	struct tep a, b, c, d;
	cr_assert_eq(tep_open(&a, &s, 0, hw), 0);
	cr_assert_eq(tep_open(&b, &s, 1, hw), 0);
	cr_assert_eq(tep_open(&c, &s, 2, small_rdzv), 0);
	cr_assert_eq(tep_open(&d, &s, 0, sw), 0);
	sim_run(s.sim);
	cr_assert_eq(a.ep->env, b.ep->env, "the same environment: one copy");
	cr_assert_neq(a.ep->env, c.ep->env);
	cr_assert_neq(a.ep->env, d.ep->env);
	cr_assert_eq(a.ep->env->rdzv_threshold, 256 * 1024);
	cr_assert_eq(c.ep->env->rdzv_threshold, 4096);
	cr_assert_eq(a.ep->env->req_buf_max_count, 8 * a.ep->env->req_buf_min_posted);
	cr_assert(a.ep->env->msg_offload && !d.ep->env->msg_offload);
	cr_assert_eq(d.ep->env->rx_match_mode, SW_MATCH_SOFTWARE);
	cr_assert_eq(a.ep->attr.num_vnis, 1, "options are the endpoint's own");
	cr_assert_eq(a.ep->attr.comp_ctx, &a);
	cr_assert_eq(b.ep->attr.comp_ctx, &b);
	tep_close(&d);
	tep_close(&c);
	tep_close(&b);
	struct tep e;
	cr_assert_eq(tep_open(&e, &s, 1, hw), 0);
	cr_assert_eq(e.ep->env, a.ep->env, "still shared after the others closed");
	tep_close(&e);
	tep_close(&a);
	tsim_free(&s);
}

/* ---------------------------------------------------------------- buffer sizes */

static void small_oflow(struct sw_ep_attr *a)
{
	a->env.rx_match_mode = SW_MATCH_HARDWARE;
	a->env.oflow_buf_size = 16384; /* a buffer record keeps no size: the NIC's LE gets the environment's */
	a->env.req_buf_size = 8192;
	a->env.rdzv_threshold = 2048;
	a->env.rdzv_get_min = 0;
}

/* Overflow buffers are linked with the environment's size: a 16 KiB buffer that must keep room for a 2 KiB
 * eager message retires after 15 messages of 1 KiB, and fresh buffers replace the retired ones. */
Test(nic_records, overflow_buffers_have_the_environments_size)
{
	struct rig g;
	rig_open(&g, small_oflow);
	for (uint64_t t = 1; t <= 40; t++)
		send_msg(&g, 1024, t, FI_TAGGED);
	sim_run(g.s.sim);
	int retired = 0, all = 0;
	for (const struct sw_buf *b = g.r.ep->oflow; b; b = b->next, all++) {
		if (b->unlink_length == UINT64_MAX)
			continue;
		retired++;
		cr_assert_eq(b->unlink_length, 15 * 1024, "buffer %u retired after %llu bytes", b->id,
			     (unsigned long long)b->unlink_length);
	}
	cr_assert_eq(retired, 2, "40 messages: two buffers full, the third holds 10");
	cr_assert_eq(all, 3 + 2, "each retired buffer replaced");
	for (uint64_t t = 1; t <= 40; t++)
		post_recv(&g, (int)(t % NSLOT), 1024, t, FI_TAGGED);
	finish_and_check(&g, 40);
	rig_close(&g);
}
