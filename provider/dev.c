/* The process's connection to the emulation daemon: attach (starting a private daemon when none runs),
 * synchronous control requests, shared-memory mappings, and the watchdog that turns a dead daemon into
 * -FI_EIO everywhere (and wakes every thread blocked on a CQ or counter wait object) within a poll period.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cxip.h"

static pthread_mutex_t dev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cxip_dev *_Atomic the_dev;
static pid_t dev_owner_pid;

/* Whether this process is the one that attached, without a system call: the clock interposer asks on every
 * clock read (cxip_dev_current), and getpid() there was a system call inside the application's charged
 * CPU (~300 ns of the ~300 ns charged per clock read in this VM; native clock reads cost ~25 ns).  The mark
 * lives in a page the kernel zeroes in any child (MADV_WIPEONFORK: fork, _Fork, clone without CLONE_VM --
 * also those that skip the atfork handler).  A vfork child shares the page, but may only exec or _exit.
 * Without the madvise (kernels before 4.14) the page is not used and getpid() decides. */
static _Atomic uint32_t *owner_mark;

static void mark_owner(void)
{
	if (!owner_mark) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return;
		if (madvise(p, 4096, MADV_WIPEONFORK)) {
			munmap(p, 4096);
			return;
		}
		owner_mark = p;
	}
	atomic_store(owner_mark, 1);
}

static bool dev_owned(void)
{
	return owner_mark ? atomic_load_explicit(owner_mark, memory_order_relaxed) == 1 : dev_owner_pid == getpid();
}

/* ---- socket path and private daemon ---- */

static int socket_path(char *buf, size_t len)
{
	const char *env = getenv("CXISIM_SOCKET");
	if (env && *env) {
		if (strlen(env) >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return -ENAMETOOLONG;
		snprintf(buf, len, "%s", env);
		return 0;
	}
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char dir[PATH_MAX];
	if (rt && *rt)
		snprintf(dir, sizeof(dir), "%s/cxisim", rt);
	else
		snprintf(dir, sizeof(dir), "/tmp/cxisim-%u", (unsigned)getuid());
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	snprintf(buf, len, "%s/cxisimd.sock", dir);
	if (strlen(buf) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

static int sock_connect(const char *path)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* The daemon binary: CXISIM_DAEMON, else next to this library (../bin/cxisimd in the build tree). */
static int daemon_path(char *buf, size_t len)
{
	const char *env = getenv("CXISIM_DAEMON");
	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return access(buf, X_OK) ? -FI_ENOENT : 0;
	}
	Dl_info dli;
	if (dladdr((void *)&daemon_path, &dli) && dli.dli_fname) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s", dli.dli_fname);
		char *slash = strrchr(dir, '/');
		if (slash) {
			*slash = 0;
			snprintf(buf, len, "%s/../bin/cxisimd", dir);
			if (!access(buf, X_OK))
				return 0;
			snprintf(buf, len, "%s/cxisimd", dir);
			if (!access(buf, X_OK))
				return 0;
		}
	}
	snprintf(buf, len, "cxisimd");
	return 0;
}

/* Start a private daemon with the default scenario, detached from this process (double fork, its own
 * session) so that it outlives the process that started it until its last client is gone. */
static int spawn_daemon(const char *sock)
{
	char exe[PATH_MAX];
	int ret = daemon_path(exe, sizeof(exe));
	if (ret)
		return ret;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (fork() != 0)
			_exit(0);
		setsid();
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			if (!getenv("CXISIM_DAEMON_LOG"))
				dup2(nul, 2);
		}
		const char *log = getenv("CXISIM_DAEMON_LOG");
		if (log) {
			int lf = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (lf >= 0)
				dup2(lf, 2);
		}
		execlp(exe, "cxisimd", "--socket", sock, "--private", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return 0;
}

static int connect_or_start(const char *path)
{
	int fd = sock_connect(path);
	if (fd >= 0 || (fd != -ENOENT && fd != -ECONNREFUSED))
		return fd;
	if (getenv("CXISIM_NO_AUTOSTART"))
		return fd;
	/* Serialize starters (eight MPI ranks may all find no daemon at once). */
	char lock[PATH_MAX];
	snprintf(lock, sizeof(lock), "%s.lock", path);
	int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (lfd < 0)
		return -errno;
	flock(lfd, LOCK_EX);
	fd = sock_connect(path);
	if (fd < 0) {
		unlink(path); /* stale socket of a dead daemon */
		int ret = spawn_daemon(path);
		if (ret) {
			flock(lfd, LOCK_UN);
			close(lfd);
			return ret;
		}
		for (int i = 0; i < 500 && fd < 0; i++) {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
			fd = sock_connect(path);
		}
	}
	flock(lfd, LOCK_UN);
	close(lfd);
	return fd;
}

/* ---- messages ---- */

static int send_msg(int fd, const void *a, size_t alen, const void *b, size_t blen)
{
	struct iovec iov[2] = { { (void *)a, alen }, { (void *)b, blen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = blen ? 2 : 1 };
	ssize_t n;
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)(alen + blen) ? 0 : -FI_EIO;
}

static ssize_t recv_msg(int fd, void *buf, size_t len, int *fds, int *nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	ssize_t n;
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	int got = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int cnt = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *p = (int *)CMSG_DATA(c);
		for (int i = 0; i < cnt; i++) {
			if (fds && nfds && got < *nfds)
				fds[got++] = p[i];
			else
				close(p[i]);
		}
	}
	if (nfds)
		*nfds = got;
	return n;
}

