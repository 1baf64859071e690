/* Steady-state rate of a counting process over a measurement window, by the method of batch means.
 *
 * The window [start, end) is cut into BM_BATCHES equal batches; each batch's count over its length is one
 * observation of the rate.  If the run is stationary and a batch is long against the process's memory,
 * the batch rates are independent and roughly normal, so their mean is the rate and
 * t(k-1, 0.975) s / sqrt(k) its 95% confidence half-width.  The same batches test that premise:
 *   - trend: the least-squares slope of the batch rates; flagged when it is significant (|t| above the
 *     0.1% two-sided Student quantile) and the drift it implies over the window exceeds BM_TREND_MIN of the
 *     mean (a transient the warmup did not cover, or an oscillation longer than the window);
 *   - correlation: the Ljung-Box statistic over lags 1..BM_LAGS of the batch rates; flagged when it is above
 *     the 0.1% quantile of chi-square(BM_LAGS) and it matters: the mean's interval, widened by
 *     sqrt((1 + r1) / (1 - r1)) for a positive lag-1 autocorrelation r1, exceeds BM_CI_MIN of the mean (an
 *     oscillation or a drift as long as a batch or longer: the batches are not independent, and the plain
 *     interval understates the uncertainty).  An oscillation much shorter than a batch averages out inside
 *     each batch; one a little shorter leaves a residue that still counts, so the window must be long
 *     enough for that residue to stay below the threshold.
 * Either flag makes the run non-stationary: metrics.json says so with the reason, and the model prints a
 * warning on stderr.  docs/outputs.md has the method and its thresholds. */
#ifndef CXISIM_BATCH_MEANS_H
#define CXISIM_BATCH_MEANS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine.h"

#define BM_BATCHES 20
#define BM_LAGS 5
#define BM_TREND_MIN 0.02 /* drift over the window, fraction of the mean */
#define BM_CI_MIN 0.01    /* half-width of the mean's interval (widened for correlation), fraction of the mean */

struct batch_means {
	simtime_t start, end; /* window; end == start: not set up */
	uint64_t count[BM_BATCHES];
};

struct bm_summary {
	double mean;      /* events per second over the window */
	double ci95;      /* 95% half-width of the mean (events per second) */
	double cv;        /* standard deviation of the batch rates over their mean */
	double drift;     /* least-squares change of the rate over the window, fraction of the mean */
	double trend_t;   /* Student t of that slope */
	double lb_q;      /* Ljung-Box statistic, lags 1..BM_LAGS */
	double lag1;      /* lag-1 autocorrelation of the batch rates */
	bool stationary;
	char why[256];    /* empty when stationary */
};

void bm_init(struct batch_means *b, simtime_t start, simtime_t end);
static inline void bm_add(struct batch_means *b, simtime_t t)
{
	if (t >= b->start && t < b->end)
		b->count[(t - b->start) * BM_BATCHES / (b->end - b->start)]++;
}
void bm_summarise(const struct batch_means *b, struct bm_summary *s);
/* The summary as a JSON object (no trailing newline). */
void bm_put_json(FILE *f, const struct bm_summary *s);
/* One line on stderr if the run is not stationary: "warning: <what> is not stationary ...". */
void bm_warn(const char *what, const struct bm_summary *s);

#endif
