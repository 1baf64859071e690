/* FI_PROTO_CXI_RNR: a send that finds no receive is NACKed and retried by the initiator (1, 11, 81, 271,
 * 641 us, then every 641 us) until the receiver posts a buffer; with a short retry budget
 * (fi_set_val(FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME)) the send completes with FI_EIO and prov_errno 18. */
#include "common.h"

static struct fi_info *rnr_hints(void)
{
	struct fi_info *h = t_hints(FI_TAGGED | FI_MSG | FI_DIRECTED_RECV);
	h->ep_attr->protocol = FI_PROTO_CXI_RNR;
	return h;
}

static int receiver(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct fi_info *h = rnr_hints();
	struct t_ep t;
	t_open_with(&t, h, NULL, true);
	T_CHECK(t.info->ep_attr->protocol == FI_PROTO_CXI_RNR && t.info->tx_attr->inject_size == 0 &&
			t.info->ep_attr->mem_tag_format == 0xAAAAAAAAAAULL,
		"RNR offer: protocol %u, inject_size %zu, 40-bit tags", t.info->ep_attr->protocol,
		t.info->tx_attr->inject_size);
	t_send(c, t.name, 8);
	/* Late receive: the sender's first attempts find nothing. */
	char go;
	t_recv(c, &go, 1);
	usleep(50 * 1000);
	char buf[64];
	T_OK(fi_trecv(t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 9, 0, buf));
	struct fi_cq_tagged_entry e;
	t_cq_expect(t.cq, &e, "late receive");
	T_CHECK(!strcmp(buf, "retried"), "message delivered after the late receive: '%s'", buf);
	t_sync(c);
	/* Then never post again: the second send times out. */
	t_sync(c);
	t_close(&t);
	fi_freeinfo(h);
	return 0;
}

int main(void)
{
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(receiver, &l, "receiver");
	struct t_chan c = t_link_a(&l);
	t_who = "sender";
	struct fi_info *h = rnr_hints();
	struct t_ep t;
	t_open_with(&t, h, NULL, true);
	char name[8];
	t_recv(c, name, 8);
	fi_addr_t rx = t_insert(&t, name);
	struct fi_cxi_ep_stats_ops *sops;
	T_OK(fi_open_ops(&t.ep->fid, FI_CXI_EP_STATS_OPS, 0, (void **)&sops, NULL));
	struct fi_cxi_ep_stats st0, st1, st2;
	T_OK(sops->get(t.ep, &st0));
	char go = 'g';
	double t0 = t_now();
	T_OK(fi_tsend(t.ep, "retried", 8, NULL, rx, 9, NULL));
	t_send(c, &go, 1);
	struct fi_cq_tagged_entry e;
	t_cq_expect(t.cq, &e, "send after RNR retries");
	double dt = t_now() - t0;
	T_OK(sops->get(t.ep, &st1));
	T_CHECK(st1.total_rnr_nacks > st0.total_rnr_nacks && st1.total_retries > st0.total_retries,
		"NACKs %" PRIu64 " and retries %" PRIu64 " counted", st1.total_rnr_nacks - st0.total_rnr_nacks,
		st1.total_retries - st0.total_retries);
	T_CHECK(dt >= 0.04, "the send completed only after the late receive (%.3f s)", dt);
	t_sync(c);
	uint64_t us = 2000;
	T_OK(fi_set_val(&t.ep->fid, FI_OPT_CXI_SET_RNR_MAX_RETRY_TIME, &us));
	t0 = t_now();
	T_OK(fi_tsend(t.ep, "never", 6, NULL, rx, 10, NULL));
	struct fi_cq_err_entry err;
	int r = t_cq_wait(t.cq, &e, NULL, &err, 10);
	dt = t_now() - t0;
	T_CHECK(r == 0 && err.err == FI_EIO && err.prov_errno == 18,
		"RNR timeout: FI_EIO, prov_errno 18 (r=%d err=%d prov_errno=%d)", r, err.err, err.prov_errno);
	T_CHECK(dt < 0.5, "timed out after the 2 ms budget, not the 500 ms default (%.3f s)", dt);
	T_OK(sops->get(t.ep, &st2));
	T_CHECK(st2.total_rnr_nacks > st1.total_rnr_nacks, "timeout NACKs counted");
	t_sync(c);
	t_join(p, "receiver");
	t_close(&t);
	fi_freeinfo(h);
	return t_finish("prov_rnr");
}
