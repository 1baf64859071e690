/* A remote write after the target closed its MR: without the provider key cache it fails with FI_EIO at
 * the initiator and the target's memory stays as it was; with the cache (the default) the closed MR's
 * memory is still exposed, the write lands, and the target counts the hazard.  With MR match events the
 * close waits for accesses in flight and a write issued before the close completes. */
#include "common.h"

struct info {
	char name[8];
	uint64_t key;
};

static int target(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	char mode;
	t_recv(c, &mode, 1); /* 'n' no cache, 'c' cache, 'm' match events */
	struct t_ep t;
	struct fi_info *h = t_hints(FI_RMA | FI_TAGGED | FI_REMOTE_WRITE | FI_REMOTE_READ);
	t_open_with(&t, h, NULL, false);
	bool on = mode == 'c';
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_PROV_KEY_CACHE, &on));
	on = mode == 'm';
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_MR_MATCH_EVENTS, &on));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	static char buf[65536];
	memset(buf, 0, sizeof(buf));
	struct fid_mr *mr;
	T_OK(fi_mr_reg(t.dom, buf, sizeof(buf), FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr, NULL));
	T_OK(fi_mr_bind(mr, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr));
	struct info in;
	memcpy(in.name, t.name, 8);
	in.key = fi_mr_key(mr);
	t_send(c, &in, sizeof(in));
	t_sync(c); /* first write done */
	T_CHECK(buf[0] == 1, "[%c] write before close landed", mode);
	T_OK(fi_close(&mr->fid));
	t_sync(c); /* MR closed */
	t_sync(c); /* second write done (or failed) */
	struct fi_cxi_ep_stats_ops *sops;
	struct fi_cxi_ep_stats st;
	T_OK(fi_open_ops(&t.ep->fid, FI_CXI_EP_STATS_OPS, 0, (void **)&sops, NULL));
	T_OK(sops->get(t.ep, &st));
	if (mode == 'c') {
		T_CHECK(buf[100] == 2, "[c] write after close landed (memory still exposed)");
		T_CHECK(st.mr_hazards == 1, "[c] one hazard counted (%" PRIu64 ")", st.mr_hazards);
	} else {
		T_CHECK(buf[100] == 0, "[%c] write after close did not touch memory", mode);
		T_CHECK(st.mr_hazards == 0, "[%c] no hazard (%" PRIu64 ")", mode, st.mr_hazards);
	}
	t_close(&t);
	fi_freeinfo(h);
	return 0;
}

static void run(char mode)
{
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(target, &l, "target");
	struct t_chan c = t_link_a(&l);
	t_send(c, &mode, 1);
	struct t_ep t;
	t_open(&t, FI_RMA | FI_TAGGED | FI_WRITE | FI_READ);
	struct info in;
	t_recv(c, &in, sizeof(in));
	fi_addr_t tgt = t_insert(&t, in.name);
	char one[64], two[64];
	memset(one, 1, sizeof(one));
	memset(two, 2, sizeof(two));
	struct fi_cq_tagged_entry e;
	T_OK(fi_write(t.ep, one, sizeof(one), NULL, tgt, 0, in.key, NULL));
	t_cq_expect(t.cq, &e, "write before close");
	t_sync(c);
	t_sync(c);
	T_OK(fi_write(t.ep, two, sizeof(two), NULL, tgt, 100, in.key, NULL));
	struct fi_cq_err_entry err;
	int r = t_cq_wait(t.cq, &e, NULL, &err, 10);
	if (mode == 'c')
		T_CHECK(r == 1, "[c] write after close succeeds with the key cache (r=%d err=%d)", r, err.err);
	else
		T_CHECK(r == 0 && err.err == FI_EIO, "[%c] write after close: FI_EIO (r=%d err=%d)", mode, r, err.err);
	t_sync(c);
	t_join(p, "target");
	t_close(&t);
}

int main(void)
{
	t_who = "initiator";
	run('n');
	run('c');
	run('m');
	return t_finish("prov_mr_close");
}
