/* SPDX-License-Identifier: BSD-2-Clause */
/* test_msg.c: FI_EP_MSG (RoCEv2 RC) through the public API: fi_info, the connection handshake, messages, RMA, refusal, time-outs and shutdown. */
#include "prov_test.h"
#include "msg_pair.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include <rdma/fi_rma.h>

Test(fi_getinfo, msg_entry_is_rc_with_true_attributes)
{
	struct fi_info *info = msg_info(), *hints, *none = NULL;

	cr_assert(info->caps & FI_MSG);
	cr_assert(info->caps & FI_RMA);
	cr_assert(info->mode & FI_RX_CQ_DATA);
	cr_assert_eq(info->domain_attr->mr_key_size, 4, "RETH R_Key is 32 bits");
	cr_assert_eq(info->domain_attr->cq_data_size, 4, "ImmDt is 32 bits");
	cr_assert_eq(info->ep_attr->max_msg_size, 1ULL << 30);
	cr_assert_eq(info->tx_attr->rma_iov_limit, 1);
	cr_assert(info->tx_attr->msg_order & FI_ORDER_SAS);
	/* the orders it claims hold for messages of any size (fi_endpoint(3): size 0 is none) */
	cr_assert(info->tx_attr->msg_order & FI_ORDER_RAW);
	cr_assert_eq(info->ep_attr->max_order_raw_size, info->ep_attr->max_msg_size);
	cr_assert(info->tx_attr->msg_order & FI_ORDER_WAW);
	cr_assert_eq(info->ep_attr->max_order_waw_size, info->ep_attr->max_msg_size);
	cr_assert_eq(info->tx_attr->msg_order & FI_ORDER_WAR, 0);
	cr_assert_eq(info->ep_attr->max_order_war_size, 0);
	fi_freeinfo(info);
	/* hints asking for RAW up to a size get the entry; WAR of any size does not */
	hints = pt_hints(FI_EP_MSG);
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->ep_attr->max_order_raw_size = 4096;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &none), 0);
	fi_freeinfo(none);
	none = NULL;
	hints->ep_attr->max_order_war_size = 1;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &none), -FI_ENODATA);
	fi_freeinfo(hints);
	/*
	 * RMA needs FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY (or
	 * FI_MR_BASIC, echoed): an application without FI_MR_PROV_KEY that asks
	 * for RMA gets no MSG entry; one that asks for nothing gets it without
	 * RMA (sends and receives need no MR mode), and never a mode bit it
	 * did not offer.
	 */
	hints = pt_hints(FI_EP_MSG);
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &none), -FI_ENODATA);
	hints->caps = 0;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &none), 0);
	cr_assert_eq(none->caps & (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE), 0);
	cr_assert(none->caps & FI_MSG);
	cr_assert_eq(none->domain_attr->mr_mode, 0);
	fi_freeinfo(none);
	none = NULL;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = BRAID_MR_BASIC;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &none), 0);
	cr_assert_eq(none->domain_attr->mr_mode, BRAID_MR_BASIC);
	cr_assert(none->caps & FI_RMA);
	fi_freeinfo(none);
	none = NULL;
	fi_freeinfo(hints);
	/* an application that does not support FI_RX_CQ_DATA gets an entry without it */
	info = msg_info_mode(0);
	cr_assert_eq(info->mode, 0);
	fi_freeinfo(info);
}

/*
 * Without FI_RX_CQ_DATA a WRITE with immediate completes at the target
 * without a posted receive (fi_cq(3): remote CQ data, no op_context), and
 * the receives posted stay for the sends; more of them than the receive
 * queue holds, unpolled, wait (RNR) rather than overrun the CQ.
 */
