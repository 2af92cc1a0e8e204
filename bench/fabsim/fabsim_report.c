/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_report.c: the simulator's results: per-flow CSV, FCT distributions and percentiles, the summary table and the targets checked. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fabsim_bench.h"

#define FAILED	UINT64_MAX

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* the nearest-rank percentile @p (0..1] of the @n sorted values */
static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	size_t k;

	if (!n)
		return 0;
	k = (size_t)(p * (double)n + 0.999999);
	return v[(k ? k : 1) - 1];
}

static uint64_t flow_fct(const struct fabsim_flow *f)
{
	return f->intact ? f->recv_ns - f->start_ns : FAILED;
}

void fabsim_flows_csv_header(FILE *f)
{
	fprintf(f, "scenario,transport,flow,src,dst,bytes,start_us,fct_us,sender_fct_us,ok,err,marked\n");
}

void fabsim_result_collect(struct fabsim_result *r, const struct fabsim_scenario *sc,
			   struct fabsim_run *run, FILE *csv, FILE *cdf)
{
	uint64_t *all = malloc((run->nflows + 1) * sizeof(*all));
	uint64_t *marked = malloc((run->nflows + 1) * sizeof(*marked));
	size_t i, nm = 0;
	int l;

	memset(r, 0, sizeof(*r));
	r->scenario = sc->name;
	r->transport = run->tp->name;
	r->flows = run->nflows;
	r->corrupt = run->corrupt;
	for (i = 0; i < run->nflows; i++) {
		const struct fabsim_flow *f = &run->flows[i];

		all[i] = flow_fct(f);
		r->failed += all[i] == FAILED;
		if (f->marked)
			marked[nm++] = all[i];
		if (csv)
			fprintf(csv, "%s,%s,%zu,%d,%d,%llu,%.3f,%.3f,%.3f,%d,%d,%d\n", sc->name,
				run->tp->name, i, f->src, f->dst, (unsigned long long)f->size,
				f->start_ns / 1e3, f->intact ? (f->recv_ns - f->start_ns) / 1e3 : -1.0,
				f->sent_ns && !f->err ? (f->sent_ns - f->start_ns) / 1e3 : -1.0,
				f->intact, f->err, f->marked);
	}
	qsort(all, run->nflows, sizeof(*all), cmp_u64);
	qsort(marked, nm, sizeof(*marked), cmp_u64);
	r->p50_ns = pct(all, run->nflows, 0.50);
	r->p99_ns = pct(all, run->nflows, 0.99);
	r->p999_ns = pct(all, run->nflows, 0.999);
	r->max_ns = run->nflows ? all[run->nflows - 1] : 0;
	r->marked = nm;
	r->marked_p99_ns = pct(marked, nm, 0.99);
	for (i = 0; cdf && i < run->nflows && all[i] != FAILED; i++)
		fprintf(cdf, "%.3f %.6f\n", all[i] / 1e3, (double)(i + 1) / (double)run->nflows);
	run->tp->counters(run, &r->cnt);
	for (l = 0; l < braid_fabsim_links(run->net); l++) {
		const struct braid_fabsim_link_stats *st = braid_fabsim_link_stats(run->net, l);

		r->queue_drops += st->drops_queue;
		r->down_drops += st->drops_down;
		r->loss_drops += st->drops_loss;
		r->ecn_marks += st->ecn_marks;
	}
	r->virt_ns = run->now;
	free(all);
	free(marked);
}

/* a time in us, or "failed" */
static const char *us(uint64_t ns, char *buf, size_t len)
{
	if (ns == FAILED)
		snprintf(buf, len, "failed");
	else
		snprintf(buf, len, "%.1f", ns / 1e3);
	return buf;
}

static const struct fabsim_result *find(const struct fabsim_result *r, size_t n, const char *sc,
					const char *tp)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(r[i].scenario, sc) && !strcmp(r[i].transport, tp))
			return &r[i];
	return NULL;
}

static double retx_ratio(const struct fabsim_result *r)
{
	return r->cnt.data_pkts ? (double)r->cnt.retx_pkts / (double)r->cnt.data_pkts : 0;
}

/* how many times better RD's @ns is than RC's (a failed RC flow counts as infinitely worse) */
static double better(uint64_t rd, uint64_t rc)
{
	if (rd == FAILED)
		return 0;
	if (rc == FAILED)
		return 1e99;
	return (double)rc / (double)rd;
}

/* the bound this program holds an incast to: resends at most a tenth of the data packets */
#define STORM_RATIO	0.10

