/* "nic_loadgen": a NIC-level traffic generator for scenarios that study the NIC itself (flow control, match
 * modes, LE limits), in the spirit of the upstream provider's tagged/fc tests.  Senders on the listed NICs
 * stream tagged messages to one receiver through the provider software layer, keeping a window of sends in
 * flight; the receiver posts its receives `recv_delay_us` after the start (so the messages arrive
 * unexpected when the delay is long), `prepost` of them at a time, reposting as they complete.  Each
 * message carries (sender, sequence); the summary reports exactly-once / in-order delivery. */
#include <stdlib.h>
#include <string.h>

#include "../model.h"
#include "../stats.h"
#include "../util.h"
#include "sw.h"

static const struct param lg_params[] = {
	{ "messages", "count", 1000, 1, 1e9, "scenario: messages per sender" },
	{ "size", "bytes", 64, 8, 1 << 30, "scenario: message size (>= 8: the payload carries sender and sequence)" },
	{ "window", "count", 3, 1, 16384, "scenario: sends in flight per sender (upstream tagged/fc uses 3)" },
	{ "receiver", "nic", 0, 0, 1 << 20, "scenario: receiving NIC" },
	{ "prepost", "count", 64, 1, 15360, "scenario: receives kept posted" },
	{ "recv_delay_us", "us", 0, 0, 1e12, "scenario: when the receiver starts posting" },
	{ "retry_us", "us", 2, 0.001, 1e9, "scenario: back-off after -FI_EAGAIN" },
};

struct lg;

struct lg_sender {
	struct lg *lg;
	struct sw_ep *ep;
	uint32_t id, next, outstanding, completed, errors;
	uint8_t *bufs;
	bool retry_pending;
};

struct lg {
	struct sim *sim;
	uint32_t messages, size, window, prepost, nsenders;
	simtime_t recv_delay, retry;
	struct lg_sender *snd;
	struct sw_ep *rx;
	struct sw_addr dst;
	uint8_t *rbufs;
	uint32_t posted, received, errors, out_of_order;
	uint32_t *next_seq;
	bool rx_retry_pending;
	uint64_t *c_received, *c_errors, *c_ooo;
};

static void send_pump(struct lg_sender *s);

static void send_retry(struct sim *sim, void *obj, uint64_t arg)
{
	struct lg_sender *s = obj;
	(void)sim;
	(void)arg;
	s->retry_pending = false;
	send_pump(s);
}

static void send_pump(struct lg_sender *s)
{
	struct lg *lg = s->lg;
	while (s->outstanding < lg->window && s->next < lg->messages) {
		uint8_t *b = s->bufs + (size_t)(s->next % lg->window) * lg->size;
		memcpy(b, &s->id, 4);
		memcpy(b + 4, &s->next, 4);
		int rc = sw_send(s->ep, (uint64_t)(uintptr_t)b, lg->size, NULL, lg->dst, 1, 0, FI_TAGGED, NULL);
		if (rc == -FI_EAGAIN) {
			if (!s->retry_pending) {
				s->retry_pending = true;
				sim_schedule(lg->sim, lg->retry, send_retry, s, 0);
			}
			return;
		}
		if (rc)
			die("nic_loadgen: send failed: %d", rc);
		s->outstanding++;
		s->next++;
	}
}

static void send_done(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct lg_sender *s = ctx;
	(void)ep;
	s->outstanding--;
	s->completed++;
	if (c->err)
		s->errors++;
	send_pump(s);
}

static void recv_pump(struct lg *lg);

static void recv_retry(struct sim *sim, void *obj, uint64_t arg)
{
	struct lg *lg = obj;
	(void)sim;
	(void)arg;
	lg->rx_retry_pending = false;
	recv_pump(lg);
}

static void recv_pump(struct lg *lg)
{
	uint32_t total = lg->messages * lg->nsenders;
	while (lg->posted < total && lg->posted - lg->received < lg->prepost) {
		uint8_t *b = lg->rbufs + (size_t)(lg->posted % lg->prepost) * lg->size;
		int rc = sw_recv(lg->rx, (uint64_t)(uintptr_t)b, lg->size, NULL, 1, 0, FI_TAGGED, NULL);
		if (rc == -FI_EAGAIN) {
			if (!lg->rx_retry_pending) {
				lg->rx_retry_pending = true;
				sim_schedule(lg->sim, lg->retry, recv_retry, lg, 0);
			}
			return;
		}
		if (rc)
			return; /* fatal endpoint: reported in the summary */
		lg->posted++;
	}
}

static void recv_done(void *ctx, struct sw_ep *ep, const struct sw_comp *c)
{
	struct lg *lg = ctx;
	(void)ep;
	lg->received++;
	(*lg->c_received)++;
	if (c->err) {
		lg->errors++;
		(*lg->c_errors)++;
	} else {
		uint32_t id, seq;
		memcpy(&id, (const void *)(uintptr_t)c->buf, 4);
		memcpy(&seq, (const uint8_t *)(uintptr_t)c->buf + 4, 4);
		if (id >= lg->nsenders || seq != lg->next_seq[id]) {
			lg->out_of_order++;
			(*lg->c_ooo)++;
		} else {
			lg->next_seq[id]++;
		}
	}
	recv_pump(lg);
}

