/* Batch means: the steady-state rate with its confidence interval, and the stationarity check
 * (batch_means.h). */
#include <math.h>
#include <string.h>

#include "batch_means.h"

/* Quantiles for BM_BATCHES = 20 and BM_LAGS = 5 (standard tables). */
#define T19_975 2.093    /* Student t, 19 degrees of freedom, 0.975: the mean's 95% interval */
#define T18_9995 3.922   /* Student t, 18 degrees of freedom, 0.9995: trend slope, 0.1% two-sided */
#define CHI2_5_999 20.515 /* chi-square, 5 degrees of freedom, 0.999: Ljung-Box */

_Static_assert(BM_BATCHES == 20 && BM_LAGS == 5, "the quantiles above are for 20 batches and 5 lags");

void bm_init(struct batch_means *b, simtime_t start, simtime_t end)
{
	memset(b, 0, sizeof(*b));
	b->start = start;
	b->end = end > start ? end : start + 1;
}

static void trend(const double *x, int k, double mean, double *slope, double *t)
{
	double ci = (k - 1) / 2.0, sxx = 0, sxy = 0;
	for (int i = 0; i < k; i++) {
		sxx += (i - ci) * (i - ci);
		sxy += (i - ci) * (x[i] - mean);
	}
	*slope = sxy / sxx;
	double sse = 0;
	for (int i = 0; i < k; i++) {
		double r = x[i] - mean - *slope * (i - ci);
		sse += r * r;
	}
	double se = sqrt(sse / (k - 2) / sxx);
	*t = se > 0 ? *slope / se : (*slope != 0 ? INFINITY : 0);
}

/* Ljung-Box statistic over lags 1..BM_LAGS; *r1 gets the lag-1 autocorrelation. */
static double ljung_box(const double *x, int k, double mean, double *r1)
{
	double c0 = 0;
	*r1 = 0;
	for (int i = 0; i < k; i++)
		c0 += (x[i] - mean) * (x[i] - mean);
	if (c0 <= 0)
		return 0;
	double q = 0;
	for (int h = 1; h <= BM_LAGS; h++) {
		double c = 0;
		for (int i = 0; i + h < k; i++)
			c += (x[i] - mean) * (x[i + h] - mean);
		double r = c / c0;
		if (h == 1)
			*r1 = r;
		q += r * r / (k - h);
	}
	return k * (k + 2.0) * q;
}

void bm_summarise(const struct batch_means *b, struct bm_summary *s)
{
	memset(s, 0, sizeof(*s));
	const int k = BM_BATCHES;
	double len_s = (double)(b->end - b->start) * 1e-12 / k;
	double x[BM_BATCHES], mean = 0;
	for (int i = 0; i < k; i++) {
		x[i] = len_s > 0 ? (double)b->count[i] / len_s : 0;
		mean += x[i];
	}
	mean /= k;
	double ss = 0;
	for (int i = 0; i < k; i++)
		ss += (x[i] - mean) * (x[i] - mean);
	double sd = sqrt(ss / (k - 1));
	s->mean = mean;
	s->ci95 = T19_975 * sd / sqrt(k);
	s->stationary = true;
	if (mean <= 0)
		return;
	s->cv = sd / mean;
	double slope;
	trend(x, k, mean, &slope, &s->trend_t);
	s->drift = slope * (k - 1) / mean;
	s->lb_q = ljung_box(x, k, mean, &s->lag1);
	/* Positively correlated batches carry fewer independent observations than k: the interval that
	 * matters is the plain one widened by sqrt((1 + r1) / (1 - r1)) (an AR(1) view of the batches). */
	double r = s->lag1 > 0 ? (s->lag1 < 0.95 ? s->lag1 : 0.95) : 0;
	double ci_eff = s->ci95 * sqrt((1 + r) / (1 - r)) / mean;
	if (fabs(s->trend_t) > T18_9995 && fabs(s->drift) > BM_TREND_MIN) {
		s->stationary = false;
		snprintf(s->why, sizeof(s->why), "trend: the rate drifts %+.1f%% over the window (t = %.1f)",
			 100 * s->drift, s->trend_t);
	} else if (s->lb_q > CHI2_5_999 && ci_eff > BM_CI_MIN) {
		s->stationary = false;
		snprintf(s->why, sizeof(s->why),
			 "correlated batches: the batch rates vary by %.1f%% and are not independent (Ljung-Box Q = %.1f, "
			 "lag-1 %+.2f); an oscillation or drift as long as a batch or longer",
			 100 * s->cv, s->lb_q, s->lag1);
	}
}

void bm_put_json(FILE *f, const struct bm_summary *s)
{
	fprintf(f, "{\"batches\": %d, \"mean\": %.1f, \"ci95\": %.1f, \"ci95_rel\": %.4f, \"batch_cv\": %.4f, "
		   "\"drift\": %.4f, \"trend_t\": %.2f, \"ljung_box_q\": %.2f, \"lag1\": %.3f, \"stationary\": %s, \"warning\": \"%s\"}",
		BM_BATCHES, s->mean, s->ci95, s->mean > 0 ? s->ci95 / s->mean : 0.0, s->cv, s->drift,
		isfinite(s->trend_t) ? s->trend_t : 999.0, s->lb_q, s->lag1, s->stationary ? "true" : "false", s->why);
}

void bm_warn(const char *what, const struct bm_summary *s)
{
	if (!s->stationary)
		fprintf(stderr, "warning: %s is not stationary over the measurement window: %s; lengthen the warmup or "
				"the window (a batch is 1/%d of it)\n",
			what, s->why, BM_BATCHES);
}
