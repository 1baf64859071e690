/* Private state of the provider software layer (sw_*.c). */
#ifndef CXISIM_NIC_SW_IMPL_H
#define CXISIM_NIC_SW_IMPL_H

#include "sw.h"

/* Match bits of FI_PROTO_CXI messages (cxisim's own layout; the NIC only sees 64 opaque bits):
 *   [0,48) tag   48 tagged   49 cq_data   50 match_complete   51 rendezvous   [52,64) rendezvous id high
 * The low 8 bits of the rendezvous id travel in the command's rendezvous_id field. */
#define SW_TAG_MASK ((1ULL << 48) - 1)
#define SW_MB_TAGGED (1ULL << 48)
#define SW_MB_CQ_DATA (1ULL << 49)
#define SW_MB_MATCH_COMP (1ULL << 50)
#define SW_MB_RDZV (1ULL << 51)
#define SW_MB_RDZV_SHIFT 52
#define SW_RDZV_IDS 4096 /* 12 high bits x 8 low bits would allow 2^20; 4096 outstanding is ample */
/* Bits a receive never matches on. */
#define SW_MB_RECV_IGNORE (SW_MB_CQ_DATA | SW_MB_MATCH_COMP | SW_MB_RDZV | (~0ULL << SW_MB_RDZV_SHIFT))

/* Control PtlTE (index 117/228) match bits: control messages have bit 63 set; MR keys do not. */
#define SW_CTRL_FLAG (1ULL << 63)
#define SW_CTRL_TYPE_SHIFT 16
#define SW_CTRL_NOTIFY 1ULL
#define SW_CTRL_RESUME 2ULL
/* MR keys: mr_key.h (through sw.h). */

/* Provider-private memory (overflow and request buffers) lives at tagged addresses no application
 * address can take. */
#define SW_PRIV_BASE (1ULL << 63)

enum sw_kind {
	SWK_RECV = 1,
	SWK_SEND,
	SWK_RMA,
	SWK_OFLOW,
	SWK_REQBUF,
	SWK_SEARCH,
	SWK_FLUSH,
	SWK_CTRL_LE,
	SWK_CTRL_MSG,
	SWK_RDZV_SRC,
	SWK_MR,
	SWK_RMSG,
	SWK_STATE,
	SWK_PEEK,
	SWK_DISCARD,
	SWK_MR_WD,
};

struct sw_obj {
	uint8_t kind;
};

struct sw_buf;
struct sw_req;
struct sw_world;

/* An unexpected message known to software.  Its record is held by the endpoint's software unexpected list
 * (ep->ux: request-buffer arrivals, onloaded and claimed messages), by pending_ux, or by the map of
 * hardware headers keyed by their overflow-buffer address (ux_map: data seen before the header left the
 * hardware list, or a header that left it before its data was seen); an onloaded header whose data is
 * still to come is on ep->ux and in the map at once. */
struct sw_ux {
	struct sw_ux *next, *prev;
	struct sw_ux_list *on;    /* the list it is on, if any */
	uint64_t data;            /* where its eager bytes sit (provider-private memory) */
	struct sw_buf *buf;
	uint32_t mlength;
	bool data_ready;          /* the overflow/request PUT event has been seen */
	bool onloaded;            /* on the software list (not a hardware header) */
	bool in_map;
	/* FI_PEEK | FI_CLAIM: set aside for the FI_CLAIM receive that names claim_key; ordinary receives and
	 * peeks pass over it. */
	bool claimed;
	uint64_t claim_key;
	struct sw_req *peek;      /* a claim or discard waiting for this header's data event */
	struct sw_req *waiting;   /* a receive that matched it before its data event came */
	union {
		struct {          /* the message header (sw_ux_set_header), unless `waiting` */
			uint64_t match_bits, header_data, remote_offset;
			uint32_t initiator, rlength;
			uint16_t vni;
			uint8_t rendezvous_id;
			bool rendezvous;
		};
		struct {          /* while `waiting`: nothing reads the header, the receive has the event */
			struct nic_event ovf_ev; /* that receive's PUT_OVERFLOW event */
			uint64_t dst;            /* ... and where in it the message goes */
			uint32_t dst_len;
		};
	};
};

struct sw_ux_list {
	struct sw_ux *head, *tail;
	uint32_t len;
};

