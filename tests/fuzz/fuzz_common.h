/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_common.h: what the fuzz targets and make_seeds share: input formats, copies, app buffers. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static inline void fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
	abort();
}

/* an invariant of the code under test: a crash, with the reason, when it does not hold */
#define FUZZ_CHECK(cond)	((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond))

/* @len zeroed bytes (at least one), or a crash */
static inline void *fuzz_alloc(size_t len)
{
	void *p = calloc(1, len ? len : 1);

	if (!p)
		abort();
	return p;
}

/* read the @len bytes at @p, so that the sanitizer checks them (a read the compiler keeps) */
static inline void fuzz_read(const void *p, size_t len)
{
	uint8_t x = 0;

	for (size_t i = 0; i < len; i++)
		x ^= ((const uint8_t *)p)[i];
	__asm__ volatile("" : : "r"(x));
}

/* a malloc'd copy of exactly @len bytes of @p (a header alone, a record of a bundle) */
static inline uint8_t *fuzz_dup(const void *p, size_t len)
{
	return memcpy(fuzz_alloc(len), p, len);
}

/*
 * The engine targets read their input as one config byte, then records:
 *
 *   [u8 config] { [u16 length, little-endian] [u8 ctl] [length bytes of packet] }...
 *
 * ctl's bits are each target's to define. A last record whose length runs
 * past the input is cut to what is there.
 */
#define FUZZ_REC_HDR	3

typedef void fuzz_rec_fn(void *state, uint8_t ctl, uint8_t *pkt, size_t len);

/*
 * Hand each record of an input (after its config byte) to @fn: its ctl byte
 * and a malloc'd copy of exactly its bytes, freed after, so the sanitizer
 * sees any access past the packet.
 */
static inline void fuzz_records(const uint8_t *data, size_t size, fuzz_rec_fn *fn, void *state)
{
	size_t off = 1;

	while (off + FUZZ_REC_HDR <= size) {
		size_t n = (size_t)data[off] | (size_t)data[off + 1] << 8;
		uint8_t ctl = data[off + 2], *pkt;

		off += FUZZ_REC_HDR;
		if (n > size - off)
			n = size - off;
		pkt = fuzz_dup(data + off, n);
		fn(state, ctl, pkt, n);
		free(pkt);
		off += n;
	}
}

/* the time after a record: @step later, or with @jump the engine's next deadline if later */
static inline uint64_t fuzz_time(uint64_t now, bool jump, uint64_t deadline, uint64_t step)
{
	return jump && deadline != UINT64_MAX && deadline > now ? deadline : now + step;
}

/*
 * ---- each engine target's input format ----
 * its config bits, its ctl bits, and the addresses, keys and numbers its
 * engine uses (make_seeds writes inputs for them)
 */

/* fuzz_rd_input: one RD endpoint at FRD_LOCAL_IP:4000, epoch FRD_EPOCH; it sends to the peer */
#define FRD_LOCAL_IP		0x7f000001u
#define FRD_PEER_IP		0x7f000002u	/* FRD_LOCAL_IP + 1 */
#define FRD_PEER_PORT		5555
#define FRD_EPOCH		7
#define FRD_MTU			1500
#define FRD_REGION_KEY		0x42	/* the peer's key to LEN bytes at BASE */
#define FRD_REGION_BASE		0x100000
#define FRD_REGION_LEN		8192
#define FRD_CFG_NO_BUNDLE	0x01
#define FRD_CFG_WINDOW16	0x02
#define FRD_CFG_RDV		0x04	/* rendezvous above 2000 bytes: CTS awaited */
#define FRD_CFG_NO_HEALTH	0x08
#define FRD_CFG_FEW		0x10	/* 4 staging packets, 4 messages: no buffer */
#define FRD_CFG_UNSENT		0x20	/* one datagram a call sent, braid_rd_unsent() */
#define FRD_CFG_RXQ		0x40	/* a receive queue of 4 datagrams caps the window */
#define FRD_CTL_SRC		0x03	/* from FRD_LOCAL_IP + n */
#define FRD_CTL_PLACE		0x04	/* braid_rd_place() first */
#define FRD_CTL_ECN		0x08
#define FRD_CTL_JUMP		0x10	/* then time jumps to the next deadline */
#define FRD_CTL_ROUTE		0x60	/* the route it came by: none, or port 40000 + n */
#define FRD_CTL_APP		0x80	/* then the app reposts, peeks, ACKs */

