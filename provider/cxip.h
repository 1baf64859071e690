/* Internal declarations of cxisim's libfabric provider "cxi".
 *
 * The provider is the application-side half of an emulated Cassini: it turns libfabric calls into
 * commands on shared-memory command queues and turns events from shared-memory event queues into
 * completions.  Matching, data movement, flow control, RNR and MR checks happen in the NIC model inside
 * the daemon (cxisimd); the provider never moves message data itself (inject payloads travel inside the
 * command, as IDC payloads do on Cassini).
 *
 * Objects follow libfabric's: fabric.c, domain.c, ep.c (+ msg.c, rma.c data paths), av.c, cq.c, cntr.c,
 * mr.c, eq.c; info.c answers fi_getinfo; dev.c is the connection to the daemon; env.c reads FI_CXI_*.
 */
#ifndef CXIP_H
#define CXIP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "../sim/cxisimd/cmd.h"
#include "../sim/cxisimd/proto.h"
#include "../sim/cxisimd/ring.h"
#include "../sim/nic/mr_key.h"
#include "fi_cxi_ext.h"

#define CXIP_PROV_NAME "cxi"
#define CXIP_PROV_VERSION FI_VERSION(0, 2)
#define CXIP_FI_VERSION FI_VERSION(1, 17)
#define CXIP_WIRE_PROTO_VERSION 1

/* Limits of the real provider (cassini-reference: fi_info; upstream cxip.h). */
#define CXIP_EP_MAX_MSG_SZ ((1ULL << 32) - 1)
#define CXIP_INJECT_SIZE 192
#define CXIP_MAX_TX_SIZE 16384u
#define CXIP_DEFAULT_TX_SIZE 1024u
#define CXIP_MAX_RX_SIZE 15360u
#define CXIP_DEFAULT_RX_SIZE 1024u
#define CXIP_TAG_WIDTH 48
#define CXIP_RNR_TAG_WIDTH 40
#define CXIP_TAG_MASK ((1ULL << CXIP_TAG_WIDTH) - 1)
#define CXIP_TAG_FORMAT 0xAAAAAAAAAAAAULL     /* 48 tag bits, libfabric's generic format */
#define CXIP_RNR_TAG_FORMAT 0xAAAAAAAAAAULL  /* 40 tag bits */
#define CXIP_REMOTE_CQ_DATA_SZ 8
#define CXIP_MR_KEY_SIZE 4
#define CXIP_MR_PROV_KEY_SIZE 8
#define CXIP_EP_MIN_MULTI_RECV 64
#define CXIP_EP_MAX_MULTI_RECV ((1 << 24) - 1)
#define CXIP_PID_ANY 511u
#define CXIP_PID_BITS 9
#define CXIP_NIC_BITS 20
#define CXIP_MAX_AUTH_KEYS 4
#define CXIP_OPT_MR_KEY_MAX 100   /* client keys under this are optimized (FI_CXI_OPTIMIZED_MRS) */
#define CXIP_OPT_PROV_KEY_IDS 92  /* provider keys with an id under this are optimized */
#define CXIP_DEFAULT_SVC_ID 1

#define CXIP_EP_PRI_CAPS                                                                                   \
	(FI_RMA | FI_ATOMIC | FI_TAGGED | FI_RECV | FI_SEND | FI_READ | FI_WRITE | FI_REMOTE_READ |           \
	 FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_MSG)
#define CXIP_EP_SEC_CAPS                                                                                   \
	(FI_SOURCE | FI_SOURCE_ERR | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_RMA_EVENT | FI_MULTI_RECV | FI_FENCE |  \
	 FI_TRIGGER)
#define CXIP_EP_CAPS (CXIP_EP_PRI_CAPS | CXIP_EP_SEC_CAPS)
#define CXIP_DOM_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM | FI_AV_USER_ID)
#define CXIP_CAPS (CXIP_DOM_CAPS | CXIP_EP_CAPS)
#define CXIP_TX_OP_FLAGS                                                                                   \
	(FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |      \
	 FI_REMOTE_CQ_DATA | FI_MORE | FI_FENCE)
