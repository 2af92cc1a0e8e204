/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_report.c: the simulator's results: per-flow CSV, FCT distributions and percentiles, streams' goodput, timelines and stalls, the summary tables and the targets checked. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

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

/** struct stream - the flows of one (source, destination) pair and its timeline. */
struct stream {
	/** @src, @dst: its hosts. */
	int src, dst;
	/** @whole: every flow delivered intact; @bytes: bytes delivered intact. */
	bool whole;
	uint64_t bytes;
	/** @first_ns, @last_ns: its first start, its last delivery. */
	uint64_t first_ns, last_ns;
	/** @ticks: bytes delivered per tick (the run's ticks, from time 0). */
	uint64_t *ticks;
};

/** struct stream_fig - what stream_figures() finds in one stream's timeline. */
struct stream_fig {
	/** @stall_ticks: its longest stall, in ticks. */
	size_t stall_ticks;
	/** @before, @after: mean bytes a tick before the failure and after it, the stall left out (-1: too few ticks). */
	double before, after;
};

static double mean(const uint64_t *v, size_t lo, size_t hi, const bool *skip)
{
	double sum = 0;
	size_t n = 0;

	for (size_t i = lo; i < hi; i++)
		if (!skip || !skip[i])
			sum += (double)v[i], n++;
	return n >= 5 ? sum / (double)n : -1;
}

/*
 * The failure's figures of one stream whose timeline has @nt ticks (the
 * last one partial), as tools/ab reads a black-holed path's run: a tick is
 * low when it carries under a tenth of the median tick before the failure
 * (ticks 2 on, up to 50 ms before it); the stall is the longest run of low
 * ticks, after the first good one, that ends at least 50 ms before the
 * failure or later; the goodput before is the mean tick up to 50 ms before
 * the failure, after it the mean tick from the failure on, the stall left
 * out. A stream that never delivers again stalls to the end of the run.
 */
static int stream_figures(const uint64_t *v, size_t nt, uint64_t tick_ns, uint64_t fail_ns,
			  struct stream_fig *fig)
{
	uint64_t guard = 50000000ULL, *pre;
	size_t early = fail_ns > guard ? (size_t)((fail_ns - guard) / tick_ns) : 0;
	size_t hi = early > 3 ? early : 3, npre = 0, first, i, run = 0, end = 0;
	bool *low;
	uint64_t ref;

	*fig = (struct stream_fig){ .before = -1, .after = -1 };
	if (nt < 5)
		return 0;
	pre = malloc(nt * sizeof(*pre));
	low = calloc(nt, sizeof(*low));
	if (!pre || !low) {
		free(pre);
		free(low);
		return -FI_ENOMEM;
	}
	for (i = 2; i < hi && i < nt; i++)
		if (v[i])
			pre[npre++] = v[i];
	for (i = 0; !npre && i < nt; i++)
		if (v[i])
			pre[npre++] = v[i];
	qsort(pre, npre, sizeof(*pre), cmp_u64);
	ref = npre ? pre[npre / 2] : 0;
	for (i = 0, first = nt; i < nt; i++) {
		low[i] = !v[i] || (double)v[i] < 0.1 * (double)ref;
		if (!low[i] && first == nt)
			first = i;
	}
	for (i = first; i + 1 < nt; i++) {
		run = low[i] ? run + 1 : 0;
		if (run && i >= early && run > fig->stall_ticks)
			fig->stall_ticks = run, end = i;
	}
	fig->before = mean(v, first > 2 ? first : 2, early, NULL);
	/* the stall's ticks are skipped from here on */
	memset(low, 0, nt * sizeof(*low));
	for (i = 0; i < fig->stall_ticks; i++)
		low[end - i] = true;
	i = (size_t)((fail_ns + tick_ns - 1) / tick_ns);
	fig->after = mean(v, i > early ? i : early, nt - 1, low);
	free(pre);
	free(low);
	return 0;
}

