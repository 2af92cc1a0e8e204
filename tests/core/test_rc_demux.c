/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rc_demux.c: one RoCEv2 port's queue pairs (core/braid_rc_demux.c): a packet reaches the QP it names, from that QP's peer only, and a lost RTU's connection is established by its first packet (protocol.md §5.1, §6.3). */
#include <criterion/criterion.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_rc_demux.h"
#include "rc_harness.h"

#define NOW	1000000000ULL

static struct rch H;
static struct braid_rc_demux D;
static uint8_t pkt[8192];
static size_t pkt_len;
static char sbuf[64] = "to B", rbuf[64];

/* A's QP and B's over an ideal path; B's QP on the port D; pkt: A's first SEND to B */
static void setup(void)
{
	struct braid_rc_config base;
	struct iovec siov = { sbuf, sizeof(sbuf) }, riov = { rbuf, sizeof(rbuf) };
	struct braid_rc_wr wr = { .op = BRAID_RC_OP_SEND, .iov = &siov, .iov_count = 1 };
	struct braid_rc_recv rr = { .iov = &riov, .iov_count = 1 };
	struct braid_rc_out out[4];

	braid_rc_config_default(&base);
	cr_assert_eq(rch_init(&H, NULL, 1, &base, 100, 200), 0);
	H.now = NOW;
	cr_assert_eq(braid_rc_post_recv(H.n[1].qp, &rr), 0);
	cr_assert_eq(braid_rc_post_send(H.n[0].qp, &wr, NOW), 0);
	cr_assert_eq(braid_rc_output(H.n[0].qp, NOW, out, 4), 1);
	pkt_len = rch_flatten(&out[0], pkt);
	braid_rc_demux_construct(&D);
}

static void teardown(void)
{
	braid_rc_demux_destruct(&D);
	rch_fini(&H);
}

static uint64_t b_rx_pkts(void)
{
	return braid_rc_get_stats(H.n[1].qp)->rx_pkts;
}

TestSuite(braid_rc_demux, .init = setup, .fini = teardown);

Test(braid_rc_demux, packet_reaches_the_qp_it_names)
{
	struct braid_rc_demux_entry b = { .qp = H.n[1].qp, .owner = &H.n[1] };
	bool est = true;

	cr_assert_eq(braid_rc_demux_add(&D, RCH_QPN_B, &b), 0);
	cr_assert(braid_rc_demux_has(&D, RCH_QPN_B));
	cr_assert_eq(braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A, RCH_PORT_A, NOW, &est),
		     &b);
	cr_assert_not(est, "no connection: nothing to establish");
	cr_assert_eq(b_rx_pkts(), 1);
	cr_assert_eq(D.unknown_qp + D.wrong_source, 0);
}

Test(braid_rc_demux, unknown_qp_truncated_or_not_roce_is_dropped_and_counted)
{
	struct braid_rc_demux_entry b = { .qp = H.n[1].qp, .owner = &H.n[1] };
	uint8_t junk[8] = { 0 };
	bool est;

	/* no QP there yet */
	cr_assert_null(braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A, RCH_PORT_A, NOW,
					    &est));
	cr_assert_eq(D.unknown_qp, 1);
	cr_assert_eq(braid_rc_demux_add(&D, RCH_QPN_B, &b), 0);
	cr_assert_null(braid_rc_demux_input(&D, pkt, pkt_len, true, RCH_IP_A, RCH_PORT_A, NOW,
					    &est), "a truncated datagram reaches no QP");
	cr_assert_null(braid_rc_demux_input(&D, junk, sizeof(junk), false, RCH_IP_A, RCH_PORT_A,
					    NOW, &est), "too short for a BTH");
	cr_assert_eq(D.unknown_qp, 3);
	/* gone again */
	braid_rc_demux_remove(&D, RCH_QPN_B);
	cr_assert_not(braid_rc_demux_has(&D, RCH_QPN_B));
	cr_assert_null(braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A, RCH_PORT_A, NOW,
					    &est));
	cr_assert_eq(D.unknown_qp, 4);
	cr_assert_eq(b_rx_pkts(), 0, "the QP saw none of them");
}