#define CXIP_RX_OP_FLAGS (FI_COMPLETION | FI_MULTI_RECV | FI_MORE)
/* What one transmit call may pass: the op flags, and FI_TRIGGER (trigger.c; not an attribute op flag). */
#define CXIP_TX_CALL_FLAGS (CXIP_TX_OP_FLAGS | FI_TRIGGER)
#define CXIP_MSG_ORDER                                                                                     \
	(FI_ORDER_SAS | FI_ORDER_WAW | FI_ORDER_RMA_WAW | FI_ORDER_RMA_RAR | FI_ORDER_ATOMIC_WAW |           \
	 FI_ORDER_ATOMIC_RAR)

/* Capability sets libfabric's util layer treats as primary/secondary (include/ofi.h of the libfabric upstream
 * prov/cxi ships with, 1.21 on): a secondary cap is returned unless a hint removes it, a primary one only
 * when asked for (or when the hints ask for nothing); FI_SOURCE only when asked for. */
#define CXIP_PRIMARY_CAPS                                                                                  \
	(FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST | FI_READ | FI_WRITE | FI_SEND | FI_RECV |    \
	 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_COLLECTIVE | FI_NAMED_RX_CTX | FI_HMEM |     \
	 FI_AV_USER_ID | FI_PEER)
#define CXIP_SECONDARY_CAPS                                                                                \
	(FI_TRIGGER | FI_FENCE | FI_RMA_PMEM | FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT | FI_SOURCE_ERR |     \
	 FI_SHARED_AV | FI_REMOTE_COMM | FI_LOCAL_COMM)
/* Caps that do not apply to one side (OFI_IGNORED_TX_CAPS / OFI_IGNORED_RX_CAPS). */
#define CXIP_TX_IGNORED_CAPS                                                                               \
	(FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RECV | FI_DIRECTED_RECV | FI_MULTI_RECV | FI_SOURCE |          \
	 FI_RMA_EVENT | FI_SOURCE_ERR)
#define CXIP_RX_IGNORED_CAPS (FI_READ | FI_WRITE | FI_SEND | FI_FENCE | FI_MULTICAST | FI_NAMED_RX_CTX)

/* Internal op flag: the operation came from fi_inject*() and completes silently. */
#define CXIP_NO_COMPLETION (1ULL << 59)

extern struct fi_provider cxip_prov;

#define CXIP_WARN(subsys, ...) FI_WARN(&cxip_prov, subsys, __VA_ARGS__)
#define CXIP_INFO(subsys, ...) FI_INFO(&cxip_prov, subsys, __VA_ARGS__)

/* ---- environment (env.c) ---- */
enum cxip_match_mode { CXIP_MATCH_HARDWARE = 0, CXIP_MATCH_SOFTWARE = 1, CXIP_MATCH_HYBRID = 2 };

struct cxip_environment {
	int rx_match_mode;
	size_t rdzv_threshold, rdzv_get_min, rdzv_eager_size;
	size_t oflow_buf_size, oflow_buf_min_posted;
	size_t req_buf_size, req_buf_min_posted, req_buf_max_cached;
	int optimized_mrs, mr_match_events, prov_key_cache;
	int rnr_max_timeout_us;
	int default_vni;
	size_t default_cq_size, default_tx_size, default_rx_size;
	int cq_fill_percent;
	int hybrid_preemptive, hybrid_recv_preemptive, hybrid_posted_recv_preemptive,
		hybrid_unexpected_msg_preemptive;
	size_t sw_rx_tx_init_max;
	int fc_retry_usec_delay;
	int msg_offload;
	int trunc_ok;
	int disable_non_inject_msg_idc;
	int enable_writedata;
	int enable_trig_op_limit;
	char *device_name;
	int odp, force_odp;
};
extern struct cxip_environment cxip_env;
void cxip_env_init(void);
const char *cxip_match_mode_str(int mode);
int cxip_match_mode_parse(const char *s);

