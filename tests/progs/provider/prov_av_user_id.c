/* FI_AV_USER_ID: completions report the user's id instead of the fi_addr.  As an insert flag, the id comes
 * in fi_addr on input (and the fi_addr comes back out); as an AV open flag, ids are set afterwards
 * (set_user_id of the AV extension, libfabric 1.20's fi_av_set_user_id).  Both at once is -FI_EINVAL. */
#include "common.h"

static int sender(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct t_ep t;
	t_open(&t, FI_MSG);
	t_send(c, t.name, 8);
	struct fi_cq_tagged_entry e;
	for (int round = 0; round < 2; round++) {
		char name[8];
		t_recv(c, name, 8);
		fi_addr_t rx = t_insert(&t, name);
		t_sync(c); /* receiver has posted its buffer */
		T_OK(fi_send(t.ep, "x", 1, NULL, rx, NULL));
		t_cq_expect(t.cq, &e, "send");
	}
	t_sync(c);
	t_close(&t);
	return 0;
}

static void round_trip(struct t_chan c, const char *peer, bool open_flag)
{
	struct fi_info *h = t_hints(FI_MSG | FI_SOURCE | FI_AV_USER_ID);
	struct fi_av_attr aa = { .type = FI_AV_TABLE, .flags = open_flag ? FI_AV_USER_ID : 0 };
	struct t_ep t;
	t_open_with(&t, h, &aa, true);
	fi_addr_t want;
	if (open_flag) {
		fi_addr_t id = 0x1234;
		T_CHECK(fi_av_insert(t.av, peer, 1, &id, FI_AV_USER_ID, NULL) == -FI_EINVAL,
			"FI_AV_USER_ID as both open and insert flag: -FI_EINVAL");
		fi_addr_t fa = t_insert(&t, peer);
		struct fi_cxi_av_auth_key_ops *ops;
		T_OK(fi_open_ops(&t.av->fid, FI_CXI_AV_AUTH_KEY_OPS, 0, (void **)&ops, NULL));
		T_OK(ops->set_user_id(t.av, fa, 0xabcdef, 0));
		want = 0xabcdef;
	} else {
		fi_addr_t io = 0x777;
		T_CHECK(fi_av_insert(t.av, peer, 1, &io, FI_AV_USER_ID, NULL) == 1 && io == 0,
			"insert flag: user id in, fi_addr 0 out (got %" PRIu64 ")", io);
		struct fi_cxi_av_auth_key_ops *ops;
		T_OK(fi_open_ops(&t.av->fid, FI_CXI_AV_AUTH_KEY_OPS, 0, (void **)&ops, NULL));
		T_CHECK(ops->set_user_id(t.av, 0, 5, 0) == -FI_EINVAL,
			"set_user_id on an AV opened without the flag: -FI_EINVAL");
		want = 0x777;
	}
	char b[4];
	T_OK(fi_recv(t.ep, b, sizeof(b), NULL, FI_ADDR_UNSPEC, NULL));
	t_send(c, t.name, 8);
	t_sync(c);
	struct fi_cq_tagged_entry e;
	fi_addr_t src = 0;
	int r = t_cq_wait(t.cq, &e, &src, NULL, 10);
	T_CHECK(r == 1 && src == want, "%s: source reported as 0x%" PRIx64 " (want 0x%" PRIx64 ")",
		open_flag ? "AV open flag" : "insert flag", src, want);
	t_close(&t);
	fi_freeinfo(h);
}

int main(void)
{
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(sender, &l, "sender");
	struct t_chan c = t_link_a(&l);
	t_who = "receiver";
	char peer[8];
	t_recv(c, peer, 8);
	round_trip(c, peer, true);
	round_trip(c, peer, false);
	t_sync(c);
	t_join(p, "sender");
	return t_finish("prov_av_user_id");
}
