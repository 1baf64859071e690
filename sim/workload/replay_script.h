/* A capture (capture.h) turned into what replay clients send: the requests each captured client sent to
 * the captured server, in order, with the fields a replay must rewrite per simulated client and request,
 * and the memory regions the client exposed.
 *
 * Which endpoint is the server: the one named by opts.server_process (a program name), else the
 * destination that the most distinct endpoints sent messages to (then the most messages).
 *
 * Linking a request to its response: an RPC client posts a tagged receive for the response and sends the
 * request carrying that receive's tag -- in the immediate data (Mercury's fi_senddata for unexpected
 * messages, with FI_MULTI_RECV servers) or in the message tag (Mercury's fi_tsend with its unexpected bit
 * set) -- and the server answers with a tagged send of that tag.  For each request the loader looks,
 * among the client's tagged receives posted before it and not yet linked, for the latest one whose tag is
 * the request's data or tag, whole or in its low 32 bits (Mercury's NA_OFI_TAG_MASK); that field
 * (reply_field, reply_mask) is what replay rewrites.  A request without such a receive expects no response.
 *
 * Source address in the payload: servers that cannot use FI_SOURCE (Mercury built on libfabric < 1.20)
 * read the client's address from the request header.  The loader finds the offsets (within the first 64
 * bytes) at which every captured request of every client carries that client's own 32-bit cxi address
 * (pid | nic << 9) -- evidence it takes only from a capture of two clients or more with different
 * addresses, since one client cannot tell its address from a field that happens to hold the same value
 * (scenarios can name the offsets instead); replay writes each simulated client's own address there. */
#ifndef CXISIM_WORKLOAD_REPLAY_SCRIPT_H
#define CXISIM_WORKLOAD_REPLAY_SCRIPT_H

#include <stdbool.h>
#include <stdint.h>

#include "capture.h"

enum rq_field { RQ_FIELD_NONE, RQ_FIELD_DATA, RQ_FIELD_TAG };

struct rq {
	const unsigned char *payload; /* captured bytes (inside the capture's buffer) */
	uint64_t payload_len;
	uint64_t len;                 /* message length */
	uint64_t tag, data;
	uint32_t flags;               /* CAPF_TAGGED, CAPF_CQ_DATA */
	uint8_t reply_field;          /* enum rq_field: where the response's tag travels */
	uint64_t reply_mask;          /* the bits of that field that carry it */
	uint64_t resp_len;            /* the response receive's length */
	uint64_t think;               /* captured think time before this request, ps */
};

struct rq_mr {
	uint64_t key, addr, len;
	uint32_t access;              /* mr_reg_flags of the capture (MRF_REMOTE_READ/WRITE) */
	const unsigned char *exposed; /* image as the first request after registration went out */
	uint64_t exposed_len;
	const unsigned char *closed;  /* image at close (what the server wrote), NULL if none */
	uint64_t closed_len;
};

#define RQ_MAX_ADDR_OFFSETS 4

struct rq_stream {
	uint32_t ep;                  /* capture endpoint */
	uint32_t nic;
	uint16_t pid, vni;
	uint32_t ep_flags;            /* the captured endpoint's ep_open_flags (proto.h) */
	struct rq *rqs;
	uint32_t n;
	struct rq_mr *mrs;            /* sorted by address, non-overlapping */
	uint32_t nmrs;
	uint32_t addr_off[RQ_MAX_ADDR_OFFSETS];
	uint32_t naddr_off;
	uint64_t rma_ops;             /* client-initiated RMA to the server: recorded, not replayed */
};

struct replay_script_opts {
	const char *server_process;   /* NULL: auto */
	bool addr_offsets_auto;       /* false: use addr_off[] below (possibly none) */
	uint32_t addr_off[RQ_MAX_ADDR_OFFSETS];
	uint32_t naddr_off;
	/* With `range`, each client's requests first..last (0-based, inclusive) are replayed: e.g. the steady
	 * part of a benchmark client, without its setup and shutdown RPCs. */
	bool range;
	uint32_t first, last;
};

struct replay_script {
	struct cap_file file;
	uint32_t server_ep, server_nic;
	uint16_t server_pid;
	char server_prog[64];
	struct rq_stream *streams;
	uint32_t nstreams;
	uint64_t requests;            /* over all streams */
	uint64_t with_reply;
};

/* 0, or -1 with a one-line reason in err (the capture's own check, or what it lacks for a replay). */
int replay_script_load(const char *path, const struct replay_script_opts *o, struct replay_script *s, char *err,
		       size_t errlen);
void replay_script_free(struct replay_script *s);
/* The MR of a stream holding [addr, addr + len), or NULL. */
const struct rq_mr *rq_stream_mr(const struct rq_stream *st, uint64_t addr, uint64_t len);
/* A client's 32-bit cxi address as the provider writes it (pid | nic << 9, little-endian). */
uint32_t rq_cxi_addr32(uint32_t nic, uint32_t pid);

#endif
