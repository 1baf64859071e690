/* cxisimd: the emulation daemon.  Real processes attach through the libfabric provider "cxi"
 * (libcxisim-fi.so); their endpoints run on the simulated NICs of the scenario.  Started by `cxisim exec`
 * (a scenario, outputs written at exit), or privately by the provider when no daemon runs (the default
 * scenario; it exits once its last client has gone). */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../scenario.h"
#include "../stats.h"
#include "../util.h"
#include "daemon.h"

/* The default scenario of a private daemon: a small machine on the direct fabric. */
static const char default_scenario[] =
	"{\n"
	"  \"name\": \"emulation-default\",\n"
	"  \"seed\": 1,\n"
	"  \"fabric\": {\"topology\": \"direct\", \"endpoints\": 65},\n"
	"  \"nic\": {},\n"
	"  \"emulation\": {\"nodes\": 32, \"nics_per_node\": 2}\n"
	"}\n";

static double wall_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f)
{
	fputs("usage: cxisimd --socket PATH [--config FILE.json] [--source NAME] [--out DIR] [--private]\n"
	      "               [--linger S] [--capture FILE] [--exit-with-parent PID] [--quiet]\n"
	      "  --socket PATH   UNIX socket to listen on (the provider finds it through CXISIM_SOCKET)\n"
	      "  --config FILE   resolved scenario (JSON) with fabric, nic and emulation sections;\n"
	      "                  default: 32 nodes x 2 NICs on the direct fabric\n"
	      "  --source NAME   file name shown in config error messages\n"
	      "  --out DIR       write metrics.json, telemetry.csv, timeseries.csv, run.json there at exit\n"
	      "  --private       exit once the last client has detached (after --linger seconds, default 2)\n"
	      "  --capture FILE  record what the processes do on the fabric (messages with payloads, receives,\n"
	      "                  RMA, memory regions with contents) for the replay workload (docs/replay.md)\n"
	      "  --capture-max-payload BYTES, --capture-max-image BYTES  limits per message / region\n"
	      "  --exit-with-parent PID  PID is the parent that starts the daemon (`cxisim exec`): the daemon\n"
	      "                  exits (as on SIGTERM) when that process dies, however it dies\n"
	      "  --quiet         no log lines on stderr\n",
	      f);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)revents;
	struct daemon *d = w->data;
	d->stopping = true;
	ev_break(loop, EVBREAK_ALL);
}