Test(fi_write, writedata_needs_no_receive_without_rx_cq_data_mode, .timeout = 60)
{
	static uint8_t target[4096], rbuf[64];
	struct fi_cq_data_entry e;
	struct fid_mr *mr;
	uint64_t key, base;
	struct mpair p;
	size_t i = 0, got = 0, done = 0, n = 3 * 1024 + 5;	/* beyond FI_BRAID_RX_SIZE (1024) */
	long deadline = pt_now_ms() + 30000;

	pair_open_mode(&p, 0);
	cr_assert_eq(p.info->mode, 0);
	pair_connect(&p, "c", "s", NULL);
	cr_assert_eq(fi_mr_reg(p.domain, target, sizeof(target), FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL), 0);
	key = fi_mr_key(mr);
	base = (uint64_t)(uintptr_t)target;
	cr_assert_eq(fi_recv(p.sep, rbuf, sizeof(rbuf), NULL, 0, rbuf), 0);
	/* post until the send queue is full (the target, unpolled, runs out of slots: RNR), then poll */
	while (got < n || done < n) {
		uint8_t v = (uint8_t)i;
		ssize_t ret = i < n ? fi_writedata(p.cep, &v, 1, NULL, 0x5000 + i, 0,
						   base + i % 4096, key, (void *)(uintptr_t)(i + 1))
				    : -FI_EAGAIN;

		if (!ret) {
			i++;
			continue;
		}
		cr_assert_eq(ret, -FI_EAGAIN, "fi_writedata %zu = %zd", i, ret);
		/* every immediate arrives once, in order, with no context */
		if (fi_cq_read(p.scq, &e, 1) == 1) {
			cr_assert_eq(e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
			cr_assert_null(e.op_context);
			cr_assert_eq(e.data, 0x5000 + got, "immediate %zu: %lu", got,
				     (unsigned long)e.data);
			got++;
		}
		if (fi_cq_read(p.ccq, &e, 1) == 1) {
			cr_assert_eq(e.op_context, (void *)(uintptr_t)(done + 1));
			done++;
		}
		cr_assert_lt(pt_now_ms(), deadline, "%zu of %zu posted, %zu arrived, %zu completed",
			     i, n, got, done);
	}
	/* the receive posted first is still there */
	cr_assert_eq(fi_send(p.cep, "hello", 6, NULL, 0, NULL), 0);
	cr_assert_eq(cq_one(p.scq, p.ccq, &e), 1);
	cr_assert_eq(e.op_context, rbuf, "the send landed in the receive posted first");
	cr_assert_str_eq((char *)rbuf, "hello");
	cr_assert_eq(fi_close(&mr->fid), 0);
	pair_close(&p);
}

Test(fi_connect, handshake_private_data_names_and_cm_data_size)
{
	struct mpair p;
	struct sockaddr_in peer, name;
	size_t len = sizeof(peer), sz = 0, szlen = sizeof(sz);

	pair_open(&p);
	cr_assert_eq(fi_getpeer(p.cep, &peer, &len), -FI_ENOTCONN);
	cr_assert_eq(fi_getopt(&p.cep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &sz, &szlen), 0);
	cr_assert_eq(sz, 256);
	pair_connect(&p, "hello server", "welcome", NULL);
	len = sizeof(peer);
	cr_assert_eq(fi_getpeer(p.cep, &peer, &len), 0);
	len = sizeof(name);
	cr_assert_eq(fi_getname(&p.sep->fid, &name, &len), 0);
	/* as an rdma_cm or TCP connection: both ends name the listener's address, though the
	 * accepting endpoint talks through a socket of its own */
	cr_assert_eq(peer.sin_port, p.listen.sin_port, "the client's peer is the address it connected to");
	cr_assert_eq(name.sin_port, p.listen.sin_port, "the accepted endpoint is named by its listener");
	/* a second connect on a connected endpoint */
	cr_assert_eq(fi_connect(p.cep, &p.listen, NULL, 0), -FI_EISCONN);
	/* private data over the limit */
	{
		struct fid_ep *ep;
		char big[300] = { 0 };

		cr_assert_eq(fi_endpoint(p.domain, p.info, &ep, NULL), 0);
		cr_assert_eq(fi_ep_bind(ep, &p.ceq->fid, 0), 0);
		cr_assert_eq(fi_ep_bind(ep, &p.ccq->fid, FI_TRANSMIT | FI_RECV), 0);
		cr_assert_eq(fi_enable(ep), 0);
		cr_assert_eq(fi_connect(ep, &p.listen, big, sizeof(big)), -FI_EINVAL);
		cr_assert_eq(fi_close(&ep->fid), 0);
	}
	pair_close(&p);
}

static uint8_t early_buf[64];

static void post_early(struct mpair *p)
{
	/* posted on the accepting endpoint before fi_accept: the QP takes it */
	cr_assert_eq(fi_recv(p->sep, early_buf, sizeof(early_buf), NULL, 0, early_buf), 0);
}

Test(fi_send, sizes_both_directions_data_checked, .timeout = 60)
{
	static uint8_t tx[1 << 20], rx[(1 << 20) + 64];
	size_t sizes[] = { 0, 1, 63, 4095, 4096, 4097, 65536, 1 << 20 };
	struct fi_cq_data_entry e;
	struct mpair p;
	size_t i;
	int dir;

	pair_open(&p);
	pair_connect(&p, "c", "s", post_early);
	/* the receive posted before accept takes the first message */
	fill(tx, 10, 99);
	cr_assert_eq(fi_send(p.cep, tx, 10, NULL, 0, tx), 0);
	cr_assert_eq(cq_one(p.scq, p.ccq, &e), 1);
	cr_assert_eq(e.op_context, early_buf);
	cr_assert_eq(e.len, 10);
	cr_assert_arr_eq(early_buf, tx, 10);
	cr_assert_eq(cq_one(p.ccq, p.scq, &e), 1);
	cr_assert_eq(e.flags, FI_MSG | FI_SEND);
	for (dir = 0; dir < 2; dir++) {
		struct fid_ep *a = dir ? p.sep : p.cep, *b = dir ? p.cep : p.sep;
		struct fid_cq *acq = dir ? p.scq : p.ccq, *bcq = dir ? p.ccq : p.scq;

		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			fill(tx, sizes[i], (unsigned)(i + 10 * dir));
			memset(rx, 0xee, sizeof(rx));
			cr_assert_eq(fi_recv(b, rx, sizeof(rx), NULL, 0, rx), 0);
			cr_assert_eq(fi_send(a, tx, sizes[i], NULL, 0, tx), 0);
			cr_assert_eq(cq_one(bcq, acq, &e), 1, "size %zu dir %d", sizes[i], dir);
			cr_assert_eq(e.op_context, rx);
			cr_assert_eq(e.flags, FI_MSG | FI_RECV);
			cr_assert_eq(e.len, sizes[i]);
			cr_assert_arr_eq(rx, tx, sizes[i], "payload of %zu bytes", sizes[i]);
			cr_assert_eq(rx[sizes[i]], 0xee, "nothing written past the message");
			cr_assert_eq(cq_one(acq, bcq, &e), 1);
			cr_assert_eq(e.op_context, tx);
		}
	}
	/* senddata: the immediate arrives as remote CQ data */
	cr_assert_eq(fi_recv(p.sep, rx, 64, NULL, 0, rx), 0);
	cr_assert_eq(fi_senddata(p.cep, tx, 8, NULL, 0xfeedbeef, 0, tx), 0);
	cr_assert_eq(cq_one(p.scq, p.ccq, &e), 1);
	cr_assert_eq(e.flags, FI_MSG | FI_RECV | FI_REMOTE_CQ_DATA);
	cr_assert_eq(e.data, 0xfeedbeef);
	cr_assert_eq(cq_one(p.ccq, p.scq, &e), 1);
	/* inject: no completion, the buffer is free at once */
	cr_assert_eq(fi_recv(p.sep, rx, 64, NULL, 0, rx), 0);
	memcpy(tx, "injected", 8);
	cr_assert_eq(fi_inject(p.cep, tx, 8, 0), 0);
	memset(tx, 0, 8);
	cr_assert_eq(cq_one(p.scq, p.ccq, &e), 1);
	cr_assert_arr_eq(rx, "injected", 8);
	cr_assert_eq(fi_inject(p.cep, tx, 4096, 0), -FI_EMSGSIZE);
	/* a receive too small: FI_ETRUNC */
	cr_assert_eq(fi_recv(p.sep, rx, 16, NULL, 0, rx), 0);
	cr_assert_eq(fi_send(p.cep, tx, 100, NULL, 0, tx), 0);
	cr_assert_eq(cq_one(p.scq, p.ccq, &e), -FI_EAVAIL);
	{
		struct fi_cq_err_entry err = cq_err(p.scq);

		cr_assert_eq(err.err, FI_ETRUNC);
		cr_assert_eq(err.olen, 84);
	}
	pair_close(&p);
}