static void both(FILE *md, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void both(FILE *md, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (md) {
		va_start(ap, fmt);
		vfprintf(md, fmt, ap);
		va_end(ap);
	}
}

void fabsim_report_summary(const struct fabsim_result *r, size_t n, FILE *csv, FILE *md)
{
	char a[32], b[32], c[32], d[32];
	size_t i;

	if (csv)
		fprintf(csv, "scenario,transport,flows,failed,corrupt,p50_us,p99_us,p999_us,max_us,"
			"marked,marked_p99_us,data_pkts,retx_pkts,retx_ratio,timeouts,ctrl_pkts,"
			"queue_drops,down_drops,loss_drops,ecn_marks,virtual_ms,wall_s\n");
	both(md, "| scenario | transport | flows | failed | p50 us | p99 us | p999 us | max us | "
		 "marked: p99 us | retx / data pkts | timeouts | queue drops | ECN marks |\n");
	both(md, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (i = 0; i < n; i++) {
		const struct fabsim_result *x = &r[i];
		char m[48];

		if (csv)
			fprintf(csv, "%s,%s,%zu,%zu,%zu,%.3f,%.3f,%.3f,%.3f,%zu,%.3f,%llu,%llu,%.5f,"
				"%llu,%llu,%llu,%llu,%llu,%llu,%.3f,%.2f\n", x->scenario, x->transport,
				x->flows, x->failed, x->corrupt,
				x->p50_ns == FAILED ? -1 : x->p50_ns / 1e3,
				x->p99_ns == FAILED ? -1 : x->p99_ns / 1e3,
				x->p999_ns == FAILED ? -1 : x->p999_ns / 1e3,
				x->max_ns == FAILED ? -1 : x->max_ns / 1e3, x->marked,
				x->marked_p99_ns == FAILED ? -1 : x->marked_p99_ns / 1e3,
				(unsigned long long)x->cnt.data_pkts, (unsigned long long)x->cnt.retx_pkts,
				retx_ratio(x), (unsigned long long)x->cnt.timeouts,
				(unsigned long long)x->cnt.ctrl_pkts, (unsigned long long)x->queue_drops,
				(unsigned long long)x->down_drops, (unsigned long long)x->loss_drops,
				(unsigned long long)x->ecn_marks, x->virt_ns / 1e6, x->wall_s);
		if (x->marked)
			snprintf(m, sizeof(m), "%zu: %s", x->marked, us(x->marked_p99_ns, a, sizeof(a)));
		else
			snprintf(m, sizeof(m), "-");
		both(md, "| %s | %s | %zu | %zu%s | %s | %s | %s | %s | %s | %llu / %llu = %.2f%% | %llu | %llu | %llu |\n",
		     x->scenario, x->transport, x->flows, x->failed, x->corrupt ? " (corrupt!)" : "",
		     us(x->p50_ns, a, sizeof(a)), us(x->p99_ns, b, sizeof(b)),
		     us(x->p999_ns, c, sizeof(c)), us(x->max_ns, d, sizeof(d)), m,
		     (unsigned long long)x->cnt.retx_pkts, (unsigned long long)x->cnt.data_pkts,
		     100 * retx_ratio(x), (unsigned long long)x->cnt.timeouts,
		     (unsigned long long)x->queue_drops, (unsigned long long)x->ecn_marks);
	}
	both(md, "\nTargets:\n\n");
	for (i = 0; i < 2; i++) {
		const char *sc = i ? "lossy" : "failure";
		const struct fabsim_result *rd = find(r, n, sc, "rd"), *rc = find(r, n, sc, "rc");
		double x, y;

		if (!rd || !rc)
			continue;
		x = better(rd->p99_ns, rc->p99_ns);
		y = better(rd->marked_p99_ns, rc->marked_p99_ns);
		both(md, "- %s: RD's p99 FCT at least 5x better than RC's: %s (RC/RD = %s); "
		     "over the flows from or to the bad link's ToR: %s (RC/RD = %s)\n", sc,
		     x >= 5 ? "met" : "missed",
		     x >= 1e98 ? "RC failed flows" : (snprintf(a, sizeof(a), "%.2f", x), a),
		     y >= 5 ? "met" : "missed",
		     y >= 1e98 ? "RC failed flows" : (snprintf(b, sizeof(b), "%.2f", y), b));
	}
	{
		const struct fabsim_result *rd = find(r, n, "incast", "rd"), *rc = find(r, n, "incast", "rc");

		if (rd)
			both(md, "- incast without a retransmission storm (every flow delivered, resends at most "
			     "%.0f%% of the data packets sent): RD %s (%zu failed, %.2f%% resent)%s\n",
			     100 * STORM_RATIO,
			     !rd->failed && retx_ratio(rd) <= STORM_RATIO ? "met" : "missed",
			     rd->failed, 100 * retx_ratio(rd),
			     rc ? (snprintf(a, sizeof(a), "; RC: %.2f%% resent", 100 * retx_ratio(rc)), a) : "");
	}
	{
		size_t bad = 0;

		for (i = 0; i < n; i++)
			bad += r[i].corrupt;
		both(md, "- data intact: %s (%zu flows delivered with wrong bytes)\n", bad ? "NO" : "yes", bad);
	}
}