int cxip_dev_call(struct cxip_dev *dev, uint32_t op, const void *req, size_t req_len, void *rep, size_t rep_len,
		  int *fds, int *nfds)
{
	if (cxip_dev_dead(dev))
		return -FI_EIO;
	char buf[CTL_MAX_MSG];
	int want = nfds ? *nfds : 0;
	/* Virtual mode: the request takes effect at the thread's virtual time (the daemon holds it until the
	 * engine gets there); the thread holds no virtual time while the daemon works on it (a registration or a
	 * close may need the engine to run), and the daemon wakes it at the time it replies. */
	uint64_t vt = 0;
	uint32_t vslot = PCB_REQ_NO_SLOT;
	if (dev->virt)
		vt = cxip_vt_request_begin(dev, &vslot);
	pthread_mutex_lock(&dev->lock);
	if (dev->virt) {
		atomic_store(&dev->pcb->req_vt_ps, vt);
		atomic_store(&dev->pcb->req_slot, vslot);
	}
	struct ctl_hdr h = { .op = op, .seq = ++dev->seq, .len = (uint32_t)req_len };
	int ret = send_msg(dev->sock, &h, sizeof(h), req, req_len);
	ssize_t n = -1;
	if (!ret) {
		if (nfds)
			*nfds = want;
		n = recv_msg(dev->sock, buf, sizeof(buf), fds, nfds);
	}
	pthread_mutex_unlock(&dev->lock);
	if (dev->virt) {
		cxip_vt_resume(dev); /* (the daemon's reply normally woke it already) */
		cxip_vt_rebase(dev);
	}
	if (ret || n < (ssize_t)sizeof(h)) {
		atomic_store(&dev->dead, 1);
		return -FI_EIO;
	}
	struct ctl_hdr rh;
	memcpy(&rh, buf, sizeof(rh));
	if (rh.seq != h.seq || rh.len > (size_t)n - sizeof(rh))
		return -FI_EIO;
	if (rep) {
		memset(rep, 0, rep_len);
		memcpy(rep, buf + sizeof(rh), rh.len < rep_len ? rh.len : rep_len);
	}
	return rh.status;
}

/* ---- watchdog ---- */

static void wake_waiters(struct cxip_dev *dev)
{
	pthread_mutex_lock(&dev->waiters_lock);
	for (size_t i = 0; i < dev->nwaiters; i++) {
		uint64_t one = 1;
		ssize_t r = write(dev->waiter_fds[i], &one, sizeof(one));
		(void)r;
	}
	pthread_mutex_unlock(&dev->waiters_lock);
}