static struct scenario *load(const char *config, const char *source)
{
	struct scenario_opts so = { .shown_name = source };
	if (config)
		return scenario_load(config, &so);
	char path[] = "/tmp/cxisimd-default-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		die("cxisimd: cannot write the default scenario: %s", strerror(errno));
	if (write(fd, default_scenario, sizeof(default_scenario) - 1) != (ssize_t)(sizeof(default_scenario) - 1))
		die("cxisimd: cannot write the default scenario");
	close(fd);
	so.shown_name = "<default scenario>";
	struct scenario *sc = scenario_load(path, &so);
	unlink(path);
	return sc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, 0, 's' }, { "config", required_argument, 0, 'c' },
		{ "source", required_argument, 0, 'S' }, { "out", required_argument, 0, 'o' },
		{ "private", no_argument, 0, 'p' },      { "linger", required_argument, 0, 'l' },
		{ "quiet", no_argument, 0, 'q' },        { "help", no_argument, 0, 'h' },
		{ "capture", required_argument, 0, 'C' }, { "capture-max-payload", required_argument, 0, 'P' },
		{ "capture-max-image", required_argument, 0, 'I' }, { "exit-with-parent", required_argument, 0, 'E' },
		{ 0, 0, 0, 0 },
	};
	const char *sock = NULL, *config = NULL, *source = NULL, *capture = NULL;
	uint64_t cap_payload = 1 << 16, cap_image = 64 << 20;
	struct daemon d = { .listen_fd = -1, .linger_s = 2.0 };
	pid_t parent_pid = 0;
	int c;
	if (argc == 3 && !strcmp(argv[1], AWAKE_ARG))
		return awake_main((pid_t)atoi(argv[2]));
	while ((c = getopt_long(argc, argv, "s:c:S:o:pl:qh", opts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'c': config = optarg; break;
		case 'S': source = optarg; break;
		case 'o': d.out_dir = optarg; break;
		case 'p': d.private_mode = true; break;
		case 'l':
			if (opt_seconds("cxisimd", "--linger", optarg, 86400, &d.linger_s))
				return 2;
			break;
		case 'q': d.quiet = true; break;
		case 'E': {
			unsigned long long v;
			if (opt_u64("cxisimd", "--exit-with-parent", optarg, INT32_MAX, &v))
				return 2;
			parent_pid = (pid_t)v;
			break;
		}
		case 'C': capture = optarg; break;
		case 'P':
		case 'I': {
			unsigned long long v;
			if (opt_u64("cxisimd", c == 'P' ? "--capture-max-payload" : "--capture-max-image", optarg,
				    1ull << 40, &v))
				return 2;
			*(c == 'P' ? &cap_payload : &cap_image) = v;
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!sock || optind != argc) {
		usage(stderr);
		return 2;
	}
	/* Before the daemon serves anyone: a bad --out must not be found only when the job is over. */
	if (d.out_dir && opt_out_dir("cxisimd", d.out_dir))
		return 2;
	/* A private daemon is double-forked by its starter and reparented: it has no owner.  Otherwise its
	 * parent (`cxisim exec`) owns it and alone may ask it to stop over the socket. */
	d.owner_pid = d.private_mode ? 0 : getppid();
	/* --exit-with-parent (`cxisim exec`): the daemon does not outlive its owner, even one killed without a
	 * word (SIGKILL from a test's timeout).  The parent may have died before the request: then we are
	 * already someone else's child. */
	if (parent_pid && (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent_pid)) {
		fprintf(stderr, "cxisimd: the process that started me is gone\n");
		return 1;
	}
	d.sc = load(config, source);
	d.sim = d.sc->sim;
	d.emu = emu_get(d.sim);
	if (!d.emu) {
		fprintf(stderr, "%s: the scenario has no 'emulation' section (nodes, nics_per_node, placement)\n",
			source ? source : config);
		return 2;
	}
	struct stats *st = sim_stats(d.sim);
	d.st_attach = stats_counter(st, "emulation.attaches");
	d.st_detach = stats_counter(st, "emulation.detaches");
	d.st_client_deaths = stats_counter(st, "emulation.client_deaths");
	d.st_cmds = stats_counter(st, "emulation.commands");
	d.st_events = stats_counter(st, "emulation.events");
	d.st_backlogged = stats_counter(st, "emulation.events_backlogged");
	d.st_bad_cmds = stats_counter(st, "emulation.bad_commands");
	d.st_causality_lag = stats_counter(st, "emulation.causality_lag_ps");
	d.st_causality_lag_count = stats_counter(st, "emulation.causality_lag_count");
	d.st_stalls = stats_counter(st, "emulation.stalls");
	d.st_stalls_paced = stats_counter(st, "emulation.stalls_paced");
	d.st_extrapolations = stats_counter(st, "emulation.extrapolations");
	d.st_wakes = stats_counter(st, "emulation.wakes");
	d.st_held_reqs = stats_counter(st, "emulation.held_requests");
	d.st_awake_spinners = stats_counter(st, "emulation.awake_spinners");
	d.st_park_timeouts = stats_counter(st, "emulation.park_timeouts");
	d.st_spans = stats_counter(st, "emulation.spans");
	d.st_spans_clipped = stats_counter(st, "emulation.spans_clipped");
	d.st_spans_after_park = stats_counter(st, "emulation.spans_after_park");
	d.st_span_clip_credit = stats_counter(st, "emulation.span_clip_credit_ns");
	if (capture && capture_open(&d, capture, cap_payload, cap_image))
		return 2;
	pool_init(&d.op_pool, sizeof(struct dop), 1024);
	pool_init(&d.backlog_pool, sizeof(struct backlog), 256);
	signal(SIGPIPE, SIG_IGN);
	double t_start = wall_seconds();
	d.loop = ev_default_loop(EVFLAG_AUTO);
	clock_init(&d);
	int ret = server_listen(&d, sock);
	if (ret) {
		fprintf(stderr, "cxisimd: cannot listen on %s: %s\n", sock, strerror(-ret));
		return 1;
	}
	ev_signal_init(&d.sigterm, on_signal, SIGTERM);
	ev_signal_init(&d.sigint, on_signal, SIGINT);
	d.sigterm.data = d.sigint.data = &d;
	ev_signal_start(d.loop, &d.sigterm);
	ev_signal_start(d.loop, &d.sigint);
	if (!d.quiet)
		fprintf(stderr, "cxisimd: listening on %s (%u nodes x %u NICs, %s time)\n", sock, d.emu->nodes,
			d.emu->nics_per_node, daemon_virtual(&d) ? "virtual" : "realtime");
	daemon_check_idle(&d);
	ev_run(d.loop, 0);
	/* Clients still attached see their socket close and fail further calls with -FI_EIO. */
	while (d.clients)
		server_close_client(d.clients, "daemon shutting down");
	unlink(d.sock_path);
	close(d.listen_fd);
	int rc = 0;
	if (capture_close(&d)) {
		fprintf(stderr, "cxisimd: writing the capture %s: %s\n", capture, strerror(errno));
		rc = 1;
	}
	if (d.out_dir) {
		d.sc->stop = SIM_STOP_REQUESTED;
		d.sc->wall_s = wall_seconds() - t_start; /* run.json: the daemon's lifetime */
		d.sc->run_extra = hostidle_report(&d);
		if (scenario_write_outputs(d.sc, d.out_dir)) {
			fprintf(stderr, "cxisimd: writing outputs to %s: %s\n", d.out_dir, strerror(errno));
			rc = 1;
		}
	}
	pool_free_all(&d.op_pool);
	pool_free_all(&d.backlog_pool);
	scenario_free(d.sc);
	ev_loop_destroy(d.loop);
	return rc;
}
