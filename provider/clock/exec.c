/* libcxisim-clock.so, part 4: starting other programs while the cycle counter is trapped (tsc.c).
 *
 * The trap (PR_SET_TSC) is a flag of the thread that the kernel keeps across execve.  A program started
 * from a trapping thread would fault on its first rdtsc -- the dynamic loader reads the counter before any
 * library constructor runs, so before this library (preloaded there too) can install its handler -- and
 * die of SIGSEGV.  So every libc entry point that replaces the process image or starts a program lets the
 * counter run in the calling thread for the duration of the call (clk_tsc_exec_begin/end): the new image
 * starts untrapped and traps again from its own constructor; a failed exec, or the return of posix_spawn,
 * system or popen, traps again.  syscall(SYS_execve...) is covered in interposer.c.  What remains
 * uncovered: a program that issues the execve system call itself (no libc), which is rare. */
#include "interposer.h"

#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern char **environ;

CLK_REAL(int, execve, const char *, char *const[], char *const[])
CLK_REAL(int, execv, const char *, char *const[])
CLK_REAL(int, execvp, const char *, char *const[])
CLK_REAL(int, execvpe, const char *, char *const[], char *const[])
CLK_REAL(int, fexecve, int, char *const[], char *const[])
CLK_REAL(int, posix_spawn, pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
	 char *const[], char *const[])
CLK_REAL(int, posix_spawnp, pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
	 char *const[], char *const[])
CLK_REAL(int, system, const char *)
CLK_REAL(FILE *, popen, const char *, const char *)

/* Runs `call` with the counter untrapped in this thread; errno is the call's. */
#define UNTRAPPED(type, call)                                                                             \
	do {                                                                                             \
		clk_tsc_exec_begin();                                                                    \
		type r_ = call;                                                                          \
		int e_ = errno;                                                                          \
		clk_tsc_exec_end();                                                                      \
		errno = e_;                                                                              \
		return r_;                                                                               \
	} while (0)

CLK_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	UNTRAPPED(int, get_real_execve()(path, argv, envp));
}

CLK_EXPORT int execv(const char *path, char *const argv[])
{
	UNTRAPPED(int, get_real_execv()(path, argv));
}

CLK_EXPORT int execvp(const char *file, char *const argv[])
{
	UNTRAPPED(int, get_real_execvp()(file, argv));
}

CLK_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	UNTRAPPED(int, get_real_execvpe()(file, argv, envp));
}

CLK_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	UNTRAPPED(int, get_real_fexecve()(fd, argv, envp));
}

CLK_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	UNTRAPPED(int, get_real_posix_spawn()(pid, path, fa, attr, argv, envp));
}

CLK_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	UNTRAPPED(int, get_real_posix_spawnp()(pid, file, fa, attr, argv, envp));
}

CLK_EXPORT int system(const char *cmd)
{
	UNTRAPPED(int, get_real_system()(cmd));
}

CLK_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	UNTRAPPED(FILE *, get_real_popen()(cmd, mode));
}

/* execl, execlp, execle: the argument list as a vector, then the vector forms above.  `envp_out` (execle)
 * receives the pointer that follows the terminating NULL. */
static char **arg_vector(const char *arg0, va_list ap, char ***envp_out)
{
	size_t n = 1, cap = 16;
	char **v = malloc(cap * sizeof(*v));
	if (!v)
		return NULL;
	v[0] = (char *)arg0;
	for (;;) {
		char *a = arg0 ? va_arg(ap, char *) : NULL;
		if (n + 1 >= cap) {
			char **w = realloc(v, 2 * cap * sizeof(*v));
			if (!w) {
				free(v);
				return NULL;
			}
			v = w;
			cap *= 2;
		}
		v[n++] = a;
		if (!a)
			break;
	}
	if (envp_out)
		*envp_out = va_arg(ap, char **);
	return v;
}

#define EXECL(vector_call, envp)                                                                    \
	va_list ap;                                                                                      \
	va_start(ap, arg);                                                                               \
	char **argv = arg_vector(arg, ap, envp);                                                         \
	va_end(ap);                                                                                      \
	if (!argv) {                                                                                     \
		errno = ENOMEM;                                                                          \
		return -1;                                                                               \
	}                                                                                                \
	int r = vector_call;                                                                             \
	int e = errno;                                                                                   \
	free(argv);                                                                                      \
	errno = e;                                                                                       \
	return r

CLK_EXPORT int execl(const char *path, const char *arg, ...)
{
	EXECL(execv(path, argv), NULL);
}

CLK_EXPORT int execlp(const char *file, const char *arg, ...)
{
	EXECL(execvp(file, argv), NULL);
}

CLK_EXPORT int execle(const char *path, const char *arg, ...)
{
	char **envp = environ;
	EXECL(execve(path, argv, envp), &envp);
}
