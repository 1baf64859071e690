/* The replay workload: simulated clients that replay what a real client sent to a real server (a capture,
 * replay_script.h) against a real server process attached to the emulation daemon.  Details in replay.c
 * and docs/replay.md. */
#ifndef CXISIM_WORKLOAD_REPLAY_H
#define CXISIM_WORKLOAD_REPLAY_H

#include <stdint.h>

#include "../engine.h"

/* An endpoint at (nic, pid) posted its first receive (the emulation daemon calls this for the endpoints
 * of attached processes; tests for their own endpoints).  Replay clients aimed at it start.  No effect
 * without a replay section or for other endpoints. */
void replay_target_ready(struct sim *sim, uint32_t nic, uint32_t pid);

#endif
