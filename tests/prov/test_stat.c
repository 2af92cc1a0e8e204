/* SPDX-License-Identifier: BSD-2-Clause */
/* test_stat.c: braid's counters through the public API: fi_open_ops(FI_BRAID_STAT_OPS) (rdma/fi_braid.h) and the file braid publishes for braid-stat. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <rdma/fi_braid.h>

#include "prov_test.h"
#include "braid/braid_statfile.h"

#define NMSG 100
#define SNAP (256 * 1024)

static uint64_t snap_buf[SNAP / 8];

static struct fi_info *rdm_info(void)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *list = NULL, *info;

	hints->caps = FI_MSG;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list), 0);
	fi_freeinfo(hints);
	cr_assert(pt_is_plain_braid(list), "native braid first, got %s", list->fabric_attr->prov_name);
	info = fi_dupinfo(list);
	fi_freeinfo(list);
	return info;
}

static void pair_open(struct pt_pair *p)
{
	memset(p, 0, sizeof(*p));
	p->d.info = rdm_info();
	cr_assert_eq(fi_fabric(p->d.info->fabric_attr, &p->d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(p->d.fabric, p->d.info, &p->d.domain, NULL), 0);
	pt_ep_create(&p->d, &p->a, NULL);
	pt_ep_create(&p->d, &p->b, NULL);
	pt_ep_bind_cqs(&p->d, &p->a, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	pt_ep_bind_cqs(&p->d, &p->b, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	pt_ep_connect(&p->a, &p->b);
	pt_ep_connect(&p->b, &p->a);
	pt_ep_enable(&p->a);
	pt_ep_enable(&p->b);
}

static struct fi_braid_stat_ops *ops_of(struct fid *fid)
{
	struct fi_braid_stat_ops *ops = NULL;
	int ret = fi_open_ops(fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL);

	cr_assert_eq(ret, 0, "fi_open_ops(%s) = %d", FI_BRAID_STAT_OPS, ret);
	cr_assert_not_null(ops);
	cr_assert_geq(ops->size, sizeof(*ops));
	return ops;
}

/* NMSG messages a -> b (some of several packets), every completion read. */
static void traffic(struct pt_pair *p)
{
	static uint8_t sbuf[20000], rbuf[NMSG][20000];
	struct fi_cq_data_entry e;
	int i, got = 0, sent = 0;
	long deadline;

	for (i = 0; i < NMSG; i++)
		cr_assert_eq(fi_recv(p->b.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, NULL), 0);
	for (i = 0; i < NMSG; i++)
		cr_assert_eq(pt_send(&p->a, sbuf, (size_t)(i * 199) % sizeof(sbuf), NULL), 0);
	deadline = pt_now_ms() + 10 * PT_POLL_MS;
	while ((got < NMSG || sent < NMSG) && pt_now_ms() < deadline) {
		if (fi_cq_read(p->b.rx_cq, &e, 1) == 1)
			got++;
		if (fi_cq_read(p->a.tx_cq, &e, 1) == 1)
			sent++;
	}
	cr_assert_eq(got, NMSG, "every message received");
	cr_assert_eq(sent, NMSG, "every send completed");
}

static int row_idx(const struct fi_braid_stat_desc *t, size_t n, const char *name, unsigned scope)
{
	int k = 0;

	for (size_t i = 0; i < n; i++) {
		if (!(t[i].scopes & scope))
			continue;
		if (!strcmp(t[i].name, name))
			return k;
		k++;
	}
	cr_assert_fail("%s not in rows of scope %u", name, scope);
	return -1;
}

