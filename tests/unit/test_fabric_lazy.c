/* The dragonfly's event economy: credits, congestion feedback and acks travel as timestamped records that
 * their receiver applies when it next looks, so a packet alone in the fabric costs one event per switch
 * plus its delivery; flow records are still released exactly when their last ack is in. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../sim/fabric/dragonfly.h"
#include "../../sim/scenario.h"
#include "../../sim/stats.h"

static struct scenario *load(const char *fabric_fields)
{
	char path[64] = "/tmp/test_fabric_lazy_XXXXXX", json[512];
	snprintf(json, sizeof(json), "{\"fabric\": {\"topology\": \"dragonfly\", \"preset\": \"small\"%s}}", fabric_fields);
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	struct scenario *sc = scenario_load(path, NULL);
	unlink(path);
	return sc;
}

static int delivered;
static simtime_t last_delivery;

static void count(struct sim *sim, void *nic, struct fabric_msg *m)
{
	(void)nic;
	(void)m;
	delivered++;
	last_delivery = sim_now(sim);
}

/* small: 9 groups x 4 switches x 2 endpoints, one global link per group pair: endpoint 2 -> 10 crosses
 * four switches (local, global, local). */
Test(fabric_lazy, lone_packet_costs_one_event_per_switch)
{
	static const char *const modes[] = { "", ", \"congestion_control\": false", ", \"routing\": \"minimal\"" };
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct scenario *sc = load(modes[i]);
		struct fabric *f = fabric_of(sc->sim);
		fabric_attach(f, 10, count, NULL);
		struct fabric_msg m = { .src = 2, .dst = 10, .bytes = 1000 };
		delivered = 0;
		fabric_send(sc->sim, f, &m);
		sim_run(sc->sim);
		cr_assert_eq(delivered, 1);
		cr_assert_eq(*stats_find_counter(sim_stats(sc->sim), "fabric.switch_traversals"), 4);
		/* four arrivals and the delivery: no credit, ack, feedback or kick events */
		cr_assert_eq(sim_events_processed(sc->sim), 5, "%s: %llu events", modes[i],
			     (unsigned long long)sim_events_processed(sc->sim));
		/* the run ends with the delivery, not with bookkeeping on its way back */
		cr_assert_eq(sim_now(sc->sim), last_delivery);
		scenario_free(sc);
	}
}

struct chain {
	struct fabric *f;
	struct fabric_msg m;
	uint32_t next_dst, last_dst;
};

static struct chain ch;

static void chain_next(struct sim *sim, void *nic, struct fabric_msg *m)
{
	(void)nic;
	(void)m;
	delivered++;
	if (ch.next_dst > ch.last_dst)
		return;
	ch.m = (struct fabric_msg){ .src = 0, .dst = ch.next_dst++, .bytes = 64 };
	fabric_send(sim, ch.f, &ch.m);
}

/* Endpoint 0 sends one message at a time, each to a new destination (a new flow record each): records
 * whose ack is in are released by later sends, so they do not pile up. */
Test(fabric_lazy, idle_flows_are_released)
{
	struct scenario *sc = load("");
	struct df *d = sim_world_get(sc->sim, "fabric.dragonfly");
	ch.f = fabric_of(sc->sim);
	ch.next_dst = 2;
	ch.last_dst = 71;
	for (uint32_t e = 1; e < 72; e++)
		fabric_attach(ch.f, e, chain_next, NULL);
	delivered = 0;
	ch.m = (struct fabric_msg){ .src = 0, .dst = 1, .bytes = 64 };
	fabric_send(sc->sim, ch.f, &ch.m);
	sim_run(sc->sim);
	cr_assert_eq(delivered, 71);
	cr_assert_eq(*stats_find_counter(sim_stats(sc->sim), "fabric.flows_created"), 71);
	cr_assert_leq(d->flows.live, 4, "%llu flow records still held", (unsigned long long)d->flows.live);
	/* the run drained: what is still on its way back is applied when the run is summarised */
	df_flows_settle(d);
	cr_assert_eq(d->acks.live + d->fbs.live, 0);
	scenario_free(sc);
}

static void quiet(struct sim *sim, void *nic, struct fabric_msg *m)
{
	(void)sim;
	(void)nic;
	(void)m;
	delivered++;
}

static void send_at(struct sim *sim, void *obj, uint64_t arg)
{
	(void)arg;
	fabric_send(sim, fabric_of(sim), obj);
}

/* A second message to the same destination finds the first one's flow record alive while its ack is on
 * its way (the same record, the same sequence numbers), and a new record once the ack is in. */
Test(fabric_lazy, flow_record_lives_until_its_last_ack)
{
	struct fabric_msg a = { .src = 0, .dst = 40, .bytes = 64 }, b = a, c = a;
	struct scenario *sc = load("");
	struct fabric *f = fabric_of(sc->sim);
	fabric_attach(f, 40, quiet, NULL);
	simtime_t one_way = fabric_zero_load_time(f, 0, 40, 64);
	delivered = 0;
	fabric_send(sc->sim, f, &a);
	/* b leaves after a has arrived but before a's ack (one more one-way trip) is back; c long after */
	sim_schedule_at(sc->sim, one_way + one_way / 2, send_at, &b, 0);
	sim_schedule_at(sc->sim, 10 * one_way, send_at, &c, 0);
	sim_run(sc->sim);
	cr_assert_eq(delivered, 3);
	cr_assert_eq(*stats_find_counter(sim_stats(sc->sim), "fabric.flows_created"), 2);
	scenario_free(sc);
}
