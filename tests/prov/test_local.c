/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_local.c: RDM endpoints on one host reach each other through shared
 * memory (fi_braid(7), LOCAL PEERS), in one process and between processes,
 * mixed with peers that go by UDP; a local peer killed fails its sends in
 * bounded time; a sleeping receiver is woken; a full ring holds the sender
 * back and nothing is lost.
 */
#include <poll.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_braid.h>

#include "prov_test.h"

/* one entry (or error) from @cq, reading @also meanwhile; bounded */
static ssize_t wait_cq(struct fid_cq *cq, struct fid_cq *also, struct fi_cq_tagged_entry *e,
		       struct fi_cq_err_entry *err, long ms)
{
	long deadline = pt_now_ms() + ms;
	ssize_t ret;

	do {
		if (also)
			(void)fi_cq_read(also, NULL, 0);
		ret = fi_cq_read(cq, e, 1);
		if (ret == -FI_EAVAIL && err) {
			memset(err, 0, sizeof(*err));
			return fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EOTHER;
		}
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

/* ---- other processes ---- */

/*
 * A child forked before the parent touches libfabric, with a pipe each way
 * carrying endpoint names and one-byte steps. Children use no Criterion
 * assertions: their exit code says which step failed.
 */
struct child {
	pid_t pid;
	int to_child[2], to_parent[2];
};

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
};

static void child_fork(struct child *c)
{
	cr_assert_eq(pipe(c->to_child), 0);
	cr_assert_eq(pipe(c->to_parent), 0);
	c->pid = fork();
	cr_assert_geq(c->pid, 0, "fork: %s", strerror(errno));
	if (c->pid == 0) {
		close(c->to_child[1]);
		close(c->to_parent[0]);
	} else {
		close(c->to_child[0]);
		close(c->to_parent[1]);
	}
}

/* in a child forked later: the parent's ends of an earlier child's pipes are not its own */
static void child_forget(struct child *c)
{
	close(c->to_child[1]);
	close(c->to_parent[0]);
}

static bool put(int fd, const void *p, size_t n)
{
	return write(fd, p, n) == (ssize_t)n;
}

static bool get(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (uint8_t *)p + got, n - got);

		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

static int side_open_at(struct side *s, const char *service);

/* open one endpoint with a CQ for both directions (no assertions: a child uses it) */
static int side_open(struct side *s)
{
	return side_open_at(s, "0");
}

/* the same, bound to UDP port @service of 127.0.0.1 */
static int side_open_at(struct side *s, const char *service)
{
	struct fi_info *hints = fi_allocinfo(), *list = NULL, *cur;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int ret;

	memset(s, 0, sizeof(*s));
	if (!hints)
		return -1;
	hints->fabric_attr->prov_name = strdup("braid");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_DIRECTED_RECV;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", service, FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	if (ret)
		return -1;
	for (cur = list; cur && !pt_is_plain_braid(cur); cur = cur->next)
		;
	s->info = cur ? fi_dupinfo(cur) : NULL;
	fi_freeinfo(list);
	if (!s->info || fi_fabric(s->info->fabric_attr, &s->fabric, NULL) ||
	    fi_domain(s->fabric, s->info, &s->domain, NULL) ||
	    fi_av_open(s->domain, &av_attr, &s->av, NULL) ||
	    fi_cq_open(s->domain, &cq_attr, &s->cq, NULL) ||
	    fi_endpoint(s->domain, s->info, &s->ep, NULL) ||
	    fi_ep_bind(s->ep, &s->av->fid, 0) ||
	    fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(s->ep))
		return -1;
	return 0;
}

static void side_close(struct side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	if (s->av)
		fi_close(&s->av->fid);
	if (s->domain)
		fi_close(&s->domain->fid);
	if (s->fabric)
		fi_close(&s->fabric->fid);
	fi_freeinfo(s->info);
}

/* names across the pipes: ours out, the other's in, into our AV */
static int side_meet(struct side *s, int out, int in)
{
	char mine[64], theirs[64];
	size_t len = sizeof(mine);

	if (fi_getname(&s->ep->fid, mine, &len) || len > sizeof(mine) || !put(out, &len, sizeof(len)) ||
	    !put(out, mine, len) || !get(in, &len, sizeof(len)) || len > sizeof(theirs) ||
	    !get(in, theirs, len))
		return -1;
	return fi_av_insert(s->av, theirs, 1, &s->peer, 0, NULL) == 1 ? 0 : -1;
}

/* one completion of our own CQ, bounded; 1 or a negative error */
static ssize_t side_wait(struct side *s, struct fi_cq_tagged_entry *e, struct fi_cq_err_entry *err,
			 long ms)
{
	return wait_cq(s->cq, NULL, e, err, ms);
}

/* two endpoints of this process that know each other */
static void pair_open(struct side *a, struct side *b)
{
	char name[64];
	size_t len = sizeof(name);

	cr_assert_eq(side_open(a), 0);
	cr_assert_eq(side_open(b), 0);
	cr_assert_eq(fi_getname(&b->ep->fid, name, &len), 0);
	cr_assert_eq(fi_av_insert(a->av, name, 1, &a->peer, 0, NULL), 1);
	len = sizeof(name);
	cr_assert_eq(fi_getname(&a->ep->fid, name, &len), 0);
	cr_assert_eq(fi_av_insert(b->av, name, 1, &b->peer, 0, NULL), 1);
}

/* Two endpoints of one process: every datagram through the rings, none by UDP. */
Test(local_peers, one_process_goes_through_shared_memory, .timeout = 60)
{
	static uint8_t src[1 << 20], dst[(1 << 20) + 1];
	const size_t sizes[] = { 0, 8, 4096, 65536, 1 << 20 };
	struct fi_cq_tagged_entry e;
	struct side a, b;

	pair_open(&a, &b);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (int dir = 0; dir < 2; dir++) {
			struct side *tx = dir ? &b : &a, *rx = dir ? &a : &b;

			pt_fill(src, sizes[k], (unsigned)(k * 2 + dir));
			memset(dst, 0xee, sizes[k] + 1);
			cr_assert_eq(fi_trecv(rx->ep, dst, sizes[k], NULL, FI_ADDR_UNSPEC, 7, 0, rx), 0);
			cr_assert_eq(fi_tsend(tx->ep, src, sizes[k], NULL, tx->peer, 7, tx), 0);
			cr_assert_eq(wait_cq(rx->cq, tx->cq, &e, NULL, 10000), 1,
				     "size %zu dir %d: received", sizes[k], dir);
			cr_assert_eq(e.len, sizes[k]);
			cr_assert_eq(wait_cq(tx->cq, rx->cq, &e, NULL, 10000), 1,
				     "size %zu dir %d: sent", sizes[k], dir);
			cr_assert(pt_same(dst, sizes[k], (unsigned)(k * 2 + dir)), "size %zu intact", sizes[k]);
			cr_assert_eq(dst[sizes[k]], 0xee, "nothing past the message");
		}
	}
	cr_assert_gt(pt_stat(a.ep, "ep.tx_local"), 0);
	cr_assert_gt(pt_stat(b.ep, "ep.rx_local"), 0);
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local"), pt_stat(a.ep, "ep.tx_dgrams"),
		     "every datagram a sent went through shared memory");
	cr_assert_eq(pt_stat(b.ep, "ep.tx_local"), pt_stat(b.ep, "ep.tx_dgrams"));
	cr_assert_eq(pt_stat(a.ep, "ep.local_peers"), 1);
	cr_assert_eq(pt_stat(a.ep, "ep.local_bad"), 0);
	/* the large payloads went by reference: b read them from a's memory (one copy) */
	cr_assert_gt(pt_stat(a.ep, "ep.tx_lent"), 0);
	cr_assert_eq(pt_stat(b.ep, "ep.local_dropped"), 0);
	side_close(&a);
	side_close(&b);
}

