/* Stats registry: named counters and histograms, dumped as JSON and CSV in name order.
 *
 * Counters are plain uint64 slots owned by the registry: a model looks its slot up once at build time and
 * increments it directly on the hot path.  Where Cassini has a telemetry counter for the same thing, the
 * name ends in that counter's name, e.g. "nic.3.C_CNTR_LPE_NET_MATCH_PRIORITY".
 *
 * Output rules (the same for every model, so register freely at build time):
 * - A counter still 0, or a histogram still empty, at the end is written nowhere: an absent counter
 *   reads as 0.
 * - A name with a component that is a decimal number ("nic.3.X", "fabric.sw.2.port.7.tc.0.tx_bytes") is
 *   per-entity.  Its family is the name with each such component replaced by '*' ("nic.*.X").
 *   metrics.json summarises each family (members, nonzero, sum, min, max, the first name holding the max;
 *   histograms merged); telemetry.csv has every nonzero per-entity value.
 */
#ifndef CXISIM_STATS_H
#define CXISIM_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct stats;

/* Log-linear histogram: exact below 2^HIST_SUB_BITS, then 2^HIST_SUB_BITS sub-buckets per power of two, so a
 * bucket is at most 1/128 of its lower bound wide; quantiles interpolate by rank inside their bucket, which
 * keeps them within 1% (relative) of the sample's exact quantile whatever the distribution (0.8% in the
 * worst case, a sample concentrated at one bucket edge; docs/outputs.md).  59 KB per histogram. */
#define HIST_SUB_BITS 7
#define HIST_BUCKETS ((64 - HIST_SUB_BITS + 1) << HIST_SUB_BITS)

struct histogram {
	uint64_t count, sum, min, max;
	uint64_t bucket[HIST_BUCKETS];
};

struct stats *stats_create(void);
void stats_destroy(struct stats *st);

/* Find or create.  The name is formatted printf-style.  The returned pointer stays valid for the
 * registry's lifetime. */
uint64_t *stats_counter(struct stats *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
struct histogram *stats_hist(struct stats *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A gauge is a counter whose value is a level (e.g. LE high-water); also track its maximum under
 * "<name>.max" by updating through stats_gauge_set. */
void stats_gauge_set(uint64_t *gauge, uint64_t *gauge_max, uint64_t value);

void hist_add(struct histogram *h, uint64_t v);
/* Value at quantile q in [0,1]: the sample of rank floor(q * count), located in its bucket by linear
 * interpolation over the bucket's samples and clamped to [min, max]; the exact max for q == 1. */
uint64_t hist_quantile(const struct histogram *h, double q);

/* Look up without creating; NULL if absent. */
uint64_t *stats_find_counter(struct stats *st, const char *name);
struct histogram *stats_find_hist(struct stats *st, const char *name);

/* JSON object: the number of counters registered, zero, and per-entity (nonzero, summarised), the same for
 * histograms; "counters" {name: value} and "histograms" {name: {count,sum,min,max,p50,p90,p99,p999}} for
 * names that are not per-entity; "counter_families" {family: {members,nonzero,sum,min,max,max_at}} and
 * "histogram_families" {family: {members,nonempty,count,...}} for the per-entity ones.  Zero counters and
 * empty histograms or families are left out. */
void stats_dump_json(const struct stats *st, FILE *f, int indent);
/* CSV rows "name,kind,value" for every nonzero counter and nonempty histogram (histograms expand to their
 * summary fields). */
void stats_dump_csv(const struct stats *st, FILE *f);
/* Writes name's family into buf (names are at most 255 bytes; size 256 always suffices) and returns
 * whether name is per-entity. */
bool stats_family_name(const char *name, char *buf, size_t size);

#endif