/* ---- addresses ---- */
struct cxip_addr {
	uint32_t pid : CXIP_PID_BITS;
	uint32_t nic : CXIP_NIC_BITS;
	uint32_t pad : 3;
	uint16_t vni;
	uint16_t pad2;
};
_Static_assert(sizeof(struct cxip_addr) == 8, "cxi address is 8 bytes");

/* Bytes of an address as the application sees it: 8 (libfabric 1.20's layout, with the VNI), or 4 (the
 * layout of cxi providers built for libfabric before 1.20, which applications compiled against those
 * headers hard-code, e.g. Mercury 2.4 built on Debian's libfabric 1.17): CXISIM_CXI_ADDR_BYTES=4. */
extern size_t cxip_addrlen;
/* CXISIM_DOMAIN_MRS=1: hints without FI_MR_ENDPOINT may still ask for an RMA/atomic target; the offer then
 * has domain-scoped MRs (a cxisim departure from upstream, for Open MPI 4.1's btl/ofi). */
extern bool cxip_domain_mrs;

/* Read an application-supplied address of cxip_addrlen bytes. */
static inline struct cxip_addr cxip_addr_load(const void *p)
{
	struct cxip_addr a;
	memset(&a, 0, sizeof(a));
	memcpy(&a, p, cxip_addrlen);
	a.pad = 0;
	return a;
}

static inline uint32_t cxip_addr_first32(const struct cxip_addr *a)
{
	return (uint32_t)a->pid | ((uint32_t)a->nic << CXIP_PID_BITS);
}

/* ---- daemon connection (dev.c) ---- */
struct cxip_shm_map {
	void *addr;
	size_t len;
};

struct cxip_dev {
	int sock;
	pthread_mutex_t lock;  /* one request/reply at a time */
	uint32_t seq;
	struct ctl_attach_rep info;
	struct pcb_shm *pcb;
	size_t pcb_bytes;
	_Atomic int dead;      /* daemon gone: every call fails with -FI_EIO */
	pthread_t watchdog;
	int wake_pipe[2];      /* tells the watchdog to exit */
	pthread_mutex_t waiters_lock;
	int *waiter_fds;       /* eventfds to ring when the daemon dies (CQ/counter wait objects) */
	size_t nwaiters, waiters_cap;
	/* virtual mode (vtime.c) */
	bool virt;
	double cpu_scale;      /* pcb->cpu_scale, copied at attach: the pcb's first line is the daemon's (vtime.c) */
	uint32_t span_clip_ns; /* pcb->span_clip_ns, copied at attach (vtime.c: the span clip) */
	uint32_t span_clip_q_pm, span_clip_flags; /* pcb->span_clip_q_pm, span_clip_flags, copied alike */
	uint32_t spin_free_reads; /* pcb->spin_free_reads: clock reads in a row that stay free (vtime.c) */
	uint64_t spin_read_ps; /* pcb->spin_read_ns in ps (vtime.c: a spin on the clock at cpu_scale 0) */
	int pcb_efd;           /* rung when the daemon waits for one of this process's threads */
	_Atomic uint64_t local_wakes; /* cxip_vt_wake_local calls (fi_cq_signal, fi_eq_write): vtime.c op_wait */
	struct cxip_pollable *pollables; /* CQs and EQs: what an idle thread checks before it parks */
	size_t npollables, pollables_cap;
};

struct cxip_pollable {
	int kind;              /* FI_CLASS_CQ or FI_CLASS_EQ */
	void *obj;
};

int cxip_dev_get(struct cxip_dev **dev); /* attach on first use (starting a private daemon if needed) */
/* Synchronous control request.  Received fds (up to *nfds) land in fds. */
int cxip_dev_call(struct cxip_dev *dev, uint32_t op, const void *req, size_t req_len, void *rep, size_t rep_len,
		  int *fds, int *nfds);
