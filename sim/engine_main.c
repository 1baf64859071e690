/* cxisim-engine: run one resolved scenario (JSON) and write its outputs.  Normally driven by the Python
 * front end (`cxisim run`), which renders the scenario template first. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "scenario.h"
#include "util.h"

static void usage(FILE *f)
{
	fputs("usage: cxisim-engine --config FILE.json --out DIR [--source NAME] [--seed N] [--quiet]\n"
	      "                     [--progress-file FILE]\n"
	      "       cxisim-engine --params\n"
	      "  --config FILE   resolved scenario (JSON)\n"
	      "  --out DIR       existing directory for metrics.json, telemetry.csv, timeseries.csv, run.json\n"
	      "  --source NAME   file name to show in config error messages (the template the user wrote)\n"
	      "  --seed N        override the scenario's seed\n"
	      "  --quiet         no progress line on stderr\n"
	      "  --progress-file FILE  keep the run's event count, virtual time and phase in FILE (32 bytes,\n"
	      "                  struct sim_progress_rec), for a program watching the run (tests/bench/speed_ratio.py)\n"
	      "  --params        print every model's parameter table (markdown) and exit\n",
	      f);
}


/* Transparent huge pages for the heap.  A large run's state (a million endpoints, their NIC records and
 * queues) is gigabytes touched at random, one event at a time: with 4 KiB pages nearly every record an
 * event reaches also misses the TLB.  Where the kernel gives huge pages only on request (THP "madvise"),
 * glibc's malloc asks for them under the tunable glibc.malloc.hugetlb=1, which it reads at startup only;
 * so the engine starts itself again once with it set.  Results do not depend on it (same outputs); wall
 * time does (Aurora-size runs: about 25% fewer wall seconds per event).  CXISIM_THP=0 turns it off (e.g.
 * under valgrind, which the new image would leave). */
static void exec_with_huge_pages(char **argv)
{
	const char *off = getenv("CXISIM_THP"), *t = getenv("GLIBC_TUNABLES");
	if ((off && !strcmp(off, "0")) || (t && strstr(t, "glibc.malloc.hugetlb")))
		return;
	char mode[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return;
	size_t n = fread(mode, 1, sizeof(mode) - 1, f);
	fclose(f);
	mode[n] = 0;
	if (!strstr(mode, "[madvise]"))
		return; /* "always": every heap page may be huge already; "never": nothing to ask for */
	char val[1024];
	if (snprintf(val, sizeof(val), "%s%sglibc.malloc.hugetlb=1", t ? t : "", t ? ":" : "") >= (int)sizeof(val))
		return;
	if (setenv("GLIBC_TUNABLES", val, 1))
		return;
	execv("/proc/self/exe", argv);
	/* Not restarted (no /proc): run as is, with the tunable left set for nothing. */
}

/* The shared record behind --progress-file (NULL, with a message, when the file cannot be made). */
static volatile struct sim_progress_rec *map_progress_file(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(struct sim_progress_rec))) {
		fprintf(stderr, "cxisim-engine: --progress-file %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	void *p = mmap(NULL, sizeof(struct sim_progress_rec), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		fprintf(stderr, "cxisim-engine: --progress-file %s: %s\n", path, strerror(errno));
		return NULL;
	}
	return p;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' }, { "out", required_argument, 0, 'o' },
		{ "source", required_argument, 0, 's' }, { "seed", required_argument, 0, 'S' },
		{ "quiet", no_argument, 0, 'q' },        { "params", no_argument, 0, 'p' },
		{ "help", no_argument, 0, 'h' },         { "progress-file", required_argument, 0, 'P' },
		{ 0, 0, 0, 0 },
	};
	const char *config = NULL, *out = NULL, *progress_file = NULL;
	struct scenario_opts so = { 0 };
	int quiet = 0, c;
	while ((c = getopt_long(argc, argv, "c:o:s:S:qphP:", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'o': out = optarg; break;
		case 's': so.shown_name = optarg; break;
		case 'S': {
			unsigned long long seed;
			if (opt_u64("cxisim-engine", "--seed", optarg, UINT64_MAX, &seed))
				return 2;
			so.seed = seed;
			so.seed_override = true;
			break;
		}
		case 'q': quiet = 1; break;
		case 'P': progress_file = optarg; break;
		case 'p': scenario_print_params(stdout); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!config || !out || optind != argc) {
		usage(stderr);
		return 2;
	}
	/* Before the run, not after it: a missing or read-only --out is bad input (status 2), found at once. */
	if (opt_out_dir("cxisim-engine", out))
		return 2;
	exec_with_huge_pages(argv);
	volatile struct sim_progress_rec *prec = NULL;
	if (progress_file && !(prec = map_progress_file(progress_file)))
		return 2;
	if (prec) {
		prec->phase = SIM_PHASE_SETUP; /* seen while the scenario loads; the magic says the record is up */
		prec->magic = SIM_PROGRESS_MAGIC;
	}
	struct scenario *sc = scenario_load(config, &so);
	sim_set_progress(sc->sim, !quiet);
	sim_set_progress_record(sc->sim, prec);
	scenario_run(sc);
	if (scenario_write_outputs(sc, out)) {
		fprintf(stderr, "cxisim-engine: writing outputs to %s: %s\n", out, strerror(errno));
		scenario_free(sc);
		return 1;
	}
	/* Freeing the model record by record (a million endpoints, their queues and pools) costs seconds of a
	 * large run and returns nothing the exit would not: leave it to the kernel.  Sanitizer builds still
	 * free everything, so that LeakSanitizer sees a clean exit and any real leak stands out. */
#if defined(__SANITIZE_ADDRESS__)
	scenario_free(sc);
#endif
	return 0;
}
