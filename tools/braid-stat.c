/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid-stat: the counters of braid endpoints in running processes, read
 * from the files braid publishes (braid/braid_statfile.h), without touching
 * the processes. A table per endpoint with a row per peer and per path;
 * -w SECONDS refreshes like watch(1), with rates; --json for scripts.
 * braid-stat(1) (docs/braid-stat.1.md).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>

#include "braid/braid_counters.h"
#include "braid/braid_statfile.h"
#include "braid_cli.h"


struct desc {
	char name[48], unit[16], help[176];
	uint8_t scopes, kind;
};

/* one endpoint's snapshot, copied out of its slot */
struct ep {
	uint32_t pid;
	char comm[32];
	uint32_t interval_ms;
	const struct desc *d;	/* the file's table (copied) */
	uint32_t n_desc;
	uint8_t *buf;		/* struct fi_braid_stat_ep ... */
	uint32_t len;
};

struct opts {
	const char *dir;
	long pid;
	bool json, all;
	double watch;
	long count;
};

/* this sample's endpoints and the previous sample's (for rates); each array grows as needed */
static struct ep *eps, *prev;
static int eps_cap, prev_cap;
static int neps, nprev;
static int stale;
/* the tables copied out of the files this sample and the previous one (@prev's) */
static struct desc **tables, **tables_prev;
static int ntables, ntables_prev, tables_cap, tables_prev_cap;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A consistent copy of a slot's snapshot (its writer may be mid-update). */
static bool slot_copy(const struct braid_statfile_slot *sl, uint32_t max, struct ep *e)
{
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		uint32_t s1 = __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE), s2, len;

		if (s1 & 1) {
			usleep(100);
			continue;
		}
		if (!__atomic_load_n(&sl->used, __ATOMIC_ACQUIRE))
			return false;
		len = sl->len;
		if (len < sizeof(struct fi_braid_stat_ep) || len > max)
			return false;	/* not published yet */
		e->buf = realloc(e->buf, len);
		if (!e->buf)
			return false;
		memcpy(e->buf, sl + 1, len);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&sl->seq, __ATOMIC_RELAXED);
		if (s1 == s2) {
			e->len = len;
			return ((struct fi_braid_stat_ep *)e->buf)->size == len;
		}
	}
	return false;
}