static void *watchdog(void *arg)
{
	struct cxip_dev *dev = arg;
	cxip_vt_internal_thread();
	struct pollfd p[2] = { { dev->sock, POLLRDHUP, 0 }, { dev->wake_pipe[0], POLLIN, 0 } };
	for (;;) {
		int n = poll(p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (p[1].revents)
			return NULL;
		if (p[0].revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) {
			atomic_store(&dev->dead, 1);
			CXIP_WARN(FI_LOG_CORE, "cxisim daemon connection lost: operations now fail with -FI_EIO\n");
			wake_waiters(dev);
			return NULL;
		}
	}
}

void cxip_dev_add_waiter(struct cxip_dev *dev, int fd)
{
	pthread_mutex_lock(&dev->waiters_lock);
	if (dev->nwaiters == dev->waiters_cap) {
		size_t cap = dev->waiters_cap ? dev->waiters_cap * 2 : 16;
		int *p = realloc(dev->waiter_fds, cap * sizeof(int));
		if (!p) {
			pthread_mutex_unlock(&dev->waiters_lock);
			return;
		}
		dev->waiter_fds = p;
		dev->waiters_cap = cap;
	}
	dev->waiter_fds[dev->nwaiters++] = fd;
	pthread_mutex_unlock(&dev->waiters_lock);
	if (cxip_dev_dead(dev)) {
		uint64_t one = 1;
		ssize_t r = write(fd, &one, sizeof(one));
		(void)r;
	}
}

void cxip_dev_del_waiter(struct cxip_dev *dev, int fd)
{
	pthread_mutex_lock(&dev->waiters_lock);
	for (size_t i = 0; i < dev->nwaiters; i++)
		if (dev->waiter_fds[i] == fd) {
			dev->waiter_fds[i] = dev->waiter_fds[--dev->nwaiters];
			break;
		}
	pthread_mutex_unlock(&dev->waiters_lock);
}

/* ---- attach ---- */

static int env_int(const char *const names[], int def)
{
	for (int i = 0; names[i]; i++) {
		const char *v = getenv(names[i]);
		if (v && *v)
			return atoi(v);
	}
	return def;
}

static int attach(struct cxip_dev *dev)
{
	static const char *const rank_vars[] = { "CXISIM_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
						 "SLURM_PROCID", NULL };
	static const char *const lrank_vars[] = { "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
						  NULL };
	static const char *const node_vars[] = { "CXISIM_NODE", NULL };
	struct ctl_attach_req req = {
		.version = CXISIM_PROTO_VERSION,
		.pid = getpid(),
		.uid = getuid(),
		.rank = env_int(rank_vars, -1),
		.local_rank = env_int(lrank_vars, -1),
		.node = env_int(node_vars, -1),
		.time_mode = CXISIM_TIME_ANY,
	};
	/* `cxisim exec` names the mode its daemon runs; a process that expects the other one is refused. */
	const char *tm = getenv("CXISIM_TIME");
	if (tm && !strcmp(tm, "virtual"))
		req.time_mode = CXISIM_TIME_VIRTUAL;
	else if (tm && !strcmp(tm, "realtime"))
		req.time_mode = CXISIM_TIME_REALTIME;
	gethostname(req.hostname, sizeof(req.hostname) - 1);
	FILE *f = fopen("/proc/self/comm", "r");
	if (f) {
		if (fgets(req.progname, sizeof(req.progname), f))
			req.progname[strcspn(req.progname, "\n")] = 0;
		fclose(f);
	}
	int fds[2], nfds = 2;
	int ret = cxip_dev_call(dev, CTL_ATTACH, &req, sizeof(req), &dev->info, sizeof(dev->info), fds, &nfds);
	if (ret) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		if (ret == -EPROTO && req.time_mode != CXISIM_TIME_ANY)
			CXIP_WARN(FI_LOG_CORE, "the cxisim daemon runs another time mode than CXISIM_TIME=%s\n", tm);
		return ret;
	}
	bool virt = dev->info.time_mode == CXISIM_TIME_VIRTUAL;
	if (nfds != (virt ? 2 : 1) || dev->info.nnics > CXISIM_MAX_NICS_PER_NODE ||
	    dev->info.pcb_bytes < sizeof(struct pcb_shm)) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return -FI_EIO;
	}
	struct cxip_shm_map m;
	ret = cxip_shm_map(fds[0], dev->info.pcb_bytes, &m);
	close(fds[0]);
	if (ret) {
		if (virt)
			close(fds[1]);
		return ret;
	}
	if (virt) {
		dev->pcb_efd = fds[1];
		dev->virt = true;
	}
	dev->pcb = m.addr;
	dev->pcb_bytes = m.len;
	dev->cpu_scale = dev->pcb->cpu_scale;
	dev->span_clip_ns = dev->pcb->span_clip_ns;
	dev->span_clip_q_pm = dev->pcb->span_clip_q_pm;
	dev->span_clip_flags = dev->pcb->span_clip_flags;
	dev->spin_read_ps = (uint64_t)dev->pcb->spin_read_ns * 1000;
	dev->spin_free_reads = dev->pcb->spin_free_reads;
	/* Let the daemon's DMA engine reach this process's memory (Yama ptrace scope 1). */
	prctl(PR_SET_PTRACER, (unsigned long)dev->info.daemon_pid, 0, 0, 0);
	return 0;
}