Test(fi_write, rma_write_read_and_writedata, .timeout = 60)
{
	static uint8_t target[1 << 20], src[1 << 20], back[1 << 20];
	struct fi_cq_data_entry e;
	struct fid_mr *mr;
	uint64_t key, base;
	struct mpair p;

	pair_open(&p);
	pair_connect(&p, "c", "s", NULL);
	cr_assert_eq(fi_mr_reg(p.domain, target, sizeof(target),
			       FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);
	cr_assert_leq(key, UINT32_MAX, "R_Key fits 32 bits");
	base = (uint64_t)(uintptr_t)target;
	/* write 1 MiB, read it back into another buffer */
	fill(src, sizeof(src), 5);
	cr_assert_eq(fi_write(p.cep, src, sizeof(src), NULL, 0, base, key, src), 0);
	cr_assert_eq(cq_one(p.ccq, p.scq, &e), 1);
	cr_assert_eq(e.flags, FI_RMA | FI_WRITE);
	cr_assert_arr_eq(target, src, sizeof(src));
	memset(back, 0, sizeof(back));
	cr_assert_eq(fi_read(p.cep, back, 100000, NULL, 0, base + 7, key, back), 0);
	cr_assert_eq(cq_one(p.ccq, p.scq, &e), 1);
	cr_assert_eq(e.flags, FI_RMA | FI_READ);
	cr_assert_arr_eq(back, src + 7, 100000);
	/* writedata: data placed, and a receive completes with the immediate */
	cr_assert_eq(fi_recv(p.sep, back, 16, NULL, 0, back), 0);
	cr_assert_eq(fi_writedata(p.cep, "XYZ", 3, NULL, 0x1234, 0, base + 100, key, src), 0);
	cr_assert_eq(cq_one(p.scq, p.ccq, &e), 1);
	cr_assert(e.flags & FI_REMOTE_CQ_DATA);
	cr_assert(e.flags & FI_REMOTE_WRITE);
	cr_assert_eq(e.data, 0x1234);
	cr_assert_arr_eq(target + 100, "XYZ", 3);
	cr_assert_eq(cq_one(p.ccq, p.scq, &e), 1);
	cr_assert_eq(fi_close(&mr->fid), 0);
	pair_close(&p);
}

Test(fi_reject, refused_with_private_data)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct fi_eq_err_entry err = { 0 };
	char reason[64] = { 0 };
	struct mpair p;
	uint32_t ev;
	long deadline;
	ssize_t ret;

	pair_open(&p);
	cr_assert_eq(fi_connect(p.cep, &p.listen, "let me in", 10), 0);
	eq_expect(p.seq, FI_CONNREQ, e, sizeof(buf));
	cr_assert_eq(fi_reject(p.pep, e->info->handle, "go away", 8), 0);
	fi_freeinfo(e->info);
	deadline = pt_now_ms() + 5000;
	do {
		ret = fi_eq_sread(p.ceq, &ev, buf, sizeof(buf), 20, 0);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	cr_assert_eq(ret, -FI_EAVAIL);
	err.err_data = reason;
	err.err_data_size = sizeof(reason);
	cr_assert_eq(fi_eq_readerr(p.ceq, &err, 0), sizeof(err));
	cr_assert_eq(err.err, FI_ECONNREFUSED);
	cr_assert_eq(err.fid, &p.cep->fid);
	cr_assert_eq(err.err_data_size, 8);
	cr_assert_str_eq(reason, "go away");
	/* sending on a refused endpoint fails */
	cr_assert_eq(fi_send(p.cep, "x", 1, NULL, 0, NULL), -FI_EOPBADSTATE);
	pair_close(&p);
}

Test(fi_connect, nobody_listening_times_out)
{
	struct fi_eq_err_entry err = { 0 };
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct sockaddr_in nowhere;
	struct mpair p;
	uint32_t ev;
	long start, deadline;
	ssize_t ret;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "600", 1);
	pair_open(&p);
	nowhere = pt_sin("127.0.0.1", pt_free_udp_port());
	start = pt_now_ms();
	cr_assert_eq(fi_connect(p.cep, &nowhere, NULL, 0), 0);
	deadline = start + 5000;
	do {
		ret = fi_eq_sread(p.ceq, &ev, buf, sizeof(buf), 50, 0);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	cr_assert_eq(ret, -FI_EAVAIL, "an error event, not %zd", ret);
	cr_assert_eq(fi_eq_readerr(p.ceq, &err, 0), sizeof(err));
	cr_assert_eq(err.err, FI_ETIMEDOUT);
	/* not before the configured time (a lower bound: load only lengthens it; the
	 * wait's own 5 s limit catches a hang) */
	cr_assert_geq(pt_now_ms() - start, 500, "not before the configured time");
	pair_close(&p);
}

Test(fi_shutdown, peer_sees_shutdown_and_pending_work_is_canceled)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	static uint8_t rx[4][256];
	struct fi_cq_data_entry c;
	struct mpair p;
	int i;

	pair_open(&p);
	pair_connect(&p, "c", "s", NULL);
	/* receives posted on both sides, then the client shuts down */
	for (i = 0; i < 2; i++) {
		cr_assert_eq(fi_recv(p.cep, rx[i], 256, NULL, 0, rx[i]), 0);
		cr_assert_eq(fi_recv(p.sep, rx[2 + i], 256, NULL, 0, rx[2 + i]), 0);
	}
	cr_assert_eq(fi_shutdown(p.cep, 0), 0);
	/* fi_cm(3): canceled operations are on the CQ before fi_shutdown returns */
	for (i = 0; i < 2; i++) {
		cr_assert_eq(fi_cq_read(p.ccq, &c, 1), -FI_EAVAIL);
		cr_assert_eq(cq_err(p.ccq).err, FI_ECANCELED);
	}
	cr_assert_eq(fi_shutdown(p.cep, 0), -FI_ENOTCONN);
	cr_assert_eq(fi_send(p.cep, "x", 1, NULL, 0, NULL), -FI_EOPBADSTATE);
	eq_expect(p.seq, FI_SHUTDOWN, e, sizeof(buf));
	cr_assert_eq(e->fid, &p.sep->fid);
	/* the closing side hears the disconnect done too (rdma_cm's DISCONNECTED, tcp's FI_SHUTDOWN) */
	eq_expect(p.ceq, FI_SHUTDOWN, e, sizeof(buf));
	cr_assert_eq(e->fid, &p.cep->fid);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(cq_one(p.scq, NULL, &c), -FI_EAVAIL);
		cr_assert_eq(cq_err(p.scq).err, FI_ECANCELED);
	}
	pair_close(&p);
}