Test(fi_open_ops, braid_stat_ops_on_domain_and_endpoint)
{
	struct fi_braid_stat_ops *ops = NULL;
	const struct fi_braid_stat_desc *t;
	struct pt_pair p;
	uint64_t v;

	pair_open(&p);
	ops = ops_of(&p.d.domain->fid);
	cr_assert_eq(ops_of(&p.a.ep->fid), ops, "one set of ops");
	cr_assert_eq(fi_open_ops(&p.a.ep->fid, "no_such_ops", 0, (void **)&ops, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_open_ops(&p.a.ep->fid, FI_BRAID_STAT_OPS, 1, (void **)&ops, NULL), -FI_EINVAL);
	cr_assert_gt(ops->table(&t), 100);
	/* the ops read endpoints: a domain or a CQ is refused */
	cr_assert_eq(ops->snapshot(&p.d.domain->fid, snap_buf, sizeof(snap_buf)), -FI_EINVAL);
	cr_assert_eq(ops->snapshot(&p.a.tx_cq->fid, snap_buf, sizeof(snap_buf)), -FI_EINVAL);
	cr_assert_eq(ops->snapshot(&p.a.ep->fid, NULL, sizeof(snap_buf)), -FI_EINVAL);
	cr_assert_eq(ops->snapshot(&p.a.ep->fid, snap_buf, 64), -FI_ETOOSMALL);
	cr_assert_eq(ops->value(&p.d.domain->fid, "rd.tx_data", &v), -FI_EINVAL);
	cr_assert_eq(ops->value(&p.a.ep->fid, "no.such", &v), -FI_ENOENT);
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.path.srtt_ns", &v), -FI_ENOENT,
		     "a path gauge has no endpoint value");
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.tx_data", &v), 0);
	cr_assert_eq(v, 0, "nothing sent yet");
	pt_pair_close(&p);
}

Test(fi_open_ops, braid_stat_snapshot_of_an_rdm_transfer, .timeout = 60)
{
	struct fi_braid_stat_ops *ops;
	const struct fi_braid_stat_desc *t;
	const struct fi_braid_stat_ep *s = (const struct fi_braid_stat_ep *)snap_buf;
	const struct fi_braid_stat_peer *pr;
	char bname[64];
	struct pt_pair p;
	uint64_t v, sum = 0;
	ssize_t len;
	size_t n;
	uint32_t k;

	/* the peer and path rows are the engine's: messages go by it, not handed
	 * whole to the local peer (fi_braid(7), LOCAL PEERS) */
	setenv("FI_BRAID_SHM_EAGER", "0", 1);
	pair_open(&p);
	ops = ops_of(&p.a.ep->fid);
	n = ops->table(&t);
	traffic(&p);

	len = ops->snapshot(&p.a.ep->fid, snap_buf, sizeof(snap_buf));
	cr_assert_gt(len, (ssize_t)sizeof(*s));
	cr_assert_eq((size_t)len, s->size);
	cr_assert_eq(s->ep_type, FI_EP_RDM);
	{
		uint32_t ne = 0, np = 0, nq = 0;

		for (size_t i = 0; i < n; i++) {
			ne += !!(t[i].scopes & FI_BRAID_SCOPE_EP);
			np += !!(t[i].scopes & FI_BRAID_SCOPE_PEER);
			nq += !!(t[i].scopes & FI_BRAID_SCOPE_PATH);
		}
		cr_assert_eq(s->n_ep, ne, "a value per endpoint entry of the table");
		cr_assert_eq(s->n_peer, np);
		cr_assert_eq(s->n_path, nq);
	}
	snprintf(bname, sizeof(bname), "127.0.0.1:%u", ntohs(p.a.name.sin_port));
	cr_assert_str_eq(s->addr, bname, "the endpoint's own address");
	cr_assert_eq(s->v[row_idx(t, n, "rd.msgs_sent", FI_BRAID_SCOPE_EP)], NMSG);
	cr_assert_geq(s->v[row_idx(t, n, "rd.tx_data", FI_BRAID_SCOPE_EP)], NMSG);
	cr_assert_geq(s->v[row_idx(t, n, "ep.tx_dgrams", FI_BRAID_SCOPE_EP)], 1);
	cr_assert_eq(s->v[row_idx(t, n, "rd.peers", FI_BRAID_SCOPE_EP)], 1);
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.msgs_sent", &v), 0);
	cr_assert_eq(v, NMSG, "value() agrees with the snapshot");

	/* one peer record: b, with its counters and a row per path */
	cr_assert_eq(s->peers, 1);
	cr_assert_eq(s->peers_total, 1);
	pr = (const struct fi_braid_stat_peer *)((const uint8_t *)s + sizeof(*s) + 8 * s->n_ep);
	snprintf(bname, sizeof(bname), "127.0.0.1:%u", ntohs(p.b.name.sin_port));
	cr_assert_str_eq(pr->addr, bname, "the peer is b");
	cr_assert_eq(pr->v[row_idx(t, n, "rd.msgs_sent", FI_BRAID_SCOPE_PEER)], NMSG);
	cr_assert_eq(pr->v[row_idx(t, n, "rd.tx_data", FI_BRAID_SCOPE_PEER)],
		     s->v[row_idx(t, n, "rd.tx_data", FI_BRAID_SCOPE_EP)]);
	cr_assert_gt(pr->paths, 1, "the paths braid sprays over");
	cr_assert_eq(pr->size, sizeof(*pr) + 8 * (s->n_peer + pr->paths * s->n_path));
	for (k = 0; k < pr->paths; k++) {
		const uint64_t *row = pr->v + s->n_peer + (size_t)k * s->n_path;

		sum += row[row_idx(t, n, "rd.tx_data", FI_BRAID_SCOPE_PATH)];
		cr_assert_gt(row[row_idx(t, n, "rd.tx_data", FI_BRAID_SCOPE_PATH)], 0,
			     "path %u carried data (sprayed)", k);
	}
	cr_assert_eq(sum, pr->v[row_idx(t, n, "rd.tx_data", FI_BRAID_SCOPE_PEER)],
		     "the paths add up to the peer");

	/* the receiver */
	cr_assert_eq(ops->value(&p.b.ep->fid, "rd.msgs_received", &v), 0);
	cr_assert_eq(v, NMSG);
	cr_assert_eq(ops->value(&p.b.ep->fid, "ep.rx_dgrams", &v), 0);
	cr_assert_geq(v, 1);
	pt_pair_close(&p);
}

