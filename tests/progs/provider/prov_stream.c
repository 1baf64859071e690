/* A long-running server and its clients, for the robustness tests (a client killed with SIGKILL in the
 * middle of a transfer must not disturb the daemon, the server or later clients).
 *
 *   prov_stream server PID NCLIENTS   endpoint at pid PID on this process's node; serves until NCLIENTS
 *                                     clients have finished cleanly, then exits 0
 *   prov_stream client NIC PID COUNT  sends COUNT 1 MiB messages (0: forever) to the server at (NIC, PID),
 *                                     then its name with tag END, and waits for the server's "done"
 * Placement: CXISIM_NODE puts the server on a known node, so its address is (node * nics_per_node, PID). */
#include "common.h"

#define MSG (MSG_SIZE)
#ifndef MSG_SIZE
#define MSG_SIZE (1 << 20)
#endif
#define TAG_DATA 1
#define TAG_END 2
#define TAG_DONE 3
#define NRECV 4

static int server(int pid, int nclients)
{
	t_who = "server";
	struct fi_info *h = t_hints(FI_TAGGED);
	char svc[16];
	snprintf(svc, sizeof(svc), "%d", pid);
	struct fi_info *info;
	T_OK(fi_getinfo(FI_VERSION(1, 17), "cxi0", svc, FI_SOURCE, h, &info));
	/* Open the endpoint at that source address (hints without FI_SOURCE: clients are unknown to it). */
	h->src_addr = malloc(info->src_addrlen);
	memcpy(h->src_addr, info->src_addr, info->src_addrlen);
	h->src_addrlen = info->src_addrlen;
	h->addr_format = FI_ADDR_CXI;
	fi_freeinfo(info);
	struct t_ep t;
	t_open_with(&t, h, NULL, true);
	fi_freeinfo(h);
	printf("READY %02x%02x%02x%02x\n", (unsigned char)t.name[0], (unsigned char)t.name[1], (unsigned char)t.name[2],
	       (unsigned char)t.name[3]);
	fflush(stdout);
	char *bufs[NRECV];
	for (int i = 0; i < NRECV; i++) {
		bufs[i] = malloc(MSG);
		T_OK(fi_trecv(t.ep, bufs[i], MSG, NULL, FI_ADDR_UNSPEC, TAG_DATA, 0, bufs[i]));
	}
	char endbuf[8];
	T_OK(fi_trecv(t.ep, endbuf, sizeof(endbuf), NULL, FI_ADDR_UNSPEC, TAG_END, 0, endbuf));
	int done = 0;
	uint64_t msgs = 0, errors = 0;
	while (done < nclients) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int r = t_cq_wait(t.cq, &e, NULL, &err, 60);
		if (r == -FI_ETIMEDOUT) {
			printf("FAIL [server] no traffic for 60 s\n");
			return 1;
		}
		void *ctx = r == 1 ? e.op_context : err.op_context;
		if (r == 0)
			errors++; /* a client died in the middle of a message: the receive fails, the server goes on */
		if (ctx == endbuf) {
			if (r == 1) {
				fi_addr_t a = t_insert(&t, endbuf);
				T_OK(fi_tsend(t.ep, "done", 5, NULL, a, TAG_DONE, NULL));
				t_cq_expect(t.cq, &e, "done sent");
				done++;
			}
			T_OK(fi_trecv(t.ep, endbuf, sizeof(endbuf), NULL, FI_ADDR_UNSPEC, TAG_END, 0, endbuf));
		} else if (ctx) {
			if (r == 1)
				msgs++;
			T_OK(fi_trecv(t.ep, ctx, MSG, NULL, FI_ADDR_UNSPEC, TAG_DATA, 0, ctx));
		}
	}
	printf("server: %d clients done, %" PRIu64 " messages, %" PRIu64 " failed receives\n", done, msgs, errors);
	t_close(&t);
	for (int i = 0; i < NRECV; i++)
		free(bufs[i]);
	return t_finish("prov_stream server");
}

static int client(unsigned nic, unsigned pid, long count)
{
	t_who = "client";
	struct t_ep t;
	t_open(&t, FI_TAGGED);
	char node[16], svc[16];
	snprintf(node, sizeof(node), "%u", nic);
	snprintf(svc, sizeof(svc), "%u", pid);
	fi_addr_t srv;
	T_CHECK(fi_av_insertsvc(t.av, node, svc, &srv, 0, NULL) == 1, "server address inserted");
	char *buf = malloc(MSG);
	t_fill(buf, MSG, 1);
	char done[8] = { 0 };
	T_OK(fi_trecv(t.ep, done, sizeof(done), NULL, FI_ADDR_UNSPEC, TAG_DONE, 0, done));
	printf("STREAMING\n");
	fflush(stdout);
	struct fi_cq_tagged_entry e;
	for (long i = 0; count == 0 || i < count; i++) {
		ssize_t r;
		while ((r = fi_tsend(t.ep, buf, MSG, NULL, srv, TAG_DATA, buf)) == -FI_EAGAIN)
			;
		T_OK(r);
		t_cq_expect(t.cq, &e, "1 MiB send");
	}
	T_OK(fi_tsend(t.ep, t.name, 8, NULL, srv, TAG_END, NULL));
	for (int i = 0; i < 2; i++)
		t_cq_expect(t.cq, &e, "END sent / done received");
	T_CHECK(!strcmp(done, "done"), "server acknowledged");
	t_close(&t);
	free(buf);
	return t_finish("prov_stream client");
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client((unsigned)strtoul(argv[2], NULL, 0), (unsigned)atoi(argv[3]), atol(argv[4]));
	fprintf(stderr, "usage: prov_stream server PID NCLIENTS | client NIC PID COUNT\n");
	return 2;
}