static void recv_start(struct sim *sim, void *obj, uint64_t arg)
{
	(void)sim;
	(void)arg;
	recv_pump(obj);
}

static void lg_free(void *p)
{
	struct lg *lg = p;
	for (uint32_t i = 0; i < lg->nsenders; i++) {
		sw_ep_close(lg->snd[i].ep);
		free(lg->snd[i].bufs);
	}
	sw_ep_close(lg->rx);
	free(lg->snd);
	free(lg->rbufs);
	free(lg->next_seq);
	free(lg);
}

static void lg_build(struct sim *sim, const struct cfg *c)
{
	struct lg *lg = xcalloc(1, sizeof(*lg));
	lg->sim = sim;
	lg->messages = (uint32_t)param_get_u64(c, &lg_params[0]);
	lg->size = (uint32_t)param_get_u64(c, &lg_params[1]);
	lg->window = (uint32_t)param_get_u64(c, &lg_params[2]);
	uint32_t rnic = (uint32_t)param_get_u64(c, &lg_params[3]);
	lg->prepost = (uint32_t)param_get_u64(c, &lg_params[4]);
	lg->recv_delay = (simtime_t)(param_get(c, &lg_params[5]) * 1e6);
	lg->retry = (simtime_t)(param_get(c, &lg_params[6]) * 1e6);
	int n = cfg_array_len(c, "senders");
	if (n <= 0)
		cfg_fail(c, "senders", "list at least one sending NIC");
	if (!nic_get(sim, rnic))
		cfg_fail(c, "receiver", "no NIC %u", rnic);
	struct sw_ep_attr a;
	sw_ep_attr_defaults(&a);
	sw_env_scenario(sim, &a.env);
	a.vnis[0] = (uint16_t)a.env.default_vni;
	a.mem = &nic_mem_host;
	a.comp = recv_done;
	a.comp_ctx = lg;
	if (sw_ep_open(nic_get(sim, rnic), &a, &lg->rx))
		cfg_fail(c, "receiver", "cannot open an endpoint on NIC %u", rnic);
	lg->dst = sw_ep_addr(lg->rx);
	lg->nsenders = (uint32_t)n;
	lg->snd = xcalloc((size_t)n, sizeof(*lg->snd));
	lg->next_seq = xcalloc((size_t)n, sizeof(*lg->next_seq));
	lg->rbufs = xcalloc(lg->prepost, lg->size);
	a.comp = send_done;
	for (int i = 0; i < n; i++) {
		uint32_t sn = (uint32_t)cfg_array_u64(c, "senders", i, 0, (1u << 20) - 1);
		if (!nic_get(sim, sn))
			cfg_fail(c, "senders", "no NIC %u", sn);
		struct lg_sender *s = &lg->snd[i];
		s->lg = lg;
		s->id = (uint32_t)i;
		s->bufs = xcalloc(lg->window, lg->size);
		a.comp_ctx = s;
		if (sw_ep_open(nic_get(sim, sn), &a, &s->ep))
			cfg_fail(c, "senders", "cannot open an endpoint on NIC %u", sn);
		send_pump(s);
	}
	lg->c_received = stats_counter(sim_stats(sim), "nic_loadgen.received");
	lg->c_errors = stats_counter(sim_stats(sim), "nic_loadgen.errors");
	lg->c_ooo = stats_counter(sim_stats(sim), "nic_loadgen.out_of_order");
	sim_schedule(sim, lg->recv_delay, recv_start, lg, 0);
	sim_world_set(sim, "nic_loadgen", lg);
	sim_on_destroy(sim, lg_free, lg);
}

static void lg_summary(struct sim *sim, FILE *f)
{
	struct lg *lg = sim_world_get(sim, "nic_loadgen");
	uint32_t sent = 0, send_errors = 0;
	for (uint32_t i = 0; i < lg->nsenders; i++) {
		sent += lg->snd[i].completed;
		send_errors += lg->snd[i].errors;
	}
	const struct sw_ep_stats *st = sw_ep_stats(lg->rx);
	const char *fatal = sw_ep_fatal(lg->rx);
	fprintf(f,
		"{\"expected\": %u, \"sent\": %u, \"send_errors\": %u, \"received\": %u, \"recv_errors\": %u, "
		"\"out_of_order\": %u, \"fc_transitions\": %llu, \"sw_transitions\": %llu, \"drops_replayed\": %llu, "
		"\"rx_state\": \"%s\", \"fatal\": %s}",
		lg->messages * lg->nsenders, sent, send_errors, lg->received, lg->errors, lg->out_of_order,
		(unsigned long long)st->fc_transitions, (unsigned long long)st->sw_transitions,
		(unsigned long long)st->fc_drops_replayed, sw_rxc_state_name(sw_ep_rxc_state(lg->rx)),
		fatal ? "true" : "false");
}

static struct model lg_model = {
	.key = "nic_loadgen",
	.order = 30,
	.build = lg_build,
	.summary = lg_summary,
	.params = lg_params,
	.nparams = ARRAY_SIZE(lg_params),
};
MODEL_REGISTER(lg_model)