static inline bool cxip_dev_dead(const struct cxip_dev *dev)
{
	return atomic_load_explicit(&dev->dead, memory_order_relaxed) != 0;
}
void cxip_dev_add_waiter(struct cxip_dev *dev, int fd);
void cxip_dev_del_waiter(struct cxip_dev *dev, int fd);
/* This thread's slot in the process control block (claimed on first use); -1 when every slot is taken. */
int cxip_dev_thread_slot(struct cxip_dev *dev);
int cxip_dev_thread_slot_existing(struct cxip_dev *dev);
void cxip_vt_rebase(struct cxip_dev *dev);
struct cxip_dev *cxip_dev_current(void); /* this process's connection, or NULL */
void cxip_dev_add_pollable(struct cxip_dev *dev, int kind, void *obj);
void cxip_dev_del_pollable(struct cxip_dev *dev, void *obj);
/* A CQ or EQ of the process has something to read; *changes (if not NULL) grows whenever an entry is added
 * to or taken from any of them (what an idle thread compares to see whether anything happened). */
bool cxip_dev_anything_pending(struct cxip_dev *dev, uint64_t *changes);

/* ---- virtual time (vtime.c) ---- */
void cxip_vt_register(const struct cxip_dev *dev); /* offer the clock ops to libcxisim-clock.so, if loaded (NULL: withdraw) */
void cxip_vt_internal_thread(void);      /* the calling thread is the provider's own: real clocks */
void cxip_vt_slot_claimed(struct cxip_dev *dev, int slot);
uint64_t cxip_vt_charge(struct cxip_dev *dev); /* charge CPU time, publish; the thread's clock */
/* The same at the entry of a provider call that ends with cxip_vt_rebase on every path: the two share the
 * call's CPU clock reads (one at entry, one at exit). */
uint64_t cxip_vt_enter_at(struct cxip_dev *dev, const void *site);
/* site: the return address of the function that calls it (the application's call site when that function is
 * the provider's entry point): with the previous span's end it keys the span clip (emulation.span_clip_ns). */
#define cxip_vt_enter(dev) cxip_vt_enter_at((dev), __builtin_return_address(0))
_Atomic uint32_t *cxip_vt_emitting(struct cxip_dev *dev); /* the slot's `emitting` flag, NULL: no slot */
long cxip_raw_syscall4(long nr, long a, long b, long c, long d); /* no libc wrapper, no interposer: -errno */
void cxip_vt_spend(struct cxip_dev *dev, uint64_t ps); /* priced host work: the busy thread's clock += ps */
void cxip_vt_observe(struct cxip_dev *dev, uint64_t vt); /* a completion of virtual time vt was read */
/* A command's stamp: the clock, kept in order with the queue's last stamp. */
uint64_t cxip_vt_stamp(struct cxip_dev *dev, uint64_t *last_stamp);
/* Idle until something changes for the thread (wait_id: a daemon object id, PCB_WAIT_ANY, PCB_WAIT_NONE or
 * a local id), its virtual deadline, or park_timeout of wall time.  ready() is checked after turning idle,
 * before parking.  0: woken, -FI_ETIMEDOUT: deadline reached, -FI_EAGAIN: wall timeout, -FI_EIO. */
int cxip_vt_idle(struct cxip_dev *dev, uint32_t wait_id, uint64_t deadline, bool (*ready)(void *), void *arg);
/* An empty poll of `key` (a CQ, counter or EQ) whose change count (entries added + taken, or the counter's
 * value) is `changes`: the first one after the object changed returns -FI_EAGAIN at once (*seen keeps the
 * count of the last empty poll); a repeated one is idle until anything changes for the process
 * (PCB_WAIT_ANY).  Returns as cxip_vt_idle. */
int cxip_vt_idle_poll(struct cxip_dev *dev, const void *key, _Atomic uint64_t *seen, uint64_t changes,
		      bool (*ready)(void *), void *arg);