/* FI_BRAID_SHM=0: the same endpoints talk by UDP. */
Test(local_peers, off_by_setting, .timeout = 60)
{
	struct fi_cq_tagged_entry e;
	char buf[16] = "";
	struct side a, b;

	setenv("FI_BRAID_SHM", "0", 1);
	pair_open(&a, &b);
	cr_assert_eq(fi_trecv(b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, NULL), 0);
	cr_assert_eq(fi_tsend(a.ep, "by udp", 7, NULL, a.peer, 1, NULL), 0);
	cr_assert_eq(wait_cq(b.cq, a.cq, &e, NULL, 10000), 1);
	cr_assert_str_eq(buf, "by udp");
	cr_assert_eq(wait_cq(a.cq, b.cq, &e, NULL, 10000), 1);
	cr_assert_gt(pt_stat(a.ep, "ep.tx_dgrams"), 0);
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local"), 0);
	cr_assert_eq(pt_stat(b.ep, "ep.rx_local"), 0);
	side_close(&a);
	side_close(&b);
}

#define MIX_SIZES	5
static const size_t mix_sizes[MIX_SIZES] = { 8, 1000, 65536, 300000, 1 << 20 };
static uint8_t mix_buf[4][1 << 20];

/*
 * Exchange the mix's messages with the peer: for each size, one each way
 * (tag = size index), every byte checked. Return 0, or the failed step.
 */
static int side_exchange(struct side *s, unsigned seed, bool first)
{
	struct fi_cq_tagged_entry e;
	int k, got;

	for (k = 0; k < MIX_SIZES; k++) {
		size_t n = mix_sizes[k];

		pt_fill(mix_buf[0], n, seed + (unsigned)k + (first ? 0 : 100));
		if (fi_trecv(s->ep, mix_buf[1], n, NULL, s->peer, (uint64_t)k, 0, NULL) ||
		    fi_tsend(s->ep, mix_buf[0], n, NULL, s->peer, (uint64_t)k, NULL))
			return 10 + k;
		for (got = 0; got < 2; got++)
			if (side_wait(s, &e, NULL, 20000) != 1)
				return 20 + k;
		if (!pt_same(mix_buf[1], n, seed + (unsigned)k + (first ? 100 : 0)))
			return 30 + k;
	}
	return 0;
}