/* fuzz_rc: one QP (FRC_QPN_A at FRC_IP_A), the peer's packets from FRC_IP_B:FRC_PORT_B */
#define FRC_IP_A		0x0a000001u
#define FRC_IP_B		0x0a000002u
#define FRC_PORT_A		50001
#define FRC_PORT_B		50002
#define FRC_QPN_A		0x000a11u
#define FRC_QPN_B		0x000b22u
#define FRC_SQ_PSN		0x100	/* FRC_CFG_PSN_WRAP: 0xfffffe */
#define FRC_RQ_PSN		0x200	/* FRC_CFG_PSN_WRAP: 0xfffffd */
#define FRC_REGION_KEY		0x77
#define FRC_REGION_BASE		0x200000
#define FRC_REGION_LEN		4096
#define FRC_CFG_IMM_NO_RECV	0x01
#define FRC_CFG_PSN_WRAP	0x02	/* PSNs start just below 2^24 */
#define FRC_CFG_SRQ		0x04	/* a shared receive queue behind the RQ */
#define FRC_CFG_NO_RETRY	0x08	/* retry and RNR retry 0: the error paths */
#define FRC_CFG_MTU1024		0x10	/* else 256 */
#define FRC_CTL_ICRC		0x01	/* recompute the ICRC first */
#define FRC_CTL_JUMP		0x02	/* then time jumps to the next deadline */
#define FRC_CTL_APP		0x04	/* then the app reposts receives and posts a SEND */
#define FRC_CTL_RENEW		0x08	/* first a QP in error is replaced by a new one */
#define FRC_CTL_FLUSH		0xf0	/* all four: then the QP is flushed (shutdown) */
/* the struct braid_roce_addr of what the QP receives: the ICRC covers it */
#define FRC_RX_ADDR		{ FRC_IP_B, FRC_IP_A, FRC_PORT_B, 4791 }

/* fuzz_cm: an active side that sent a REQ (FCM_CONN_ID), a listener, a passive side */
#define FCM_CONN_ID		0x0123456789abcdefULL
#define FCM_CFG_PDATA		0x01	/* the REQ carries private data */
#define FCM_CFG_NO_DREQ_TRY	0x02	/* dreq_tries 0: shutdown closes at once */
#define FCM_CTL_DST		0x03	/* to 0 the listener, 1 active, 2 passive, 3 none */
#define FCM_CTL_ACT		0x1c	/* >> 2: an action, enum fcm_act */
#define FCM_CTL_PASSIVE		0x20	/* the action is the passive side's */
#define FCM_CTL_QP_FAIL		0x40	/* QPs fail to be created (again: succeed) */
#define FCM_CTL_JUMP		0x80	/* then time jumps to the next deadline */
enum fcm_act { FCM_NONE, FCM_ACCEPT, FCM_REJECT, FCM_SHUTDOWN, FCM_ESTABLISHED, FCM_QP_ERROR,
	       FCM_FORGET, FCM_RENEW };

/*
 * fuzz_auth: one datagram after a config byte: FAUTH_CFG_MAC: the key in mac
 * mode, else job-tag mode; the rest of the byte (>> 1) and the next pick
 * where the datagram is cut into iovecs when it is sealed.
 */
#define FAUTH_KEY		"fuzz-job-key"
#define FAUTH_CFG_MAC		0x01

/*
 * fuzz_shm: the receive side of a UDP wire endpoint's local peers' rings
 * (protocol.md §7). The config byte is not used; each record is a step:
 * ctl picks the ring, the receive call, how the tail moves and how lent
 * records are made safe to read; its bytes are
 *
 *   [u16 delta] [u8 packets] [u8 buffer sizes] [u16 peek cap] [ring bytes]
 *
 * (little-endian), the ring bytes written at the ring's head (wrapping;
 * FSHM_CALL_REWRITE: their first half, the second written over it after the
 * peek). Then the tail: the bytes written (rounded up to 16), or the head
 * plus delta, plus delta << 16, or minus delta.
 */