static void dev_free(struct cxip_dev *dev)
{
	if (dev->sock >= 0)
		close(dev->sock);
	if (dev->pcb)
		munmap(dev->pcb, dev->pcb_bytes);
	if (dev->pcb_efd >= 0)
		close(dev->pcb_efd);
	free(dev->waiter_fds);
	free(dev->pollables);
	free(dev);
}

static void atfork_child(void)
{
	/* The child is not the process the daemon knows: it attaches afresh if it uses the provider. */
	the_dev = NULL;
}

int cxip_dev_get(struct cxip_dev **out)
{
	pthread_mutex_lock(&dev_lock);
	if (the_dev && dev_owner_pid == getpid()) {
		*out = the_dev;
		pthread_mutex_unlock(&dev_lock);
		return cxip_dev_dead(the_dev) ? -FI_EIO : 0;
	}
	static bool atfork_done;
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, atfork_child);
		atfork_done = true;
	}
	char path[PATH_MAX];
	int ret = socket_path(path, sizeof(path));
	struct cxip_dev *dev = NULL;
	if (ret)
		goto out;
	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		ret = -FI_ENOMEM;
		goto out;
	}
	dev->sock = -1;
	dev->pcb_efd = -1;
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->waiters_lock, NULL);
	dev->sock = connect_or_start(path);
	if (dev->sock < 0) {
		CXIP_WARN(FI_LOG_CORE, "cannot reach the cxisim daemon at %s: %s\n", path, strerror(-dev->sock));
		ret = -FI_ENODEV;
		goto out;
	}
	ret = attach(dev);
	if (ret) {
		CXIP_WARN(FI_LOG_CORE, "attach to the cxisim daemon failed: %d\n", ret);
		goto out;
	}
	if (pipe2(dev->wake_pipe, O_CLOEXEC)) {
		ret = -errno;
		goto out;
	}
	if (pthread_create(&dev->watchdog, NULL, watchdog, dev)) {
		ret = -FI_ENOMEM;
		goto out;
	}
	dev_owner_pid = getpid();
	mark_owner();
	atomic_store(&the_dev, dev);
	*out = dev;
	if (dev->virt)
		cxip_vt_register(dev); /* the clock interposer, if preloaded, now answers with virtual time */
	dev = NULL;
	ret = 0;
out:
	if (dev)
		dev_free(dev);
	pthread_mutex_unlock(&dev_lock);
	return ret;
}

/* The connection of a process whose provider was cleaned up: kept (never freed) so threads still inside
 * the provider find a dead connection.  Leak checkers are told it is kept on purpose (the weak symbol is
 * LeakSanitizer's, present only in sanitized processes). */
static struct cxip_dev *finished_dev;
extern void __lsan_ignore_object(const void *p) __attribute__((weak));