/* Overflow or request buffer. */
struct sw_buf {
	/* Small fields together, and no size: it is the endpoint's environment's for the list (nine buffers per
	 * client endpoint: 48 bytes, not 72). */
	struct sw_obj obj;
	uint8_t list;
	uint16_t id;
	bool linked;
	struct sw_ep *ep;
	struct sw_buf *next;
	uint64_t addr;
	uint64_t unlink_length;   /* bytes used when the NIC retired it; UINT64_MAX while linked */
	uint64_t consumed;        /* bytes whose message software has finished with */
};
_Static_assert(sizeof(struct sw_buf) <= 48, "a buffer record grew: nine per client endpoint");

/* A rendezvous message being received (hardware or software Get in flight).  Held by its receive
 * (recv->rmsgs) until its last event; a software Get waiting for a slot is also on ep->sw_get_wait. */
struct sw_rmsg {
	struct sw_obj obj;
	struct sw_rmsg *next;
	struct sw_req *recv;
	uint64_t buf;             /* where the message starts in the receive buffer */
	uint64_t match_bits, header_data;
	uint32_t initiator, rlength, data_len;
	uint16_t vni;
	uint8_t rendezvous_id;
	uint8_t events, needed;
	uint8_t rc;
	bool sw_get_pending;
	struct sw_rmsg *wait_next;
	uint32_t eager;
	uint64_t remote_offset;
};

struct sw_req {
	/* A million client processes hold eight of these each: fields are packed without holes, and what only
	 * a receive (or peek) uses shares its bytes with what only a send (or RMA) uses (176 bytes, not 256). */
	struct sw_obj obj;
	uint8_t rc;
	uint16_t id;              /* receives: the LE's buffer_id, unique among the endpoint's live LEs */
	uint32_t match_id;
	bool tagged, multi, hw_offloaded, canceled, retired;
	bool unlink_pending;      /* the cancel's UNLINK command has not come back yet */
	bool cancel_unlinked;     /* the cancel took the LE off the list: the last completion is FI_ECANCELED */
	bool done;                /* the final completion has been reported */
	struct sw_ep *ep;
	struct sw_req *next, *prev;
	struct sw_req_list *on;   /* the list it is queued on, if any */
	void *context;
	uint64_t flags;
	uint64_t buf;             /* receive: the buffer; send and RMA: the local buffer */
	uint64_t match_bits;
	uint64_t len, tag;        /* send and RMA; tag also for peeks */
	simtime_t max_rnr_time;   /* RNR: sends' deadline, receives' append retry deadline */
	struct sw_addr dst;
	union {
		struct { /* receive and peek (SWK_RECV, SWK_PEEK) */
			uint64_t ulen, start_offset;
			uint64_t ignore_bits;
			uint64_t mrecv_bytes;  /* multi-recv: buffer bytes of the messages reported so far */
			uint64_t unlink_end;   /* multi-recv: buffer offset where it stopped taking messages
						* (UINT64_MAX: still taking them); every message below it must be
						* reported first */
			uint64_t claim_key;    /* peek: FI_CLAIM key */
			struct sw_rmsg *rmsgs;
			uint32_t children;     /* rendezvous messages in flight into this (multi-)receive */
			uint32_t min_free;     /* multi-recv: FI_OPT_MIN_MULTI_RECV when the buffer was posted */
		};
		struct { /* send and RMA (SWK_SEND, SWK_RMA) */
			uint64_t data;
			struct sw_fc_peer *fc_peer;
			simtime_t retry_time;
			uint8_t *inject;       /* IDC sends with real data: a copy of it (nic_payload_alloc), for
						* replays */
			sim_timer rnr_timer;
			uint32_t retries;
			uint32_t rdzv_id;
			uint8_t proto;         /* SW_SEND_* */
			uint8_t rdzv_events;
		};
	};
};
_Static_assert(sizeof(struct sw_req) <= 176, "sw_req grew: a million client processes hold eight each");
_Static_assert(sizeof(struct sw_ux) <= sizeof(struct sw_req), "unexpected records take request slots (sw_ep.c)");

static inline bool sw_req_is_tx(const struct sw_req *r)
{
	return r->obj.kind == SWK_SEND || r->obj.kind == SWK_RMA;
}

enum { SW_SEND_IDC = 1, SW_SEND_EAGER, SW_SEND_RDZV };

struct sw_req_list {
	struct sw_req *head, *tail;
	uint32_t len;
};

/* Sender side: a peer that dropped our messages (flow control). */
struct sw_fc_peer {
	struct sw_fc_peer *next;
	struct sw_addr addr;
	uint32_t pending, dropped, pending_acks;
	bool replayed;
	struct sw_req_list queue;
	struct sw_ctrl_msg *notify;
};

