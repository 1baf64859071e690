/* Batch means (sim/batch_means.h) on counting processes whose truth is known: a Poisson process at a
 * constant rate is stationary and its interval covers the rate; a trend, or an oscillation longer than a
 * batch, is flagged with its reason; an oscillation much shorter than a batch averages out; a significant
 * but small drift (under BM_TREND_MIN) is not a warning. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../../sim/batch_means.h"
#include "../../sim/rng.h"

#define WINDOW_PS 20000000000ULL /* 20 ms: batches of 1 ms */
#define RATE 1e8                 /* events per second: ~100,000 a batch, Poisson noise ~0.3% */

/* Events of a Poisson process whose rate at time t (ps) is RATE * shape(t / WINDOW_PS), from t = 0 to the
 * end of the window (gaps drawn at the local rate: the shapes below change slowly against a gap). */
static void fill(struct batch_means *b, double (*shape)(double), uint64_t seed, struct bm_summary *s)
{
	struct rng r;
	rng_init(&r, seed, "batch-means");
	bm_init(b, 0, WINDOW_PS);
	double t = 0;
	for (;;) {
		double rate_per_ps = RATE * shape(t / (double)WINDOW_PS) * 1e-12;
		t += rng_exp(&r, 1.0 / rate_per_ps);
		if (t >= (double)WINDOW_PS)
			break;
		bm_add(b, (simtime_t)t);
	}
	bm_summarise(b, s);
}

static double flat(double x) { (void)x; return 1.0; }
static double rising(double x) { return 0.95 + 0.10 * x; }                    /* +10% over the window */
static double creeping(double x) { return 0.9925 + 0.015 * x; }               /* +1.5%: under BM_TREND_MIN */
static double slow_wave(double x) { return 1.0 + 0.05 * sin(2 * M_PI * x * 2.5); } /* period 8 batches */
static double ripple(double x) { return 1.0 + 0.008 * sin(2 * M_PI * x * 2.5); }  /* 0.8%, 8 batches */
static double fast_wave(double x) { return 1.0 + 0.5 * sin(2 * M_PI * x * 467.3); } /* ~23 periods a batch */

Test(batch_means, poisson_at_a_constant_rate_is_stationary_and_covered)
{
	struct batch_means b;
	struct bm_summary s;
	int covered = 0;
	for (uint64_t seed = 1; seed <= 10; seed++) {
		fill(&b, flat, seed, &s);
		cr_assert(s.stationary, "seed %llu: %s", (unsigned long long)seed, s.why);
		cr_assert_str_empty(s.why);
		/* Poisson counts of ~100,000: sd 0.32% a batch, the mean's 95% half-width ~0.15% */
		cr_assert(s.ci95 / s.mean > 0.0005 && s.ci95 / s.mean < 0.003, "ci95_rel %.4f", s.ci95 / s.mean);
		cr_assert(fabs(s.mean - RATE) <= 2 * s.ci95, "seed %llu: mean %.0f, ci95 %.0f", (unsigned long long)seed,
			  s.mean, s.ci95);
		covered += fabs(s.mean - RATE) <= s.ci95;
	}
	/* a 95% interval: 9.5 of 10 expected; fewer than 7 has probability 1.2% (these seeds: 8) */
	cr_assert(covered >= 7, "the interval covered the rate %d times of 10", covered);
}

Test(batch_means, trend_is_flagged_with_its_drift)
{
	struct batch_means b;
	struct bm_summary s;
	fill(&b, rising, 4, &s);
	cr_assert_not(s.stationary);
	cr_assert(strncmp(s.why, "trend:", 6) == 0, "%s", s.why);
	/* the least-squares drift over the window: 10% of the mean, less the half batch at either end */
	cr_assert(s.drift > 0.085 && s.drift < 0.105, "drift %.4f", s.drift);
}

Test(batch_means, small_significant_drift_is_not_a_warning)
{
	struct batch_means b;
	struct bm_summary s;
	fill(&b, creeping, 5, &s);
	cr_assert(s.drift > 0.01 && s.drift < 0.02, "drift %.4f", s.drift);
	cr_assert(fabs(s.trend_t) > 3.922, "t %.2f: the slope must be significant for this test to mean anything",
		  s.trend_t);
	cr_assert(s.stationary, "%s", s.why);
}

Test(batch_means, oscillation_longer_than_a_batch_is_flagged)
{
	struct batch_means b;
	struct bm_summary s;
	fill(&b, slow_wave, 6, &s);
	cr_assert_not(s.stationary);
	cr_assert(strncmp(s.why, "correlated batches:", 19) == 0, "%s", s.why);
	cr_assert(s.lag1 > 0.5, "lag1 %.3f", s.lag1);
}

Test(batch_means, correlated_but_negligible_oscillation_is_not_a_warning)
{
	struct batch_means b;
	struct bm_summary s;
	fill(&b, ripple, 8, &s);
	/* the batches are clearly not independent, but even the widened interval stays under BM_CI_MIN */
	cr_assert(s.lb_q > 20.515, "Ljung-Box Q %.1f", s.lb_q);
	cr_assert(s.stationary, "%s", s.why);
}

Test(batch_means, oscillation_shorter_than_a_batch_averages_out)
{
	struct batch_means b;
	struct bm_summary s;
	fill(&b, fast_wave, 7, &s);
	cr_assert(s.stationary, "%s", s.why);
	cr_assert(fabs(s.mean - RATE) / RATE < 0.005, "mean %.0f", s.mean);
}
