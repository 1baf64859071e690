/* The RPC storm in SimGrid 3.32, the speed peer of `make bench` (sim/workload/module.mk).
 *
 * Same pattern as scenarios/rpc-storm.yaml.j2 in cxisim: C clients, each keeping W requests of REQ bytes in
 * flight to one server, which spends SERVICE seconds per request and answers each with RESP bytes.  Client
 * i runs on host n<i>, the server on the platform's last host.  The platform (a SimGrid DRAGONFLY cluster)
 * is rendered from scenarios/simgrid/dragonfly.xml.j2 with the same shape as the cxisim fabric.
 *
 * Both mailboxes have a permanent receiver (sg_mailbox_set_receiver), so messages move as soon as they are
 * sent, as into posted receives, instead of waiting for the receiver's next get (SimGrid's rendezvous default,
 * which would serialize one network latency into every server iteration).
 *
 * SimGrid pitfalls honoured (docs/simgrid-notes.md): sends come from actors only; no detached sends (the
 * server keeps its reply handles in a FIFO and reaps the completed ones, which is also how a real server
 * would track its sends); the long-lived server is not a daemon actor.
 *
 * Prints one line: "simgrid rpc_storm clients=C inflight=W rpcs=N virtual_s=T wall_s=S rpcs_per_wall_s=R".
 */
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct req {
	int client;
	int slot;
};

static int n_clients, inflight;
static double service_s, until_s;
static long req_bytes, resp_bytes;
static unsigned long long completed;
static struct req *reqs; /* n_clients * inflight, reused per slot */
static sg_mailbox_t *client_mb;
static sg_mailbox_t server_mb;

static void client(int argc, char **argv)
{
	(void)argc;
	int id = atoi(argv[1]);
	char name[16];
	snprintf(name, sizeof(name), "c%d", id);
	sg_mailbox_set_receiver(name); /* replies flow as soon as they are sent, as into a posted receive */
	sg_comm_t *sends = calloc((size_t)inflight, sizeof(*sends));
	for (int s = 0; s < inflight; s++) {
		struct req *r = &reqs[(size_t)id * inflight + s];
		r->client = id;
		r->slot = s;
		sends[s] = sg_mailbox_put_async(server_mb, r, req_bytes);
	}
	for (;;) {
		struct req *reply = sg_mailbox_get(client_mb[id]);
		completed++;
		/* The request of this slot was received before its reply was sent: its send is complete. */
		sg_comm_wait(sends[reply->slot]);
		sends[reply->slot] = sg_mailbox_put_async(server_mb, reply, req_bytes);
	}
}

static void server(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	size_t cap = (size_t)n_clients * (size_t)inflight + 1, head = 0, tail = 0;
	/* Requests travel eagerly, without waiting for the server to ask for the next one (as into a NIC). */
	sg_mailbox_set_receiver("server");
	sg_comm_t *fifo = calloc(cap, sizeof(*fifo));
	for (;;) {
		struct req *r = sg_mailbox_get(server_mb);
		if (service_s > 0)
			sg_actor_sleep_for(service_s);
		fifo[tail] = sg_mailbox_put_async(client_mb[r->client], r, resp_bytes);
		tail = (tail + 1) % cap;
		while (head != tail && sg_comm_test(fifo[head]))
			head = (head + 1) % cap;
	}
}

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	simgrid_init(&argc, argv);
	if (argc != 9) {
		fprintf(stderr, "usage: %s PLATFORM.xml CLIENTS INFLIGHT SERVICE_US REQ_BYTES RESP_BYTES VIRTUAL_S "
				"HOSTS [--cfg=...]\n", argv[0]);
		return 2;
	}
	n_clients = atoi(argv[2]);
	inflight = atoi(argv[3]);
	service_s = atof(argv[4]) * 1e-6;
	req_bytes = atol(argv[5]);
	resp_bytes = atol(argv[6]);
	until_s = atof(argv[7]);
	int hosts = atoi(argv[8]);
	if (n_clients < 1 || inflight < 1 || n_clients >= hosts || until_s <= 0) {
		fprintf(stderr, "%s: need 1 <= CLIENTS < HOSTS, INFLIGHT >= 1, VIRTUAL_S > 0\n", argv[0]);
		return 2;
	}
	simgrid_load_platform(argv[1]);
	reqs = calloc((size_t)n_clients * (size_t)inflight, sizeof(*reqs));
	client_mb = calloc((size_t)n_clients, sizeof(*client_mb));
	char name[64];
	for (int i = 0; i < n_clients; i++) {
		snprintf(name, sizeof(name), "c%d", i);
		client_mb[i] = sg_mailbox_by_name(name);
	}
	server_mb = sg_mailbox_by_name("server");
	snprintf(name, sizeof(name), "n%d", hosts - 1);
	sg_host_t srv = sg_host_by_name(name);
	if (!srv) {
		fprintf(stderr, "%s: platform has no host %s\n", argv[0], name);
		return 2;
	}
	sg_actor_create("server", srv, server, 0, NULL);
	for (int i = 0; i < n_clients; i++) {
		char idbuf[16];
		snprintf(name, sizeof(name), "n%d", i);
		snprintf(idbuf, sizeof(idbuf), "%d", i);
		char *av[2] = { name, idbuf };
		sg_actor_create("client", sg_host_by_name(name), client, 2, av);
	}
	double t0 = wall();
	simgrid_run_until(until_s);
	double w = wall() - t0;
	printf("simgrid rpc_storm clients=%d inflight=%d rpcs=%llu virtual_s=%.6f wall_s=%.3f rpcs_per_wall_s=%.0f\n",
	       n_clients, inflight, completed, simgrid_get_clock(), w, w > 0 ? (double)completed / w : 0.0);
	fflush(stdout);
	/* Actors are still blocked in their loops; leave without tearing the simulation down. */
	_exit(0);
}