/* Idle without parking (fi_trywait, a control request): the thread resumes at its next provider call. */
void cxip_vt_idle_lazy(struct cxip_dev *dev, uint32_t wait_id);
/* A control request: the thread is idle (lazily) while the daemon works on it; returns the virtual time the
 * request takes effect (the thread's clock) and the thread's slot (PCB_REQ_NO_SLOT: none, stamp 0). */
uint64_t cxip_vt_request_begin(struct cxip_dev *dev, uint32_t *slot);
void cxip_vt_resume(struct cxip_dev *dev);
/* Another thread of the process made something visible to threads waiting on wait_id. */
void cxip_vt_wake_local(struct cxip_dev *dev, uint32_t wait_id, uint64_t at);
uint64_t cxip_vt_deadline(struct cxip_dev *dev, int timeout_ms); /* virtual deadline of a timeout */
#define CXIP_VT_LOCAL_ID 0x80000000u /* local wait ids (EQs) are above the daemon's object ids */
void cxip_dev_fini(void);
int cxip_shm_map(int fd, size_t len, struct cxip_shm_map *m);
void cxip_shm_unmap(struct cxip_shm_map *m);
int cxip_dev_close_obj(struct cxip_dev *dev, uint32_t id);

/* A shared-memory queue opened in the daemon (command or event ring + eventfd). */
struct cxip_queue {
	uint32_t id;
	struct ring ring;
	struct cxip_shm_map map;
	int efd;
};
int cxip_queue_open(struct cxip_dev *dev, uint32_t kind, uint32_t nslots, struct cxip_queue *q);
void cxip_queue_close(struct cxip_dev *dev, struct cxip_queue *q);

/* ---- objects ---- */
struct cxip_fabric {
	struct fid_fabric fab_fid;
	_Atomic int ref;
	struct cxip_dev *dev;
};

struct cxip_domain {
	struct fid_domain dom_fid;
	struct cxip_fabric *fab;
	_Atomic int ref;
	struct cxip_dev *dev;
	uint32_t nic_addr, nic_index;
	struct cxi_auth_key auth_key;
	bool av_auth_key;          /* auth_key_size == FI_AV_AUTH_KEY: keys come from the AV */
	uint64_t caps;
	uint64_t mode;
	int mr_mode;
	enum fi_threading threading;
	bool mr_match_events, optimized_mrs, prov_key_cache;
	bool writedata;            /* FI_CXI_ENABLE_WRITEDATA with provider keys: fi_writedata and target completions */
	int match_mode;            /* FI_OPT_CXI_SET_RX_MATCH_MODE_OVERRIDE, default FI_CXI_RX_MATCH_MODE */
	size_t req_buf_size;       /* FI_OPT_CXI_SET_REQ_BUF_SIZE_OVERRIDE */
	uint32_t tclass;
	pthread_mutex_t lock;
	struct cxip_ep *eps;       /* enabled endpoints (for domain-scoped MRs) */
	struct cxip_mr *mrs;       /* MRs not bound to an endpoint (no FI_MR_ENDPOINT) */
	struct cxip_mr *all_mrs;   /* every open MR (client key uniqueness) */
	uint32_t next_prov_key_id;
	struct fi_info *info;
	struct cxip_iomm *iomm;    /* host mappings through the MR cache model (iomm.c) */
};

struct cxip_av_entry {
	struct cxip_addr addr;
	fi_addr_t user_id;
	uint32_t auth_idx; /* index into the AV's auth keys (multi-key AVs), else 0 */
	bool valid;
};

struct cxip_av {
	struct fid_av av_fid;
	struct cxip_domain *dom;
	_Atomic int ref;
	enum fi_av_type type;
	uint64_t flags;            /* FI_AV_USER_ID */
	pthread_rwlock_t lock;
	struct cxip_av_entry *tab;
	size_t count, cap;
	/* reverse map (nic, pid, vni) -> fi_addr, open addressing */
	uint64_t *rmap_key;
	uint32_t *rmap_val;
	size_t rmap_cap, rmap_used;
	/* multi auth keys (fi_cxi_av_auth_key_ops) */
	struct cxi_auth_key auth_keys[CXIP_MAX_AUTH_KEYS];
	fi_addr_t auth_key_user_id[CXIP_MAX_AUTH_KEYS];
	size_t nauth_keys;
	bool keys_frozen;          /* an endpoint bound to it was enabled */
};

