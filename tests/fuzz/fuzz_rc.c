/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_rc.c: libFuzzer target for the RoCEv2 parser (core/braid_roce.c), the
 * receive port (core/braid_rc_demux.c) and the RC engine's receive side
 * (core/braid_rc*.c): every input is a config byte and a sequence of packets
 * (fuzz_common.h) from the peer, handed to the port, which has one QP
 * in RTS that has receives posted and a SEND, a WRITE with immediate, a READ
 * and an inject SEND in flight. A ctl bit of each packet has the target
 * recompute its ICRC first (so mutated packets reach the engine); without
 * it, a packet whose ICRC is wrong must be dropped. A packet reaches the QP
 * exactly when its DestQP names it; the port counts the others. After each packet the
 * timers run, the output is drained and the completions polled. Nothing may
 * crash, read or write out of bounds, leak or hit UB; payloads must land in
 * the application's buffers and every packet sent must parse, with a good ICRC.
 */
#include <stdbool.h>
#include <rdma/fi_errno.h>

#include "braid_rc.h"
#include "braid_rc_demux.h"
#include "braid_roce.h"
#include "fuzz_common.h"

#define NRECV		3
#define NSRQ		2
#define STEP_NS		2000

struct rc_fuzz {
	struct braid_rc_qp *qp;
	struct braid_rc_config cfg;
	/** @port, @route: the receive port and the QP's entry in it. */
	struct braid_rc_demux port;
	struct braid_rc_demux_entry route;
	struct fuzz_bufs app, src;
	struct fuzz_region region;
	struct fuzz_recv rx[NRECV + NSRQ];
	/** @msg, @wr, @res, @small: the buffers of the QP's work requests (rc_ops()). */
	struct iovec msg, wr, res[2], small;
	uint8_t *pkt;		/* one packet sent */
	uint64_t now;
};

static int mr_check(void *ctx, uint32_t rkey, uint64_t addr, size_t len, uint32_t access,
		    void **ptr)
{
	(void)access;
	return fuzz_region_map(ctx, rkey, addr, len, ptr) ? -FI_EACCES : 0;
}

static struct braid_rc_recv rc_recv(struct rc_fuzz *f, int i)
{
	return (struct braid_rc_recv){ .iov = f->rx[i].iov, .iov_count = (size_t)f->rx[i].cnt,
				       .context = (void *)(uintptr_t)(i + 1) };
}

/* the shared receive queue: its next free buffer */
static int srq_pull(void *ctx, const struct braid_rc_msg_start *m, struct braid_rc_recv *rr)
{
	struct rc_fuzz *f = ctx;

	(void)m;

	for (int i = NRECV; i < NRECV + NSRQ; i++) {
		if (!f->rx[i].posted) {
			f->rx[i].posted = true;
			*rr = rc_recv(f, i);
			return 0;
		}
	}
	return 1;
}

static void rc_post_recvs(struct rc_fuzz *f)
{
	for (int i = 0; i < NRECV; i++) {
		struct braid_rc_recv r = rc_recv(f, i);

		if (!f->rx[i].posted && braid_rc_post_recv(f->qp, &r) == 0)
			f->rx[i].posted = true;
	}
}

static void rc_comp(struct rc_fuzz *f, const struct braid_rc_comp *c)
{
	uintptr_t i = (uintptr_t)c->context - 1;

	if (!(c->flags & BRAID_RC_COMP_RECV) || i >= NRECV + NSRQ)
		return;
	fuzz_recv_check(&f->rx[i], &f->app, c->buf, c->len);
	f->rx[i].posted = false;
}

/* timers, then every packet to send (it must parse, with a good ICRC), then the completions */
static void rc_drain(struct rc_fuzz *f)
{
	struct braid_rc_out out[16];
	struct braid_rc_comp comps[16];
	struct braid_roce_view v;
	int n;

	if (braid_rc_next_deadline(f->qp) <= f->now)
		braid_rc_timer(f->qp, f->now);
	while ((n = braid_rc_output(f->qp, f->now, out, 16)) > 0) {
		for (struct braid_rc_out *o = out; o < out + n; o++) {
			size_t len = o->hdr_len;

			FUZZ_CHECK(o->payload_len <= f->cfg.mtu);
			memcpy(f->pkt, o->hdr, o->hdr_len);
			for (int j = 0; j < o->payload_iovcnt; j++) {
				memcpy(f->pkt + len, o->payload[j].iov_base, o->payload[j].iov_len);
				len += o->payload[j].iov_len;
			}
			memcpy(f->pkt + len, o->trailer, o->trailer_len);
			len += o->trailer_len;
			FUZZ_CHECK(braid_roce_parse(f->pkt, len, &v) == 0);
			FUZZ_CHECK(v.dest_qp == FRC_QPN_B);
			FUZZ_CHECK(braid_roce_icrc_ok(&f->cfg.addr, f->pkt, len));
		}
	}
	while ((n = braid_rc_poll(f->qp, comps, 16)) > 0)
		for (int i = 0; i < n; i++)
			rc_comp(f, &comps[i]);
}