Test(fi_open_ops, braid_stat_dgram_endpoint_counts_datagrams)
{
	struct fi_braid_stat_ops *ops;
	struct pt_pair p;
	struct fi_cq_data_entry e;
	char buf[64] = "x";
	uint64_t v;
	long deadline;

	pt_pair_open(&p);	/* DGRAM */
	ops = ops_of(&p.a.ep->fid);
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(pt_send(&p.a, buf, 8, NULL), 0);
	deadline = pt_now_ms() + PT_POLL_MS;
	while (fi_cq_read(p.b.rx_cq, &e, 1) != 1 && pt_now_ms() < deadline)
		(void)fi_cq_read(p.a.tx_cq, &e, 1);
	cr_assert_eq(ops->value(&p.a.ep->fid, "ep.tx_dgrams", &v), 0);
	cr_assert_eq(v, 1);
	cr_assert_eq(ops->value(&p.b.ep->fid, "ep.rx_dgrams", &v), 0);
	cr_assert_eq(v, 1);
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.tx_data", &v), 0);
	cr_assert_eq(v, 0, "no RD engine on a DGRAM endpoint");
	pt_pair_close(&p);
}

/* The file braid-stat reads: there while endpoints are, whole, current; gone at the last close. */
Test(braid_stat_file, published_while_open_removed_at_close, .timeout = 60)
{
	char dir[] = "/tmp/braid-stat-test.XXXXXX", path[256];
	const struct braid_statfile_hdr *h;
	const struct braid_statfile_desc *d;
	struct pt_pair p;
	struct stat st;
	uint8_t *map;
	uint32_t i, used = 0;
	long deadline;
	int fd;

	cr_assert_not_null(mkdtemp(dir));
	setenv("FI_BRAID_STAT_DIR", dir, 1);
	setenv("FI_BRAID_STAT_MS", "10", 1);
	pair_open(&p);
	/* an endpoint is published when enabled, before anything progressed it */
	snprintf(path, sizeof(path), "%s/braid-%ld.stat", dir, (long)getpid());
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s exists once endpoints are enabled", path);
	cr_assert_eq(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(map, MAP_FAILED);
	h = (const struct braid_statfile_hdr *)map;
	for (i = 0; i < h->slots; i++) {
		const struct braid_statfile_slot *sl =
			(const struct braid_statfile_slot *)(map + h->slot_off + (size_t)i * h->slot_size);

		used += sl->used;
		cr_assert(!sl->used || sl->len > 0, "slot %u published at enable", i);
	}
	cr_assert_eq(used, 2);
	used = 0;
	munmap(map, (size_t)st.st_size);
	traffic(&p);
	/* progress for a while: both publish (every 10 ms) */
	deadline = pt_now_ms() + 100;
	while (pt_now_ms() < deadline) {
		(void)fi_cq_read(p.a.tx_cq, NULL, 0);
		(void)fi_cq_read(p.b.rx_cq, NULL, 0);
	}
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s exists", path);
	cr_assert_eq(fstat(fd, &st), 0);
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(map, MAP_FAILED);
	h = (const struct braid_statfile_hdr *)map;
	cr_assert_eq(memcmp(h->magic, BRAID_STATFILE_MAGIC, 8), 0);
	cr_assert_eq(h->pid, (uint32_t)getpid());
	cr_assert_eq(h->interval_ms, 10);
	cr_assert_eq(h->slots, BRAID_STATFILE_SLOTS);
	cr_assert_geq((uint64_t)st.st_size, (uint64_t)h->slot_off + (uint64_t)h->slots * h->slot_size);
	d = (const struct braid_statfile_desc *)(map + h->desc_off);
	cr_assert_gt(h->n_desc, 100);
	cr_assert_str_eq(d[0].name, "ep.tx_dgrams", "the table travels with the file");
	for (i = 0; i < h->slots; i++) {
		const struct braid_statfile_slot *sl =
			(const struct braid_statfile_slot *)(map + h->slot_off + (size_t)i * h->slot_size);
		const struct fi_braid_stat_ep *s = (const struct fi_braid_stat_ep *)(sl + 1);

		if (!sl->used)
			continue;
		used++;
		cr_assert_eq(sl->seq % 2, 0, "not being written (this thread is the only writer)");
		cr_assert_gt(sl->len, 0, "published");
		cr_assert_eq(sl->len, s->size);
		cr_assert_eq(s->ep_type, FI_EP_RDM);
		cr_assert_eq(s->peers, 1, "each endpoint sees the other");
	}
	cr_assert_eq(used, 2, "a slot per endpoint");
	munmap(map, (size_t)st.st_size);
	pt_ep_close(&p.a);
	cr_assert_eq(stat(path, &st), 0, "still there while b is open");
	pt_ep_close(&p.b);
	cr_assert_neq(stat(path, &st), 0, "removed at the last close");
	pt_dom_close(&p.d);
	cr_assert_eq(rmdir(dir), 0, "nothing left behind");
}

Test(braid_stat_file, not_published_when_turned_off)
{
	char dir[] = "/tmp/braid-stat-test.XXXXXX";
	struct pt_pair p;
	DIR *d;
	struct dirent *e;
	int files = 0;

	cr_assert_not_null(mkdtemp(dir));
	setenv("FI_BRAID_STAT_DIR", dir, 1);
	setenv("FI_BRAID_STAT", "0", 1);
	pair_open(&p);
	traffic(&p);
	d = opendir(dir);
	cr_assert_not_null(d);
	while ((e = readdir(d)))
		files += e->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(files, 0, "FI_BRAID_STAT=0: no file");
	pt_pair_close(&p);
	rmdir(dir);
}

/*
 * FI_BRAID_IDLE_MS through the API (fi_braid(7)): once two endpoints have
 * been quiet for it, their traffic state is gone (rd.flows_active 0, read
 * through fi_open_ops), and a message afterwards is delivered as usual.
 */
Test(braid_stat_file, idle_traffic_state_is_freed_and_traffic_resumes, .timeout = 60)
{
	struct fi_braid_stat_ops *ops;
	struct fi_cq_data_entry e;
	struct pt_pair p;
	char buf[16] = "";
	uint64_t v = 1;
	long deadline;

	setenv("FI_BRAID_IDLE_MS", "200", 1);
	pair_open(&p);
	ops = ops_of(&p.a.ep->fid);
	traffic(&p);
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.flows_active", &v), 0);
	cr_assert_eq(v, 1, "a flow to b while it sends");
	/* quiet, but progressed (the sweep runs from progress) */
	deadline = pt_now_ms() + 2000;
	do {
		uint64_t vb = 1;

		(void)fi_cq_read(p.a.tx_cq, NULL, 0);
		(void)fi_cq_read(p.b.rx_cq, NULL, 0);
		cr_assert_eq(ops->value(&p.a.ep->fid, "rd.flows_active", &v), 0);
		cr_assert_eq(ops->value(&p.b.ep->fid, "rd.flows_active", &vb), 0);
		v += vb;
	} while (v && pt_now_ms() < deadline);
	cr_assert_eq(v, 0, "both sides' idle traffic state freed within 2 s of a 200 ms idle time");
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.peers", &v), 0);
	cr_assert_eq(v, 1, "the peer itself is kept");
	/* traffic resumes: the peer's sequence state was kept */
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(pt_send(&p.a, "again", 6, NULL), 0);
	deadline = pt_now_ms() + PT_POLL_MS;
	while (fi_cq_read(p.b.rx_cq, &e, 1) != 1 && pt_now_ms() < deadline)
		(void)fi_cq_read(p.a.tx_cq, NULL, 0);
	cr_assert_str_eq(buf, "again", "delivered after the idle state went");
	pt_pair_close(&p);
}

/*
 * FI_BRAID_FORGET_MS through the API (protocol.md §4.9, Forgetting): two endpoints quiet
 * for the idle time keep each other as records; once those have rested for
 * the forget time, one asks, the other agrees, and both forget the pair
 * (rd.peers 0 on both sides). A message afterwards starts afresh: delivered,
 * its send completed without error, no restart seen.
 */
Test(braid_stat_file, idle_peers_are_forgotten_by_agreement_and_traffic_starts_afresh,
     .timeout = 60)
{
	struct fi_braid_stat_ops *ops;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct pt_pair p;
	char buf[16] = "";
	uint64_t v = 1, vb = 1, fa = 0, fb = 0;
	long deadline;

	setenv("FI_BRAID_IDLE_MS", "200", 1);
	setenv("FI_BRAID_FORGET_MS", "300", 1);
	pair_open(&p);
	ops = ops_of(&p.a.ep->fid);
	traffic(&p);
	/* quiet, but progressed: records after the idle time, forgotten about two
	 * forget times later */
	deadline = pt_now_ms() + 5000;
	do {
		(void)fi_cq_read(p.a.tx_cq, NULL, 0);
		(void)fi_cq_read(p.b.rx_cq, NULL, 0);
		cr_assert_eq(ops->value(&p.a.ep->fid, "rd.peers", &v), 0);
		cr_assert_eq(ops->value(&p.b.ep->fid, "rd.peers", &vb), 0);
	} while (v + vb && pt_now_ms() < deadline);
	cr_assert_eq(v + vb, 0, "both sides forgot the pair within 5 s (%lu, %lu left)",
		     (unsigned long)v, (unsigned long)vb);
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.peers_forgotten", &fa), 0);
	cr_assert_eq(ops->value(&p.b.ep->fid, "rd.peers_forgotten", &fb), 0);
	cr_assert_eq(fa, 1);
	cr_assert_eq(fb, 1);
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.forget_rx", &fa), 0);
	cr_assert_eq(ops->value(&p.b.ep->fid, "rd.forget_rx", &fb), 0);
	cr_assert_geq(fa + fb, 1, "one asked, the other agreed (both may have asked at once)");
	/* met again: afresh, no error either side */
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(pt_send(&p.a, "again", 6, NULL), 0);
	deadline = pt_now_ms() + PT_POLL_MS;
	while (fi_cq_read(p.b.rx_cq, &e, 1) != 1 && pt_now_ms() < deadline)
		(void)fi_cq_read(p.a.tx_cq, NULL, 0);
	cr_assert_str_eq(buf, "again", "delivered after the pair was forgotten");
	deadline = pt_now_ms() + PT_POLL_MS;
	while (pt_now_ms() < deadline) {
		ssize_t r = fi_cq_read(p.a.tx_cq, &e, 1);

		if (r == 1)
			break;
		cr_assert_neq(r, -FI_EAVAIL, "the send failed: %d",
			      fi_cq_readerr(p.a.tx_cq, &err, 0) == 1 ? err.err : 0);
	}
	cr_assert_eq(ops->value(&p.a.ep->fid, "rd.peers_restarted", &v), 0);
	cr_assert_eq(v, 0, "no restart");
	pt_pair_close(&p);
}
