/* A rendezvous send (2 MiB: above FI_CXI_RDZV_THRESHOLD) into a shorter receive: the receive completes with
 * FI_ETRUNC, the bytes it took and olen = what was left out, and the sender's send completes once, with
 * success -- also when the receive is no longer than the eager part the Put carried (0, 8, 2048 B), where
 * no byte remains to fetch but the sender still waits for a Get of its source buffer.  Each case posts the
 * receive before the send (matched on arrival) and after it (the message waits unexpected), tagged and
 * untagged.  Run it under each FI_CXI_RX_MATCH_MODE. */
#include "common.h"

#define SLEN (2u << 20)

static void one_case(struct t_ep *a, struct t_ep *b, fi_addr_t to_b, size_t rlen, bool late, bool tagged,
		     char *sb, char *rb)
{
	struct fi_context2 rctx, sctx;
	memset(rb, 0, SLEN);
	if (!late)
		T_OK(tagged ? fi_trecv(b->ep, rb, rlen, NULL, FI_ADDR_UNSPEC, 7, 0, &rctx)
			    : fi_recv(b->ep, rb, rlen, NULL, FI_ADDR_UNSPEC, &rctx));
	T_OK(tagged ? fi_tsend(a->ep, sb, SLEN, NULL, to_b, 7, &sctx) : fi_send(a->ep, sb, SLEN, NULL, to_b, &sctx));
	if (late) {
		/* Let the message arrive and wait on b's unexpected list before the receive exists. */
		struct fi_cq_tagged_entry none;
		for (int k = 0; k < 20; k++) {
			T_CHECK(fi_cq_read(b->cq, &none, 1) == -FI_EAGAIN, "nothing completes at b before its receive");
			usleep(1000);
		}
		T_OK(tagged ? fi_trecv(b->ep, rb, rlen, NULL, FI_ADDR_UNSPEC, 7, 0, &rctx)
			    : fi_recv(b->ep, rb, rlen, NULL, FI_ADDR_UNSPEC, &rctx));
	}
	const char *how = late ? "unexpected" : "expected";
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int r = t_cq_wait(b->cq, &e, NULL, &err, 10);
	T_CHECK(r == 0 && err.err == FI_ETRUNC && err.op_context == &rctx && err.len == rlen &&
			err.olen == SLEN - rlen,
		"%s %s receive of %zu B: FI_ETRUNC, len %zu, olen %zu (got r %d err %d len %zu olen %zu)", how,
		tagged ? "tagged" : "untagged", rlen, rlen, SLEN - rlen, r, r == 0 ? err.err : 0,
		r == 0 ? err.len : 0, r == 0 ? err.olen : 0);
	T_CHECK(memcmp(rb, sb, rlen) == 0 && (rlen == SLEN || rb[rlen] == 0), "  the %zu bytes taken, nothing beyond",
		rlen);
	r = t_cq_wait(a->cq, &e, NULL, &err, 10);
	T_CHECK(r == 1 && e.op_context == &sctx, "  the sender's send completes with success (r %d)", r);
	T_CHECK(fi_cq_read(a->cq, &e, 1) == -FI_EAGAIN && fi_cq_read(b->cq, &e, 1) == -FI_EAGAIN,
		"  and nothing else completes");
}

int main(void)
{
	struct t_ep a, b;
	t_open(&a, FI_MSG | FI_TAGGED);
	t_open(&b, FI_MSG | FI_TAGGED);
	fi_addr_t to_b = t_insert(&a, b.name);
	char *sb = malloc(SLEN), *rb = malloc(SLEN);
	t_fill(sb, SLEN, 3);
	static const size_t RLENS[] = { 0, 8, 2048, 2049, 65536, SLEN - 1 };
	for (size_t i = 0; i < sizeof(RLENS) / sizeof(RLENS[0]); i++)
		for (int late = 0; late < 2; late++)
			for (int tagged = 0; tagged < 2; tagged++)
				one_case(&a, &b, to_b, RLENS[i], late, tagged, sb, rb);
	free(sb);
	free(rb);
	t_close(&a);
	t_close(&b);
	return t_finish("prov_rdzv_trunc");
}
