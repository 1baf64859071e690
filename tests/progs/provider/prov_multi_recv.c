/* Multi-receive buffers: 1000 messages of mixed sizes from one sender land in two 64 KiB buffers that the
 * receiver reposts as they retire.  Each message has its own completion pointing into the buffer at the
 * next free offset; the completion that leaves less than min_multi_recv free carries FI_MULTI_RECV; no
 * byte lands outside a buffer; cancelling a posted buffer gives FI_ECANCELED with FI_MULTI_RECV. */
#include "common.h"

#define NMSG 1000
#define BUFSZ (64 * 1024)
#define MIN_FREE 4096 /* at least the largest message: nothing is truncated */
#define GUARD 4096

static size_t msg_len(int i)
{
	static const size_t lens[] = { 1, 8, 100, 192, 193, 700, 2048, 4000 };
	return lens[(i * 7) % 8];
}

static int sender(void *arg)
{
	struct t_link *l = arg;
	struct t_chan c = t_link_b(l);
	struct t_ep t;
	t_open(&t, FI_MSG);
	char name[8];
	t_recv(c, name, 8);
	fi_addr_t rx = t_insert(&t, name);
	char buf[4096];
	struct fi_cq_tagged_entry e;
	for (int i = 0; i < NMSG; i++) {
		size_t len = msg_len(i);
		t_fill(buf, len, (uint32_t)i);
		ssize_t r;
		while ((r = fi_send(t.ep, buf, len, NULL, rx, NULL)) == -FI_EAGAIN)
			;
		T_OK(r);
		t_cq_expect(t.cq, &e, "send");
	}
	t_sync(c);
	t_close(&t);
	return 0;
}

int main(void)
{
	struct t_link l;
	t_link_init(&l);
	pid_t p = t_fork(sender, &l, "sender");
	struct t_chan c = t_link_a(&l);
	t_who = "receiver";
	struct t_ep t;
	struct fi_info *h = t_hints(FI_MSG | FI_MULTI_RECV);
	t_open_with(&t, h, NULL, false);
	fi_freeinfo(h);
	size_t mf = MIN_FREE;
	T_OK(fi_setopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &mf, sizeof(mf)));
	T_OK(fi_enable(t.ep));
	t.namelen = 8;
	T_OK(fi_getname(&t.ep->fid, t.name, &t.namelen));
	T_CHECK(fi_setopt(&t.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &mf, sizeof(mf)) == -FI_EOPBADSTATE,
		"FI_OPT_MIN_MULTI_RECV after enable: -FI_EOPBADSTATE");
	/* Two buffers with guard bands that must stay untouched. */
	char *mem = malloc(2 * (BUFSZ + 2 * GUARD));
	memset(mem, 0xee, 2 * (BUFSZ + 2 * GUARD));
	char *bufs[2] = { mem + GUARD, mem + BUFSZ + 3 * GUARD };
	struct iovec iov[2] = { { bufs[0], BUFSZ }, { bufs[1], BUFSZ } };
	struct fi_msg m[2] = { { .msg_iov = &iov[0], .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = bufs[0] },
			       { .msg_iov = &iov[1], .iov_count = 1, .addr = FI_ADDR_UNSPEC, .context = bufs[1] } };
	T_OK(fi_recvmsg(t.ep, &m[0], FI_MULTI_RECV));
	T_OK(fi_recvmsg(t.ep, &m[1], FI_MULTI_RECV));
	t_send(c, t.name, 8);
	size_t off[2] = { 0, 0 };
	int cur = 0, got = 0, retired = 0, bad_off = 0, bad_data = 0, bad_flag = 0;
	struct fi_cq_tagged_entry e;
	while (got < NMSG) {
		t_cq_expect(t.cq, &e, "multi-recv completion");
		int b = e.op_context == bufs[0] ? 0 : e.op_context == bufs[1] ? 1 : -1;
		if (b < 0) {
			bad_flag++;
			break;
		}
		if (e.len) {
			if (b != cur || (char *)e.buf != bufs[b] + off[b])
				bad_off++;
			if (!t_verify(e.buf, e.len, (uint32_t)got) || e.len != msg_len(got))
				bad_data++;
			off[b] += e.len;
			got++;
		}
		bool last = BUFSZ - off[b] < MIN_FREE;
		if (!!(e.flags & FI_MULTI_RECV) != last && e.len)
			bad_flag++;
		if (e.flags & FI_MULTI_RECV) {
			retired++;
			off[b] = 0;
			cur = 1 - b;
			T_OK(fi_recvmsg(t.ep, &m[b], FI_MULTI_RECV)); /* repost */
		}
	}
	T_CHECK(got == NMSG, "%d messages received", got);
	T_CHECK(bad_off == 0, "every completion at the buffer's next free offset (%d wrong)", bad_off);
	T_CHECK(bad_data == 0, "every message's bytes and length intact (%d wrong)", bad_data);
	T_CHECK(bad_flag == 0, "FI_MULTI_RECV exactly on the completion that retires a buffer (%d wrong)", bad_flag);
	T_CHECK(retired >= 10, "%d buffers retired and reposted", retired);
	bool guards = true;
	for (int i = 0; i < GUARD; i++)
		if ((unsigned char)mem[i] != 0xee || (unsigned char)bufs[0][BUFSZ + i] != 0xee ||
		    (unsigned char)bufs[1][BUFSZ + i] != 0xee || (unsigned char)bufs[1][-GUARD + i] != 0xee)
			guards = false;
	T_CHECK(guards, "no byte outside the buffers");
	t_sync(c);
	t_join(p, "sender");
	/* Cancel both posted buffers. */
	T_OK(fi_cancel(&t.ep->fid, bufs[0]));
	T_OK(fi_cancel(&t.ep->fid, bufs[1]));
	int cancelled = 0;
	for (int i = 0; i < 2; i++) {
		struct fi_cq_err_entry err;
		int r = t_cq_wait(t.cq, &e, NULL, &err, 5);
		if (r == 0 && err.err == FI_ECANCELED && (err.flags & FI_MULTI_RECV) &&
		    (err.op_context == bufs[0] || err.op_context == bufs[1]))
			cancelled++;
	}
	T_CHECK(cancelled == 2, "cancel: FI_ECANCELED with FI_MULTI_RECV for both buffers (%d)", cancelled);
	t_close(&t);
	free(mem);
	return t_finish("prov_multi_recv");
}
