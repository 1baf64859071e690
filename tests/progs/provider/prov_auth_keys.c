/* Several auth keys on one server endpoint (seed 000 section 5): a domain opened with auth_key_size =
 * FI_AV_AUTH_KEY takes up to 4 keys from its AV before the endpoint is enabled (the fi_av_insert_auth_key
 * semantics of libfabric 1.20, through the provider extension).  Clients on VNI 5 and VNI 7 reach the server
 * and get replies sent with their own VNI; a client on VNI 9, which the server does not accept, gets
 * FI_ENOTCONN and the server sees nothing.  A fifth key is -FI_ENOSPC. */
#include "common.h"

struct client_arg {
	struct t_link *l;
	uint16_t vni;
};

static int client(void *arg)
{
	struct client_arg *a = arg;
	struct t_chan c = t_link_b(a->l);
	struct fi_info *h = t_hints(FI_TAGGED);
	struct cxi_auth_key key = { .svc_id = 1, .vni = a->vni };
	h->domain_attr->auth_key = malloc(sizeof(key));
	memcpy(h->domain_attr->auth_key, &key, sizeof(key));
	h->domain_attr->auth_key_size = sizeof(key);
	struct t_ep t;
	t_open_with(&t, h, NULL, true);
	char srv_name[8];
	t_recv(c, srv_name, 8);
	t_send(c, t.name, 8);
	fi_addr_t srv = t_insert(&t, srv_name);
	uint32_t msg = a->vni, reply = 0;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	if (a->vni == 9) {
		T_OK(fi_tsend(t.ep, &msg, sizeof(msg), NULL, srv, 1, &msg));
		int r = t_cq_wait(t.cq, &e, NULL, &err, 10);
		T_CHECK(r == 0 && err.err == FI_ENOTCONN, "VNI 9 (not accepted): FI_ENOTCONN (r=%d err=%d prov_errno=%d)", r,
			err.err, err.prov_errno);
	} else {
		T_OK(fi_trecv(t.ep, &reply, sizeof(reply), NULL, FI_ADDR_UNSPEC, 2, 0, &reply));
		T_OK(fi_tsend(t.ep, &msg, sizeof(msg), NULL, srv, 1, &msg));
		for (int i = 0; i < 2; i++)
			t_cq_expect(t.cq, &e, "send / reply");
		T_CHECK(reply == 1000u + a->vni, "VNI %u: reply %u", a->vni, reply);
	}
	t_sync(c);
	t_close(&t);
	fi_freeinfo(h);
	return 0;
}

int main(void)
{
	t_who = "server";
	struct fi_info *h = t_hints(FI_TAGGED | FI_SOURCE);
	h->domain_attr->auth_key_size = FI_AV_AUTH_KEY;
	struct t_ep t;
	t_open_with(&t, h, NULL, false);
	T_CHECK(!(t.info->caps & FI_DIRECTED_RECV), "FI_AV_AUTH_KEY offers no FI_DIRECTED_RECV");
	struct fi_cxi_av_auth_key_ops *ops;
	T_OK(fi_open_ops(&t.av->fid, FI_CXI_AV_AUTH_KEY_OPS, 0, (void **)&ops, NULL));
	T_CHECK(ops->max_ep_auth_key(t.av) == 4, "max_ep_auth_key 4");
	fi_addr_t kaddr[2];
	struct cxi_auth_key k5 = { 1, 5 }, k7 = { 1, 7 };
	T_OK(ops->insert_auth_key(t.av, &k5, sizeof(k5), &kaddr[0], 0));
	T_OK(ops->insert_auth_key(t.av, &k7, sizeof(k7), &kaddr[1], 0));
	/* A separate AV shows the limit. */
	struct fid_av *av2;
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	T_OK(fi_av_open(t.dom, &aa, &av2, NULL));
	fi_addr_t x;
	for (uint16_t v = 20; v < 24; v++) {
		struct cxi_auth_key k = { 1, v };
		T_OK(ops->insert_auth_key(av2, &k, sizeof(k), &x, 0));
	}
	struct cxi_auth_key k24 = { 1, 24 };
	T_CHECK(ops->insert_auth_key(av2, &k24, sizeof(k24), &x, 0) == -FI_ENOSPC, "fifth auth key: -FI_ENOSPC");
	T_OK(fi_close(&av2->fid));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	struct cxi_auth_key k11 = { 1, 11 };
	T_CHECK(ops->insert_auth_key(t.av, &k11, sizeof(k11), &x, 0) == -FI_EBUSY,
		"auth key after enable: -FI_EBUSY");

	struct t_link links[3];
	struct client_arg args[3] = { { &links[0], 5 }, { &links[1], 7 }, { &links[2], 9 } };
	pid_t pids[3];
	struct t_chan ch[3];
	static const char *const who[3] = { "client-vni5", "client-vni7", "client-vni9" };
	for (int i = 0; i < 3; i++) {
		t_link_init(&links[i]);
		pids[i] = t_fork(client, &args[i], who[i]);
		ch[i] = t_link_a(&links[i]);
	}
	uint32_t in[2];
	char names[3][8];
	for (int i = 0; i < 3; i++) {
		t_send(ch[i], t.name, 8);
		t_recv(ch[i], names[i], 8);
	}
	for (int i = 0; i < 2; i++)
		T_OK(fi_trecv(t.ep, &in[i], sizeof(in[i]), NULL, FI_ADDR_UNSPEC, 1, 0, &in[i]));
	struct fi_cq_tagged_entry e;
	fi_addr_t peer[2];
	for (int i = 0; i < 2; i++)
		T_OK(ops->insert_addr(t.av, names[i], 1, kaddr[i], &peer[i], 0, NULL));
	int seen5 = 0, seen7 = 0;
	for (int i = 0; i < 2; i++) {
		fi_addr_t src = FI_ADDR_NOTAVAIL;
		int r = t_cq_wait(t.cq, &e, &src, NULL, 10);
		T_CHECK(r == 1, "message %d received", i);
		uint32_t v = *(uint32_t *)e.op_context;
		seen5 += v == 5 && src == peer[0];
		seen7 += v == 7 && src == peer[1];
	}
	T_CHECK(seen5 == 1 && seen7 == 1, "one message on each accepted VNI, sources resolved per VNI");
	for (int i = 0; i < 2; i++) {
		uint32_t r = 1000u + args[i].vni;
		T_OK(fi_tsend(t.ep, &r, sizeof(r), NULL, peer[i], 2, NULL));
		t_cq_expect(t.cq, &e, "reply");
	}
	for (int i = 0; i < 3; i++)
		t_sync(ch[i]);
	for (int i = 0; i < 3; i++)
		t_join(pids[i], "client");
	/* Nothing from VNI 9 arrived. */
	uint32_t extra;
	T_OK(fi_trecv(t.ep, &extra, sizeof(extra), NULL, FI_ADDR_UNSPEC, 1, 0, &extra));
	T_CHECK(t_cq_wait(t.cq, &e, NULL, NULL, 0.2) == -FI_ETIMEDOUT, "the server received nothing from VNI 9");
	t_close(&t);
	fi_freeinfo(h);
	return t_finish("prov_auth_keys");
}
