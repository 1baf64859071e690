/* The iovec and message forms of every data-path call (fi_sendv/recvv/sendmsg/recvmsg, their tagged forms,
 * fi_readv/writev/readmsg/writemsg) and the wait objects of CQs, counters and EQs: what each form accepts,
 * the exact error of each misuse (-FI_EINVAL, -FI_EBADFLAGS, -FI_ENOSYS, -FI_ETOOSMALL, -FI_ENODATA), and
 * that the accepted forms move the right bytes.  One process talking to itself (its own address in its
 * AV). */
#include "common.h"

#include <rdma/fi_eq.h>

static struct t_ep t;
static fi_addr_t self;

static void expect_ok(const char *what)
{
	struct fi_cq_tagged_entry e;
	t_cq_expect(t.cq, &e, what);
}

static void messaging(void)
{
	t_who = "msg";
	char sbuf[256], rbuf[256];
	struct iovec siov = { sbuf, sizeof(sbuf) }, riov = { rbuf, sizeof(rbuf) };
	struct iovec two[2] = { siov, siov };
	struct fi_cq_tagged_entry e;

	/* iovec forms: one iovec moves the message; two are -FI_EINVAL; none is a 0-byte message. */
	t_fill(sbuf, sizeof(sbuf), 1);
	memset(rbuf, 0, sizeof(rbuf));
	T_OK(fi_recvv(t.ep, &riov, NULL, 1, FI_ADDR_UNSPEC, (void *)1));
	T_OK(fi_sendv(t.ep, &siov, NULL, 1, self, (void *)2));
	expect_ok("sendv/recvv");
	expect_ok("sendv/recvv");
	T_CHECK(t_verify(rbuf, sizeof(rbuf), 1), "fi_sendv -> fi_recvv: 256 bytes");
	T_CHECK(fi_sendv(t.ep, two, NULL, 2, self, NULL) == -FI_EINVAL, "fi_sendv with 2 iovecs: -FI_EINVAL");
	T_CHECK(fi_recvv(t.ep, two, NULL, 2, FI_ADDR_UNSPEC, NULL) == -FI_EINVAL, "fi_recvv with 2 iovecs: -FI_EINVAL");
	T_CHECK(fi_sendv(t.ep, NULL, NULL, 1, self, NULL) == -FI_EINVAL, "fi_sendv with a NULL iovec: -FI_EINVAL");
	T_CHECK(fi_tsendv(t.ep, two, NULL, 2, self, 5, NULL) == -FI_EINVAL, "fi_tsendv with 2 iovecs: -FI_EINVAL");
	T_CHECK(fi_trecvv(t.ep, two, NULL, 2, FI_ADDR_UNSPEC, 5, 0, NULL) == -FI_EINVAL,
		"fi_trecvv with 2 iovecs: -FI_EINVAL");
	T_OK(fi_trecvv(t.ep, NULL, NULL, 0, FI_ADDR_UNSPEC, 0x77, 0, (void *)3));
	T_OK(fi_tsendv(t.ep, NULL, NULL, 0, self, 0x77, (void *)4));
	int got0 = 0;
	for (int i = 0; i < 2; i++) {
		t_cq_expect(t.cq, &e, "0-byte tsendv/trecvv");
		got0 += e.len == 0;
	}
	T_CHECK(got0 == 2, "fi_tsendv / fi_trecvv with no iovec: 0-byte message, both complete");

	/* Tagged iovec forms keep the tag and the ignore bits. */
	t_fill(sbuf, sizeof(sbuf), 2);
	T_OK(fi_trecvv(t.ep, &riov, NULL, 1, FI_ADDR_UNSPEC, 0x1200, 0xff, (void *)5));
	T_OK(fi_tsendv(t.ep, &siov, NULL, 1, self, 0x12ab, (void *)6));
	for (int i = 0; i < 2; i++) {
		t_cq_expect(t.cq, &e, "tsendv/trecvv");
		if (e.op_context == (void *)5)
			T_CHECK(e.tag == 0x12ab && e.len == 256, "fi_trecvv (ignore 0xff) got tag 0x12ab, 256 bytes");
	}
	T_CHECK(t_verify(rbuf, sizeof(rbuf), 2), "fi_tsendv -> fi_trecvv data");

	/* Message forms: NULL message, flags outside each call's set, remote CQ data. */
	struct fi_msg m = { .msg_iov = &siov, .iov_count = 1, .addr = self, .context = (void *)7, .data = 0xd00d };
	struct fi_msg rm = { .msg_iov = &riov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = (void *)8 };
	struct fi_msg_tagged tm = { .msg_iov = &siov, .iov_count = 1, .addr = self, .tag = 9, .context = (void *)9 };
	struct fi_msg_tagged trm = { .msg_iov = &riov, .iov_count = 1, .addr = FI_ADDR_UNSPEC, .tag = 9,
				     .context = (void *)10 };
	T_CHECK(fi_sendmsg(t.ep, NULL, 0) == -FI_EINVAL, "fi_sendmsg(NULL): -FI_EINVAL");
	T_CHECK(fi_recvmsg(t.ep, NULL, 0) == -FI_EINVAL, "fi_recvmsg(NULL): -FI_EINVAL");
	T_CHECK(fi_tsendmsg(t.ep, NULL, 0) == -FI_EINVAL, "fi_tsendmsg(NULL): -FI_EINVAL");
	T_CHECK(fi_trecvmsg(t.ep, NULL, 0) == -FI_EINVAL, "fi_trecvmsg(NULL): -FI_EINVAL");
	T_CHECK(fi_sendmsg(t.ep, &m, FI_MULTI_RECV) == -FI_EBADFLAGS, "fi_sendmsg FI_MULTI_RECV: -FI_EBADFLAGS");
	T_CHECK(fi_tsendmsg(t.ep, &tm, FI_PEEK) == -FI_EBADFLAGS, "fi_tsendmsg FI_PEEK: -FI_EBADFLAGS");
	T_CHECK(fi_recvmsg(t.ep, &rm, FI_PEEK) == -FI_EBADFLAGS, "fi_recvmsg FI_PEEK (untagged): -FI_EBADFLAGS");
	T_CHECK(fi_recvmsg(t.ep, &rm, FI_INJECT) == -FI_EBADFLAGS, "fi_recvmsg FI_INJECT: -FI_EBADFLAGS");
	T_CHECK(fi_trecvmsg(t.ep, &trm, FI_INJECT) == -FI_EBADFLAGS, "fi_trecvmsg FI_INJECT: -FI_EBADFLAGS");
	m.iov_count = 2;
	T_CHECK(fi_sendmsg(t.ep, &m, 0) == -FI_EINVAL, "fi_sendmsg with 2 iovecs: -FI_EINVAL");
	m.iov_count = 1;
	T_CHECK(fi_trecvmsg(t.ep, &trm, FI_DISCARD) == -FI_EINVAL, "fi_trecvmsg FI_DISCARD alone: -FI_EINVAL");
	/* A tagged peek for nothing completes with FI_ENOMSG. */
	trm.tag = 0x4444;
	T_OK(fi_trecvmsg(t.ep, &trm, FI_PEEK | FI_COMPLETION));
	struct fi_cq_err_entry err;
	T_CHECK(t_cq_wait(t.cq, &e, NULL, &err, 10.0) == 0 && err.err == FI_ENOMSG, "fi_trecvmsg FI_PEEK: FI_ENOMSG");
	trm.tag = 9;
	/* Remote CQ data through fi_sendmsg; FI_REMOTE_CQ_DATA is accepted by fi_recvmsg. */
	t_fill(sbuf, sizeof(sbuf), 3);
	T_OK(fi_recvmsg(t.ep, &rm, FI_REMOTE_CQ_DATA | FI_COMPLETION));
	T_OK(fi_sendmsg(t.ep, &m, FI_REMOTE_CQ_DATA | FI_COMPLETION));
	bool data_ok = false;
	for (int i = 0; i < 2; i++) {
		t_cq_expect(t.cq, &e, "sendmsg/recvmsg");
		if (e.op_context == (void *)8)
			data_ok = (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xd00d && e.len == 256;
	}
	T_CHECK(data_ok, "fi_sendmsg FI_REMOTE_CQ_DATA -> fi_recvmsg: data 0xd00d, 256 bytes");
	T_CHECK(t_verify(rbuf, sizeof(rbuf), 3), "fi_sendmsg -> fi_recvmsg data");
	t_fill(sbuf, sizeof(sbuf), 4);
	T_OK(fi_trecvmsg(t.ep, &trm, FI_COMPLETION));
	T_OK(fi_tsendmsg(t.ep, &tm, FI_COMPLETION));
	expect_ok("tsendmsg/trecvmsg");
	expect_ok("tsendmsg/trecvmsg");
	T_CHECK(t_verify(rbuf, sizeof(rbuf), 4), "fi_tsendmsg -> fi_trecvmsg data");
}

static void rma(void)
{
	t_who = "rma";
	enum { MRLEN = 8192 };
	char *mem = aligned_alloc(4096, MRLEN), loc[512];
	t_fill(mem, MRLEN, 20);
	struct fid_mr *mr;
	T_OK(fi_mr_reg(t.dom, mem, MRLEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	T_OK(fi_mr_bind(mr, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr));
	uint64_t key = fi_mr_key(mr);
	uint64_t base = 0; /* FI_MR_VIRT_ADDR is not in the mode: offsets */
	struct iovec v = { loc, sizeof(loc) }, two[2] = { v, v };

	memset(loc, 0, sizeof(loc));
	T_OK(fi_readv(t.ep, &v, NULL, 1, self, base + 1024, key, (void *)1));
	expect_ok("fi_readv");
	T_CHECK(!memcmp(loc, mem + 1024, sizeof(loc)), "fi_readv: 512 bytes from offset 1024");
	t_fill(loc, sizeof(loc), 21);
	T_OK(fi_writev(t.ep, &v, NULL, 1, self, base + 2048, key, (void *)2));
	expect_ok("fi_writev");
	T_CHECK(t_verify(mem + 2048, sizeof(loc), 21), "fi_writev: 512 bytes at offset 2048");
	T_CHECK(fi_readv(t.ep, two, NULL, 2, self, base, key, NULL) == -FI_EINVAL, "fi_readv with 2 iovecs: -FI_EINVAL");
	T_CHECK(fi_writev(t.ep, two, NULL, 2, self, base, key, NULL) == -FI_EINVAL,
		"fi_writev with 2 iovecs: -FI_EINVAL");
	T_CHECK(fi_readv(t.ep, NULL, NULL, 1, self, base, key, NULL) == -FI_EINVAL, "fi_readv NULL iovec: -FI_EINVAL");
	T_OK(fi_writev(t.ep, NULL, NULL, 0, self, base, key, (void *)3));
	struct fi_cq_tagged_entry e;
	t_cq_expect(t.cq, &e, "0-byte fi_writev");
	T_CHECK(e.op_context == (void *)3 && (e.flags & FI_WRITE), "fi_writev with no iovec: a 0-byte write completes");

	struct fi_rma_iov r = { .addr = base + 4096, .len = sizeof(loc), .key = key };
	struct fi_msg_rma m = { .msg_iov = &v, .iov_count = 1, .addr = self, .rma_iov = &r, .rma_iov_count = 1,
				.context = (void *)4, .data = 0x55 };
	T_CHECK(fi_readmsg(t.ep, NULL, 0) == -FI_EINVAL, "fi_readmsg(NULL): -FI_EINVAL");
	T_CHECK(fi_writemsg(t.ep, NULL, 0) == -FI_EINVAL, "fi_writemsg(NULL): -FI_EINVAL");
	m.rma_iov_count = 2;
	T_CHECK(fi_readmsg(t.ep, &m, 0) == -FI_EINVAL, "fi_readmsg with 2 remote iovecs: -FI_EINVAL");
	m.rma_iov_count = 1;
	r.len = 100;
	T_CHECK(fi_writemsg(t.ep, &m, 0) == -FI_EINVAL, "fi_writemsg local/remote length mismatch: -FI_EINVAL");
	r.len = sizeof(loc);
	T_CHECK(fi_readmsg(t.ep, &m, FI_MULTI_RECV) == -FI_EBADFLAGS, "fi_readmsg FI_MULTI_RECV: -FI_EBADFLAGS");
	T_CHECK(fi_writemsg(t.ep, &m, FI_PEEK) == -FI_EBADFLAGS, "fi_writemsg FI_PEEK: -FI_EBADFLAGS");
	T_CHECK(fi_readmsg(t.ep, &m, FI_REMOTE_CQ_DATA) == -FI_EBADFLAGS, "fi_readmsg FI_REMOTE_CQ_DATA: -FI_EBADFLAGS");
	T_CHECK(fi_writemsg(t.ep, &m, FI_REMOTE_CQ_DATA) == -FI_EBADFLAGS,
		"fi_writemsg FI_REMOTE_CQ_DATA without FI_CXI_ENABLE_WRITEDATA: -FI_EBADFLAGS");
	t_fill(loc, sizeof(loc), 22);
	T_OK(fi_writemsg(t.ep, &m, FI_COMPLETION));
	expect_ok("fi_writemsg");
	T_CHECK(t_verify(mem + 4096, sizeof(loc), 22), "fi_writemsg: 512 bytes at offset 4096");
	memset(loc, 0, sizeof(loc));
	r.addr = base + 1024;
	T_OK(fi_readmsg(t.ep, &m, FI_COMPLETION));
	t_cq_expect(t.cq, &e, "fi_readmsg");
	T_CHECK(!memcmp(loc, mem + 1024, sizeof(loc)) && (e.flags & FI_READ) && !(e.flags & FI_REMOTE_CQ_DATA),
		"fi_readmsg: 512 bytes from offset 1024 (its data field ignored)");
	T_OK(fi_close(&mr->fid));
	free(mem);
}

static void waits(void)
{
	t_who = "wait";
	/* CQ: FI_WAIT_POLLFD hands out its eventfd as one pollfd entry. */
	struct fid_cq *cq;
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_POLLFD, .size = 16 };
	T_OK(fi_cq_open(t.dom, &ca, &cq, NULL));
	enum fi_wait_obj wo = FI_WAIT_NONE;
	T_CHECK(fi_control(&cq->fid, FI_GETWAITOBJ, &wo) == 0 && wo == FI_WAIT_POLLFD, "CQ FI_WAIT_POLLFD kept");
	struct pollfd pfd = { -1, 0, 0 };
	struct fi_wait_pollfd wp = { .change_index = 0, .nfds = 0, .fd = &pfd };
	T_CHECK(fi_control(&cq->fid, FI_GETWAIT, &wp) == -FI_ETOOSMALL && wp.nfds == 1,
		"FI_GETWAIT with no room: -FI_ETOOSMALL, nfds 1");
	wp.nfds = 1;
	T_CHECK(fi_control(&cq->fid, FI_GETWAIT, &wp) == 0 && wp.nfds == 1 && pfd.fd >= 0 && pfd.events == POLLIN,
		"FI_GETWAIT: one pollfd, POLLIN on an fd");
	T_CHECK(fi_control(&cq->fid, FI_GETWAIT, NULL) == -FI_EINVAL, "FI_GETWAIT(NULL): -FI_EINVAL");
	T_CHECK(fi_control(&cq->fid, FI_GETWAITOBJ, NULL) == -FI_EINVAL, "FI_GETWAITOBJ(NULL): -FI_EINVAL");
	T_CHECK(fi_control(&cq->fid, FI_GETOPSFLAG, &wo) == -FI_ENOSYS, "CQ fi_control(FI_GETOPSFLAG): -FI_ENOSYS");
	T_OK(fi_close(&cq->fid));
	ca.wait_obj = FI_WAIT_UNSPEC;
	T_OK(fi_cq_open(t.dom, &ca, &cq, NULL));
	int fd = -1;
	T_CHECK(fi_control(&cq->fid, FI_GETWAITOBJ, &wo) == 0 && wo == FI_WAIT_FD, "CQ FI_WAIT_UNSPEC becomes FD");
	T_CHECK(fi_control(&cq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0, "CQ FI_GETWAIT: an fd");
	T_OK(fi_close(&cq->fid));
	ca.wait_obj = FI_WAIT_NONE;
	T_OK(fi_cq_open(t.dom, &ca, &cq, NULL));
	T_CHECK(fi_control(&cq->fid, FI_GETWAIT, &fd) == -FI_ENODATA, "CQ FI_WAIT_NONE: FI_GETWAIT -FI_ENODATA");
	T_OK(fi_close(&cq->fid));
	ca.wait_obj = FI_WAIT_SET;
	T_CHECK(fi_cq_open(t.dom, &ca, &cq, NULL) == -FI_ENOSYS, "CQ FI_WAIT_SET: -FI_ENOSYS");

	/* Counter: no POLLFD; blocking kinds become FD. */
	struct fid_cntr *ct;
	struct fi_cntr_attr ta = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_POLLFD };
	T_CHECK(fi_cntr_open(t.dom, &ta, &ct, NULL) == -FI_ENOSYS, "counter FI_WAIT_POLLFD: -FI_ENOSYS");
	ta.wait_obj = FI_WAIT_YIELD;
	T_OK(fi_cntr_open(t.dom, &ta, &ct, NULL));
	T_CHECK(fi_control(&ct->fid, FI_GETWAITOBJ, &wo) == 0 && wo == FI_WAIT_FD, "counter FI_WAIT_YIELD becomes FD");
	fd = -1;
	T_CHECK(fi_control(&ct->fid, FI_GETWAIT, &fd) == 0 && fd >= 0, "counter FI_GETWAIT: an fd");
	T_CHECK(fi_control(&ct->fid, FI_GETWAIT, NULL) == -FI_EINVAL, "counter FI_GETWAIT(NULL): -FI_EINVAL");
	T_OK(fi_close(&ct->fid));
	ta.wait_obj = FI_WAIT_NONE;
	T_OK(fi_cntr_open(t.dom, &ta, &ct, NULL));
	T_CHECK(fi_control(&ct->fid, FI_GETWAIT, &fd) == -FI_ENODATA, "counter FI_WAIT_NONE: FI_GETWAIT -FI_ENODATA");
	T_OK(fi_close(&ct->fid));

	/* EQ: no POLLFD; blocking kinds become FD; other commands -FI_ENOSYS. */
	struct fid_eq *eq;
	struct fi_eq_attr ea = { .size = 8, .wait_obj = FI_WAIT_POLLFD };
	T_CHECK(fi_eq_open(t.fab, &ea, &eq, NULL) == -FI_ENOSYS, "EQ FI_WAIT_POLLFD: -FI_ENOSYS");
	ea.wait_obj = FI_WAIT_SET;
	T_CHECK(fi_eq_open(t.fab, &ea, &eq, NULL) == -FI_ENOSYS, "EQ FI_WAIT_SET: -FI_ENOSYS");
	ea.wait_obj = FI_WAIT_MUTEX_COND;
	T_OK(fi_eq_open(t.fab, &ea, &eq, NULL));
	T_CHECK(fi_control(&eq->fid, FI_GETWAITOBJ, &wo) == 0 && wo == FI_WAIT_FD, "EQ FI_WAIT_MUTEX_COND becomes FD");
	fd = -1;
	T_CHECK(fi_control(&eq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0, "EQ FI_GETWAIT: an fd");
	T_CHECK(fi_control(&eq->fid, FI_GETOPSFLAG, &wo) == -FI_ENOSYS, "EQ fi_control(FI_GETOPSFLAG): -FI_ENOSYS");
	T_OK(fi_close(&eq->fid));
}

int main(void)
{
	t_open(&t, FI_MSG | FI_TAGGED | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
	self = t_insert(&t, t.name);
	messaging();
	rma();
	waits();
	t_close(&t);
	return t_finish("prov_op_variants");
}