/* a child: opens its endpoint (@shm: FI_BRAID_SHM), meets the parent, exchanges, waits */
static int mix_child(struct child *c, const char *shm, unsigned seed)
{
	struct side s;
	char go;
	int ret;

	setenv("FI_BRAID_SHM", shm, 1);
	if (side_open(&s) || side_meet(&s, c->to_parent[1], c->to_child[0]))
		return 2;
	ret = side_exchange(&s, seed, false);
	if (ret)
		return ret;
	(void)get(c->to_child[0], &go, 1);	/* the parent is done with us */
	side_close(&s);
	return 0;
}

static int child_end(struct child *c, long ms)
{
	long deadline = pt_now_ms() + ms;
	int status;
	pid_t r;

	close(c->to_child[1]);
	do {
		r = waitpid(c->pid, &status, WNOHANG);
	} while (r == 0 && pt_now_ms() < deadline);
	if (r == 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &status, 0);
		return -1;
	}
	close(c->to_parent[0]);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * One endpoint, two peers in other processes: one local through shared
 * memory, one with local peers off (by UDP, as a remote host's would be).
 * The messages go at the same time; every byte is checked on every side.
 */
Test(local_peers, mixed_with_a_udp_peer, .timeout = 60)
{
	struct child loc, far;
	struct side a, b;
	uint64_t tx_local, tx_dgrams;

	child_fork(&loc);
	if (loc.pid == 0)
		_exit(mix_child(&loc, "1", 1));
	child_fork(&far);
	if (far.pid == 0) {
		child_forget(&loc);
		_exit(mix_child(&far, "0", 2));
	}
	/* two endpoints of ours: a meets the local child, b the UDP one */
	cr_assert_eq(side_open(&a), 0);
	cr_assert_eq(side_open(&b), 0);
	cr_assert_eq(side_meet(&a, loc.to_child[1], loc.to_parent[0]), 0);
	cr_assert_eq(side_meet(&b, far.to_child[1], far.to_parent[0]), 0);
	cr_assert_eq(side_exchange(&a, 1, true), 0, "with the local peer");
	cr_assert_eq(side_exchange(&b, 2, true), 0, "with the UDP peer");
	/* both at one instant: a's progress may send an ACK between two reads */
	for (int i = 0; i < 1000; i++) {
		tx_local = pt_stat(a.ep, "ep.tx_local");
		tx_dgrams = pt_stat(a.ep, "ep.tx_dgrams");
		if (pt_stat(a.ep, "ep.tx_local") == tx_local &&
		    pt_stat(a.ep, "ep.tx_dgrams") == tx_dgrams)
			break;
	}
	cr_assert_gt(tx_local, 0);
	cr_assert_eq(tx_local, tx_dgrams, "all of a's datagrams went through shared memory");
	cr_assert_gt(pt_stat(a.ep, "ep.rx_local"), 0);
	cr_assert_eq(pt_stat(b.ep, "ep.tx_local"), 0, "the peer with local peers off: by UDP");
	cr_assert_eq(pt_stat(b.ep, "ep.rx_local"), 0);
	cr_assert_eq(child_end(&loc, 20000), 0, "the local child");
	cr_assert_eq(child_end(&far, 20000), 0, "the UDP child");
	side_close(&a);
	side_close(&b);
}

/*
 * The same endpoint with both at once: one message to each peer posted
 * before either completes (the rings and the socket in one burst).
 */
Test(local_peers, one_endpoint_both_ways_at_once, .timeout = 60)
{
	struct child loc, far;
	struct fi_cq_tagged_entry e;
	fi_addr_t peer_far;
	struct side a;
	int i;

	child_fork(&loc);
	if (loc.pid == 0)
		_exit(mix_child(&loc, "1", 3));
	child_fork(&far);
	if (far.pid == 0) {
		child_forget(&loc);
		_exit(mix_child(&far, "0", 4));
	}
	cr_assert_eq(side_open(&a), 0);
	cr_assert_eq(side_meet(&a, far.to_child[1], far.to_parent[0]), 0);
	peer_far = a.peer;
	cr_assert_eq(side_meet(&a, loc.to_child[1], loc.to_parent[0]), 0);
	for (int k = 0; k < MIX_SIZES; k++) {
		size_t n = mix_sizes[k];

		pt_fill(mix_buf[0], n, 3 + (unsigned)k);
		pt_fill(mix_buf[2], n, 4 + (unsigned)k);
		cr_assert_eq(fi_trecv(a.ep, mix_buf[1], n, NULL, a.peer, (uint64_t)k, 0, NULL), 0);
		cr_assert_eq(fi_trecv(a.ep, mix_buf[3], n, NULL, peer_far, (uint64_t)k, 0, NULL), 0);
		cr_assert_eq(fi_tsend(a.ep, mix_buf[0], n, NULL, a.peer, (uint64_t)k, NULL), 0);
		cr_assert_eq(fi_tsend(a.ep, mix_buf[2], n, NULL, peer_far, (uint64_t)k, NULL), 0);
		for (i = 0; i < 4; i++)
			cr_assert_eq(side_wait(&a, &e, NULL, 20000), 1, "size %zu: completion %d", n, i);
		cr_assert(pt_same(mix_buf[1], n, 3 + (unsigned)k + 100), "size %zu from the local peer", n);
		cr_assert(pt_same(mix_buf[3], n, 4 + (unsigned)k + 100), "size %zu from the UDP peer", n);
	}
	cr_assert_gt(pt_stat(a.ep, "ep.tx_local"), 0);
	cr_assert_lt(pt_stat(a.ep, "ep.tx_local"), pt_stat(a.ep, "ep.tx_dgrams"),
		     "some datagrams by UDP");
	cr_assert_eq(child_end(&loc, 20000), 0);
	cr_assert_eq(child_end(&far, 20000), 0);
	side_close(&a);
}

/* a child that meets the parent, answers one message, then waits to be killed */
static int doomed_child(struct child *c)
{
	struct fi_cq_tagged_entry e;
	struct side s;
	char buf[8];
	char go;

	if (side_open(&s) || side_meet(&s, c->to_parent[1], c->to_child[0]))
		return 2;
	if (fi_trecv(s.ep, buf, sizeof(buf), NULL, s.peer, 1, 0, NULL) || side_wait(&s, &e, NULL, 20000) != 1 ||
	    fi_tsend(s.ep, "alive", 6, NULL, s.peer, 2, NULL) || side_wait(&s, &e, NULL, 20000) != 1)
		return 3;
	(void)put(c->to_parent[1], "r", 1);
	(void)get(c->to_child[0], &go, 1);	/* never comes: killed first */
	return 0;
}

/*
 * A local peer killed (SIGKILL: no close, its segment left behind): sends to
 * it fail with FI_EHOSTUNREACH within the peer timeout, and the endpoint
 * goes on with another local peer.
 */
Test(local_peers, a_killed_local_peer_fails_sends_in_bounded_time, .timeout = 60)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct child c, other;
	struct side a;
	char buf[8] = "";
	long t0, took;
	int status;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "400", 1);
	child_fork(&c);
	if (c.pid == 0)
		_exit(doomed_child(&c));
	child_fork(&other);
	if (other.pid == 0) {
		child_forget(&c);
		_exit(mix_child(&other, "1", 5));
	}
	cr_assert_eq(side_open(&a), 0);
	cr_assert_eq(side_meet(&a, c.to_child[1], c.to_parent[0]), 0);
	cr_assert_eq(fi_trecv(a.ep, buf, sizeof(buf), NULL, a.peer, 2, 0, NULL), 0);
	cr_assert_eq(fi_tsend(a.ep, "hi", 3, NULL, a.peer, 1, NULL), 0);
	cr_assert_eq(side_wait(&a, &e, NULL, 20000), 1);
	cr_assert_eq(side_wait(&a, &e, NULL, 20000), 1);
	cr_assert_str_eq(buf, "alive");
	cr_assert(get(c.to_parent[0], buf, 1), "the child is ready");
	kill(c.pid, SIGKILL);
	cr_assert_eq(waitpid(c.pid, &status, 0), c.pid);
	t0 = pt_now_ms();
	for (int i = 0; i < 4; i++)
		cr_assert_eq(fi_tsend(a.ep, mix_buf[0], 100000, NULL, a.peer, 9, (void *)(intptr_t)(i + 1)), 0);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(side_wait(&a, &e, &err, 10000), -FI_EAVAIL, "send %d fails", i);
		cr_assert_eq(err.err, FI_EHOSTUNREACH);
	}
	took = pt_now_ms() - t0;
	cr_assert_lt(took, 5000, "failed within a bound of the 400 ms peer timeout (%ld ms)", took);
	/* another local peer is untouched */
	cr_assert_eq(side_meet(&a, other.to_child[1], other.to_parent[0]), 0);
	cr_assert_eq(side_exchange(&a, 5, true), 0);
	cr_assert_eq(child_end(&other, 20000), 0);
	close(c.to_child[1]);
	close(c.to_parent[0]);
	side_close(&a);
}