Test(fi_close, closing_a_connected_endpoint_tells_the_peer)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct mpair p;

	pair_open(&p);
	pair_connect(&p, "c", "s", NULL);
	cr_assert_eq(fi_close(&p.cep->fid), 0);
	p.cep = NULL;
	eq_expect(p.seq, FI_SHUTDOWN, e, sizeof(buf));
	pair_close(&p);
}

/*
 * A message that arrived before the peer's disconnect is read before the
 * disconnect's FI_SHUTDOWN is (the event waits for the receive completions
 * before it, fi_braid(7)): a layer that closes the connection on FI_SHUTDOWN
 * (ofi_rxm) does not lose the last message.
 */
Test(fi_shutdown, waits_for_the_receives_before_it_to_be_read, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	static char rx[64];
	struct fi_cq_data_entry c;
	uint32_t event;
	struct mpair p;
	long until;
	ssize_t ret;

	pair_open(&p);
	pair_connect(&p, "c", "s", NULL);
	cr_assert_eq(fi_recv(p.sep, rx, sizeof(rx), NULL, 0, rx), 0);
	cr_assert_eq(fi_send(p.cep, "last", 5, NULL, 0, NULL), 0);
	cr_assert_eq(cq_one(p.ccq, NULL, &c), 1, "the send completes (the server's QP took it)");
	cr_assert_eq(fi_close(&p.cep->fid), 0);
	p.cep = NULL;
	/* the EQ drives the server's QP: the message lands in its CQ, the disconnect waits */
	until = pt_now_ms() + 300;
	while (pt_now_ms() < until) {
		ret = fi_eq_read(p.seq, &event, e, sizeof(buf), 0);
		cr_assert_eq(ret, -FI_EAGAIN, "event %u before the receive was read", event);
	}
	cr_assert_eq(fi_cq_read(p.scq, &c, 1), 1);
	cr_assert(c.flags & FI_RECV);
	cr_assert_str_eq(rx, "last");
	eq_expect(p.seq, FI_SHUTDOWN, e, sizeof(buf));
	cr_assert_eq(e->fid, &p.sep->fid);
	pair_close(&p);
}

