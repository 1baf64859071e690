/* cxisimd: the emulation daemon.  It owns one engine (fabric + NIC models built from a scenario), lets
 * real processes attach over a UNIX socket, and runs, for each of their endpoints, the cxi provider's
 * software layer (sim/nic/sw.h) on the simulated NIC of the node the process is placed on.
 *
 *   server.c    socket, clients, control requests, client death
 *   endpoint.c  endpoints: command queues -> sw layer, completions -> event queues, counters, MRs
 *               (FI_PEEK/FI_CLAIM go to the sw layer's search of the unexpected messages)
 *   host.c      the NIC's DMA into real processes (process_vm_readv/writev)
 *   clock.c     time modes (realtime: virtual time follows the wall clock)
 *   vclock.c    virtual mode: the conservative lockstep on the threads' virtual clocks
 *   emulation.c the "emulation" scenario section: nodes, NICs per node, placement, time mode
 *   capture.c   --capture FILE: what the processes do on the fabric, for the replay workload
 *   workloads.c simulated workloads of the scenario (replay) next to the attached processes
 */
#ifndef CXISIMD_DAEMON_H
#define CXISIMD_DAEMON_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../engine.h"
#include "../nic/sw.h"
#include "../pool.h"
#include "cmd.h"
#include "proto.h"
#include "ring.h"

struct scenario;
struct client;
struct capture;
struct cxs_cmd;

/* ---- emulation section (emulation.c) ---- */
enum placement_policy {
	PLACE_AUTO,        /* rank % nodes when the launcher gives a rank, else round-robin by attach order */
	PLACE_NODE0,       /* every process on node 0 (one host) */
	PLACE_ROUND_ROBIN, /* attach order */
	PLACE_RANK,        /* rank % nodes; processes without a rank go to node 0 */
};

struct emu_cfg {
	uint32_t nodes;
	uint32_t nics_per_node;
	uint32_t first_nic;
	enum placement_policy placement;
	enum cxisim_time_mode time_mode;
	double slowdown;         /* realtime: virtual seconds per wall second = 1 / slowdown */
	simtime_t lead;          /* realtime: how far the engine may run ahead of the wall clock */
	double cpu_scale;        /* virtual: virtual seconds per second of a thread's CPU time */
	double stall_timeout_s;  /* virtual: wall time before the stall rule looks at a thread that holds time */
	uint64_t park_timeout_ns; /* virtual: wall time a parked thread waits with nothing changing */
	simtime_t retry;         /* virtual: idle time after a full command queue */
	bool keep_cores_awake;   /* virtual, cpu_scale > 0: idle-class spinners on every core (awake.c) */
	double cpu_latency_qos_us; /* virtual: the CPU latency request held while attached; -1 none (hostidle.c) */
	uint32_t span_clip_ns;   /* virtual, cpu_scale > 0: the span clip's bound (provider/vtime.c) */
	uint32_t span_clip_q_pm; /* the span clip's quantile, per mille (500: the median) */
	bool span_clip_after_park, span_clip_end_site; /* clip only post-park spans; key = ending site alone */
	uint32_t spin_free_reads; /* virtual, cpu_scale 0: clock reads in a row that stay free (provider/vtime.c) */
	uint32_t spin_read_ns;   /* virtual, cpu_scale 0: a repeated clock read's cost (provider/vtime.c) */
	uint32_t max_clients;
	uint32_t next_rr;
};
struct emu_cfg *emu_get(struct sim *sim);
/* Node for a process; -1 if the request is out of range. */
int emu_place(struct emu_cfg *e, int32_t requested_node, int32_t rank);
uint32_t emu_nic_addr(const struct emu_cfg *e, uint32_t node, uint32_t index);

/* ---- objects owned by clients ---- */
enum obj_kind { OBJ_QUEUE = 1, OBJ_CT, OBJ_EP, OBJ_MR };

struct obj {
	uint32_t id;
	enum obj_kind kind;
	struct client *c;
	struct obj *next; /* client's list */
};

struct backlog {
	struct backlog *next;
	uint16_t nslots;
	unsigned char data[2 * RING_SLOT];
};