/* Target side: drops a peer reported, owed an FC_RESUME. */
struct sw_fc_drops {
	struct sw_fc_drops *next;
	struct sw_addr addr;
	uint32_t drops;
};

struct sw_ctrl_msg {
	struct sw_obj obj;
	struct sw_ep *ep;
	struct sw_ctrl_msg *next;
	struct sw_addr dst;
	uint64_t type;
	uint32_t drops;
	uint32_t retries;
	struct sw_fc_peer *peer; /* FC_NOTIFY: the peer it reports for */
	bool in_list;
	sim_timer retry;
};

/* Memory region. */
struct sw_mr {
	struct sw_obj obj;
	struct sw_obj wd_obj;     /* events of the fi_writedata LE */
	struct sw_ep *ep;
	struct sw_mr *next;
	void *user;               /* registration context: op_context of its target-side completions */
	uint64_t buf, len, access, key, flags;
	bool optimized, cached, prov_key, enabled, closed, closing;
	bool notify;              /* report every remote access (FI_RMA_EVENT) */
	bool writedata;           /* has the fi_writedata LE */
	bool close_timed, close_reported;
	uint32_t ptn_w, ptn_r;    /* optimized: own PtlTEs */
	uint16_t le_id, wd_id;    /* standard: buffer ids of its LEs on the control PtlTE */
	uint32_t unlinks_pending; /* close: UNLINK events still to come (the NIC names the MR until then) */
	uint64_t match_events, access_events;
	sw_mr_done_fn done;
	void *done_ctx;
	sim_timer timer;          /* registration or close completing */
	simtime_t close_deadline;
};

/* Registry of closed-but-exposed regions (provider key cache). */
struct sw_region {
	uint64_t addr, len;
};

/* Field order: what one RPC of a client touches comes first, in the first lines (the record starts on a
 * line): at a million client endpoints every endpoint is cold at each post and completion, and the
 * fields an RPC reads were spread over 13 of the record's 18 lines (cachegrind, docs/workloads.md Round 9). */
struct sw_ep {
	/* line 0 */
	struct nic *nic;
	struct sim *sim;
	const struct sw_env *env;     /* the environment, which it shares (sw_ep.c) */
	struct sw_world *w;           /* the simulation's provider state (sw_ep.c) */
	struct pool *req_ux;          /* where every request and unexpected message of the endpoint comes from
				       * (shared per simulation) */
	char *fatal;
	struct nic_cmdq *txq, *tgq;
	/* line 1 */
	struct nic_lni *lni;
	uint16_t *free_ids;          /* LE buffer ids released for reuse */
	uint32_t nfree_ids, free_ids_cap, next_id;
	uint32_t eq_tx, eq_rx, eq_ctrl;
	uint32_t rx_ptn;
	enum sw_rxc_state state;      /* RX context state (below) */
	uint32_t tx_outstanding;
	uint32_t rx_outstanding;
	bool closing;
	struct sw_obj state_obj;
	/* lines 2-3: the lists an RPC's requests go on */
	struct sw_req_list posted;   /* receives not yet matched (hardware-offloaded or software) */
	struct sw_req_list inflight; /* receives no longer matchable whose completion or NIC events are to come */
	struct sw_req_list msg_queue; /* sends in flight, in order */
	struct sw_ux_list ux;        /* software unexpected list */
	struct sw_host_work host;    /* since the last sw_ep_take_host_work */
	struct sw_ep_opts attr;       /* its attributes but the environment (env) */

	uint32_t ctrl_ptn, rdzv_ptn;
	uint32_t pid;
	struct nic_mem_ops memops;   /* routes private addresses to provider memory, the rest to the user's */
	uint8_t **priv;              /* backing of provider-private memory, SW_PRIV_CHUNK bytes per entry, each
				      * allocated at its first write (NULL: reads as zeros; no array without real data) */
	uint64_t priv_chunks, priv_used;

	struct sw_backlog *backlog[2]; /* [0] txq, [1] tgq: internal commands waiting for room (lazy) */