/* An RMA the target refuses: FI_EACCES at the initiator, nothing touched, and
 * the QP goes to the error state (IBTA: remote access error): later posts
 * fail and the endpoint reports FI_SHUTDOWN. */
static void rma_refused(int how)
{
	static uint8_t region[8192], local[64];
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *ev = (struct fi_eq_cm_entry *)buf;
	struct fi_cq_data_entry e;
	struct fid_mr *mr;
	uint64_t key, addr;
	struct mpair p;

	pair_open(&p);
	pair_connect(&p, "c", "s", NULL);
	cr_assert_eq(fi_mr_reg(p.domain, region, sizeof(region),
			       how == 2 ? FI_REMOTE_READ : FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 0, 0,
			       &mr, NULL), 0);
	key = fi_mr_key(mr);
	addr = (uint64_t)(uintptr_t)region;
	memset(region, 0x11, sizeof(region));
	memset(local, 0x22, sizeof(local));
	if (how == 0)		/* a key nobody registered */
		cr_assert_eq(fi_write(p.cep, local, 8, NULL, 0, addr, key ^ 0x5a5a, local), 0);
	else if (how == 1)	/* a range running past the region */
		cr_assert_eq(fi_write(p.cep, local, 64, NULL, 0, addr + sizeof(region) - 32, key,
				      local), 0);
	else			/* a write to a region registered for remote read only */
		cr_assert_eq(fi_write(p.cep, local, 8, NULL, 0, addr, key, local), 0);
	cr_assert_eq(cq_one(p.ccq, p.scq, &e), -FI_EAVAIL);
	cr_assert_eq(cq_err(p.ccq).err, FI_EACCES);
	for (size_t i = 0; i < sizeof(region); i++)
		cr_assert_eq(region[i], 0x11, "byte %zu written", i);
	eq_expect(p.ceq, FI_SHUTDOWN, ev, sizeof(buf));
	cr_assert_eq(fi_read(p.cep, local, 8, NULL, 0, addr, key, local), -FI_EOPBADSTATE);
	cr_assert_eq(fi_close(&mr->fid), 0);
	pair_close(&p);
}

Test(fi_write, wrong_key_is_refused)
{
	rma_refused(0);
}

Test(fi_write, range_past_the_region_is_refused)
{
	rma_refused(1);
}

Test(fi_write, write_to_read_only_region_is_refused)
{
	rma_refused(2);
}

/* fi_shutdown with sends in flight: each completes exactly once (delivered and
 * acknowledged, or FI_ECANCELED), all before fi_shutdown returns or at once after */