/* the streams' figures of a run of streams: goodput, the incast receiver's link, the failure's */
static int streams_collect(struct fabsim_result *r, const struct fabsim_scenario *sc,
			   const struct fabsim_run *run, FILE *ticks_out)
{
	uint64_t first = UINT64_MAX, all_run = UINT64_MAX, bytes = 0;
	size_t nt = (size_t)(run->now / sc->tick_ns) + 1, ns = 0, i, k, b;
	struct stream *st = calloc(run->nflows + 1, sizeof(*st));
	uint64_t *ticks = calloc(nt, sizeof(*ticks));
	int ret = 0;

	r->streams = true;
	r->capacity_bps = sc->capacity_bps;
	r->stall_ns = -1;
	r->rx_busy = -1;
	if (!st || !ticks) {
		ret = -FI_ENOMEM;
		goto out;
	}
	for (i = 0; i < run->nflows; i++) {
		const struct fabsim_flow *f = &run->flows[i];

		for (k = 0; k < ns && (st[k].src != f->src || st[k].dst != f->dst); k++)
			;
		if (k == ns) {
			st[ns++] = (struct stream){ .src = f->src, .dst = f->dst, .whole = true,
						    .first_ns = UINT64_MAX,
						    .ticks = calloc(nt, sizeof(uint64_t)) };
			if (!st[k].ticks) {
				ret = -FI_ENOMEM;
				goto out;
			}
		}
		if (f->start_ns < st[k].first_ns)
			st[k].first_ns = f->start_ns;
		if (!f->intact) {
			st[k].whole = false;
			continue;
		}
		st[k].bytes += f->size;
		st[k].ticks[f->recv_ns / sc->tick_ns] += f->size;
		if (f->recv_ns > st[k].last_ns)
			st[k].last_ns = f->recv_ns;
	}
	r->nstreams = ns;
	r->min_stream_bps = ns ? 1e300 : 0;
	for (k = 0; k < ns; k++) {
		/* a broken stream runs (stuck) to the end of the run */
		uint64_t end = st[k].whole ? st[k].last_ns : run->now;
		double bps = end > st[k].first_ns ?
			     (double)st[k].bytes * 8e9 / (double)(end - st[k].first_ns) : 0;

		r->recovered += st[k].whole;
		if (st[k].first_ns < first)
			first = st[k].first_ns;
		if (end < all_run)
			all_run = end;
		if (end > r->done_ns)
			r->done_ns = end;
		if (bps < r->min_stream_bps)
			r->min_stream_bps = bps;
		if (bps > r->max_stream_bps)
			r->max_stream_bps = bps;
	}
	if (!ns || r->done_ns <= first)
		goto out;
	for (i = 0; i < run->nflows; i++)
		if (run->flows[i].intact && run->flows[i].recv_ns <= all_run)
			bytes += run->flows[i].size;
	if (all_run > first)
		r->goodput_bps = (double)bytes * 8e9 / (double)(all_run - first);
	if (sc->rx_host >= 0) {
		int l = braid_fabsim_link(run->net, BRAID_FABSIM_HOST_DOWN, sc->rx_host, 0);

		r->rx_busy = (double)braid_fabsim_link_stats(run->net, l)->busy_ns /
			     (double)(r->done_ns - first);
	}
	if (sc->ref_ns) {
		r->stall_ns = 0;
		for (k = 0; k < ns; k++) {
			/* a whole stream's timeline ends with its last delivery, a broken one's with the run */
			size_t snt = st[k].whole ? (size_t)(st[k].last_ns / sc->tick_ns) + 1 : nt;
			struct stream_fig fig;

			ret = stream_figures(st[k].ticks, snt, sc->tick_ns, sc->ref_ns, &fig);
			if (ret)
				goto out;
			if ((int64_t)(fig.stall_ticks * sc->tick_ns) > r->stall_ns)
				r->stall_ns = (int64_t)(fig.stall_ticks * sc->tick_ns);
			r->before_bps += fig.before > 0 ? fig.before * 8e9 / (double)sc->tick_ns : 0;
			r->after_bps += fig.after > 0 ? fig.after * 8e9 / (double)sc->tick_ns : 0;
		}
	}
	for (k = 0; k < ns; k++)
		for (b = 0; b < nt; b++)
			ticks[b] += st[k].ticks[b];
	for (b = 0; ticks_out && b < nt; b++)
		fprintf(ticks_out, "%llu %.3f\n", (unsigned long long)(b * sc->tick_ns / 1000000ULL),
			(double)ticks[b] * 8e3 / (double)sc->tick_ns);
out:
	for (k = 0; st && k < ns; k++)
		free(st[k].ticks);
	free(st);
	free(ticks);
	return ret;
}

