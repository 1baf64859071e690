/* Multi-receive buffers: 1000 messages of mixed sizes from one sender land in two 64 KiB buffers that the
 * receiver reposts as they retire.  Each message has its own completion pointing into the buffer; within
 * one use of a buffer the messages are packed from offset 0 without gaps or overlaps (completions of
 * eager and inline messages may be reported out of order); the retiring completion carries FI_MULTI_RECV
 * and is the last of its buffer; every message arrives exactly once with its bytes; no byte lands outside a
 * buffer; cancelling a posted buffer gives FI_ECANCELED with FI_MULTI_RECV. */
#include "common.h"

#define NMSG 1000
#define BUFSZ (64 * 1024)
#define MIN_FREE 4096 /* at least the largest message: nothing is truncated */
#define GUARD 4096

static size_t msg_len(int i)
{
	static const size_t lens[] = { 8, 16, 100, 192, 193, 700, 2048, 4000 };
	return lens[(i * 7) % 8];
}

/* A message names itself: its index, then a pattern seeded by it. */
static void msg_fill(char *buf, int i)
{
	size_t len = msg_len(i);
	t_fill(buf, len, (uint32_t)i);
	memcpy(buf, &i, sizeof(i));
}

static int msg_check(const char *buf, size_t len)
{
	int i;
	memcpy(&i, buf, sizeof(i));
	if (i < 0 || i >= NMSG || msg_len(i) != len)
		return -1;
	char ref[4096];
	msg_fill(ref, i);
	return memcmp(ref, buf, len) ? -1 : i;
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
		msg_fill(buf, i);
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
	/* Per buffer use: the (offset, len) of its messages, checked when the buffer retires. */
	struct seg {
		size_t off, len;
	} segs[2][1024];
	int nseg[2] = { 0, 0 }, got = 0, retired = 0, bad_pack = 0, bad_data = 0, bad_flag = 0, dup = 0;
	static bool seen[NMSG];
	struct fi_cq_tagged_entry e;
	while (got < NMSG) {
		t_cq_expect(t.cq, &e, "multi-recv completion");
		int b = e.op_context == bufs[0] ? 0 : e.op_context == bufs[1] ? 1 : -1;
		if (b < 0 || !(e.flags & FI_RECV) || !(e.flags & FI_MSG)) {
			bad_flag++;
			break;
		}
		if (e.len) {
			int i = msg_check(e.buf, e.len);
			if (i < 0)
				bad_data++;
			else if (seen[i])
				dup++;
			else
				seen[i] = true;
			if (nseg[b] < 1024)
				segs[b][nseg[b]++] = (struct seg){ (size_t)((char *)e.buf - bufs[b]), e.len };
			got++;
		}
		if (e.flags & FI_MULTI_RECV) {
			/* Sort this use's messages by offset: they must tile [0, used) exactly. */
			for (int x = 0; x < nseg[b]; x++)
				for (int y = x + 1; y < nseg[b]; y++)
					if (segs[b][y].off < segs[b][x].off) {
						struct seg tmp = segs[b][x];
						segs[b][x] = segs[b][y];
						segs[b][y] = tmp;
					}
			size_t end = 0;
			for (int x = 0; x < nseg[b]; x++) {
				if (segs[b][x].off != end)
					bad_pack++;
				end = segs[b][x].off + segs[b][x].len;
			}
			if (end > BUFSZ || BUFSZ - end >= MIN_FREE)
				bad_flag++; /* retired while at least min_multi_recv was still free */
			nseg[b] = 0;
			retired++;
			T_OK(fi_recvmsg(t.ep, &m[b], FI_MULTI_RECV)); /* repost */
		}
	}
	T_CHECK(got == NMSG, "%d messages received", got);
	int missing = 0;
	for (int i = 0; i < NMSG; i++)
		missing += !seen[i];
	T_CHECK(missing == 0 && dup == 0, "every message exactly once (%d missing, %d duplicated)", missing, dup);
	T_CHECK(bad_data == 0, "every message's bytes and length intact (%d wrong)", bad_data);
	T_CHECK(bad_pack == 0, "messages packed from offset 0 without gaps or overlaps (%d wrong)", bad_pack);
	T_CHECK(bad_flag == 0, "FI_MULTI_RECV retires a buffer only once less than min_multi_recv is free (%d wrong)",
		bad_flag);
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
