/* Memory accounting: where the bytes of a run go, by kind of object, for run.json ("memory").
 *
 * Each model's `memory` hook walks its own structures after the run and adds what they hold.  Pools, rings
 * and tables only grow, so what they hold at the end is their high water; records come from pools, so
 * they are counted once, with the pool.  Kinds do not overlap: their sum is the accounted total, which
 * run.json sets beside the allocator's own count of bytes in use (what no hook claims shows as the gap).
 *
 * Per-object figures ("units") are views across kinds, for the questions a user asks of a scale: the bytes
 * of one client process (its workload state, its provider endpoint, the NIC-side objects its LNI owns and
 * the pooled records it holds), of one NIC, of one switch, of one pending event. */
#ifndef CXISIM_MEM_H
#define CXISIM_MEM_H

#include <stdint.h>
#include <stdio.h>

struct mem_report;

/* `count` objects of `kind` holding `bytes` in all; several calls for a kind add up. */
void mem_add(struct mem_report *r, const char *kind, uint64_t count, uint64_t bytes);
/* A per-object figure: `count` objects of `unit` own `bytes` in all (also across kinds). */
void mem_unit(struct mem_report *r, const char *unit, uint64_t count, uint64_t bytes);
/* A detail line (run.json "pools", not a kind: the bytes are in some kind already): the record pool `name`
 * with objects of `size` bytes, `count` carved from its slabs (its high water), `live` in use at the end. */
void mem_pool(struct mem_report *r, const char *name, uint64_t size, uint64_t count, uint64_t live, uint64_t bytes);

struct mem_report *mem_report_create(void);
void mem_report_free(struct mem_report *r);
/* JSON object: heap bytes in use, accounted bytes, "kinds" {kind: {count, bytes}}, "per_object"
 * {unit: {count, bytes, bytes_each}} and "pools" {pool: {size, count, live, bytes}}, in name order. */
void mem_report_json(const struct mem_report *r, FILE *f);

/* Heap bytes in use now (the allocator's count, mmapped blocks included, and the arenas' chunks). */
/* The allocator's bytes in use, or MEM_HEAP_UNKNOWN when it cannot tell (ASan builds: null in run.json). */
#define MEM_HEAP_UNKNOWN UINT64_MAX
uint64_t mem_heap_in_use(void);

#endif
