/* FI_SOURCE_ERR: a message from a peer the receiver's AV does not know completes in error with
 * FI_EADDRNOTAVAIL and the peer's address in err_data; the receiver inserts that address and replies; a
 * later message from the now-known peer reports its fi_addr as source (fi_cq_readfrom).  Without
 * FI_SOURCE_ERR the same message completes normally with source FI_ADDR_NOTAVAIL. */
#include "common.h"

static int client(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct t_ep t;
	t_open(&t, FI_TAGGED);
	char name[8];
	t_recv(c, name, 8);
	t_send(c, t.name, 8);
	fi_addr_t srv = t_insert(&t, name);
	char msg[32] = "hello from an unknown peer", reply[32] = { 0 };
	struct fi_cq_tagged_entry e;
	T_OK(fi_trecv(t.ep, reply, sizeof(reply), NULL, FI_ADDR_UNSPEC, 2, 0, reply));
	T_OK(fi_tsend(t.ep, msg, sizeof(msg), NULL, srv, 1, msg));
	t_cq_expect(t.cq, &e, "send");
	t_cq_expect(t.cq, &e, "reply");
	T_CHECK(!strcmp(reply, "reply"), "reply received: '%s'", reply);
	t_sync(c);
	t_close(&t);
	return 0;
}

static void run(bool source_err)
{
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(client, &l, "client");
	struct t_chan c = t_link_a(&l);
	t_who = source_err ? "server(FI_SOURCE_ERR)" : "server(FI_SOURCE)";
	struct t_ep t;
	t_open(&t, FI_TAGGED | FI_SOURCE | (source_err ? FI_SOURCE_ERR : 0));
	t_send(c, t.name, 8);
	char peer[8];
	t_recv(c, peer, 8);
	char buf[32];
	T_OK(fi_trecv(t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, buf));
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src = 12345;
	int r = t_cq_wait(t.cq, &e, &src, &err, 10);
	fi_addr_t peer_addr;
	if (source_err) {
		T_CHECK(r == 0 && err.err == FI_EADDRNOTAVAIL, "unknown source: FI_EADDRNOTAVAIL (r=%d err=%d)", r, err.err);
		T_CHECK(err.op_context == buf && err.len == sizeof(buf) && !strcmp(buf, "hello from an unknown peer"),
			"the message itself was delivered");
		T_CHECK(err.err_data && err.err_data_size >= 8 && !memcmp(err.err_data, peer, 4),
			"err_data holds the source address (nic, pid)");
		peer_addr = t_insert(&t, err.err_data);
	} else {
		T_CHECK(r == 1 && src == FI_ADDR_NOTAVAIL, "without FI_SOURCE_ERR: source FI_ADDR_NOTAVAIL (r=%d)", r);
		peer_addr = t_insert(&t, peer);
	}
	T_OK(fi_tsend(t.ep, "reply", 6, NULL, peer_addr, 2, NULL));
	t_cq_expect(t.cq, &e, "reply sent");
	t_sync(c);
	t_join(p, "client");
	t_close(&t);
}

int main(void)
{
	run(true);
	run(false);
	return t_finish("prov_source_err");
}