	/* RX context */
	enum sw_rxc_state prev_state, new_state;
	int fc_reason;
	bool msg_offload;
	uint32_t drop_count;         /* drops reported by peers' FC_NOTIFY */
	struct sw_req_list replay;   /* receives whose append failed, to replay in order */
	struct sw_req_list peeks;    /* FI_PEEK searches in flight */
	struct sw_ux_list pending_ux;/* request-list arrivals during a hardware-to-software transition */
	struct sw_ux **ux_map;       /* hardware unexpected headers keyed by data address */
	uint32_t ux_map_cap, ux_map_n;
	uint32_t hw_ule_cnt;         /* unexpected headers the hardware holds */
	uint32_t recv_appends;
	uint32_t puts_pending;       /* onload: PUT_OVERFLOW seen before its data event */
	bool onload_search_done;
	struct sw_buf *oflow, *reqbuf;
	uint32_t oflow_linked, req_linked, req_allocated;
	uint16_t next_buf_id;
	struct sw_fc_drops *fc_drops;
	uint32_t sw_gets_out;
	struct sw_rmsg *sw_get_wait, *sw_get_wait_tail;

	/* TX context */
	struct pool *rmsgs;           /* ... every rendezvous message (likewise) */
	struct sw_req_list rma_queue; /* RMA operations in flight */
	struct sw_fc_peer *fc_peers;
	struct sw_req **rdzv_reqs;   /* by rendezvous id, for ids below rdzv_next */
	uint32_t *rdzv_free;          /* released ids, reused last-freed first */
	uint32_t rdzv_nfree, rdzv_next, rdzv_cap;
	struct sw_obj rdzv_src_obj;
	struct sw_obj ctrl_le_obj;
	struct sw_ctrl_msg *ctrl_msgs;
	uint64_t rnr_max_us;
	struct sw_req_list rnr_wait;
	sim_timer rnr_append_timer;

	/* MRs */
	struct sw_mr *mrs;
	struct sw_region *closed;
	uint32_t nclosed, closed_cap;
	bool cache_le;                /* the key-cache LE is linked */
	struct sw_obj cache_le_obj;   /* its events (errors only) */
	uint32_t next_prov_key;

	struct sw_ep *w_next, *w_prev; /* the simulation's open endpoints (memory accounting) */

	struct sw_ep_stats st;
	uint64_t *c_rnr_nacks, *c_retries, *c_fc, *c_sw_trans, *c_hazards, *c_onloaded, *c_notify, *c_resume;
};

/* Internal commands (appends, unlinks, searches, flow-control steps) that found their command queue full,
 * in issue order; re-emitted when the NIC has fetched from the queue.  Nothing the software layer issues
 * on its own is lost or reordered, and the application sees -FI_EAGAIN while the backlog is not empty. */
struct sw_backlog {
	struct nic_cmd *cmds;
	uint32_t head, n, cap;
};