/* libfabric's cleanup, run by its destructor when the process exits -- possibly while other threads are
 * still inside the provider (a Mercury server calls exit() from one thread while others poll or block on
 * the CQ).  Say goodbye to the daemon, then make every call of those threads fail with -FI_EIO and wake
 * the blocked ones, but free and unmap nothing: they may be reading the connection, a ring or a counter
 * page at this moment.  The provider library itself stays mapped (linked with -z nodelete), so no thread
 * returns into unloaded code; the process's end releases the rest. */
void cxip_dev_fini(void)
{
	pthread_mutex_lock(&dev_lock);
	struct cxip_dev *dev = the_dev;
	the_dev = NULL;
	pthread_mutex_unlock(&dev_lock);
	if (!dev || dev_owner_pid != getpid())
		return;
	if (dev->virt)
		cxip_vt_register(NULL);
	cxip_dev_call(dev, CTL_DETACH, NULL, 0, NULL, 0, NULL, NULL);
	char c = 0;
	ssize_t r = write(dev->wake_pipe[1], &c, 1);
	(void)r;
	pthread_join(dev->watchdog, NULL);
	atomic_store(&dev->dead, 1);
	wake_waiters(dev);
	finished_dev = dev;
	if (__lsan_ignore_object)
		__lsan_ignore_object(dev);
}

/* ---- thread slots (per-thread state for the virtual-time mode) ---- */

static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static __thread int my_slot = -1;
static __thread struct cxip_dev *my_slot_dev;

static void slot_release(void *p)
{
	struct pcb_thread *t = p;
	/* Clean for the next owner before it can be claimed (a claim writes nothing before its CAS). */
	atomic_store(&t->wait_id, PCB_WAIT_NONE);
	atomic_store(&t->deadline_ps, UINT64_MAX);
	atomic_store(&t->stalled, 0);
	atomic_store(&t->state, PCB_THREAD_FREE);
}

static void slot_key_init(void)
{
	pthread_key_create(&slot_key, slot_release);
}

int cxip_dev_thread_slot_existing(struct cxip_dev *dev)
{
	return my_slot >= 0 && my_slot_dev == dev ? my_slot : -1;
}

int cxip_dev_thread_slot(struct cxip_dev *dev)
{
	if (my_slot >= 0 && my_slot_dev == dev)
		return my_slot;
	pthread_once(&slot_once, slot_key_init);
	for (int i = 0; i < CXISIM_MAX_THREADS; i++) {
		struct pcb_thread *t = &dev->pcb->threads[i];
		uint32_t expect = PCB_THREAD_FREE;
		/* Virtual mode: claimed idle (a free slot waits on nothing: slot_release, and the daemon's
		 * zeroed memory), then it resumes at the daemon's horizon. */
		if (atomic_compare_exchange_strong(&t->state, &expect, dev->virt ? PCB_THREAD_IDLE : PCB_THREAD_BUSY)) {
			t->tid = (int32_t)syscall(SYS_gettid);
			my_slot = i;
			my_slot_dev = dev;
			pthread_setspecific(slot_key, t);
			if (dev->virt)
				cxip_vt_slot_claimed(dev, i);
			return i;
		}
	}
	return -1;
}

struct cxip_dev *cxip_dev_current(void)
{
	struct cxip_dev *dev = atomic_load(&the_dev);
	return dev && dev_owned() ? dev : NULL;
}

void cxip_dev_add_pollable(struct cxip_dev *dev, int kind, void *obj)
{
	pthread_mutex_lock(&dev->waiters_lock);
	if (dev->npollables == dev->pollables_cap) {
		size_t cap = dev->pollables_cap ? dev->pollables_cap * 2 : 8;
		struct cxip_pollable *p = realloc(dev->pollables, cap * sizeof(*p));
		if (!p) {
			pthread_mutex_unlock(&dev->waiters_lock);
			return;
		}
		dev->pollables = p;
		dev->pollables_cap = cap;
	}
	dev->pollables[dev->npollables++] = (struct cxip_pollable){ kind, obj };
	pthread_mutex_unlock(&dev->waiters_lock);
}