struct dqueue {
	struct obj o;
	uint32_t kind;   /* QUEUE_CMD or QUEUE_EVT */
	void *map;
	size_t map_len;
	int memfd;
	int efd;
	struct ring ring;
	ev_io io;        /* command queues: the doorbell */
	struct dep *ep;  /* command queue's endpoint */
	uint32_t users;  /* endpoints bound (event queues) */
	struct backlog *bl_head, *bl_tail; /* events that did not fit yet */
	uint64_t bl_count;
};

struct dct {
	struct obj o;
	void *map;
	size_t map_len;
	int efd;
	struct ct_shm *shm;
	uint32_t users;
	bool bytes;           /* FI_CXI_CNTR_EVENTS_BYTES: a success adds its length, a failure 1 */
	struct nic_lni *tlni; /* triggered operations wait on it: its value mirrored into CT ctn of this LNI */
	uint32_t ctn;
};

struct dop;
struct dtrig;

struct dep {
	struct obj o;
	struct sw_ep *sw;
	struct nic *nic;
	uint32_t nic_addr;
	uint32_t pid;
	uint32_t flags;       /* enum ep_open_flags */
	uint32_t svc_id;
	struct dqueue *cmdq, *txq, *rxq;
	struct dct *cts[EPC_COUNT];
	struct dop *ops;      /* live operations (doubly linked) */
	uint64_t nops;
	bool fatal;
	bool closing;
	bool backpressured;   /* the NIC refused the head of the queue (-EAGAIN): until the queue catches up */
	bool ring_corrupt;    /* its command ring was found corrupt: never read again */
	bool recv_posted;     /* a receive was posted (simulated workloads may now send to it) */
	uint32_t cap_ep;      /* capture id (0: not captured) */
	uint32_t cap_images_due; /* MRs registered since the last send, whose exposed image is still due */
	simtime_t cap_last_rx, cap_last_tx;
	uint32_t close_seq;
	simtime_t close_deadline;
	sim_timer close_timer;
	ev_timer retry_timer; /* realtime: retries a refused command retry_ns of wall time later */
};

struct dmr {
	struct obj o;
	struct dep *ep;
	struct sw_mr *mr;
	struct dct *ct;
	uint32_t ct_flags;     /* MRF_CT_REMOTE_WRITE / MRF_CT_REMOTE_READ */
	uint64_t context;      /* the MR's fid context in the process */
	uint32_t pending_seq;  /* control request waiting for the registration / close to finish */
	uint64_t addr, len;    /* the region in the process */
	uint32_t reg_flags;    /* enum mr_reg_flags */
	uint32_t cap_mr;       /* capture id (0: not captured) */
	bool cap_exposed;      /* its exposed image is captured */
	bool registered, closing;
};

/* One operation in flight: the sw layer's op_context. */
struct dop {
	struct dop *next, *prev;
	struct dep *ep;
	uint64_t context;     /* provider's context, echoed in events */
	uint32_t cflags;      /* enum cxs_cmd_flags of the command */
	uint16_t op;          /* enum cxs_cmd_op */
	uint16_t payload_len;
	bool own_ct;          /* deferred work: the completion counts in `ct`, not the endpoint's counters */
	bool failed;          /* completed with FI_EIO by a fatal error while the NIC model still holds it */
	struct dct *ct;
	unsigned char payload[192]; /* inject payload of an RMA write (the NIC reads it like IDC data) */
};

/* ---- clients ---- */
struct client {
	struct daemon *d;
	int fd;
	ev_io io;
	pid_t pid;            /* from SO_PEERCRED, never from the client's word */
	uid_t uid;
	uint32_t id;
	uint32_t node;
	int32_t rank;
	char progname[64];
	bool attached;
	bool detached;        /* said goodbye: its socket closing is not a death */
	bool dead;
	struct pcb_shm *pcb;
	uint32_t cap_proc;    /* capture id (0: not captured yet) */
	size_t pcb_len;
	int pcb_fd;
	struct obj *objs;
	uint32_t next_id;
	struct client *next;
	uint64_t bytes_read, bytes_written; /* DMA into / out of this process */
	/* virtual mode */
	int pcb_efd;          /* rung by the provider when the daemon waits for one of its threads */
	ev_io pcb_io;
	struct vslot *vs;     /* the daemon's view of each thread slot (stall rule) */
	char *held_req;       /* a control request waiting for the process's queued commands and its stamp */
	simtime_t held_vt;    /* virtual mode: when it takes effect (the sender's clock) */
	size_t held_len;
	bool req_in;          /* virtual mode: a control request received and not yet answered */
	uint64_t mem_faults;
	/* triggered operations (trigger.c) */
	struct dtrig *trigs;  /* held or retrying */
	struct { struct nic *nic; struct nic_lni *lni; } tlnis[CXISIM_MAX_NICS_PER_NODE];
	uint32_t ntlnis;
};