/* a child that sends one message when told to */
static int late_sender(struct child *c)
{
	struct fi_cq_tagged_entry e;
	struct side s;
	uint64_t bells = 0;
	struct fi_braid_stat_ops *ops = NULL;
	char go;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	if (side_open(&s) || side_meet(&s, c->to_parent[1], c->to_child[0]))
		return 2;
	for (int round = 0; round < 2; round++) {
		if (!get(c->to_child[0], &go, 1))
			return 3;
		if (fi_tsend(s.ep, "wake", 5, NULL, s.peer, 1, NULL) || side_wait(&s, &e, NULL, 20000) != 1)
			return 4;
	}
	if (fi_open_ops(&s.ep->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL) ||
	    ops->value(&s.ep->fid, "ep.local_doorbells", &bells) || !bells)
		return 5;
	(void)get(c->to_child[0], &go, 1);
	side_close(&s);
	return 0;
}

/*
 * A receiver asleep in fi_cq_sread (no progress thread, no timer due: only
 * the doorbell can wake it), then one asleep in poll(2) on the CQ's fd after
 * fi_trywait: a local peer's message wakes each.
 */
Test(local_peers, a_sleeping_receiver_is_woken, .timeout = 60)
{
	struct fi_cq_tagged_entry e;
	struct pollfd pfd;
	struct child c;
	struct side a;
	char buf[8] = "";
	struct fid *fids[1];
	int fd = -1;
	long t0;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	child_fork(&c);
	if (c.pid == 0)
		_exit(late_sender(&c));
	cr_assert_eq(side_open(&a), 0);
	cr_assert_eq(side_meet(&a, c.to_child[1], c.to_parent[0]), 0);
	/* settle: what the meeting left (the child's first contact) is read */
	(void)fi_cq_read(a.cq, NULL, 0);
	cr_assert_eq(fi_trecv(a.ep, buf, sizeof(buf), NULL, a.peer, 1, 0, NULL), 0);
	cr_assert(put(c.to_child[1], "g", 1));
	t0 = pt_now_ms();
	cr_assert_eq(fi_cq_sread(a.cq, &e, 1, NULL, 10000), 1, "woken in fi_cq_sread");
	cr_assert_lt(pt_now_ms() - t0, 5000);
	cr_assert_str_eq(buf, "wake");

	memset(buf, 0, sizeof(buf));
	cr_assert_eq(fi_trecv(a.ep, buf, sizeof(buf), NULL, a.peer, 1, 0, NULL), 0);
	cr_assert_eq(fi_control(&a.cq->fid, FI_GETWAIT, &fd), 0);
	fids[0] = &a.cq->fid;
	while (fi_trywait(a.fabric, fids, 1) == -FI_EAGAIN)
		(void)fi_cq_read(a.cq, NULL, 0);
	cr_assert(put(c.to_child[1], "g", 1));
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 10000), 1, "the CQ's fd woke after fi_trywait");
	cr_assert_eq(wait_cq(a.cq, NULL, &e, NULL, 10000), 1);
	cr_assert_str_eq(buf, "wake");
	cr_assert_eq(child_end(&c, 20000), 0, "the sender rang a doorbell");
	side_close(&a);
}