void cxip_dev_del_pollable(struct cxip_dev *dev, void *obj)
{
	pthread_mutex_lock(&dev->waiters_lock);
	for (size_t i = 0; i < dev->npollables; i++)
		if (dev->pollables[i].obj == obj) {
			dev->pollables[i] = dev->pollables[--dev->npollables];
			break;
		}
	pthread_mutex_unlock(&dev->waiters_lock);
}

bool cxip_cq_has_entries(struct cxip_cq *cq, uint64_t *changes);
bool cxip_eq_has_entries(struct cxip_eq *eq, uint64_t *changes);

bool cxip_dev_anything_pending(struct cxip_dev *dev, uint64_t *changes)
{
	bool any = false;
	uint64_t sum = 0;
	pthread_mutex_lock(&dev->waiters_lock);
	for (size_t i = 0; i < dev->npollables; i++) {
		uint64_t n = 0;
		any |= dev->pollables[i].kind == FI_CLASS_CQ ? cxip_cq_has_entries(dev->pollables[i].obj, &n)
							      : cxip_eq_has_entries(dev->pollables[i].obj, &n);
		sum += n;
	}
	pthread_mutex_unlock(&dev->waiters_lock);
	if (changes)
		*changes = sum;
	return any;
}

/* ---- shared memory and queues ---- */

int cxip_shm_map(int fd, size_t len, struct cxip_shm_map *m)
{
	struct stat st;
	if (fstat(fd, &st) || (size_t)st.st_size < len)
		return -FI_EIO;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -FI_ENOMEM;
	m->addr = p;
	m->len = len;
	return 0;
}

void cxip_shm_unmap(struct cxip_shm_map *m)
{
	if (m->addr)
		munmap(m->addr, m->len);
	m->addr = NULL;
}

int cxip_dev_close_obj(struct cxip_dev *dev, uint32_t id)
{
	struct ctl_obj_close_req req = { .id = id };
	int ret = cxip_dev_call(dev, CTL_OBJ_CLOSE, &req, sizeof(req), NULL, 0, NULL, NULL);
	return ret == -FI_EIO ? 0 : ret; /* a dead daemon has freed everything already */
}

int cxip_queue_open(struct cxip_dev *dev, uint32_t kind, uint32_t nslots, struct cxip_queue *q)
{
	struct ctl_queue_open_req req = { .kind = kind, .nslots = nslots };
	struct ctl_queue_open_rep rep;
	int fds[2], nfds = 2;
	memset(q, 0, sizeof(*q));
	q->efd = -1;
	int ret = cxip_dev_call(dev, CTL_QUEUE_OPEN, &req, sizeof(req), &rep, sizeof(rep), fds, &nfds);
	if (ret) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return ret;
	}
	if (nfds != 2 || rep.nslots != nslots || rep.bytes < ring_bytes(nslots)) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		cxip_dev_close_obj(dev, rep.id);
		return -FI_EIO;
	}
	ret = cxip_shm_map(fds[0], rep.bytes, &q->map);
	close(fds[0]);
	if (ret) {
		close(fds[1]);
		cxip_dev_close_obj(dev, rep.id);
		return ret;
	}
	q->id = rep.id;
	q->efd = fds[1];
	ring_attach(&q->ring, q->map.addr, nslots, kind == QUEUE_CMD ? 16 : 2);
	return 0;
}

void cxip_queue_close(struct cxip_dev *dev, struct cxip_queue *q)
{
	if (!q->map.addr)
		return;
	cxip_dev_close_obj(dev, q->id);
	cxip_shm_unmap(&q->map);
	if (q->efd >= 0)
		close(q->efd);
	q->efd = -1;
}

int cxip_wait_fd(struct cxip_dev *dev, int fd, int timeout_ms)
{
	if (cxip_dev_dead(dev))
		return -FI_EIO;
	struct pollfd p = { fd, POLLIN, 0 };
	int n;
	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (cxip_dev_dead(dev))
		return -FI_EIO;
	if (n == 0)
		return -FI_EAGAIN;
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v)); /* eventfds are non-blocking */
	(void)r;
	return 0;
}
