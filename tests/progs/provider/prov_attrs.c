/* Object attributes and flags the provider must accept as upstream cxi does (issue: Mercury sets
 * FI_AFFINITY on its CQ whenever the process is bound to one core, and fi_cq_open refused it).  Each check
 * names the upstream rule it follows.  One process talking to itself. */
#include "common.h"

#include <rdma/fi_eq.h>

#include "fi_cxi_ext.h"

static struct t_ep t;
static fi_addr_t self;

static void cq_attrs(void)
{
	t_who = "cq";
	struct fid_cq *cq;
	/* util's CQ check: FI_AFFINITY is a valid flag; cxi ignores the signaling vector. */
	struct fi_cq_attr a = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD, .flags = FI_AFFINITY,
				.signaling_vector = 3 };
	T_CHECK(fi_cq_open(t.dom, &a, &cq, NULL) == 0, "CQ with FI_AFFINITY (signaling vector 3): opened");
	struct fid_ep *ep2;
	T_OK(fi_endpoint(t.dom, t.info, &ep2, NULL));
	T_OK(fi_ep_bind(ep2, &t.av->fid, 0));
	T_OK(fi_ep_bind(ep2, &cq->fid, FI_TRANSMIT | FI_RECV));
	T_OK(fi_enable(ep2));
	char buf[64] = "affinity", rbuf[64];
	T_OK(fi_recv(t.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, (void *)2));
	T_OK(fi_send(ep2, buf, sizeof(buf), NULL, self, (void *)1));
	struct fi_cq_tagged_entry e;
	t_cq_expect(cq, &e, "send on an FI_AFFINITY CQ");
	T_CHECK(e.op_context == (void *)1, "FI_AFFINITY CQ reports its completion");
	t_cq_expect(t.cq, &e, "receive of the FI_AFFINITY CQ's send");
	T_OK(fi_close(&ep2->fid));
	T_OK(fi_close(&cq->fid));

	/* cxi: NULL attributes are the defaults (context format). */
	T_CHECK(fi_cq_open(t.dom, NULL, &cq, NULL) == 0, "CQ with NULL attributes: opened with the defaults");
	T_OK(fi_close(&cq->fid));
	/* util: flags other than FI_AFFINITY/FI_PEER are invalid; peer CQs are not offered here. */
	a.flags = 1ULL << 40;
	T_CHECK(fi_cq_open(t.dom, &a, &cq, NULL) == -FI_EINVAL, "CQ with an unknown flag: -FI_EINVAL");
	a.flags = FI_PEER;
	T_CHECK(fi_cq_open(t.dom, &a, &cq, NULL) == -FI_ENOSYS, "CQ with FI_PEER: -FI_ENOSYS");
}

static void eq_attrs(void)
{
	t_who = "eq";
	struct fid_eq *eq;
	struct fi_eq_attr a = { .size = 8, .wait_obj = FI_WAIT_UNSPEC, .flags = FI_AFFINITY | FI_WRITE };
	T_CHECK(fi_eq_open(t.fab, &a, &eq, NULL) == 0, "EQ with FI_AFFINITY | FI_WRITE: opened");
	T_OK(fi_close(&eq->fid));
	T_CHECK(fi_eq_open(t.fab, NULL, &eq, NULL) == 0, "EQ with NULL attributes: opened");
	T_OK(fi_close(&eq->fid));
	a.flags = 1ULL << 40;
	T_CHECK(fi_eq_open(t.fab, &a, &eq, NULL) == -FI_EINVAL, "EQ with an unknown flag: -FI_EINVAL");
}

