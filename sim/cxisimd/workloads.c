/* Simulated workloads of the daemon's scenario next to the attached processes: they run in the same engine,
 * on the same fabric and NICs, so a simulated client's request reaches a real process's endpoint through
 * the NIC model exactly as a real client's does.  The daemon tells them which real endpoints are ready: an
 * endpoint that posted its first receive can be sent to (replay clients wait for their target). */
#include "../workload/replay.h"
#include "daemon.h"

void workloads_ep_ready(struct dep *ep)
{
	replay_target_ready(ep->o.c->d->sim, ep->nic_addr, ep->pid);
}