struct daemon {
	struct ev_loop *loop;
	struct scenario *sc;
	struct sim *sim;
	struct emu_cfg *emu;
	int listen_fd;
	ev_io listen_io;
	char sock_path[108];
	bool private_mode;
	pid_t owner_pid;      /* the process that started this daemon (0: none, a private daemon) */
	double linger_s;
	ev_timer linger;
	ev_timer step_timer;
	ev_timer stall_timer; /* virtual: the stall rule's check, and full event queues' retry */
	bool vrun_active, vrun_again;
	simtime_t vblocked_ps;  /* virtual mode: the earliest wall-paced clock of a thread blocked outside the provider */
	ev_signal sigterm, sigint;
	double t0_wall;
	struct client *clients;
	uint32_t nclients;
	uint32_t next_client_id;
	uint32_t nbacklogged; /* event queues holding events that did not fit yet */
	struct pool op_pool;
	struct pool backlog_pool;
	bool quiet;
	bool stopping;
	const char *out_dir;
	struct capture *cap;  /* --capture: NULL when not capturing */
	/* counters (stats registry) */
	uint64_t *st_attach, *st_detach, *st_client_deaths, *st_cmds, *st_events, *st_backlogged, *st_bad_cmds,
		*st_causality_lag, *st_causality_lag_count, *st_stalls, *st_stalls_paced, *st_extrapolations, *st_wakes, *st_held_reqs,
		*st_awake_spinners, *st_park_timeouts, *st_spans, *st_spans_clipped, *st_span_clip_credit,
		*st_spans_after_park;
};

/* server.c */
int server_listen(struct daemon *d, const char *path);
void server_close_client(struct client *c, const char *why);
void server_reply(struct client *c, uint32_t seq, int32_t status, const void *body, size_t len, const int *fds,
		  int nfds);
struct obj *client_find(struct client *c, uint32_t id, enum obj_kind kind);
void client_add_obj(struct client *c, struct obj *o);
void client_del_obj(struct client *c, struct obj *o);
void daemon_check_idle(struct daemon *d);

/* endpoint.c */
int ep_open(struct client *c, const struct ctl_ep_open_req *req, struct ctl_ep_open_rep *rep);
void ep_close(struct dep *ep);
/* fi_close of an endpoint: transmit operations already handed to the NIC finish first (up to a bound);
 * returns true when the reply is deferred. */
bool ep_close_request(struct dep *ep, uint32_t seq);
int ep_ctrl(struct client *c, const struct ctl_ep_ctrl_req *req, void *rep, size_t *rep_len);
void ep_drain_cmdq(struct dep *ep);
int mr_reg(struct client *c, uint32_t seq, const struct ctl_mr_reg_req *req, bool *deferred);
int mr_close(struct dmr *mr, uint32_t seq, bool *deferred);
void mr_abandon(struct dmr *mr);
void mr_host_costs(struct daemon *d, struct pcb_shm *pcb); /* the provider's mapping costs, at attach */
void queue_flush_backlog(struct dqueue *q);
void ct_add(struct dct *ct, bool failure, uint64_t n);
/* Count one operation of `len` bytes in its counter's unit (operations or bytes). */
void ct_count(struct dct *ct, bool failure, uint64_t len);


/* Execute one command of the endpoint (raw: nslots slots as on its command queue); own_ct: count the
 * completion in ct instead of the endpoint's counters.  0, or -EAGAIN (the NIC is full: retry later). */