/* the parser alone: what it accepts lies inside the packet, as the opcode says */
static void rc_parse(const uint8_t *pkt, size_t len)
{
	struct braid_roce_view v;
	uint32_t qpn;

	(void)braid_roce_opcode_name(len ? pkt[0] : 0);
	if (braid_roce_dest_qp(pkt, len, &qpn) || braid_roce_parse(pkt, len, &v))
		return;
	FUZZ_CHECK(v.dest_qp == qpn && v.hdr_len == braid_roce_hdr_len(v.opcode));
	FUZZ_CHECK(v.payload == pkt + v.hdr_len &&
		   v.hdr_len + v.payload_len + v.pad + BRAID_ROCE_ICRC_LEN == len);
}

/* a QP in RTS, its receives posted, a SEND of 600 bytes, a WRITE with immediate, a READ into
 * two buffers and an inject SEND in flight */
static void rc_start(struct rc_fuzz *f)
{
	struct braid_rc_wr wrs[] = {
		{ .op = BRAID_RC_OP_SEND, .iov = &f->msg, .iov_count = 1, .context = (void *)101 },
		{ .op = BRAID_RC_OP_WRITE, .iov = &f->wr, .iov_count = 1, .raddr = 0x1000,
		  .rkey = 0x99, .imm = 0x1234, .flags = BRAID_RC_IMM, .context = (void *)102 },
		{ .op = BRAID_RC_OP_READ, .iov = f->res, .iov_count = 2, .raddr = 0x2000,
		  .rkey = 0x99, .context = (void *)103 },
		{ .op = BRAID_RC_OP_SEND, .iov = &f->small, .iov_count = 1, .imm = 0x5678,
		  .flags = BRAID_RC_IMM | BRAID_RC_INJECT | BRAID_RC_SOLICITED,
		  .context = (void *)104 },
	};

	if (braid_rc_open(&f->cfg, &f->qp))
		abort();
	f->route = (struct braid_rc_demux_entry){ .qp = f->qp };
	if (braid_rc_demux_add(&f->port, FRC_QPN_A, &f->route))
		abort();
	for (int i = 0; i < NRECV + NSRQ; i++)
		f->rx[i].posted = false;
	rc_post_recvs(f);
	for (size_t i = 0; i < sizeof(wrs) / sizeof(wrs[0]); i++)
		braid_rc_post_send(f->qp, &wrs[i], f->now);
	rc_drain(f);
}

/* shutdown: every work request completes, flushed */
static void rc_stop(struct rc_fuzz *f)
{
	char trace[48];

	braid_rc_retry_trace(f->qp, trace, sizeof(trace));
	braid_rc_flush(f->qp);
	rc_drain(f);
	braid_rc_demux_remove(&f->port, FRC_QPN_A);
	braid_rc_close(f->qp);
}

static void rc_packet(void *state, uint8_t ctl, uint8_t *pkt, size_t len)
{
	struct rc_fuzz *f = state;
	const struct braid_rc_stats *st;
	struct braid_rc_demux_entry *e;
	uint64_t bad, rx, unknown = f->port.unknown_qp;
	uint32_t qpn;
	bool est;

	if ((ctl & FRC_CTL_RENEW) && braid_rc_error(f->qp)) {
		rc_stop(f);
		rc_start(f);
	}
	st = braid_rc_get_stats(f->qp);
	bad = st->drops[BRAID_RC_DROP_MALFORMED] + st->drops[BRAID_RC_DROP_ICRC];
	rx = st->rx_pkts;
	if ((ctl & FRC_CTL_ICRC) && len >= BRAID_ROCE_BTH_LEN + BRAID_ROCE_ICRC_LEN &&
	    len <= 0xffff - 8 - 20) {
		/* all before the ICRC as one header: past the BTH, the ICRC covers it unmasked */
		braid_roce_icrc_put(pkt + len - BRAID_ROCE_ICRC_LEN,
				    braid_roce_icrc(&f->cfg.rx_addr, pkt, len - BRAID_ROCE_ICRC_LEN,
						    NULL, 0, 0, 0));
	}
	rc_parse(pkt, len);
	e = braid_rc_demux_input(&f->port, pkt, len, false, FRC_IP_B, FRC_PORT_B, f->now, &est);
	FUZZ_CHECK(!est);	/* the QP has no connection to establish */
	if (braid_roce_dest_qp(pkt, len, &qpn) || qpn != FRC_QPN_A) {
		FUZZ_CHECK(!e && f->port.unknown_qp == unknown + 1);
		FUZZ_CHECK(st->rx_pkts == rx);
	} else {
		FUZZ_CHECK(e == &f->route && f->port.unknown_qp == unknown);
		if (!braid_roce_icrc_ok(&f->cfg.rx_addr, pkt, len))
			FUZZ_CHECK(st->drops[BRAID_RC_DROP_MALFORMED] +
				   st->drops[BRAID_RC_DROP_ICRC] == bad + 1);
	}
	if (ctl & FRC_CTL_APP) {
		struct braid_rc_wr wr = { .op = BRAID_RC_OP_SEND, .iov = &f->msg, .iov_count = 1,
					  .context = (void *)201 };

		rc_post_recvs(f);
		braid_rc_post_send(f->qp, &wr, f->now);
	}
	if ((ctl & FRC_CTL_FLUSH) == FRC_CTL_FLUSH)
		braid_rc_flush(f->qp);
	f->now = fuzz_time(f->now, ctl & FRC_CTL_JUMP, braid_rc_next_deadline(f->qp), STEP_NS);
	rc_drain(f);
}