Test(fi_shutdown, with_traffic_in_flight_every_send_completes_once, .timeout = 60)
{
	static uint8_t tx[1 << 20], rx[16][1 << 20];
	struct fi_cq_data_entry c;
	struct mpair p;
	int i, ok = 0, canceled = 0, seen[16] = { 0 };

	pair_open(&p);
	pair_connect(&p, "c", "s", NULL);
	for (i = 0; i < 16; i++)
		cr_assert_eq(fi_recv(p.sep, rx[i], sizeof(rx[i]), NULL, 0, rx[i]), 0);
	for (i = 0; i < 16; i++)
		cr_assert_eq(fi_send(p.cep, tx, sizeof(tx), NULL, 0, &seen[i]), 0);
	/* 16 MiB posted; shut down before most of it can have been acknowledged */
	cr_assert_eq(fi_shutdown(p.cep, 0), 0);
	for (;;) {
		ssize_t r = fi_cq_read(p.ccq, &c, 1);

		if (r == -FI_EAGAIN)
			break;
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = cq_err(p.ccq);

			cr_assert_eq(err.err, FI_ECANCELED);
			cr_assert_geq((int *)err.op_context - seen, 0);
			seen[(int *)err.op_context - seen]++;
			canceled++;
			continue;
		}
		cr_assert_eq(r, 1);
		seen[(int *)c.op_context - seen]++;
		ok++;
	}
	cr_assert_eq(ok + canceled, 16, "%d completed, %d canceled", ok, canceled);
	for (i = 0; i < 16; i++)
		cr_assert_eq(seen[i], 1, "send %d completed %d times", i, seen[i]);
	cr_assert_gt(canceled, 0, "shutdown right after posting 16 MiB canceled nothing");
	pair_close(&p);
}

/*
 * A peer that vanishes (its process killed, as a black-holed path looks to
 * RC): the QP's retries run out after FI_BRAID_RC_RETRY + 1 local ACK
 * timeouts of FI_BRAID_RC_TIMEOUT without progress, not before, and then
 * in bounded time: the oldest send fails FI_ETIMEDOUT, the later ones
 * FI_ECANCELED (a flushed verbs QP's IBV_WC_WR_FLUSH_ERR), and the EQ says
 * FI_SHUTDOWN. The peer runs in a child process with its own domain.
 */
static void vanishing_server(int to_parent, int from_parent)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct fi_info *info = msg_info();
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct sockaddr_in sin;
	size_t len = sizeof(sin);
	static uint8_t rx[4][256];
	char go;
	int i;

	if (fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL))
		_exit(2);
	eq = pt_eq_open(fabric);
	cq = pt_cq_open(domain, FI_CQ_FORMAT_DATA, FI_WAIT_UNSPEC);
	if (fi_passive_ep(fabric, info, &pep, NULL) || fi_pep_bind(pep, &eq->fid, 0) ||
	    fi_listen(pep) || fi_getname(&pep->fid, &sin, &len))
		_exit(3);
	if (write(to_parent, &sin, sizeof(sin)) != sizeof(sin))
		_exit(4);
	eq_expect(eq, FI_CONNREQ, e, sizeof(buf));
	if (fi_endpoint(domain, e->info, &ep, NULL))
		_exit(5);
	ep_setup(NULL, ep, eq, cq);
	for (i = 0; i < 4; i++)
		(void)fi_recv(ep, rx[i], sizeof(rx[i]), NULL, 0, rx[i]);
	if (fi_accept(ep, NULL, 0))
		_exit(6);
	/* progress (ACK what arrives) until the parent says: vanish */
	for (;;) {
		struct fi_cq_data_entry c;

		(void)fi_cq_read(cq, &c, 1);
		if (read(from_parent, &go, 1) == 1)
			break;
	}
	kill(getpid(), SIGKILL);
}

