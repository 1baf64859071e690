#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void oom(size_t n)
{
	fprintf(stderr, "cxisim: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *xcalloc_lines(size_t n, size_t size)
{
	size_t bytes = n * size;
	if (size && bytes / size != n)
		oom(SIZE_MAX);
	bytes = (bytes + 63) & ~(size_t)63;
	char *p = aligned_alloc(64, bytes ? bytes : 64);
	if (!p)
		oom(bytes);
	/* A large array's whole pages are zeroed by the kernel, not written: MADV_DONTNEED on private anonymous
	 * memory (the heap, or a fresh mapping, already zero) leaves zero-fill pages, so the pages of entities a
	 * run never reaches (a million clients of which half start within the window) never become resident. */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	if (bytes >= 16 * pg) {
		char *a = (char *)(((uintptr_t)p + pg - 1) & ~(uintptr_t)(pg - 1));
		char *e = (char *)(((uintptr_t)p + bytes) & ~(uintptr_t)(pg - 1));
		memset(p, 0, (size_t)(a - p));
		memset(e, 0, (size_t)(p + bytes - e));
		if (madvise(a, (size_t)(e - a), MADV_DONTNEED))
			memset(a, 0, (size_t)(e - a));
		return p;
	}
	return memset(p, 0, bytes ? bytes : 64);
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("cxisim: internal error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

int opt_u64(const char *prog, const char *opt, const char *arg, unsigned long long max, unsigned long long *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(arg, &end, 0);
	/* strtoull accepts "-1" as 2^64-1 and leading blanks: both are not what a user meant. */
	if (!arg[0] || arg[0] == '-' || arg[0] == '+' || arg[0] == ' ' || *end || (errno && errno != ERANGE)) {
		fprintf(stderr, "%s: %s: '%s' is not a non-negative integer\n", prog, opt, arg);
		return -1;
	}
	if (errno == ERANGE || x > max) {
		fprintf(stderr, "%s: %s %s: value out of range [0, %llu]\n", prog, opt, arg, max);
		return -1;
	}
	*v = x;
	return 0;
}

int opt_seconds(const char *prog, const char *opt, const char *arg, double max, double *v)
{
	char *end;
	errno = 0;
	double x = strtod(arg, &end);
	if (!arg[0] || *end || errno || !isfinite(x) || x < 0 || x > max) {
		fprintf(stderr, "%s: %s: '%s' is not a number of seconds in [0, %g]\n", prog, opt, arg, max);
		return -1;
	}
	*v = x;
	return 0;
}

int opt_out_dir(const char *prog, const char *dir)
{
	struct stat st;
	int err = stat(dir, &st) ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : access(dir, W_OK) ? errno : 0;
	if (err) {
		fprintf(stderr, "%s: --out %s: %s\n", prog, dir, strerror(err));
		return -1;
	}
	return 0;
}