/*
 * A receiver that does not read for a while: the sender's ring fills, its
 * sends are held back (its RTO may still resend what the absent receiver
 * did not acknowledge), and when the receiver reads again every byte lands.
 */
Test(local_peers, a_full_ring_holds_the_sender_back, .timeout = 60)
{
	static uint8_t src[8 << 20], dst[8 << 20];
	struct fi_cq_tagged_entry e;
	struct side a, b;
	long until;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	setenv("FI_BRAID_LEND_MIN", "0", 1);	/* payloads copied into the ring: it fills */
	pair_open(&a, &b);
	pt_fill(src, sizeof(src), 9);
	cr_assert_eq(fi_trecv(b.ep, dst, sizeof(dst), NULL, FI_ADDR_UNSPEC, 3, 0, NULL), 0);
	cr_assert_eq(fi_tsend(a.ep, src, sizeof(src), NULL, a.peer, 3, NULL), 0);
	/* both run until the data flows (a large message starts with its first
	 * window), then only the sender, for 2 ms: less than the 5 ms a full
	 * ring is waited for */
	until = pt_now_ms() + 10000;
	while (pt_stat(b.ep, "ep.rx_local") < 4 && pt_now_ms() < until) {
		(void)fi_cq_read(a.cq, NULL, 0);
		(void)fi_cq_read(b.cq, NULL, 0);
	}
	until = pt_now_ms() + 2;
	while (pt_now_ms() < until)
		(void)fi_cq_read(a.cq, NULL, 0);
	cr_assert_gt(pt_stat(a.ep, "ep.local_held"), 0, "the ring filled");
	cr_assert_eq(wait_cq(b.cq, a.cq, &e, NULL, 20000), 1);
	cr_assert_eq(wait_cq(a.cq, b.cq, &e, NULL, 20000), 1);
	cr_assert(pt_same(dst, sizeof(dst), 9), "every byte");
	/* (not judged: local_dropped, which a host that takes this thread away
	 * for 5 ms while the ring is full makes non-zero: the datagrams are then
	 * resent, and every byte still arrives) */
	side_close(&a);
	side_close(&b);
}

/* this process may no longer read others' memory it has no ptrace right to (root: CAP_SYS_PTRACE dropped) */
static int drop_ptrace(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	return (int)syscall(SYS_capset, &h, d);
}

