/* RMA into a passive target: the target registers a buffer and then makes no libfabric call at all (it
 * sleeps on a pipe) while the initiator writes and reads it; the target's NIC serves every access.  Sizes
 * cover the inline (IDC) path, eager DMA and a 1 MiB transfer; data and offsets are checked on both
 * sides.  Run once with the provider key cache (default) and once without it; without it, a key the
 * target never registered fails at the initiator with FI_EIO.  fi_writedata is refused without
 * FI_CXI_ENABLE_WRITEDATA, as upstream. */
#include "common.h"

#define TBUF (2u << 20)

struct keyinfo {
	char name[8];
	uint64_t key;
};

static int target(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	char mode;
	t_recv(c, &mode, 1);
	struct t_ep t;
	struct fi_info *h = t_hints(FI_RMA | FI_TAGGED | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE);
	t_open_with(&t, h, NULL, false);
	fi_freeinfo(h);
	bool cache = mode == 'c';
	T_OK(fi_control(&t.dom->fid, FI_OPT_CXI_SET_PROV_KEY_CACHE, &cache));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	char *buf = aligned_alloc(4096, TBUF);
	t_fill(buf, TBUF, 7);
	struct fid_mr *mr;
	T_OK(fi_mr_reg(t.dom, buf, TBUF, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL));
	T_OK(fi_mr_bind(mr, &t.ep->fid, 0));
	T_OK(fi_mr_enable(mr));
	struct keyinfo ki;
	memcpy(ki.name, t.name, 8);
	ki.key = fi_mr_key(mr);
	T_CHECK(ki.key != FI_KEY_NOTAVAIL, "provider key after enable: 0x%" PRIx64, ki.key);
	t_send(c, &ki, sizeof(ki));
	/* Passive: nothing but a blocking read on the pipe until the initiator is done. */
	char go;
	t_recv(c, &go, 1);
	/* The initiator wrote pattern 11 at offset 0 (1 MiB) and pattern 12 at offset 1 MiB + 8 (192 B). */
	T_CHECK(t_verify(buf, 1 << 20, 11), "1 MiB written into the passive target");
	T_CHECK(t_verify(buf + (1 << 20) + 8, 192, 12), "192-byte inline write at offset 1 MiB + 8");
	char *ref = malloc(TBUF);
	t_fill(ref, TBUF, 7);
	T_CHECK(!memcmp(buf + (1 << 20), ref + (1 << 20), 8) && !memcmp(buf + (1 << 20) + 200, ref + (1 << 20) + 200,
									TBUF - (1 << 20) - 200),
		"bytes around the inline write untouched");
	free(ref);
	t_sync(c);
	T_OK(fi_close(&mr->fid));
	t_close(&t);
	free(buf);
	return 0;
}

static void run(char mode)
{
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(target, &l, "target");
	struct t_chan c = t_link_a(&l);
	t_send(c, &mode, 1);
	t_who = mode == 'c' ? "initiator(cache)" : "initiator(no cache)";
	struct t_ep t;
	t_open(&t, FI_RMA | FI_TAGGED | FI_READ | FI_WRITE);
	struct keyinfo ki;
	t_recv(c, &ki, sizeof(ki));
	fi_addr_t tgt = t_insert(&t, ki.name);
	char *src = aligned_alloc(4096, 1 << 20), *dst = aligned_alloc(4096, 1 << 20);
	struct fi_cq_tagged_entry e;
	/* Reads of the target's initial pattern (7) at several sizes and offsets. */
	static const size_t sizes[] = { 1, 8, 192, 193, 4096, 16384, 65536, 1 << 20 };
	char *ref = malloc(TBUF);
	t_fill(ref, TBUF, 7);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t off = (i * 4099) % 4096;
		memset(dst, 0, sizes[i]);
		T_OK(fi_read(t.ep, dst, sizes[i], NULL, tgt, off, ki.key, dst));
		t_cq_expect(t.cq, &e, "read");
		T_CHECK(e.op_context == dst && (e.flags & FI_READ) && (e.flags & FI_RMA) && !memcmp(dst, ref + off, sizes[i]),
			"read %zu bytes at offset %zu", sizes[i], off);
	}
	t_fill(src, 1 << 20, 11);
	T_OK(fi_write(t.ep, src, 1 << 20, NULL, tgt, 0, ki.key, src));
	t_cq_expect(t.cq, &e, "write 1 MiB");
	T_CHECK(e.op_context == src && (e.flags & FI_WRITE), "write 1 MiB completes");
	char small[192];
	t_fill(small, sizeof(small), 12);
	/* FI_INJECT with a completion, so that the read below comes after it (no read-after-write order). */
	struct iovec siov = { small, sizeof(small) };
	struct fi_rma_iov riov = { (1 << 20) + 8, sizeof(small), ki.key };
	struct fi_msg_rma wm = { .msg_iov = &siov, .iov_count = 1, .addr = tgt, .rma_iov = &riov, .rma_iov_count = 1 };
	T_OK(fi_writemsg(t.ep, &wm, FI_INJECT | FI_COMPLETION));
	memset(small, 0, sizeof(small)); /* inject: the buffer is free at once */
	t_cq_expect(t.cq, &e, "inject write");
	T_OK(fi_inject_write(t.ep, small, 0, tgt, 0, ki.key)); /* zero-length inject: silent */
	/* Read back through the NIC what the inject wrote. */
	T_OK(fi_read(t.ep, dst, 192, NULL, tgt, (1 << 20) + 8, ki.key, NULL));
	t_cq_expect(t.cq, &e, "read after inject");
	T_CHECK(t_verify(dst, 192, 12), "inject write visible to a later read");
	/* Remote CQ data on RMA needs FI_CXI_ENABLE_WRITEDATA (prov_rma_events covers it), as upstream. */
	T_CHECK(fi_writedata(t.ep, src, 64, NULL, 0xfeed, tgt, 0, ki.key, NULL) == -FI_ENOSYS,
		"fi_writedata without FI_CXI_ENABLE_WRITEDATA: -FI_ENOSYS");
	wm.data = 0xfeed;
	T_CHECK(fi_writemsg(t.ep, &wm, FI_REMOTE_CQ_DATA) == -FI_EBADFLAGS,
		"fi_writemsg(FI_REMOTE_CQ_DATA) without FI_CXI_ENABLE_WRITEDATA: -FI_EBADFLAGS");
	if (mode == 'n') {
		/* A key the target never registered: FI_EIO at the initiator. */
		T_OK(fi_write(t.ep, src, 64, NULL, tgt, 0, 7, NULL));
		struct fi_cq_err_entry err;
		int r = t_cq_wait(t.cq, &e, NULL, &err, 10);
		T_CHECK(r == 0 && err.err == FI_EIO, "write with an unknown key: FI_EIO (got r=%d err=%d)", r, err.err);
	}
	char go = 'g';
	t_send(c, &go, 1);
	t_sync(c);
	t_join(p, "target");
	t_close(&t);
	free(src);
	free(dst);
	free(ref);
}

int main(void)
{
	run('c');
	run('n');
	return t_finish("prov_rma");
}
