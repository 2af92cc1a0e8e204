/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rxm.c: ofi_rxm over braid's RoCEv2 RC ("braid;ofi_rxm"): what rxm gets from braid's MSG endpoints when a peer is lost. */
#include "prov_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <rdma/fi_tagged.h>

/* An RDM endpoint of braid;ofi_rxm on 127.0.0.1, its CQ and AV. */
struct rxm_end {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
};

static void rxm_open(struct rxm_end *e)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .size = 1024 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int ret;

	cr_assert_not_null(hints);
	hints->fabric_attr->prov_name = strdup("braid;ofi_rxm");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &e->info);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo(braid;ofi_rxm) = %d (%s)", ret, fi_strerror(-ret));
	cr_assert_str_eq(e->info->fabric_attr->prov_name, "braid;ofi_rxm",
			 "the layered provider, not %s", e->info->fabric_attr->prov_name);
	cr_assert_eq(fi_fabric(e->info->fabric_attr, &e->fabric, NULL), 0);
	cr_assert_eq(fi_domain(e->fabric, e->info, &e->domain, NULL), 0);
	cr_assert_eq(fi_av_open(e->domain, &av_attr, &e->av, NULL), 0);
	cr_assert_eq(fi_cq_open(e->domain, &cq_attr, &e->cq, NULL), 0);
	cr_assert_eq(fi_endpoint(e->domain, e->info, &e->ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->av->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(e->ep), 0);
}

/* post with @call until it is not -FI_EAGAIN (rxm connects on first use), progressing @cq */
#define RXM_POST(cq, call) ({						\
	ssize_t r_; long t_ = pt_now_ms();				\
	while ((r_ = (call)) == -FI_EAGAIN && pt_now_ms() - t_ < 5000)	\
		(void)fi_cq_read((cq), NULL, 0);			\
	r_; })

/* The peer: receives and answers one message, then dies when told (SIGKILL: no goodbye). */
static void rxm_peer(int to_parent, int from_parent)
{
	static struct fi_context ctx[64];
	static char rx[64][64];
	struct rxm_end e;
	struct fi_cq_data_entry c;
	uint8_t name[64];
	size_t len = sizeof(name);
	fi_addr_t parent;
	char go;
	int i;

	rxm_open(&e);
	cr_assert_eq(fi_getname(&e.ep->fid, name, &len), 0);
	if (write(to_parent, &len, sizeof(len)) != sizeof(len) || write(to_parent, name, len) != (ssize_t)len)
		_exit(2);
	len = 0;
	if (read(from_parent, &len, sizeof(len)) != sizeof(len) || read(from_parent, name, len) != (ssize_t)len)
		_exit(3);
	if (fi_av_insert(e.av, name, 1, &parent, 0, NULL) != 1)
		_exit(4);
	fcntl(from_parent, F_SETFL, O_NONBLOCK);
	for (i = 0; i < 64; i++)
		(void)fi_recv(e.ep, rx[i], sizeof(rx[i]), NULL, FI_ADDR_UNSPEC, &ctx[i]);
	for (;;) {
		ssize_t n;

		if (fi_cq_read(e.cq, &c, 1) == 1 && (c.flags & FI_RECV))
			(void)RXM_POST(e.cq, fi_inject(e.ep, "pong", 5, parent));
		n = read(from_parent, &go, 1);
		if (n == 1 || n == 0)	/* told to go, or the parent is gone */
			break;
	}
	kill(getpid(), SIGKILL);
}

/*
 * The peer of a connection dies while small messages are in flight: rxm
 * sends those with fi_inject on braid's MSG endpoint, which has no context
 * to report. The QP's retries run out; braid must give rxm error entries it
 * can read (a NULL op_context is taken for rxm's own buffer: SIGSEGV in
 * rxm_handle_comp_error), and the application's send fails with an error
 * completion in bounded time, the process alive.
 */
Test(rxm, a_lost_peer_fails_sends_with_errors_rxm_can_read, .timeout = 60)
{
	static struct fi_context sctx[8], rctx;
	static char pong[64];
	struct rxm_end e;
	struct fi_cq_data_entry c;
	struct fi_cq_err_entry err = { 0 };
	uint8_t name[64];
	size_t len = sizeof(name);
	int up[2], down[2], status, i, errors = 0;
	fi_addr_t peer;
	long start;
	ssize_t ret;
	pid_t pid;

	setenv("FI_BRAID_RC_TIMEOUT", "12", 1);	/* 16.8 ms */
	setenv("FI_BRAID_RC_RETRY", "2", 1);
	cr_assert_eq(pipe(up), 0);
	cr_assert_eq(pipe(down), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		rxm_peer(up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	rxm_open(&e);
	cr_assert_eq(read(up[0], &len, sizeof(len)), sizeof(len));
	cr_assert_eq(read(up[0], name, len), (ssize_t)len);
	cr_assert_eq(fi_av_insert(e.av, name, 1, &peer, 0, NULL), 1);
	len = sizeof(name);
	cr_assert_eq(fi_getname(&e.ep->fid, name, &len), 0);
	cr_assert_eq(write(down[1], &len, sizeof(len)), sizeof(len));
	cr_assert_eq(write(down[1], name, len), (ssize_t)len);

	/* the connection works: ping, pong */
	cr_assert_eq(fi_recv(e.ep, pong, sizeof(pong), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(RXM_POST(e.cq, fi_send(e.ep, "ping", 5, NULL, peer, &sctx[0])), 0);
	start = pt_now_ms();
	for (i = 0; i < 2 && pt_now_ms() - start < 5000;) {
		ret = fi_cq_read(e.cq, &c, 1);
		cr_assert(ret == 1 || ret == -FI_EAGAIN, "fi_cq_read = %zd", ret);
		if (ret == 1)
			i++;
	}
	cr_assert_eq(i, 2, "the send and the pong completed");
	cr_assert_str_eq(pong, "pong");

	/* the peer dies; small messages (rxm injects them) and a send go nowhere */
	cr_assert_eq(write(down[1], "x", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status));
	for (i = 0; i < 4; i++)
		cr_assert_eq(fi_inject(e.ep, "lost", 5, peer), 0);
	ret = RXM_POST(e.cq, fi_send(e.ep, "lost too", 9, NULL, peer, &sctx[1]));
	cr_assert_eq(ret, 0, "fi_send = %zd", ret);
	start = pt_now_ms();
	while (pt_now_ms() - start < 10000) {
		ret = fi_cq_read(e.cq, &c, 1);
		if (ret == -FI_EAVAIL) {
			cr_assert_eq(fi_cq_readerr(e.cq, &err, 0), 1);
			errors++;
			if (err.op_context == &sctx[1])
				break;
			continue;
		}
		cr_assert(ret == -FI_EAGAIN, "fi_cq_read = %zd: the send cannot succeed", ret);
	}
	cr_assert_eq(err.op_context, &sctx[1], "the send failed with an error completion");
	cr_assert(err.err == FI_ETIMEDOUT || err.err == FI_ECANCELED, "error %d (%s)", err.err,
		  fi_strerror(err.err));
	cr_assert_lt(pt_now_ms() - start, 5000, "in bounded time");
	fi_close(&e.ep->fid);
	fi_close(&e.cq->fid);
	fi_close(&e.av->fid);
	fi_close(&e.domain->fid);
	fi_close(&e.fabric->fid);
	fi_freeinfo(e.info);
}