static void file_read(const char *path, const struct opts *o, uint64_t ns)
{
	int first;
	const struct braid_statfile_hdr *h;
	struct desc *d = NULL;
	struct stat st;
	uint8_t *map;
	uint32_t i;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(*h)) {
		close(fd);
		return;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	h = (const struct braid_statfile_hdr *)map;
	if (memcmp(h->magic, BRAID_STATFILE_MAGIC, 8) || h->version != BRAID_STATFILE_VERSION ||
	    (uint64_t)h->slot_off + (uint64_t)h->slots * h->slot_size > (uint64_t)st.st_size ||
	    (uint64_t)h->desc_off + (uint64_t)h->n_desc * sizeof(struct braid_statfile_desc) >
	    (uint64_t)st.st_size)
		goto out;
	if (o->pid && h->pid != (uint32_t)o->pid)
		goto out;
	if (braid_statfile_writer_gone(h, ns)) {
		stale++;
		goto out;
	}
	d = malloc(h->n_desc * sizeof(*d));
	if (!d)
		goto out;
	for (i = 0; i < h->n_desc; i++) {
		const struct braid_statfile_desc *fd_ =
			(const struct braid_statfile_desc *)(map + h->desc_off) + i;

		memcpy(d[i].name, fd_->name, sizeof(d[i].name));
		d[i].name[sizeof(d[i].name) - 1] = 0;
		memcpy(d[i].unit, fd_->unit, sizeof(d[i].unit));
		d[i].unit[sizeof(d[i].unit) - 1] = 0;
		memcpy(d[i].help, fd_->help, sizeof(d[i].help));
		d[i].help[sizeof(d[i].help) - 1] = 0;
		d[i].scopes = fd_->scopes;
		d[i].kind = fd_->kind;
	}
	first = neps;
	for (i = 0; i < h->slots; i++) {
		const struct braid_statfile_slot *sl = (const struct braid_statfile_slot *)
			(map + h->slot_off + (size_t)i * h->slot_size);
		struct ep *e;

		if (neps == eps_cap) {
			struct ep *t = realloc(eps, (size_t)(eps_cap ? 2 * eps_cap : 64) * sizeof(*t));

			if (!t)
				break;
			memset(t + eps_cap, 0, (size_t)(eps_cap ? eps_cap : 64) * sizeof(*t));
			eps = t;
			eps_cap = eps_cap ? 2 * eps_cap : 64;
		}
		e = &eps[neps];

		if (!slot_copy(sl, h->slot_size - (uint32_t)sizeof(*sl), e))
			continue;
		e->pid = h->pid;
		memcpy(e->comm, h->comm, sizeof(e->comm));
		e->comm[sizeof(e->comm) - 1] = 0;
		e->interval_ms = h->interval_ms;
		e->d = d;
		e->n_desc = h->n_desc;
		neps++;
	}
	if (d && neps && eps[neps - 1].d == d) {
		if (ntables == tables_cap) {
			struct desc **t = realloc(tables, (size_t)(tables_cap ? 2 * tables_cap : 16) *
						  sizeof(*t));

			if (!t) {
				/* it cannot be kept: leave the file's endpoints out */
				while (neps > first) {
					neps--;
					free(eps[neps].buf);
					eps[neps].buf = NULL;
				}
				goto out;
			}
			tables = t;
			tables_cap = tables_cap ? 2 * tables_cap : 16;
		}
		tables[ntables++] = d;	/* the file's endpoints share it */
		d = NULL;
	}
out:
	free(d);
	munmap(map, (size_t)st.st_size);
}

/* ---- reading a snapshot ---- */

static const struct fi_braid_stat_ep *snap(const struct ep *e)
{
	return (const struct fi_braid_stat_ep *)e->buf;
}

/* the index of @name in a row of @scope (-1: none) */
static int row_idx(const struct ep *e, const char *name, unsigned scope)
{
	int k = 0;
	uint32_t i;

	for (i = 0; i < e->n_desc; i++) {
		if (!(e->d[i].scopes & scope))
			continue;
		if (!strcmp(e->d[i].name, name))
			return k;
		k++;
	}
	return -1;
}

static uint64_t val(const struct ep *e, const uint64_t *row, const char *name, unsigned scope)
{
	int k = row_idx(e, name, scope);

	return k < 0 ? 0 : row[k];
}

static const struct fi_braid_stat_peer *peer_at(const struct ep *e, uint32_t i)
{
	const struct fi_braid_stat_ep *s = snap(e);
	const uint8_t *p = (const uint8_t *)s + sizeof(*s) + 8 * (size_t)s->n_ep;
	const uint8_t *end = (const uint8_t *)s + s->size;

	while (i--) {
		const struct fi_braid_stat_peer *pr = (const struct fi_braid_stat_peer *)p;

		if (p + sizeof(*pr) > end || pr->size < sizeof(*pr))
			return NULL;
		p += pr->size;
	}
	if (p + sizeof(struct fi_braid_stat_peer) > end ||
	    p + ((const struct fi_braid_stat_peer *)p)->size > end)
		return NULL;
	return (const struct fi_braid_stat_peer *)p;
}

/* the same endpoint in the previous sample (rates), or NULL */
static const struct ep *prev_of(const struct ep *e)
{
	int i;

	for (i = 0; i < nprev; i++)
		if (prev[i].pid == e->pid && snap(&prev[i])->id == snap(e)->id &&
		    snap(&prev[i])->time_ns < snap(e)->time_ns)
			return &prev[i];
	return NULL;
}

static const char *ep_type(uint32_t t)
{
	return t == FI_EP_RDM ? "RDM" : t == FI_EP_MSG ? "MSG" : t == FI_EP_DGRAM ? "DGRAM" : "?";
}