/* cxi: events FI_CXI_CNTR_EVENTS_BYTES count bytes; FI_CXI_CNTR_CACHED is accepted; NULL attributes. */
static void cntr_attrs(void)
{
	t_who = "cntr";
	struct fid_cntr *bytes, *ops, *dflt;
	struct fi_cntr_attr a = { .events = FI_CXI_CNTR_EVENTS_BYTES, .wait_obj = FI_WAIT_NONE,
				  .flags = FI_CXI_CNTR_CACHED };
	T_CHECK(fi_cntr_open(t.dom, &a, &bytes, NULL) == 0, "byte counter with FI_CXI_CNTR_CACHED: opened");
	a.events = FI_CNTR_EVENTS_COMP;
	a.flags = 0;
	T_OK(fi_cntr_open(t.dom, &a, &ops, NULL));
	T_CHECK(fi_cntr_open(t.dom, NULL, &dflt, NULL) == 0, "counter with NULL attributes: opened");
	a.flags = 1ULL << 40;
	struct fid_cntr *bad;
	T_CHECK(fi_cntr_open(t.dom, &a, &bad, NULL) == -FI_ENOSYS, "counter with an unknown flag: -FI_ENOSYS");
	a.flags = 0;
	a.events = 7;
	T_CHECK(fi_cntr_open(t.dom, &a, &bad, NULL) == -FI_ENOSYS, "counter with unknown events: -FI_ENOSYS");

	/* ep2 sends, its FI_SEND counter counting bytes; ep3 receives, its FI_RECV counter counting messages. */
	struct fid_ep *ep2, *ep3;
	T_OK(fi_endpoint(t.dom, t.info, &ep2, NULL));
	T_OK(fi_endpoint(t.dom, t.info, &ep3, NULL));
	T_OK(fi_ep_bind(ep2, &t.av->fid, 0));
	T_OK(fi_ep_bind(ep3, &t.av->fid, 0));
	T_OK(fi_ep_bind(ep2, &t.cq->fid, FI_TRANSMIT | FI_RECV));
	T_OK(fi_ep_bind(ep3, &t.cq->fid, FI_TRANSMIT | FI_RECV));
	T_OK(fi_ep_bind(ep2, &bytes->fid, FI_SEND));
	T_OK(fi_ep_bind(ep3, &ops->fid, FI_RECV));
	/* util: binds naming no event / no direction bind nothing and succeed. */
	T_CHECK(fi_ep_bind(ep2, &dflt->fid, 0) == 0, "counter bind with no flags: 0");
	T_CHECK(fi_ep_bind(ep2, &t.cq->fid, 0) == 0, "CQ bind with no direction: 0");
	T_CHECK(fi_ep_bind(ep2, &t.cq->fid, 1ULL << 40) == -FI_EBADFLAGS, "CQ bind with an unknown flag: -FI_EBADFLAGS");
	T_OK(fi_enable(ep2));
	T_OK(fi_enable(ep3));
	char name3[64];
	size_t n3 = sizeof(name3);
	T_OK(fi_getname(&ep3->fid, name3, &n3));
	fi_addr_t to3 = t_insert(&t, name3);
	static char rbuf[3][1000], sbuf[1000];
	static const size_t lens[3] = { 100, 300, 1000 };
	for (int i = 0; i < 3; i++)
		T_OK(fi_recv(ep3, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, (void *)(uintptr_t)(10 + i)));
	for (int i = 0; i < 3; i++)
		T_OK(fi_send(ep2, sbuf, lens[i], NULL, to3, (void *)(uintptr_t)(20 + i)));
	struct fi_cq_tagged_entry e;
	for (int i = 0; i < 6; i++)
		t_cq_expect(t.cq, &e, "byte-counted sends");
	T_CHECK(fi_cntr_read(bytes) == 1400, "byte counter: 100 + 300 + 1000 = 1400 (got %" PRIu64 ")",
		fi_cntr_read(bytes));
	T_CHECK(fi_cntr_read(ops) == 3, "completion counter: 3 (got %" PRIu64 ")", fi_cntr_read(ops));
	T_OK(fi_close(&ep3->fid));
	T_OK(fi_close(&ep2->fid));
	T_OK(fi_close(&bytes->fid));
	T_OK(fi_close(&ops->fid));
	T_OK(fi_close(&dflt->fid));
}

/* cxi's AV checks: FI_SYMMETRIC accepted; FI_EVENT, FI_READ, a name, rx_ctx_bits are -FI_EINVAL. */
static void av_attrs(void)
{
	t_who = "av";
	struct fid_av *av;
	struct fi_av_attr a = { .type = FI_AV_TABLE, .flags = FI_SYMMETRIC };
	T_CHECK(fi_av_open(t.dom, &a, &av, NULL) == 0, "AV with FI_SYMMETRIC: opened");
	T_OK(fi_close(&av->fid));
	a.flags = FI_EVENT;
	T_CHECK(fi_av_open(t.dom, &a, &av, NULL) == -FI_EINVAL, "AV with FI_EVENT: -FI_EINVAL");
	a.flags = FI_READ;
	T_CHECK(fi_av_open(t.dom, &a, &av, NULL) == -FI_EINVAL, "AV with FI_READ: -FI_EINVAL");
	a.flags = 0;
	a.name = "shared";
	T_CHECK(fi_av_open(t.dom, &a, &av, NULL) == -FI_EINVAL, "named (shared) AV: -FI_EINVAL");
}

int main(void)
{
	t_open(&t, FI_MSG | FI_TAGGED);
	self = t_insert(&t, t.name);
	cq_attrs();
	eq_attrs();
	cntr_attrs();
	av_attrs();
	t_close(&t);
	return t_finish("prov_attrs");
}