static void rc_open(struct rc_fuzz *f, uint8_t conf)
{
	static const size_t rx_len[NRECV + NSRQ][3] = {
		{ 600 }, { 100, 500 }, { 64 }, { 600 }, { 300, 300 },
	};
	struct braid_rc_config *c = &f->cfg;

	memset(f, 0, sizeof(*f));
	f->now = 1000000;
	f->region = (struct fuzz_region){ FRC_REGION_KEY, FRC_REGION_BASE,
					  fuzz_buf(&f->app, FRC_REGION_LEN), FRC_REGION_LEN };
	for (int i = 0; i < NRECV + NSRQ; i++)
		fuzz_recv_init(&f->rx[i], &f->app, rx_len[i]);
	f->msg = (struct iovec){ fuzz_buf(&f->src, 600), 600 };
	f->wr = (struct iovec){ fuzz_buf(&f->src, 300), 300 };
	f->small = (struct iovec){ fuzz_buf(&f->src, 16), 16 };
	for (int i = 0; i < 2; i++)
		f->res[i] = (struct iovec){ fuzz_buf(&f->app, 250), 250 };
	braid_rc_config_default(c);
	c->addr = (struct braid_roce_addr){ FRC_IP_A, FRC_IP_B, FRC_PORT_A, BRAID_ROCE_UDP_PORT };
	c->rx_addr = (struct braid_roce_addr)FRC_RX_ADDR;
	c->local_qpn = FRC_QPN_A;
	c->remote_qpn = FRC_QPN_B;
	c->sq_psn = conf & FRC_CFG_PSN_WRAP ? 0xfffffe : FRC_SQ_PSN;
	c->rq_psn = conf & FRC_CFG_PSN_WRAP ? 0xfffffd : FRC_RQ_PSN;
	c->mtu = conf & FRC_CFG_MTU1024 ? 1024 : 256;
	c->max_send_wr = c->max_recv_wr = 8;
	c->max_rd_atomic = c->max_dest_rd_atomic = 2;
	c->max_msg_size = 1 << 20;
	c->timeout_ns = braid_rc_timeout_ns(10);
	c->retry_cnt = conf & FRC_CFG_NO_RETRY ? 0 : 3;
	c->rnr_retry = conf & FRC_CFG_NO_RETRY ? 0 : 2;
	c->ack_coalesce = 4;
	c->imm_no_recv = conf & FRC_CFG_IMM_NO_RECV;
	c->mr_check = mr_check;
	c->mr_ctx = &f->region;
	if (conf & FRC_CFG_SRQ) {
		c->srq_pull = srq_pull;
		c->srq_ctx = f;
	}
	f->pkt = fuzz_buf(&f->src, BRAID_ROCE_MAX_HDR + c->mtu + BRAID_ROCE_MAX_TRAILER);
	braid_rc_demux_construct(&f->port);
	rc_start(f);
}

static void rc_close(struct rc_fuzz *f)
{
	rc_stop(f);
	braid_rc_demux_destruct(&f->port);
	fuzz_bufs_free(&f->app);
	fuzz_bufs_free(&f->src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rc_fuzz f;

	if (!size)
		return 0;
	rc_open(&f, data[0]);
	fuzz_records(data, size, rc_packet, &f);
	rc_close(&f);
	return 0;
}
