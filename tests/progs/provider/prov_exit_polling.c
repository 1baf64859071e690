/* A process that exits from its main thread while two other threads are inside the provider, one polling
 * the CQ (fi_cq_readfrom in a loop) and one blocked in fi_cq_sread with no timeout (Mercury's kill test).
 * libfabric's destructor cleans the provider up while they run: the process must end with status 0 and no
 * signal.  Run as: prov_exit_polling; the test then checks the daemon still serves another program. */
#include "common.h"

#include <pthread.h>

enum { NPOLL = 3, NBLOCK = 2 };

static struct t_ep t;
static _Atomic int started;

static void *poller(void *arg)
{
	(void)arg;
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	started++;
	for (;;) {
		ssize_t n = fi_cq_readfrom(t.cq, &e, 1, &src);
		if (n < 0 && n != -FI_EAGAIN && n != -FI_EAVAIL && n != -FI_EIO)
			break;
	}
	return NULL;
}

static void *blocker(void *arg)
{
	(void)arg;
	struct fi_cq_tagged_entry e;
	started++;
	for (;;)
		fi_cq_sread(t.cq, &e, 1, NULL, -1);
	return NULL;
}

int main(void)
{
	t_open(&t, FI_MSG | FI_TAGGED);
	static char buf[64];
	T_OK(fi_recv(t.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL));
	/* Several of each, so some thread is inside the provider's code whenever the destructor runs. */
	pthread_t th[NPOLL + NBLOCK];
	for (int i = 0; i < NPOLL + NBLOCK; i++)
		pthread_create(&th[i], NULL, i < NPOLL ? poller : blocker, NULL);
	while (started < NPOLL + NBLOCK)
		usleep(1000);
	usleep(50000);
	printf("PASSED prov_exit_polling (exiting with five threads inside the provider)\n");
	fflush(stdout);
	exit(0);
}
