/* Small helpers shared by every component: allocation that cannot return NULL, and fatal errors. */
#ifndef CXISIM_UTIL_H
#define CXISIM_UTIL_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
/* n zeroed records of `size` bytes starting on a cache line (64 bytes); free() frees it.  For arrays of
 * per-entity records sized to a line, so that each record is one line, not two halves.  Large arrays are
 * zeroed without being written (their untouched pages stay unmapped, as calloc's). */
void *xcalloc_lines(size_t n, size_t size);
char *xstrdup(const char *s);
/* Internal invariant broken: print and abort (never used for user errors; those go through cfg_fail). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Command-line input of the programs (bad input: one line naming program, option and problem; the caller
 * exits with status 2).  0 on success, -1 after the message. */
int opt_u64(const char *prog, const char *opt, const char *arg, unsigned long long max, unsigned long long *v);
int opt_seconds(const char *prog, const char *opt, const char *arg, double max, double *v);
/* An output directory must exist and be writable before a run starts, not be found missing after it. */
int opt_out_dir(const char *prog, const char *dir);

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