/* a child that may not read the parent: receives one 1 MiB message, checks it */
static int unread_child(struct child *c)
{
	struct fi_cq_tagged_entry e;
	struct side s;
	uint64_t dropped = 0;
	struct fi_braid_stat_ops *ops = NULL;
	char go;

	if (drop_ptrace())
		return 2;
	if (side_open(&s) || side_meet(&s, c->to_parent[1], c->to_child[0]))
		return 3;
	if (fi_trecv(s.ep, mix_buf[1], 1 << 20, NULL, s.peer, 1, 0, NULL) ||
	    side_wait(&s, &e, NULL, 20000) != 1)
		return 4;
	if (!pt_same(mix_buf[1], 1 << 20, 77))
		return 5;
	if (fi_open_ops(&s.ep->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL) ||
	    ops->value(&s.ep->fid, "ep.local_dropped", &dropped) || !dropped)
		return 6;	/* the lent payload it could not read */
	(void)put(c->to_parent[1], "d", 1);
	(void)get(c->to_child[0], &go, 1);
	side_close(&s);
	return 0;
}

/*
 * A receiver that may not read the sender's memory (the sender is not
 * dumpable and the receiver lacks CAP_SYS_PTRACE: a container without
 * ptrace rights): the lent payload it cannot read is lost, the sender
 * resends it copied, and the message arrives whole.
 */
Test(local_peers, a_receiver_that_may_not_read_the_sender_still_gets_every_byte, .timeout = 60)
{
	struct fi_cq_tagged_entry e;
	struct child c;
	struct side a;
	char done;

	child_fork(&c);
	if (c.pid == 0)
		_exit(unread_child(&c));
	cr_assert_eq(prctl(PR_SET_DUMPABLE, 0), 0);
	cr_assert_eq(side_open(&a), 0);
	cr_assert_eq(side_meet(&a, c.to_child[1], c.to_parent[0]), 0);
	pt_fill(mix_buf[0], 1 << 20, 77);
	cr_assert_eq(fi_tsend(a.ep, mix_buf[0], 1 << 20, NULL, a.peer, 1, NULL), 0);
	cr_assert_eq(side_wait(&a, &e, NULL, 20000), 1, "delivered");
	cr_assert(get(c.to_parent[0], &done, 1), "the child checked the message");
	cr_assert_gt(pt_stat(a.ep, "ep.tx_lent"), 0, "the first copies were lent");
	cr_assert_eq(child_end(&c, 20000), 0, "the child");
	side_close(&a);
}

/* a child at port @service: takes one message, answers it, says so, then waits (or is killed) */
static int restarted_child(struct child *c, const char *service, const char *answer)
{
	struct fi_cq_tagged_entry e;
	struct side s;
	char buf[16];
	char go;

	if (side_open_at(&s, service) || side_meet(&s, c->to_parent[1], c->to_child[0]))
		return 2;
	if (fi_trecv(s.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 1, 0, NULL) ||
	    side_wait(&s, &e, NULL, 20000) != 1 ||
	    fi_tsend(s.ep, answer, strlen(answer) + 1, NULL, s.peer, 2, NULL) ||
	    side_wait(&s, &e, NULL, 20000) != 1)
		return 3;
	(void)put(c->to_parent[1], "r", 1);
	(void)get(c->to_child[0], &go, 1);
	side_close(&s);
	return 0;
}

/*
 * A local peer killed (its segment left behind) and another process's
 * endpoint at its address: the same fi_addr_t reaches the new one, through
 * its ring, well within the peer timeout (a send that still went to the
 * incarnation that died fails FI_ECONNRESET, as between hosts).
 */
Test(local_peers, a_killed_local_peers_address_taken_again_is_reached, .timeout = 60)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct child first, second;
	char service[8], buf[16] = "";
	struct side a;
	fi_addr_t peer;
	int status;
	ssize_t ret;

	snprintf(service, sizeof(service), "%u", pt_free_udp_port());
	child_fork(&first);
	if (first.pid == 0)
		_exit(restarted_child(&first, service, "first"));
	cr_assert_eq(side_open(&a), 0);
	cr_assert_eq(side_meet(&a, first.to_child[1], first.to_parent[0]), 0);
	peer = a.peer;
	cr_assert_eq(fi_trecv(a.ep, buf, sizeof(buf), NULL, peer, 2, 0, NULL), 0);
	cr_assert_eq(fi_tsend(a.ep, "hi", 3, NULL, peer, 1, NULL), 0);
	cr_assert_eq(side_wait(&a, &e, NULL, 20000), 1);
	cr_assert_eq(side_wait(&a, &e, NULL, 20000), 1);
	cr_assert_str_eq(buf, "first");
	cr_assert(get(first.to_parent[0], buf, 1));
	kill(first.pid, SIGKILL);
	cr_assert_eq(waitpid(first.pid, &status, 0), first.pid);
	close(first.to_child[1]);
	close(first.to_parent[0]);

	child_fork(&second);
	if (second.pid == 0)
		_exit(restarted_child(&second, service, "second"));
	cr_assert_eq(side_meet(&a, second.to_child[1], second.to_parent[0]), 0);
	cr_assert_eq(fi_trecv(a.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 2, 0, (void *)2), 0);
	/* the first send may still go to the incarnation that died: it fails
	 * FI_ECONNRESET once the new one answers (fi_braid(7)), and is sent again */
	cr_assert_eq(fi_tsend(a.ep, "hi", 3, NULL, peer, 1, (void *)1), 0);
	for (int got = 0, resent = 0; got < 2;) {
		ret = side_wait(&a, &e, &err, 20000);
		if (ret == -FI_EAVAIL && err.err == FI_ECONNRESET && err.op_context == (void *)1 &&
		    !resent++) {
			cr_assert_eq(fi_tsend(a.ep, "hi", 3, NULL, peer, 1, (void *)1), 0);
			continue;
		}
		cr_assert_eq(ret, 1, "completion %d: %zd (err %d)", got, ret,
			     ret == -FI_EAVAIL ? err.err : 0);
		got++;
	}
	cr_assert_str_eq(buf, "second");
	cr_assert(get(second.to_parent[0], buf, 1));
	cr_assert_gt(pt_stat(a.ep, "ep.tx_local"), 0);
	cr_assert_eq(child_end(&second, 20000), 0);
	side_close(&a);
}

