/* Periodic sampling of gauges into timeseries.csv.
 *
 * A model registers uint64 slots (usually stats counters or levels such as LE in use per pool); the engine
 * samples all of them every `stats.timeseries_interval_ns` of virtual time and writes one CSV row per
 * sample: time_ps followed by one column per registered slot, in registration order.  The sampler never
 * keeps an otherwise quiescent simulation alive.
 */
#ifndef CXISIM_TIMESERIES_H
#define CXISIM_TIMESERIES_H

#include <stdint.h>
#include <stdio.h>
#include "engine.h"

void ts_register(struct sim *sim, const char *column, const uint64_t *slot);
/* Start sampling (the engine binary calls this after the models are built). interval 0: off. */
void ts_start(struct sim *sim, simtime_t interval);
void ts_write_csv(struct sim *sim, FILE *f);

#endif
