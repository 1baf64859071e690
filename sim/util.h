/* Small helpers shared by every component: allocation that cannot return NULL, and fatal errors. */
#ifndef CXISIM_UTIL_H
#define CXISIM_UTIL_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Internal invariant broken: print and abort (never used for user errors; those go through cfg_fail). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