static void human(char *buf, size_t len, double v, const char *unit)
{
	const char *sfx[] = { "", "K", "M", "G", "T" };
	int i = 0;

	while (v >= 1000 && i < 4) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, i ? "%.1f%s%s" : "%.0f%s%s", v, sfx[i], unit);
}

static void ns_str(char *buf, size_t len, uint64_t ns)
{
	if (!ns)
		snprintf(buf, len, "-");
	else if (ns < 1000000)
		snprintf(buf, len, "%.1fus", (double)ns / 1e3);
	else
		snprintf(buf, len, "%.2fms", (double)ns / 1e6);
}

/* ---- text ---- */

/* counters of one row that are not 0 (all with -a), "name value" in columns */
static void print_row(const struct ep *e, const uint64_t *row, unsigned scope, const char *indent,
		      bool all, const char *skip_prefix)
{
	int k = 0, col = 0;
	uint32_t i;

	for (i = 0; i < e->n_desc; i++) {
		char item[80];

		if (!(e->d[i].scopes & scope))
			continue;
		if ((row[k] || all) && !(skip_prefix && !strncmp(e->d[i].name, skip_prefix,
								 strlen(skip_prefix)))) {
			snprintf(item, sizeof(item), "%s %" PRIu64, e->d[i].name, row[k]);
			printf("%s%-38s", col ? "" : indent, item);
			if (++col == 3) {
				printf("\n");
				col = 0;
			}
		}
		k++;
	}
	if (col)
		printf("\n");
}