/* fi_addr values that name auth keys in a multi-key AV live above the address table. */
#define CXIP_AV_AUTH_KEY_BASE (1ULL << 62)

struct cxip_cq {
	struct fid_cq cq_fid;
	struct cxip_domain *dom;
	_Atomic int ref;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	size_t entry_size;
	struct cxip_queue q;
	_Atomic bool signaled;     /* fi_cq_signal: the (next) blocked fi_cq_sread returns -FI_EAGAIN */
	_Atomic bool err_flag;     /* err_pending, readable without the lock (virtual time's idle check) */
	_Atomic uint64_t poll_seen; /* virtual mode: entries added + taken at its last empty poll */
	pthread_mutex_t lock;
	/* an error completion found while reading ordinary ones waits here for fi_cq_readerr */
	bool err_pending;
	struct fi_cq_err_entry err;
	struct fi_cxi_src_err err_data;
	/* entries read from the ring but not yet returned (a read of fewer entries than an event produced) */
	struct cxip_ep **eps;      /* endpoints bound (for FI_SOURCE address translation) */
	size_t neps, eps_cap;
};

struct cxip_cntr {
	struct fid_cntr cntr_fid;
	struct cxip_domain *dom;
	_Atomic int ref;
	enum fi_wait_obj wait_obj;
	uint32_t id;
	struct cxip_shm_map map;
	struct ct_shm *ct;
	int efd;
	_Atomic uint64_t poll_seen; /* virtual mode: the value its last empty poll found */
};

struct cxip_eq_entry {
	uint32_t event;
	bool err;
	union {
		struct fi_eq_entry entry;
		struct fi_eq_err_entry err_entry;
	};
	struct cxip_eq_entry *next;
};

struct cxip_eq {
	struct fid_eq eq_fid;
	struct cxip_fabric *fab;
	_Atomic int ref;
	enum fi_wait_obj wait_obj;
	int efd;
	pthread_mutex_t lock;
	struct cxip_eq_entry *head, *tail;
	uint64_t changes;        /* entries added + taken (under lock; cxip_dev_anything_pending) */
	uint32_t vt_id;          /* local wait id (virtual mode) */
	_Atomic uint64_t poll_seen; /* virtual mode: `changes` at its last empty poll */
};

struct cxip_mr {
	struct fid_mr mr_fid;
	struct cxip_domain *dom;
	struct cxip_ep *ep;      /* FI_MR_ENDPOINT binding */
	struct cxip_cntr *cntr;  /* counter binding (FI_RMA_EVENT MRs) */
	uint64_t cntr_flags;     /* FI_REMOTE_WRITE and/or FI_REMOTE_READ */
	uint64_t access, flags;
	const void *buf;
	size_t len;
	uint64_t key;
	bool prov_key;
	bool enabled;
	uint32_t id;             /* daemon object */
	struct cxip_iomm_entry *md; /* its host mapping (iomm.c), NULL when none is modelled */
	struct cxip_mr *next;    /* domain list of unbound MRs */
	struct cxip_mr *all_next; /* domain list of every MR */
};

/* iomm.c: host mappings for the NIC (upstream cxip_map/cxip_unmap through libfabric's MR cache), priced in
 * virtual time; nothing is modelled in realtime mode. */
struct cxip_iomm;
struct cxip_iomm_entry;
struct cxip_iomm_stats {
	uint64_t maps, unmaps, hits, evictions, invalidated, unwatched, cached;
	bool enabled;
};
int cxip_iomm_init(struct cxip_domain *dom);
void cxip_iomm_fini(struct cxip_domain *dom);
int cxip_iomm_map(struct cxip_domain *dom, const void *buf, size_t len, struct cxip_iomm_entry **out);
void cxip_iomm_unmap(struct cxip_domain *dom, struct cxip_iomm_entry *e);
void cxip_iomm_get_stats(struct cxip_domain *dom, struct cxip_iomm_stats *st);
void cxip_iomm_data_path(struct cxip_domain *dom, const struct cxs_cmd *cmd);
bool cxip_iomm_cached(const struct cxip_iomm_entry *e); /* a mapping held in the MR cache (NULL: none) */

