/* Wait objects of CQs, counters and EQs.  Each of them sleeps on one eventfd, so every blocking wait object
 * an application may ask for becomes FI_WAIT_FD, and fi_control(FI_GETWAIT) hands out that eventfd (as a
 * one-entry fi_wait_pollfd for FI_WAIT_POLLFD, which only CQs offer).  Wait sets are not offered. */
#include <poll.h>

#include "cxip.h"

int cxip_wait_obj_choose(enum fi_wait_obj *wait, bool pollfd)
{
	switch (*wait) {
	case FI_WAIT_NONE:
	case FI_WAIT_FD:
		return 0;
	case FI_WAIT_POLLFD:
		return pollfd ? 0 : -FI_ENOSYS;
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
	case FI_WAIT_MUTEX_COND:
		*wait = FI_WAIT_FD; /* sread / fi_cntr_wait sleep on the eventfd either way */
		return 0;
	default:
		return -FI_ENOSYS; /* wait sets */
	}
}

int cxip_wait_control(int command, void *arg, enum fi_wait_obj wait, int efd)
{
	switch (command) {
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		if (wait == FI_WAIT_FD) {
			*(int *)arg = efd;
			return 0;
		}
		if (wait == FI_WAIT_POLLFD) {
			struct fi_wait_pollfd *p = arg;
			size_t have = p->nfds;
			p->nfds = 1;
			p->change_index = 1;
			if (have < 1 || !p->fd)
				return -FI_ETOOSMALL;
			p->fd[0].fd = efd;
			p->fd[0].events = POLLIN;
			return 0;
		}
		return -FI_ENODATA;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *)arg = wait;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}