static void print_ep(const struct ep *e, const struct opts *o, uint64_t now)
{
	const struct fi_braid_stat_ep *s = snap(e);
	const struct ep *p = prev_of(e);
	double age = now > s->time_ns ? (double)(now - s->time_ns) / 1e9 : 0;
	char a[32], b[32];
	uint32_t i, k;

	printf("%s[%u] endpoint %u %s %s  peers %u", e->comm, e->pid, s->id, ep_type(s->ep_type),
	       s->addr, s->peers_total);
	if (s->peers < s->peers_total)
		printf(" (%u shown)", s->peers);
	printf("  published %.1fs ago\n", age);
	if (p) {
		const uint64_t *pv = snap(p)->v;
		double dt = (double)(s->time_ns - snap(p)->time_ns) / 1e9;
		const char *tb = s->ep_type == FI_EP_MSG ? "rc.tx_bytes" : "rd.tx_bytes";
		const char *rb = s->ep_type == FI_EP_MSG ? "rc.rx_bytes" : "rd.rx_bytes";
		const char *tp = s->ep_type == FI_EP_DGRAM ? "ep.tx_dgrams" :
				 s->ep_type == FI_EP_MSG ? "rc.tx_pkts" : "rd.tx_data";
		const char *rt = s->ep_type == FI_EP_MSG ? "rc.retx_pkts" : "rd.retx_pkts";

		human(a, sizeof(a), 8 * (double)(val(e, s->v, tb, FI_BRAID_SCOPE_EP) -
						 val(p, pv, tb, FI_BRAID_SCOPE_EP)) / dt, "bit/s");
		human(b, sizeof(b), 8 * (double)(val(e, s->v, rb, FI_BRAID_SCOPE_EP) -
						 val(p, pv, rb, FI_BRAID_SCOPE_EP)) / dt, "bit/s");
		printf("  rate: sent %s, received %s, %.0f packets/s, %.0f resent/s\n", a, b,
		       (double)(val(e, s->v, tp, FI_BRAID_SCOPE_EP) - val(p, pv, tp, FI_BRAID_SCOPE_EP)) / dt,
		       (double)(val(e, s->v, rt, FI_BRAID_SCOPE_EP) - val(p, pv, rt, FI_BRAID_SCOPE_EP)) / dt);
	}
	print_row(e, s->v, FI_BRAID_SCOPE_EP, "  ", o->all, NULL);
	for (i = 0; i < s->peers; i++) {
		const struct fi_braid_stat_peer *pr = peer_at(e, i);
		const uint64_t *pv;
		char srtt[16], mrtt[16];

		if (!pr)
			break;
		pv = pr->v;
		ns_str(srtt, sizeof(srtt), val(e, pv, "rd.srtt_ns", FI_BRAID_SCOPE_PEER));
		ns_str(mrtt, sizeof(mrtt), val(e, pv, "rd.min_rtt_ns", FI_BRAID_SCOPE_PEER));
		printf("  peer %s %s  cwnd %" PRIu64 "  peer window %" PRIu64 "  our window %" PRIu64
		       "  in flight %" PRIu64
		       "  queued %" PRIu64 "  srtt %s  min rtt %s\n", pr->addr,
		       val(e, pv, "rd.verified", FI_BRAID_SCOPE_PEER) ? "proven" : "unproven",
		       val(e, pv, "rd.cwnd", FI_BRAID_SCOPE_PEER),
		       val(e, pv, "rd.peer_rwnd", FI_BRAID_SCOPE_PEER),
		       val(e, pv, "rd.rwnd", FI_BRAID_SCOPE_PEER),
		       val(e, pv, "rd.inflight", FI_BRAID_SCOPE_PEER),
		       val(e, pv, "rd.sendq", FI_BRAID_SCOPE_PEER), srtt, mrtt);
		/* the peer's counters; its gauges are on the line above */
		{
			uint64_t row[512];
			uint32_t n = s->n_peer < 512 ? s->n_peer : 512, j, q = 0;

			for (j = 0; j < e->n_desc && q < n; j++) {
				if (!(e->d[j].scopes & FI_BRAID_SCOPE_PEER))
					continue;
				row[q] = e->d[j].kind == FI_BRAID_COUNTER ? pv[q] : 0;
				q++;
			}
			print_row(e, row, FI_BRAID_SCOPE_PEER, "    ", false, NULL);
		}
		/* the path table, when this side sent on its paths (a receiver's are empty) */
		for (k = 0; k < pr->paths && !o->all; k++)
			if (val(e, pv + s->n_peer + (size_t)k * s->n_path, "rd.tx_data",
				FI_BRAID_SCOPE_PATH))
				break;
		if (k == pr->paths && !o->all)
			continue;
		printf("    %-5s %-8s %-6s %9s %9s %9s %8s %7s %10s %8s %8s %7s %7s\n", "path", "entropy",
		       "state", "srtt", "base rtt", "rttvar", "loss%", "ecn%", "sent", "resent",
		       "lost", "deaths", "redraws");
		for (k = 0; k < pr->paths; k++) {
			const uint64_t *r = pv + s->n_peer + (size_t)k * s->n_path;
			char c1[16], c2[16], c3[16];

			ns_str(c1, sizeof(c1), val(e, r, "rd.path.srtt_ns", FI_BRAID_SCOPE_PATH));
			ns_str(c2, sizeof(c2), val(e, r, "rd.path.min_rtt_ns", FI_BRAID_SCOPE_PATH));
			ns_str(c3, sizeof(c3), val(e, r, "rd.path.rttvar_ns", FI_BRAID_SCOPE_PATH));
			printf("    %-5u %-8" PRIu64 " %-6s %9s %9s %9s %8.2f %7.2f %10" PRIu64 " %8" PRIu64
			       " %8" PRIu64 " %7" PRIu64 " %7" PRIu64 "\n", k,
			       val(e, r, "rd.path.entropy", FI_BRAID_SCOPE_PATH),
			       val(e, r, "rd.path.state", FI_BRAID_SCOPE_PATH) ? "sick" : "ok", c1, c2, c3,
			       (double)val(e, r, "rd.path.loss_ppm", FI_BRAID_SCOPE_PATH) / 1e4,
			       (double)val(e, r, "rd.path.ecn_ppm", FI_BRAID_SCOPE_PATH) / 1e4,
			       val(e, r, "rd.tx_data", FI_BRAID_SCOPE_PATH),
			       val(e, r, "rd.retx_pkts", FI_BRAID_SCOPE_PATH),
			       val(e, r, "rd.lost_pkts", FI_BRAID_SCOPE_PATH),
			       val(e, r, "rd.path_deaths", FI_BRAID_SCOPE_PATH),
			       val(e, r, "rd.path_redraws", FI_BRAID_SCOPE_PATH));
		}
	}
}