Test(fi_send, a_vanished_peer_fails_the_qp_in_bounded_time, .timeout = 60)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fi_info *info;
	struct fi_cq_data_entry c;
	struct sockaddr_in srv;
	int up[2], down[2], status;
	static char msg[3][64] = { "one", "two", "three" };
	long start, took;
	ssize_t ret;
	uint32_t ev;
	pid_t pid;

	/* local ACK timeout code 12 (16.8 ms), 2 retries: fails at the 3rd timeout */
	setenv("FI_BRAID_RC_TIMEOUT", "12", 1);
	setenv("FI_BRAID_RC_RETRY", "2", 1);
	cr_assert_eq(pipe(up), 0);
	cr_assert_eq(pipe(down), 0);
	cr_assert_eq(fcntl(down[0], F_SETFL, O_NONBLOCK), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		vanishing_server(up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	cr_assert_eq(read(up[0], &srv, sizeof(srv)), sizeof(srv));

	info = msg_info();
	cr_assert_eq(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), 0);
	eq = pt_eq_open(fabric);
	cq = pt_cq_open(domain, FI_CQ_FORMAT_DATA, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_endpoint(domain, info, &ep, NULL), 0);
	ep_setup(NULL, ep, eq, cq);
	cr_assert_eq(fi_connect(ep, &srv, NULL, 0), 0);
	eq_expect(eq, FI_CONNECTED, e, sizeof(buf));
	/* the connection works: a send is acknowledged */
	cr_assert_eq(fi_send(ep, msg[0], 8, NULL, 0, msg[0]), 0);
	cr_assert_eq(cq_one(cq, NULL, &c), 1);
	cr_assert_eq(c.op_context, msg[0]);

	/* the peer vanishes; two sends go nowhere */
	cr_assert_eq(write(down[1], "x", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	start = pt_now_ms();
	cr_assert_eq(fi_send(ep, msg[1], 8, NULL, 0, msg[1]), 0);
	cr_assert_eq(fi_send(ep, msg[2], 8, NULL, 0, msg[2]), 0);
	do {
		ret = fi_cq_read(cq, &c, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() - start < 10000);
	took = pt_now_ms() - start;
	cr_assert_eq(ret, -FI_EAVAIL, "an error completion, not %zd", ret);
	{
		struct fi_cq_err_entry err = cq_err(cq);

		cr_assert_eq(err.op_context, msg[1]);
		cr_assert_eq(err.err, FI_ETIMEDOUT, "retries exhausted: %d", err.err);
		cr_assert_not_null(fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
		err = cq_err(cq);
		cr_assert_eq(err.op_context, msg[2]);
		cr_assert_eq(err.err, FI_ECANCELED);
	}
	/* 3 timeouts of 16.8 ms: not before (the 10 s loop above catches a hang) */
	cr_assert_geq(took, 3 * 16, "failed after %ld ms, before its retries ran out", took);
	ret = fi_eq_sread(eq, &ev, buf, sizeof(buf), 5000, 0);
	cr_assert_geq(ret, 0, "fi_eq_sread = %zd", ret);
	cr_assert_eq(ev, FI_SHUTDOWN, "the EQ tells the connection is gone");
	cr_assert_eq(fi_send(ep, msg[0], 8, NULL, 0, NULL), -FI_EOPBADSTATE);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&eq->fid), 0);
	cr_assert_eq(fi_close(&domain->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

/*
 * An endpoint whose application does not call in still acknowledges, as a
 * NIC does (braid's progress thread): the server reads no CQ for 1.5 s,
 * almost three times the QP's retry budget (8 x 67 ms), while the client
 * sends; every send completes, none fails. The two sides are in domains
 * of their own: in one, the client's progress reads the shared RoCEv2 port
 * for both. (With FI_BRAID_PROGRESS_US=0 the client's QP runs out of
 * retries here.)
 */
Test(fi_send, a_peer_that_does_not_call_in_still_acknowledges, .timeout = 60)
{
	static uint8_t rb[64][1024], sb[1024];
	struct fi_cq_data_entry e;
	struct mpair p;
	int i, done = 0;
	long t0;

	pair_open_domains(&p, FI_RX_CQ_DATA | FI_CONTEXT, true);
	pair_connect(&p, "c", "s", NULL);
	for (i = 0; i < 64; i++)
		cr_assert_eq(fi_recv(p.sep, rb[i], sizeof(rb[i]), NULL, 0, rb[i]), 0);
	t0 = pt_now_ms();
	for (i = 0; i < 64; i++)
		cr_assert_eq(fi_send(p.cep, sb, sizeof(sb), NULL, 0, (void *)(uintptr_t)(i + 1)), 0);
	while (pt_now_ms() - t0 < 1500) {	/* only the client calls in */
		ssize_t r = fi_cq_read(p.ccq, &e, 1);

		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(p.ccq, &err, 0);
			cr_assert_fail("send %d failed: %s", done, fi_strerror(err.err));
		}
		done += r == 1;
	}
	cr_assert_eq(done, 64, "%d of 64 sends completed while the server was away", done);
	for (i = 0; i < 64; i++)
		cr_assert_eq(cq_one(p.scq, NULL, &e), 1, "receive %d", i);
	pair_close(&p);
}

/*
 * fi_endpoint(3): an active endpoint opened with info->handle naming a
 * passive endpoint takes over its address (fabtests' fi_msg_sockets): the
 * passive endpoint was bound with fi_setname, the active one reports that
 * address and connects from it.
 */
Test(fi_endpoint, takes_over_the_address_of_the_passive_endpoint_in_handle, .timeout = 30)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct sockaddr_in bound, name;
	struct fi_info *hints, *info = NULL;
	struct fid_pep *cpep;
	struct fid_ep *ep;
	struct mpair p;
	size_t len = sizeof(bound);

	pair_open(&p);
	cr_assert_eq(fi_passive_ep(p.fabric, p.info, &cpep, NULL), 0);
	cr_assert_eq(fi_getname(&cpep->fid, &bound, &len), 0);
	hints = fi_dupinfo(p.info);
	free(hints->src_addr);
	hints->src_addr = NULL;
	hints->src_addrlen = 0;
	hints->handle = &cpep->fid;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", NULL, 0, hints, &info), 0);
	cr_assert_eq(info->handle, &cpep->fid, "the handle comes back");
	cr_assert_eq(fi_endpoint(p.domain, info, &ep, NULL), 0);
	len = sizeof(name);
	cr_assert_eq(fi_getname(&ep->fid, &name, &len), 0);
	cr_assert_eq(name.sin_port, bound.sin_port, "the passive endpoint's address");
	cr_assert_eq(fi_close(&cpep->fid), 0);
	ep_setup(&p, ep, p.ceq, p.ccq);
	cr_assert_eq(fi_connect(ep, &p.listen, "x", 2), 0);
	eq_expect(p.seq, FI_CONNREQ, e, sizeof(buf));
	fi_freeinfo(e->info);
	cr_assert_eq(fi_close(&ep->fid), 0);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	pair_close(&p);
}

/*
 * A shared receive context (fi_srx_context): the accepted endpoint takes its
 * receives from it, in the order they were posted; a send that finds it empty
 * waits (RNR) and completes once a receive is shared. fi_recv on the endpoint
 * posts to the shared context too.
 */
Test(fi_srx_context, accepted_endpoint_takes_receives_from_it, .timeout = 60)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 256], rx[3][64];
	struct fi_eq_cm_entry *e = (struct fi_eq_cm_entry *)buf;
	struct fi_rx_attr rattr = { .size = 16 };
	char msgs[3][16];
	struct fi_cq_data_entry c;
	struct fid_ep *srx = NULL;
	struct mpair p;
	int i;

	pair_open(&p);
	cr_assert_eq(fi_srx_context(p.domain, &rattr, &srx, NULL), 0);
	cr_assert_eq(fi_connect(p.cep, &p.listen, NULL, 0), 0);
	eq_expect(p.seq, FI_CONNREQ, e, sizeof(buf));
	cr_assert_eq(fi_endpoint(p.domain, e->info, &p.sep, NULL), 0);
	fi_freeinfo(e->info);
	cr_assert_eq(fi_ep_bind(p.sep, &srx->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(p.sep, &srx->fid, 0), -FI_EINVAL, "bound twice");
	ep_setup(&p, p.sep, p.seq, p.scq);
	cr_assert_eq(fi_accept(p.sep, NULL, 0), 0);
	eq_expect(p.ceq, FI_CONNECTED, e, sizeof(buf));
	eq_expect(p.seq, FI_CONNECTED, e, sizeof(buf));
	cr_assert_eq(fi_close(&srx->fid), -FI_EBUSY, "closed while an endpoint uses it");

	cr_assert_eq(fi_recv(srx, rx[0], sizeof(rx[0]), NULL, FI_ADDR_UNSPEC, (void *)100), 0);
	cr_assert_eq(fi_recv(p.sep, rx[1], sizeof(rx[1]), NULL, FI_ADDR_UNSPEC, (void *)101), 0);
	cr_assert_eq(fi_send(srx, "x", 2, NULL, 0, NULL), -FI_ENOSYS, "a receive context sends");
	for (i = 0; i < 3; i++) {
		/* a send's buffer stays the application's to keep until it completes */
		snprintf(msgs[i], sizeof(msgs[i]), "message %d", i);
		cr_assert_eq(fi_send(p.cep, msgs[i], strlen(msgs[i]) + 1, NULL, 0,
				     (void *)(uintptr_t)(i + 1)), 0);
	}
	for (i = 0; i < 2; i++) {
		char want[16];

		cr_assert_eq(cq_one(p.scq, p.ccq, &c), 1);
		cr_assert_eq(c.op_context, (void *)(uintptr_t)(100 + i), "the shared receives in order");
		cr_assert(c.flags & FI_RECV);
		snprintf(want, sizeof(want), "message %d", i);
		cr_assert_str_eq((char *)rx[i], want);
	}
	/* the third waits for a receive (RNR), then lands */
	for (i = 0; i < 20; i++) {
		cr_assert_eq(fi_cq_read(p.scq, &c, 1), -FI_EAGAIN);
		(void)fi_cq_read(p.ccq, NULL, 0);
		usleep(1000);
	}
	cr_assert_eq(fi_recv(srx, rx[2], sizeof(rx[2]), NULL, FI_ADDR_UNSPEC, (void *)102), 0);
	cr_assert_eq(cq_one(p.scq, p.ccq, &c), 1);
	cr_assert_eq(c.op_context, (void *)102);
	cr_assert_str_eq((char *)rx[2], "message 2");
	for (i = 0; i < 3; i++) {
		cr_assert_eq(cq_one(p.ccq, p.scq, &c), 1);
		cr_assert(c.flags & FI_SEND);
	}
	cr_assert_eq(fi_close(&p.sep->fid), 0);
	p.sep = NULL;
	cr_assert_eq(fi_close(&srx->fid), 0);
	pair_close(&p);
}