Test(braid_rc_demux, a_qp_hears_only_its_peer)
{
	struct braid_rc_demux_entry b = { .qp = H.n[1].qp, .owner = &H.n[1] };
	bool est;

	cr_assert_eq(braid_rc_demux_add(&D, RCH_QPN_B, &b), 0);
	cr_assert_null(braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A, RCH_PORT_A + 1, NOW,
					    &est), "the peer's IP from another port");
	cr_assert_null(braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A + 9, RCH_PORT_A, NOW,
					    &est), "another host");
	cr_assert_eq(D.wrong_source, 2);
	cr_assert_eq(b_rx_pkts(), 0);
	cr_assert_eq(braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A, RCH_PORT_A, NOW, &est),
		     &b);
	cr_assert_eq(b_rx_pkts(), 1);
}

Test(braid_rc_demux, a_qpn_is_taken_once)
{
	struct braid_rc_demux_entry b = { .qp = H.n[1].qp }, other = { .qp = H.n[0].qp };

	cr_assert_eq(braid_rc_demux_add(&D, RCH_QPN_B, &b), 0);
	cr_assert_eq(braid_rc_demux_add(&D, RCH_QPN_B, &other), -FI_EALREADY);
}

/* B's connection accepted A's REQ and sent its REP: the RTU has not come */
static void rep_sent(struct braid_cm_conn *a, struct braid_cm_conn *b)
{
	static const struct braid_cm_qp qa = { .qpn = RCH_QPN_A, .psn = 200, .mtu = 4096,
					       .rc_port = RCH_PORT_A };
	static const struct braid_cm_qp qb = { .qpn = RCH_QPN_B, .psn = 100, .mtu = 4096,
					       .rc_port = RCH_PORT_B };
	struct braid_cm_listener l;
	struct braid_cm_req r;
	struct braid_cm_view req;
	struct braid_cm_event ev;

	braid_cm_construct(a, NULL);
	braid_cm_construct(b, NULL);
	braid_cm_listener_construct(&l);
	cr_assert_eq(braid_cm_connect(a, 0x1234, &qa, NULL, 0, NOW), 0);
	cr_assert_eq(braid_cm_output(a, &req, 1), 1);
	braid_cm_listener_add(&l, &r, &req, RCH_IP_A, RCH_PORT_A);
	cr_assert_eq(braid_cm_accept(b, &r, &qb, NULL, 0, NOW), 0);
	cr_assert_eq(braid_cm_poll(b, &ev, 1), 1);
	cr_assert_eq(ev.type, BRAID_CM_EV_QP_CREATE);
	braid_cm_qp_created(b, 0, NOW);
	cr_assert_eq(b->state, BRAID_CM_REP_SENT);
}

Test(braid_rc_demux, first_packet_establishes_a_connection_whose_rtu_was_lost)
{
	struct braid_cm_conn a, b;
	struct braid_rc_demux_entry e = { .qp = H.n[1].qp, .cm = &b };
	struct braid_cm_event ev;
	bool est = false;

	rep_sent(&a, &b);
	cr_assert_eq(braid_rc_demux_add(&D, RCH_QPN_B, &e), 0);
	/* from a stranger: not the peer's traffic, the connection waits on */
	cr_assert_null(braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A + 1, RCH_PORT_A, NOW,
					    &est));
	cr_assert_not(est);
	cr_assert_eq(b.state, BRAID_CM_REP_SENT);
	cr_assert_eq(braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A, RCH_PORT_A, NOW, &est),
		     &e);
	cr_assert(est);
	cr_assert_eq(b.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(braid_cm_poll(&b, &ev, 1), 1);
	cr_assert_eq(ev.type, BRAID_CM_EV_CONNECTED);
	/* the next packet (a duplicate of the first, the QP's to drop) changes nothing */
	braid_rc_demux_input(&D, pkt, pkt_len, false, RCH_IP_A, RCH_PORT_A, NOW, &est);
	cr_assert_not(est);
}