#define FSHM_RINGS		2
#define FSHM_PATHS		2	/* a record's dst_port 0 or 1: the port of that path */
#define FSHM_SEG_HDR		4096	/* the segment's header page */
#define FSHM_RING_CTL		128	/* a ring's control lines: tail at +0, head at FSHM_RING_HEAD */
#define FSHM_RING_HEAD		64
#define FSHM_OFF_RING_BYTES	20	/* header fields (protocol.md §7.1) */
#define FSHM_OFF_NOCMA		44
#define FSHM_OFF_NOMSG		48
#define FSHM_OFF_ACTIVE		128
#define FSHM_OFF_OWNER		192
#define FSHM_REC_HDR		16	/* a record: u32 len, u32 src_ip, u16 src_port, src_home, dst_port, flags */
#define FSHM_REC_LENT		0x0001	/* its flags: a lent record */
#define FSHM_LENT_BYTES		32	/* a lent record's u64 addr, ns; u32 len, pid, head, pad */
#define FSHM_LENT_ADDR		0
#define FSHM_LENT_PID		20
#define FSHM_LEND_SPAN		65536	/* FSHM_CTL_LEND_OWN: addresses in the harness's buffer */
#define FSHM_NO_PID		0x7ffffff0u	/* above any pid_max: no such process */
#define FSHM_STEP_HDR		6
#define FSHM_CTL_RING		0x01
#define FSHM_CTL_CALL		0x06	/* >> 1: enum fshm_call */
#define FSHM_CTL_TAIL		0x18	/* >> 3: written, + delta, + delta << 16, - delta */
#define FSHM_CTL_LEND_OWN	0x20	/* lent records read this process's buffer; else pid by
					   its low bits: 0 none, 1 this one (address as is), else none there */
enum fshm_call { FSHM_CALL_BURST, FSHM_CALL_PEEK, FSHM_CALL_REWRITE, FSHM_CALL_NONE };

/* ---- the application's buffers, each its own allocation (ASan redzones between them) ---- */

#define FUZZ_BUFS_MAX	32

struct fuzz_bufs {
	struct iovec b[FUZZ_BUFS_MAX];
	int n;
};

static inline void *fuzz_buf(struct fuzz_bufs *bs, size_t len)
{
	void *p = fuzz_alloc(len);

	FUZZ_CHECK(bs->n < FUZZ_BUFS_MAX);
	bs->b[bs->n].iov_base = p;
	bs->b[bs->n++].iov_len = len;
	return p;
}

/* an engine's iov must lie inside one of the application's buffers */
static inline bool fuzz_bufs_hold(const struct fuzz_bufs *bs, const struct iovec *iov)
{
	uintptr_t p = (uintptr_t)iov->iov_base;

	for (int i = 0; i < bs->n; i++) {
		uintptr_t b = (uintptr_t)bs->b[i].iov_base;
		size_t len = bs->b[i].iov_len;

		if (p >= b && p - b <= len && iov->iov_len <= len - (p - b))
			return true;
	}
	return false;
}

static inline void fuzz_bufs_free(struct fuzz_bufs *bs)
{
	for (int i = 0; i < bs->n; i++)
		free(bs->b[i].iov_base);
	bs->n = 0;
}

/* one receive of the application: its buffers (each its own), their size, posted or not */
struct fuzz_recv {
	struct iovec iov[3];
	int cnt;
	size_t cap;
	bool posted;
};

/* a receive with a buffer of each non-zero length of @lens */
static inline void fuzz_recv_init(struct fuzz_recv *r, struct fuzz_bufs *bs, const size_t lens[3])
{
	for (r->cnt = 0; r->cnt < 3 && lens[r->cnt]; r->cnt++) {
		r->iov[r->cnt] = (struct iovec){ fuzz_buf(bs, lens[r->cnt]), lens[r->cnt] };
		r->cap += lens[r->cnt];
	}
}

/* its completion: no more bytes than it holds, and, in one buffer, inside that buffer */
static inline void fuzz_recv_check(const struct fuzz_recv *r, const struct fuzz_bufs *bs, void *buf,
				   size_t len)
{
	struct iovec got = { buf, len };

	FUZZ_CHECK(len <= r->cap);
	FUZZ_CHECK(r->cnt != 1 || !len || fuzz_bufs_hold(bs, &got));
}

/*
 * A memory region the peer reaches by key: remote addresses are @base +
 * offset (a fixed number the fuzzer can find, not a pointer), mapped to
 * @mem. Return: the check's verdict, as both engines' mr_check want it.
 */
struct fuzz_region {
	uint64_t key, base;
	uint8_t *mem;
	size_t len;
};

static inline int fuzz_region_map(const struct fuzz_region *r, uint64_t key, uint64_t addr,
				  size_t len, void **ptr)
{
	if (key != r->key || addr < r->base || addr - r->base > r->len ||
	    len > r->len - (addr - r->base))
		return -1;
	*ptr = r->mem + (addr - r->base);
	return 0;
}

/* make_seeds: one record of a seed input */
static inline void fuzz_put_rec(FILE *f, uint8_t ctl, const void *pkt, size_t len)
{
	uint8_t h[FUZZ_REC_HDR] = { (uint8_t)len, (uint8_t)(len >> 8), ctl };

	fwrite(h, 1, sizeof(h), f);
	fwrite(pkt, 1, len, f);
}

#endif /* FUZZ_COMMON_H */