/* Endpoint statistics kept in shared memory by the daemon's software layer are copied on request. */
struct cxip_ep {
	struct fid_ep ep_fid;
	struct cxip_domain *dom;
	_Atomic int ref;
	struct fi_info *info;
	uint64_t caps;
	uint64_t tx_op_flags, rx_op_flags;
	uint64_t tx_msg_order;
	uint32_t protocol;       /* FI_PROTO_CXI or FI_PROTO_CXI_RNR */
	size_t tx_size, rx_size;
	struct cxip_av *av;
	struct cxip_cq *tx_cq, *rx_cq;
	uint64_t tx_cq_flags, rx_cq_flags; /* FI_SELECTIVE_COMPLETION */
	struct cxip_cntr *send_cntr, *recv_cntr, *read_cntr, *write_cntr, *rem_read_cntr, *rem_write_cntr;
	struct cxip_eq *eq;
	struct cxi_auth_key auth_key;
	uint32_t pid;            /* requested (CXIP_PID_ANY) then assigned at enable */
	uint32_t nic_addr;
	bool enabled;
	uint32_t id;             /* daemon endpoint */
	struct cxip_queue cmdq;
	pthread_mutex_t lock;    /* command queue producer */
	uint64_t last_stamp;     /* virtual mode: stamp of the last command queued */
	size_t min_multi_recv;
	uint64_t rnr_max_timeout_us;
	int match_mode;
	size_t req_buf_size;
	struct cxip_ep *dom_next;
	struct cxip_mr *mrs;     /* bound MRs (for close ordering) */
	struct cxip_ep *alias_of; /* fi_ep_alias: the endpoint whose queue and state this one uses */
	struct cxip_ep *aliases, *alias_next; /* the endpoint's aliases (refreshed when it is enabled) */
};

/* libfabric's generic fi_getinfo rules (info_attr.c): whether an offer admits the hints, the narrowing
 * of caps to what a hint asked for (primary and secondary caps), and the narrowing of a whole offer. */
bool cxip_info_ok(uint32_t version, const struct fi_info *prov, const struct fi_info *hints);
uint64_t cxip_caps_narrow(uint64_t info_caps, uint64_t hint_caps, uint64_t attr_caps);
void cxip_info_alter(struct fi_info *fi, const struct fi_info *hints, uint32_t version);

/* ---- object entry points ---- */
int cxip_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
int cxip_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info);
int cxip_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom, void *context);
int cxip_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av, void *context);
int cxip_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context);
int cxip_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context);
int cxip_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq, void *context);
int cxip_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context);
int cxip_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
		uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
int cxip_mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
		 uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
int cxip_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr);
int cxip_mr_enable_on(struct cxip_mr *mr, struct cxip_ep *ep);
void cxip_domain_ep_enabled(struct cxip_domain *dom, struct cxip_ep *ep);
void cxip_domain_ep_closed(struct cxip_domain *dom, struct cxip_ep *ep);

/* AV helpers */
int cxip_av_lookup_addr(struct cxip_av *av, fi_addr_t fi_addr, struct cxip_addr *addr, uint16_t *vni);
fi_addr_t cxip_av_reverse(struct cxip_av *av, uint32_t nic, uint32_t pid, uint16_t vni);
fi_addr_t cxip_av_auth_key_addr(struct cxip_av *av, uint16_t vni);
size_t cxip_av_vnis(struct cxip_av *av, uint16_t *vnis, size_t max);

/* CQ helpers */
int cxip_cq_bind_ep(struct cxip_cq *cq, struct cxip_ep *ep);
void cxip_cq_unbind_ep(struct cxip_cq *cq, struct cxip_ep *ep);