int fabsim_result_collect(struct fabsim_result *r, const struct fabsim_scenario *sc,
			  struct fabsim_run *run, FILE *csv, FILE *cdf, FILE *ticks)
{
	uint64_t *all = malloc((run->nflows + 1) * sizeof(*all));
	uint64_t *marked = malloc((run->nflows + 1) * sizeof(*marked));
	size_t i, nm = 0;
	int l;

	memset(r, 0, sizeof(*r));
	if (!all || !marked) {
		free(all);
		free(marked);
		return -FI_ENOMEM;
	}
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
	return sc->streams ? streams_collect(r, sc, run, ticks) : 0;
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

/* "%.1f" of @v / 1e6, or "-" when @v < 0 */
static const char *mbit(double v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", v / 1e6);
	return buf;
}

/* the streams' figures: goodput, resends, the incast receiver's link, the failure's stall */
static void streams_summary(const struct fabsim_result *r, size_t n, FILE *md, FILE *csv)
{
	char a[32], b[32], c[32], d[32], e[32];
	size_t i;

	if (csv)
		fprintf(csv, "scenario,transport,streams,streams_whole,goodput_mbit,capacity_mbit,"
			"goodput_share,min_stream_mbit,max_stream_mbit,done_ms,retx_ratio,rx_busy,stall_ms,"
			"before_mbit,after_mbit,after_ratio\n");
	both(md, "\nStreams:\n\n| scenario | transport | streams whole | goodput Mbit/s | of capacity | "
		 "streams Mbit/s | all done ms | resent | receiver link busy | longest stall ms | "
		 "goodput before / after Mbit/s | after / before |\n");
	both(md, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
	for (i = 0; i < n; i++) {
		const struct fabsim_result *x = &r[i];
		bool fail = x->stall_ns >= 0;	/* figures around ref_ns */
		double share = x->capacity_bps ? x->goodput_bps / (double)x->capacity_bps : 0;
		double ratio = fail && x->before_bps > 0 ? x->after_bps / x->before_bps : -1;

		if (!x->streams)
			continue;
		if (csv)
			fprintf(csv, "%s,%s,%zu,%zu,%.3f,%.3f,%.4f,%.3f,%.3f,%.3f,%.5f,%.4f,%.0f,%.3f,%.3f,"
				"%.3f\n", x->scenario, x->transport, x->nstreams, x->recovered,
				x->goodput_bps / 1e6, x->capacity_bps / 1e6, share, x->min_stream_bps / 1e6,
				x->max_stream_bps / 1e6, x->done_ns / 1e6, retx_ratio(x), x->rx_busy,
				fail ? x->stall_ns / 1e6 : -1.0, fail ? x->before_bps / 1e6 : -1.0,
				fail ? x->after_bps / 1e6 : -1.0, ratio);
		snprintf(c, sizeof(c), "%.1f%%", 100 * x->rx_busy);
		snprintf(d, sizeof(d), "%.0f", x->stall_ns / 1e6);
		snprintf(e, sizeof(e), "%.2f", ratio);
		both(md, "| %s | %s | %zu of %zu | %.1f | %.1f%% of %.0f | %.1f - %.1f | %.0f | %.2f%% | %s | "
		     "%s | %s / %s | %s |\n",
		     x->scenario, x->transport, x->recovered, x->nstreams, x->goodput_bps / 1e6,
		     100 * share, x->capacity_bps / 1e6, x->min_stream_bps / 1e6,
		     x->max_stream_bps / 1e6, x->done_ns / 1e6, 100 * retx_ratio(x),
		     x->rx_busy >= 0 ? c : "-", fail ? d : "-",
		     mbit(fail ? x->before_bps : -1, a, sizeof(a)),
		     mbit(fail ? x->after_bps : -1, b, sizeof(b)), ratio >= 0 ? e : "-");
	}
}

void fabsim_report_summary(const struct fabsim_result *r, size_t n, FILE *csv, FILE *md,
			   FILE *fig_csv)
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
	if (n && r[0].streams) {
		streams_summary(r, n, md, fig_csv);
		goto intact;
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
intact:
	{
		size_t bad = 0;

		if (n && r[0].streams)
			both(md, "\n");
		for (i = 0; i < n; i++)
			bad += r[i].corrupt;
		both(md, "- data intact: %s (%zu flows delivered with wrong bytes)\n", bad ? "NO" : "yes", bad);
	}
}