/* ---- messages handed whole (fi_braid(7), LOCAL PEERS; protocol.md §7.4) ---- */

#define WHOLE_N		8
#define WHOLE_BIG	(256 << 10)
static uint8_t whole_src[WHOLE_N][WHOLE_BIG], whole_dst[WHOLE_N][WHOLE_BIG];

/* @n completions of @s's CQ (reading @also meanwhile), each a success; the last in *@e */
static void wait_n(struct side *s, struct side *also, int n, struct fi_cq_tagged_entry *e)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(wait_cq(s->cq, also ? also->cq : NULL, e, NULL, 20000), 1,
			     "completion %d of %d", i, n);
}

/*
 * Small messages go whole only when nothing sent before is on its way:
 * behind a large one (packets not acknowledged yet) they go by the engine,
 * and the receiver, its receives all of one tag, matches every message in
 * the order it was sent. Once all is acknowledged, small ones go whole
 * again; one that asks for delivery complete never does.
 */
Test(local_peers, small_messages_go_whole_and_keep_their_order_behind_large_ones, .timeout = 60)
{
	static const size_t sizes[WHOLE_N] = { 8, WHOLE_BIG, 16, 0, 4096, 65536, 8192, 1 };
	struct fi_cq_tagged_entry e;
	struct side a, b;
	int i;

	/* (no progress thread: nothing is acknowledged but when the test reads) */
	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	pair_open(&a, &b);
	for (i = 0; i < WHOLE_N; i++) {
		pt_fill(whole_src[i], sizes[i], 500 + (unsigned)i);
		memset(whole_dst[i], 0xee, WHOLE_BIG);
		cr_assert_eq(fi_trecv(b.ep, whole_dst[i], WHOLE_BIG, NULL, FI_ADDR_UNSPEC, 3, 0,
				      (void *)(uintptr_t)(i + 1)), 0);
	}
	/* all sent before either side reads a CQ: nothing is acknowledged meanwhile */
	for (i = 0; i < WHOLE_N; i++)
		cr_assert_eq(fi_tsend(a.ep, whole_src[i], sizes[i], NULL, a.peer, 3, NULL), 0);
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local_msgs"), 1, "the first alone went whole");
	for (i = 0; i < WHOLE_N; i++) {
		cr_assert_eq(wait_cq(b.cq, a.cq, &e, NULL, 20000), 1, "receive %d", i);
		cr_assert_eq(e.op_context, (void *)(uintptr_t)(i + 1), "in order");
		cr_assert_eq(e.len, sizes[i], "message %d", i);
		cr_assert(pt_same(whole_dst[i], sizes[i], 500 + (unsigned)i), "message %d intact", i);
	}
	wait_n(&a, &b, WHOLE_N, &e);
	cr_assert_eq(pt_stat(b.ep, "ep.rx_local_msgs"), 1);

	/* all acknowledged: small ones go whole again */
	for (i = 0; i < 4; i++)
		cr_assert_eq(fi_trecv(b.ep, whole_dst[i], WHOLE_BIG, NULL, FI_ADDR_UNSPEC, 4, 0, NULL),
			     0);
	for (i = 0; i < 3; i++)
		cr_assert_eq(fi_tsend(a.ep, whole_src[i + 2], sizes[i + 2], NULL, a.peer, 4, NULL), 0);
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local_msgs"), 4);
	/* delivery complete: by the engine, which answers when it is placed */
	{
		struct iovec iov = { whole_src[0], 8 };
		struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = a.peer,
					   .tag = 4 };

		cr_assert_eq(fi_tsendmsg(a.ep, &m, FI_DELIVERY_COMPLETE | FI_COMPLETION), 0);
	}
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local_msgs"), 4, "not the delivery-complete one");
	wait_n(&b, &a, 4, &e);
	wait_n(&a, &b, 4, &e);
	cr_assert(pt_same(whole_dst[3], 8, 500), "the delivery-complete one intact");
	side_close(&a);
	side_close(&b);
}

/*
 * Messages handed whole before any receive is posted wait as unexpected
 * ones; receives posted later by tag, in another order, take them intact,
 * one too short truncated (FI_ETRUNC, the rest counted in olen).
 */