/* Data-path entry points (msg.c, rma.c) */
extern struct fi_ops_msg cxip_msg_ops;
extern struct fi_ops_tagged cxip_tagged_ops;
extern struct fi_ops_rma cxip_rma_ops;
extern struct fi_ops_atomic cxip_atomic_ops;
/* fi_query_atomic (atomic.c): count and size of a valid (datatype, op) pair; -FI_EOPNOTSUPP otherwise. */
int cxip_query_atomic(enum fi_datatype dt, enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags);
extern struct fi_ops_collective cxip_collective_ops;
ssize_t cxip_ep_cancel(struct fid *fid, void *context);
/* Emit one command (header + optional inline payload) on the endpoint's queue.  -FI_EAGAIN when full. */
ssize_t cxip_ep_emit(struct cxip_ep *ep, struct cxs_cmd *cmd, const void *inline_data, size_t inline_len);
/* Argument handling shared by the data paths (ep.c):
 * the peer and VNI of a command (-FI_EINVAL for FI_ADDR_UNSPEC/NOTAVAIL, or the AV's lookup error); */
int cxip_ep_cmd_peer(struct cxip_ep *ep, fi_addr_t dest, struct cxs_cmd *cmd);
/* whether an operation reports a completion (selective completion of the bound CQ; fi_inject* never); */
bool cxip_ep_want_completion(const struct cxip_ep *ep, uint64_t flags, bool tx);
/* the CXS_F_* of FI_REMOTE_CQ_DATA, FI_DELIVERY_COMPLETE and FI_FENCE; */
uint32_t cxip_tx_cmd_flags(uint64_t flags);
/* the one buffer of an iovec list (none: NULL, 0); more than one is -FI_EINVAL. */
int cxip_one_iov(const struct iovec *iov, size_t count, void **buf, size_t *len);

/* Triggered operations and deferred work (trigger.c): a command built by a data path while a trigger
 * applies (FI_TRIGGER, or deferred work being queued) goes to the daemon's trigger list instead of the
 * queue; the domain's fi_control(FI_QUEUE_WORK / FI_FLUSH_WORK / FI_CANCEL_WORK). */
bool cxip_trig_active(void);
ssize_t cxip_trig_emit(struct cxip_ep *ep, struct cxs_cmd *cmd, const void *inline_data, size_t inline_len);
int cxip_dom_trig_control(struct cxip_domain *dom, int command, void *arg);
/* A triggered operation's buffer is read when it fires: no inline payload unless FI_INJECT. */
static inline bool cxip_tx_data_deferred(uint64_t flags)
{
	return !(flags & FI_INJECT) && ((flags & FI_TRIGGER) || cxip_trig_active());
}
#define CXIP_DWQ_DEPTH (2048 - 8) /* C_NUM_TLES less upstream's TLE_RESERVED (cxip_dom.c) */

/* Generic fid helpers */
int cxip_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int cxip_no_control(struct fid *fid, int command, void *arg);
int cxip_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);

/* Error codes from the NIC return codes carried in events. */
int cxip_rc_to_errno(int rc);

/* Translate a libfabric wait on an eventfd with a timeout (ms, -1 forever); returns 0, -FI_EAGAIN on
 * timeout, -FI_EIO if the daemon died. */
int cxip_wait_fd(struct cxip_dev *dev, int fd, int timeout_ms);

/* Wait objects of CQs, counters and EQs (wait.c): the one an object gets for the one asked for (blocking
 * kinds become FI_WAIT_FD; FI_WAIT_POLLFD only where `pollfd`; wait sets -FI_ENOSYS), and fi_control's
 * FI_GETWAIT / FI_GETWAITOBJ for an object waiting on the eventfd efd. */
int cxip_wait_obj_choose(enum fi_wait_obj *wait, bool pollfd);
int cxip_wait_control(int command, void *arg, enum fi_wait_obj wait, int efd);

#endif
