/* Several processes on one simulated node: a server and NCLI clients (forked; each attaches to the daemon
 * as its own process, on the same node when the scenario has one node), ping-pong traffic from every
 * client at once across the eager and rendezvous sizes.  The server answers each request to its source
 * (FI_SOURCE); every byte is checked at both ends, and nothing is lost or duplicated. */
#include "common.h"

enum { NCLI = 3, ITERS = 60, MAXLEN = 200000 };
static const size_t sizes[] = { 8, 1024, 16384, MAXLEN };

static struct t_link links[NCLI];

static int client(void *arg)
{
	int me = (int)(intptr_t)arg;
	struct t_chan c = t_link_b(&links[me]);
	struct t_ep t;
	t_open(&t, FI_TAGGED);
	char name[8];
	t_recv(c, name, 8);
	t_send(c, t.name, 8);
	fi_addr_t srv = t_insert(&t, name);
	static char sbuf[MAXLEN], rbuf[MAXLEN];
	struct fi_cq_tagged_entry e;
	int good = 0;
	for (int i = 0; i < ITERS; i++) {
		size_t len = sizes[i % 4];
		uint32_t seed = (uint32_t)(me * 1000 + i);
		t_fill(sbuf, len, seed);
		memset(rbuf, 0, len);
		T_OK(fi_trecv(t.ep, rbuf, len, NULL, FI_ADDR_UNSPEC, 0x100 + me, 0, rbuf));
		T_OK(fi_tsend(t.ep, sbuf, len, NULL, srv, me, sbuf));
		t_cq_expect(t.cq, &e, "client completion");
		t_cq_expect(t.cq, &e, "client completion");
		/* The server answers with the seed + 1 pattern. */
		good += t_verify(rbuf, len, seed + 1);
	}
	T_CHECK(good == ITERS, "client %d: %d of %d replies intact", me, good, ITERS);
	t_sync(c);
	t_close(&t);
	return 0;
}

int main(void)
{
	pid_t pids[NCLI];
	for (int i = 0; i < NCLI; i++) {
		t_link_init(&links[i]);
		pids[i] = t_fork(client, (void *)(intptr_t)i, "client");
	}
	t_who = "server";
	struct t_ep t;
	t_open(&t, FI_TAGGED | FI_SOURCE);
	fi_addr_t peers[NCLI];
	for (int i = 0; i < NCLI; i++) {
		struct t_chan c = t_link_a(&links[i]);
		t_send(c, t.name, 8);
		char name[8];
		t_recv(c, name, 8);
		peers[i] = t_insert(&t, name);
	}
	/* One request buffer and one reply buffer per client: a client has one request outstanding, and
	 * sends the next only after its reply has fully arrived. */
	static char bufs[NCLI][MAXLEN], replies[NCLI][MAXLEN];
	int count[NCLI] = { 0 }, bad = 0, sent = 0;
	for (int i = 0; i < NCLI; i++)
		T_OK(fi_trecv(t.ep, bufs[i], MAXLEN, NULL, FI_ADDR_UNSPEC, i, 0, bufs[i]));
	for (int n = 0; n < NCLI * ITERS || sent < NCLI * ITERS;) {
		struct fi_cq_tagged_entry e;
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		struct fi_cq_err_entry err;
		int r = t_cq_wait(t.cq, &e, &src, &err, 30);
		if (r != 1) {
			T_CHECK(0, "server: completion failed (r=%d err=%d), %d requests, %d replies", r, err.err, n, sent);
			break;
		}
		if (e.flags & FI_SEND) {
			sent++;
			continue;
		}
		int who = (int)e.tag;
		T_CHECK(who >= 0 && who < NCLI && src == peers[who], "server: request from client %d has its source", who);
		int i = count[who]++;
		uint32_t seed = (uint32_t)(who * 1000 + i);
		size_t len = sizes[i % 4];
		bad += !(e.len == len && t_verify(bufs[who], len, seed));
		t_fill(replies[who], len, seed + 1);
		if (count[who] < ITERS)
			T_OK(fi_trecv(t.ep, bufs[who], MAXLEN, NULL, FI_ADDR_UNSPEC, who, 0, bufs[who]));
		T_OK(fi_tsend(t.ep, replies[who], len, NULL, src, 0x100 + who, NULL));
		n++;
	}
	T_CHECK(bad == 0, "server: every request intact (%d bad)", bad);
	for (int i = 0; i < NCLI; i++)
		T_CHECK(count[i] == ITERS, "server: %d requests from client %d, no loss, no duplicate", count[i], i);
	for (int i = 0; i < NCLI; i++) {
		t_sync(t_link_a(&links[i]));
		t_join(pids[i], "client");
	}
	t_close(&t);
	return t_finish("prov_fanin");
}