int ep_exec(struct dep *ep, const unsigned char *raw, uint16_t nslots, bool own_ct, struct dct *ct);

/* trigger.c */
int trig_queue(struct client *c, const struct ctl_trig_queue_req *req, const unsigned char *cmd, size_t len);
void trig_flush(struct client *c);
void trig_ep_closed(struct dep *ep);
void trig_client_free(struct client *c);   /* before its objects are freed */
void trig_ct_free(struct dct *ct);         /* drops what waits on the counter */
void trig_ct_changed(struct dct *ct);      /* mirror the counter into its CT */

/* host.c */
extern const struct nic_mem_ops host_mem_ops;
/* Marks an address in the daemon's own memory (inject payloads).  Bit 63 belongs to the software layer's
 * private memory (sw_impl.h), user addresses stay below 2^57. */
#define HOST_DAEMON_ADDR (1ULL << 62)

/* capture.c */
int capture_open(struct daemon *d, const char *path, uint64_t max_payload, uint64_t max_image);
int capture_close(struct daemon *d);
void capture_ep(struct dep *ep, const struct ctl_ep_open_req *req);
/* A command the endpoint accepted; inline_payload: an inject send's bytes. */
void capture_cmd(struct dep *ep, const struct cxs_cmd *cmd, const void *inline_payload);
void capture_comp(struct dep *ep, const struct sw_comp *c);
void capture_mr(struct dmr *mr);
/* readable: the process is alive (its memory gives the region's image at close). */
void capture_mr_close(struct dmr *mr, bool readable);

/* workloads.c */
/* The endpoint posted its first receive: simulated clients aimed at it may start. */
void workloads_ep_ready(struct dep *ep);

/* clock.c */
void clock_init(struct daemon *d);
/* Bring the engine up to the wall clock before applying commands. */
void clock_catch_up(struct daemon *d);
/* Run what is due (and up to the lead), then re-arm the step timer. */
void clock_step(struct daemon *d);
simtime_t clock_wall_vt(struct daemon *d);
/* A command stamped `stamp` runs at the engine's now: count the lag if it is late. */
void clock_count_lag(struct daemon *d, simtime_t stamp);

/* vclock.c (virtual mode) */
static inline bool daemon_virtual(const struct daemon *d)
{
	return d->emu->time_mode == CXISIM_TIME_VIRTUAL;
}
void vclock_init(struct daemon *d);
/* awake.c: emulation.keep_cores_awake, spinners while processes are attached. */
void awake_attach(struct daemon *d);
void awake_detach(struct daemon *d);
#define AWAKE_ARG "--keep-cores-awake-spinners" /* argv[1] of the spinners' process: awake_main(argv[2]) */
int awake_main(pid_t parent);
/* hostidle.c: emulation.cpu_latency_qos_us, a CPU latency request held while processes are attached, and
 * the host's idle configuration for run.json. */
void hostidle_attach(struct daemon *d);
void hostidle_detach(struct daemon *d);
char *hostidle_report(struct daemon *d); /* '"host_idle": {...}' (malloc'd), the request released */
int vclock_attach(struct client *c);       /* the pcb eventfd; returns it or -errno */
void vclock_detach(struct client *c);
/* Advance virtual time as far as the threads allow, executing due commands and held requests. */
void vclock_run(struct daemon *d);
/* Something became visible to the process (an event in queue / a counter `obj_id`): wake its idle threads
 * that wait on it, at the engine's now. */
void vclock_wake(struct client *c, uint32_t obj_id);
/* The process's control request is answered: its sender (idle since it sent it) is woken at the engine's
 * now, so it goes on from the time the request took effect. */
void vclock_request_done(struct client *c);
/* The virtual time a control request of c takes effect: its sender's clock (0: now). */
simtime_t vclock_request_stamp(struct client *c);
/* The command queue of `ep`: execute the commands due (stamp <= now); returns the next stamp, or
 * UINT64_MAX when the queue is empty. */
simtime_t ep_drain_due(struct dep *ep);
bool ep_orders_requests(struct dep *ep);
void server_handle_request(struct client *c, const char *buf, size_t n);

#endif