/* ---- JSON ---- */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void json_row(const struct ep *e, const uint64_t *row, unsigned scope)
{
	int k = 0;
	uint32_t i;

	printf("{");
	for (i = 0; i < e->n_desc; i++) {
		if (!(e->d[i].scopes & scope))
			continue;
		printf("%s", k ? ", " : "");
		json_str(e->d[i].name);
		printf(": %" PRIu64, row[k]);
		k++;
	}
	printf("}");
}

static void print_json(uint64_t now)
{
	int i;
	uint32_t j, k;

	printf("{\"time_ns\": %" PRIu64 ", \"stale_files\": %d, \"endpoints\": [", now, stale);
	for (i = 0; i < neps; i++) {
		const struct ep *e = &eps[i];
		const struct fi_braid_stat_ep *s = snap(e);

		printf("%s\n {\"pid\": %u, \"comm\": ", i ? "," : "", e->pid);
		json_str(e->comm);
		printf(", \"id\": %u, \"type\": \"%s\", \"addr\": ", s->id, ep_type(s->ep_type));
		json_str(s->addr);
		printf(", \"time_ns\": %" PRIu64 ", \"peers_total\": %u, \"counters\": ", s->time_ns,
		       s->peers_total);
		json_row(e, s->v, FI_BRAID_SCOPE_EP);
		printf(", \"peers\": [");
		for (j = 0; j < s->peers; j++) {
			const struct fi_braid_stat_peer *pr = peer_at(e, j);

			if (!pr)
				break;
			printf("%s\n  {\"addr\": ", j ? "," : "");
			json_str(pr->addr);
			printf(", \"counters\": ");
			json_row(e, pr->v, FI_BRAID_SCOPE_PEER);
			printf(", \"paths\": [");
			for (k = 0; k < pr->paths; k++) {
				printf("%s\n   ", k ? "," : "");
				json_row(e, pr->v + s->n_peer + (size_t)k * s->n_path,
					 FI_BRAID_SCOPE_PATH);
			}
			printf("]}");
		}
		printf("]}");
	}
	printf("\n]}\n");
}

/* ---- the table (-l) ---- */

static void print_table(void)
{
	const struct braid_ctr_desc *t;
	size_t n = braid_ctr_table(&t), i;

	printf("%-28s %-5s %-7s %-10s %s\n", "name", "scope", "kind", "unit", "meaning");
	for (i = 0; i < n; i++)
		printf("%-28s %c%c%c   %-7s %-10s %s\n", t[i].name,
		       t[i].scopes & FI_BRAID_SCOPE_EP ? 'e' : '-',
		       t[i].scopes & FI_BRAID_SCOPE_PEER ? 'p' : '-',
		       t[i].scopes & FI_BRAID_SCOPE_PATH ? 'a' : '-',
		       t[i].kind == FI_BRAID_COUNTER ? "counter" : "gauge", t[i].unit, t[i].help);
}

/* ---- main ---- */