Test(local_peers, messages_handed_whole_wait_unexpected_and_truncate, .timeout = 60)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct side a, b;
	int i;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);	/* (b reads its ring only when the test does) */
	pair_open(&a, &b);
	for (i = 0; i < 16; i++) {
		pt_fill(whole_src[i % WHOLE_N] + (i / WHOLE_N) * 8192, (size_t)i * 256,
			700 + (unsigned)i);
		cr_assert_eq(fi_tsend(a.ep, whole_src[i % WHOLE_N] + (i / WHOLE_N) * 8192,
				      (size_t)i * 256, NULL, a.peer, (uint64_t)i, NULL), 0);
	}
	wait_n(&a, NULL, 16, &e);	/* (complete with no call of b's) */
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local_msgs"), 16);
	for (i = 15; i >= 0; i--) {
		size_t cap = i == 9 ? 100 : 4096;

		memset(whole_dst[0], 0xee, 4097);
		cr_assert_eq(fi_trecv(b.ep, whole_dst[0], cap, NULL, FI_ADDR_UNSPEC, (uint64_t)i, 0,
				      NULL), 0);
		if (i == 9) {
			cr_assert_eq(wait_cq(b.cq, NULL, &e, &err, 20000), -FI_EAVAIL);
			cr_assert_eq(err.err, FI_ETRUNC);
			cr_assert_eq(err.olen, 9 * 256 - 100);
			cr_assert_eq(err.len, 100);
			cr_assert_eq(pt_mismatch(whole_dst[0], 100, 709), 100, "the first bytes");
			cr_assert_eq(whole_dst[0][100], 0xee, "nothing past the buffer");
			continue;
		}
		cr_assert_eq(wait_cq(b.cq, NULL, &e, NULL, 20000), 1, "tag %d", i);
		cr_assert_eq(e.tag, (uint64_t)i);
		cr_assert_eq(e.len, (size_t)i * 256);
		cr_assert(pt_same(whole_dst[0], (size_t)i * 256, 700 + (unsigned)i), "tag %d intact", i);
	}
	cr_assert_eq(pt_stat(b.ep, "ep.rx_local_msgs"), 16);
	side_close(&a);
	side_close(&b);
}

/*
 * A receiver whose staging for unexpected bytes runs out still keeps what
 * was handed to it, and turns its local peers to the engine (which waits
 * for room) until its application takes the messages: every message
 * arrives, in order; then small ones go whole again.
 */
Test(local_peers, a_receiver_out_of_staging_turns_its_peers_to_the_engine, .timeout = 60)
{
	struct fi_cq_tagged_entry e;
	struct side a, b;
	int i;

	setenv("FI_BRAID_UNEXP_BYTES", "65536", 1);
	/* b takes what is in its ring only when the test reads its CQ (no progress
	 * thread): the 64 are all handed whole before b's staging runs out */
	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	pair_open(&a, &b);
	for (i = 0; i < 64; i++) {
		pt_fill(whole_src[0] + (size_t)i * 4096, 4096, 900 + (unsigned)i);
		cr_assert_eq(fi_send(a.ep, whole_src[0] + (size_t)i * 4096, 4096, NULL, a.peer, NULL),
			     0);
	}
	wait_n(&a, NULL, 64, &e);
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local_msgs"), 64);
	/* b takes them (beyond its staging), then says so to its peers */
	cr_assert_eq(fi_cq_read(b.cq, &e, 1), -FI_EAGAIN);
	cr_assert_eq(fi_cq_read(b.cq, &e, 1), -FI_EAGAIN);
	cr_assert_eq(pt_stat(b.ep, "ep.rx_local_msgs"), 64);
	for (i = 64; i < 80; i++) {
		pt_fill(whole_src[1] + (size_t)(i - 64) * 4096, 4096, 900 + (unsigned)i);
		cr_assert_eq(fi_send(a.ep, whole_src[1] + (size_t)(i - 64) * 4096, 4096, NULL, a.peer,
				     NULL), 0);
	}
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local_msgs"), 64, "the rest by the engine");
	for (i = 0; i < 80; i++) {
		cr_assert_eq(fi_recv(b.ep, whole_dst[0], 4096, NULL, FI_ADDR_UNSPEC, NULL), 0);
		cr_assert_eq(wait_cq(b.cq, a.cq, &e, NULL, 20000), 1, "message %d", i);
		cr_assert_eq(e.len, 4096);
		cr_assert(pt_same(whole_dst[0], 4096, 900 + (unsigned)i), "message %d, in order", i);
	}
	wait_n(&a, &b, 16, &e);
	/* taken: b's next look lets its peers hand it messages whole again */
	cr_assert_eq(fi_cq_read(b.cq, &e, 1), -FI_EAGAIN);
	cr_assert_eq(fi_recv(b.ep, whole_dst[0], 4096, NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_send(a.ep, whole_src[0], 4096, NULL, a.peer, NULL), 0);
	cr_assert_eq(pt_stat(a.ep, "ep.tx_local_msgs"), 65);
	wait_n(&b, &a, 1, &e);
	wait_n(&a, &b, 1, &e);
	side_close(&a);
	side_close(&b);
}