/* ---------------------------------------------------------------- internal API */
/* sw_ep.c */
void sw_fatal(struct sw_ep *ep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sw_emit(struct sw_ep *ep, struct nic_cmdq *q, const struct nic_cmd *c);
/* Whether an application request may take a slot of q now (-FI_EAGAIN otherwise): nothing waits in the
 * backlog, and room is left for the internal commands the request and its completions may issue. */
bool sw_cmdq_room(struct sw_ep *ep, struct nic_cmdq *q);
void sw_emit_internal(struct sw_ep *ep, struct nic_cmdq *q, const struct nic_cmd *c);
void sw_cmdq_space(void *ctx, struct nic_cmdq *q);
void sw_append(struct sw_ep *ep, uint32_t ptn, uint8_t list, uint16_t buffer_id, uint32_t flags, uint64_t start,
	       uint64_t length, uint32_t min_free, uint32_t match_id, uint64_t mb, uint64_t ib, void *user_ptr);
void sw_unlink(struct sw_ep *ep, uint32_t ptn, uint8_t list, uint16_t buffer_id, void *user_ptr);
void sw_setstate(struct sw_ep *ep, uint32_t ptn, uint8_t state, uint32_t drop_count);
void sw_complete(struct sw_ep *ep, const struct sw_comp *c);
int sw_rc_to_errno(uint8_t rc);
uint64_t sw_priv_alloc(struct sw_ep *ep, uint64_t size);
void sw_copy(struct sw_ep *ep, uint64_t dst, uint64_t src, uint64_t len);
bool sw_eq_saturated(struct sw_ep *ep, uint32_t eqn);
void sw_req_list_push(struct sw_req_list *l, struct sw_req *r);
void sw_req_list_remove(struct sw_req_list *l, struct sw_req *r); /* no-op unless r is on l */
void sw_req_unlist(struct sw_req *r);                             /* off whatever list it is on */
/* Requests of every kind (receive, send, RMA, peek) come zeroed from the simulation's pool and go back
 * there exactly once; the endpoint's teardown returns those still on its lists. */
struct sw_req *sw_req_new(struct sw_ep *ep, uint8_t kind);
void sw_req_free(struct sw_ep *ep, struct sw_req *r);
/* Buffer ids of LEs software may unlink (receives, MR LEs): 1..65535, unique per endpoint while live. */
int sw_id_alloc(struct sw_ep *ep, uint16_t *id);
void sw_id_free(struct sw_ep *ep, uint16_t id);
void sw_ux_push(struct sw_ux_list *l, struct sw_ux *u);
void sw_ux_remove(struct sw_ux_list *l, struct sw_ux *u);
/* Unexpected-message and rendezvous-message records, zeroed, from the simulation's pools; each goes back
 * exactly once (sw_ux_done when software has finished with the message's buffer bytes). */
struct sw_ux *sw_ux_new(struct sw_ep *ep);
void sw_ux_free(struct sw_ep *ep, struct sw_ux *u);
struct sw_rmsg *sw_rmsg_new(struct sw_ep *ep);
/* Overflow and request buffer records, zeroed, from the simulation's pool (returned at teardown). */
struct sw_buf *sw_buf_new(struct sw_ep *ep);
void sw_buf_free(struct sw_ep *ep, struct sw_buf *b);
void sw_rmsg_free(struct sw_ep *ep, struct sw_rmsg *m);

/* sw_rxc.c */
int sw_rxc_init(struct sw_ep *ep);
void sw_rxc_event(struct sw_ep *ep, struct sw_obj *o, const struct nic_event *ev);
void sw_rxc_state_change(struct sw_ep *ep, const struct nic_event *ev);
void sw_rxc_process_drops(struct sw_ep *ep, struct sw_addr src, uint32_t drops);
void sw_rxc_fini(struct sw_ep *ep);
void sw_rxc_pending_disable(struct sw_ep *ep, bool check_fc);
void sw_rxc_onload_data(struct sw_ep *ep);

/* sw_recv.c (receive requests) */
bool sw_recv_matches(const struct sw_req *r, uint64_t match_bits, uint32_t initiator);
/* A request that matches messages (receive, peek): from (src, tag, ignore) and FI_TAGGED in flags, as
 * sw_recv_matches tests them; src NULL or no FI_DIRECTED_RECV: any source. */
struct sw_req *sw_req_new_matching(struct sw_ep *ep, uint8_t kind, const struct sw_addr *src, uint64_t tag,
				   uint64_t ignore, uint64_t flags, void *context);
struct sw_req *sw_recv_new(struct sw_ep *ep, uint64_t buf, uint64_t len, const struct sw_addr *src, uint64_t tag,
			   uint64_t ignore, uint64_t flags, void *context);
void sw_recv_queue(struct sw_ep *ep, struct sw_req *r);
void sw_recv_free(struct sw_ep *ep, struct sw_req *r);
void sw_recv_event(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev);
void sw_recv_rmsg_event(struct sw_ep *ep, struct sw_rmsg *m, const struct nic_event *ev);
bool sw_ux_deliver(struct sw_ep *ep, struct sw_req *r, struct sw_ux *u);
/* Software has finished with message u: its buffer bytes are released and its record goes back. */
void sw_ux_done(struct sw_ep *ep, struct sw_ux *u);
struct sw_ux *sw_hw_ule_take(struct sw_ep *ep, const struct nic_event *ev);
/* The message header an event describes (match bits, header data, lengths, initiator, rendezvous). */
void sw_ux_set_header(struct sw_ux *u, const struct nic_event *ev);
/* A header taken off the hardware unexpected list (PUT_OVERFLOW of a search or onload): the record its data
 * event created, or a new one (*fresh) whose data is still to be seen unless it has none. */
struct sw_ux *sw_ux_from_hw(struct sw_ep *ep, const struct nic_event *ev, bool *fresh);
void sw_rxc_request_arrival(struct sw_ep *ep, struct sw_ux *u);
void sw_rxc_overflow_arrival(struct sw_ep *ep, struct sw_ux *u);

/* sw_peek.c (FI_PEEK, FI_CLAIM, FI_DISCARD) */
void sw_peek_event(struct sw_ep *ep, struct sw_req *p, const struct nic_event *ev);
void sw_peek_data_ready(struct sw_ep *ep, struct sw_ux *u);
void sw_peek_fini(struct sw_ep *ep);

/* sw_bufs.c (overflow / request buffers) */
void sw_bufs_init(struct sw_ep *ep, uint8_t list);
void sw_bufs_replenish(struct sw_ep *ep, uint8_t list);
void sw_buf_event(struct sw_ep *ep, struct sw_buf *b, const struct nic_event *ev);
void sw_buf_consume(struct sw_ep *ep, struct sw_buf *b, uint64_t bytes);
void sw_bufs_fini(struct sw_ep *ep);
struct sw_ux *sw_ux_map_take(struct sw_ep *ep, uint64_t key);
void sw_ux_map_put(struct sw_ep *ep, uint64_t key, struct sw_ux *u);
/* Close: empty the map, returning the records no list also holds. */
void sw_ux_map_fini(struct sw_ep *ep);

/* sw_txc.c */
int sw_txc_init(struct sw_ep *ep);
void sw_txc_event(struct sw_ep *ep, struct sw_obj *o, const struct nic_event *ev);
void sw_ctrl_event(struct sw_ep *ep, const struct nic_event *ev);
/* Send an FC_NOTIFY (peer: the sender-side record it reports for) or FC_RESUME control message; it is
 * resent until the target's control EQ takes it. */
void sw_ctrl_post(struct sw_ep *ep, struct sw_addr dst, uint64_t type, uint32_t drops, struct sw_fc_peer *peer);
void sw_txc_fc_resume(struct sw_ep *ep, struct sw_addr peer);
void sw_txc_fini(struct sw_ep *ep);
void sw_issue_get(struct sw_ep *ep, struct sw_addr src, uint64_t remote_offset, uint64_t mb, uint8_t rdzv_id,
		 uint64_t local, uint32_t len, void *user_ptr, uint32_t index, uint32_t flags);

/* sw_rnr.c */
void sw_rnr_append_retry(struct sw_ep *ep);
/* An RNR receive's append failed: true (and the endpoint fatal) once it has been retried for
 * FI_CXI_RNR_APPEND_RETRY_TIMEOUT_US. */
bool sw_rnr_append_failed(struct sw_ep *ep, struct sw_req *r);
void sw_rnr_le_freed(struct sw_ep *ep);
void sw_rnr_fini(struct sw_ep *ep);
void sw_rxc_replay_some(struct sw_ep *ep, uint32_t n);
int sw_txc_emit_send(struct sw_ep *ep, struct sw_req *r);
void sw_txc_emit_send_internal(struct sw_ep *ep, struct sw_req *r);
void sw_txc_report_send(struct sw_ep *ep, struct sw_req *r, uint8_t rc);
int sw_rnr_rxc_init(struct sw_ep *ep);
int sw_rnr_send(struct sw_ep *ep, struct sw_req *r);
void sw_rnr_ack(struct sw_ep *ep, struct sw_req *r, const struct nic_event *ev);

/* sw_mr.c */
void sw_mr_event(struct sw_ep *ep, struct sw_obj *o, const struct nic_event *ev);
void sw_mr_fini(struct sw_ep *ep);
void sw_mr_access_hook(void *ctx, uint32_t ptn, uint64_t le_user_ptr, uint64_t addr, uint64_t len, bool write);

/* sw_env.c: host-side costs of the provider (the "cxi" parameter table). */
struct sw_costs {
	simtime_t kernel_call;       /* an ioctl into the cxi driver */
	simtime_t mr_cache_lookup;   /* provider key cache hit */
	simtime_t mr_le_append;      /* software side of appending/unlinking an MR LE (plus NIC time) */
	simtime_t mr_event_poll;     /* one poll of the match/access counters while closing */
	simtime_t mr_event_poll_max; /* give up polling and invalidate */
	simtime_t mr_bookkeeping;    /* per reg/dereg data-structure cost */
	simtime_t map_page;          /* host mapping (cxil_map): per 4 KiB page pinned and entered in the ATU */
	simtime_t unmap_page;        /* host unmapping (cxil_unmap): per 4 KiB page */
	uint32_t ctrl_eq_slots;
	/* host work of flow control, hybrid transitions and RNR (sw_host_work_price) */
	simtime_t fc_state_change, fc_onload_entry, fc_replay_recv, buf_append, fc_reenable, fc_ctrl_rx, fc_ctrl_tx;
	simtime_t fc_send_drop, fc_send_replay, fc_send_eagain, rnr_nack, rnr_retry;
};
const struct sw_costs *sw_costs(struct sim *sim);

#endif