static void collect(const struct opts *o)
{
	uint64_t ns = braid_statfile_pidns();
	struct dirent *de;
	DIR *dir;
	int i;

	/* keep this sample as the previous one (for rates); the one before goes */
	{
		struct ep *te = prev;
		struct desc **tt = tables_prev;
		int tc = prev_cap, ttc = tables_prev_cap;

		for (i = 0; i < nprev; i++)
			free(prev[i].buf);
		for (i = 0; i < ntables_prev; i++)
			free(tables_prev[i]);
		if (neps < eps_cap)
			free(eps[neps].buf);	/* a slot that was not read whole */
		prev = eps;
		prev_cap = eps_cap;
		nprev = neps;
		tables_prev = tables;
		tables_prev_cap = tables_cap;
		ntables_prev = ntables;
		eps = te;
		eps_cap = tc;
		tables = tt;
		tables_cap = ttc;
		ntables = 0;
		if (eps)
			memset(eps, 0, (size_t)eps_cap * sizeof(*eps));
		neps = 0;
	}
	stale = 0;
	dir = opendir(o->dir);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char path[4096];
		long pid;

		if (sscanf(de->d_name, "braid-%ld.stat", &pid) != 1)
			continue;
		snprintf(path, sizeof(path), "%s/%s", o->dir, de->d_name);
		file_read(path, o, ns);
	}
	closedir(dir);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: braid-stat [-d DIR] [-p PID] [-a] [-w SECONDS [-n COUNT]] [--json]\n"
		   "       braid-stat -l\n"
		   "Shows the counters of braid endpoints in running processes (braid-stat(1)).\n"
		   "  -d DIR       where processes publish (default: $FI_BRAID_STAT_DIR, else /dev/shm)\n"
		   "  -p PID       only this process\n"
		   "  -a           every counter, zeros too\n"
		   "  -w SECONDS   show again every SECONDS, with rates, until interrupted (or COUNT times)\n"
		   "  -n COUNT     with -w: this many times\n"
		   "  -j, --json   one JSON document per sample\n"
		   "  -l           list the counter table (name, scope, kind, unit, meaning)\n"
		   "  -h, --help   this text\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
		{ "watch", required_argument, NULL, 'w' }, { NULL, 0, NULL, 0 },
	};
	struct opts o = { .dir = getenv("FI_BRAID_STAT_DIR"), .count = -1 };
	long round = 0;
	int c, found_any = 0;
	long v;

	if (!o.dir || !*o.dir)
		o.dir = "/dev/shm";
	while ((c = getopt_long(argc, argv, "d:p:aw:n:jlh", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o.dir = optarg; break;
		case 'p':
			if (!braid_cli_long(optarg, 1, INT32_MAX, &v))
				return braid_cli_bad(usage, "braid-stat", "-p", optarg, "a process id");
			o.pid = v;
			break;
		case 'a': o.all = true; break;
		case 'w':
			if (!braid_cli_double(optarg, 1e-3, 86400, &o.watch))
				return braid_cli_bad(usage, "braid-stat", "-w", optarg,
						     "seconds, more than 0");
			break;
		case 'n':
			if (!braid_cli_long(optarg, 1, LONG_MAX, &o.count))
				return braid_cli_bad(usage, "braid-stat", "-n", optarg,
						     "a count, 1 or more");
			break;
		case 'j': o.json = true; break;
		case 'l': print_table(); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BRAID_CLI_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid-stat", argc, argv))
		return BRAID_CLI_EXIT_USAGE;
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	for (;;) {
		uint64_t now;
		int i;

		collect(&o);
		now = mono_ns();
		if (o.json) {
			print_json(now);
		} else {
			if (o.watch > 0 && isatty(STDOUT_FILENO))
				printf("\033[H\033[2J");
			if (o.watch > 0) {
				time_t t = time(NULL);
				char tb[32];

				strftime(tb, sizeof(tb), "%H:%M:%S", localtime(&t));
				printf("braid-stat  %s  every %.1fs\n", tb, o.watch);
			}
			if (!neps) {
				fprintf(o.watch > 0 ? stdout : stderr,
					"braid-stat: no braid process is running%s (nothing published "
					"in %s; a process publishes while it has endpoints open, "
					"unless FI_BRAID_STAT=0)\n", o.pid ? " with that pid" : "",
					o.dir);
			}
			for (i = 0; i < neps; i++)
				print_ep(&eps[i], &o, now);
			if (stale)
				printf("(%d file%s of processes that are gone, left out)\n", stale,
				       stale == 1 ? "" : "s");
		}
		fflush(stdout);
		found_any |= neps > 0;
		if (o.watch <= 0 || (o.count > 0 && ++round >= o.count))
			break;
		usleep((useconds_t)(o.watch * 1e6));
	}
	return found_any ? 0 : 1;
}
