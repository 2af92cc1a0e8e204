/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * flood.c: a spoofing flood (test_flood.sh, protocol.md §4.9): a braid RDM
 * endpoint on loopback takes packets from a million distinct forged sources
 * while a genuine peer streams checked messages to it.
 *
 *   flood victim NAMEFILE
 *       open braid's RDM endpoint on 127.0.0.1, write its name to NAMEFILE,
 *       receive tagged messages (tag 7, from any source) and check each:
 *       (seq) in its first 8 bytes, then a pattern of seq; each seq once;
 *       until the sender's last message (tag 8) says how many it sent.
 *       Prints "rss_start_kb=K" when the first message is in, then
 *       "rss_end_kb=K rss_peak_kb=K got=N sent=N corrupt=C dups=D foreign=F
 *       sanitized=S" (foreign: messages that are not the sender's, the 0-RTT
 *       delivery of a forged whole message; sanitized: built with ASan, whose
 *       allocator makes memory figures meaningless). Exit 1 on a corrupt, duplicate or missing message or
 *       an error completion.
 *   flood send NAMEFILE MSGS STOPFILE
 *       the genuine peer: messages of 16 B to 300 KiB, windows of 8, at least
 *       MSGS and on until STOPFILE exists, then one last (tag 8) carrying the
 *       count; every send must complete without error. Prints "sent=N".
 *   flood spray NAMEFILE PKTS
 *       PKTS RD_DATA packets to the endpoint named in NAMEFILE, each from its own forged source
 *       address: 127.64.0.0/10 addresses (loopback: every 127/8 address is
 *       local, so IP_PKTINFO may name it) times 16 source ports, so up to
 *       4,194,304 distinct peers. Half are whole 8-byte untagged messages,
 *       half the first packet of a 2-packet tagged message (tag 7: it would
 *       match the victim's receives), each claiming its own incarnation.
 *       Prints "sprayed=N seconds=S".
 * Exit: 0, 1 (a wrong outcome), 2 (usage), 3 (setup).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_common.h"
#include "braid_hdr.h"

#define MAX_MSG		(300 * 1024)
#define WINDOW		8
#define SPRAY_PORTS	16

static const size_t sizes[] = { 16, 100, 1400, 1500, 9000, 65536, 70000, 300 * 1024 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 10) + 1);
}

#define MAX_SEQ		(1u << 24)

/* a sanitizer's allocator keeps freed memory and pads each block: no budget holds */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static int do_victim(struct conn *c, const char *namefile)
{
	struct fi_cq_tagged_entry e[WINDOW];
	uint8_t name[64], *seen = calloc(MAX_SEQ / 8, 1), last[16];
	size_t len = sizeof(name);
	uint64_t got = 0, corrupt = 0, dups = 0, foreign = 0, msgs = UINT64_MAX;
	long rss_start = -1;
	int i;
	FILE *f;

	if (!seen)
		return BENCH_EXIT_SETUP;
	for (i = 0; i < WINDOW; i++)
		trecv(c, FI_ADDR_UNSPEC, c->buf + (size_t)i * MAX_MSG, MAX_MSG, 7,
		      (void *)(uintptr_t)(i + 1));
	trecv(c, FI_ADDR_UNSPEC, last, sizeof(last), 8, (void *)(uintptr_t)(WINDOW + 1));
	conn_name(c, name, &len);
	f = fopen(namefile, "w");
	if (!f || fwrite(name, 1, len, f) != len || fclose(f))
		return BENCH_EXIT_SETUP;
	while (got < msgs || msgs == UINT64_MAX) {
		double t0 = now_s();
		ssize_t r;

		while ((r = fi_cq_read(c->cq, e, WINDOW)) == -FI_EAGAIN) {
			if (now_s() - t0 > 30) {
				fprintf(stderr, "victim: no message for 30 s (%lu of %lu in)\n",
					(unsigned long)got, (unsigned long)msgs);
				return BENCH_EXIT_FAIL;
			}
		}
		if (r < 0) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(c->cq, &err, 0);
			fprintf(stderr, "victim: an error completion: %s\n", fi_strerror(err.err));
			return BENCH_EXIT_FAIL;
		}
		for (ssize_t k = 0; k < r; k++) {
			uint8_t *p;
			uint64_t seq;
			size_t n;

			i = (int)(uintptr_t)e[k].op_context - 1;
			if (i == WINDOW) {
				/* the sender's last word: how many it sent */
				if (e[k].len != 8)
					return BENCH_EXIT_FAIL;
				memcpy(&msgs, last, 8);
				continue;
			}
			p = c->buf + (size_t)i * MAX_MSG;
			memcpy(&seq, p, 8);
			if (seq >= MAX_SEQ || e[k].len != sizes[seq % NSIZES]) {
				foreign++;	/* not the sender's */
			} else {
				for (n = 8; n < e[k].len && p[n] == pattern(seq, n); n++)
					;
				if (n < e[k].len)
					corrupt++;
				else if (seen[seq / 8] & (1u << (seq % 8)))
					dups++;
				else
					got++;
				seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
			}
			if (got == 1 && rss_start < 0) {
				rss_start = proc_status_kb("VmRSS:");
				printf("rss_start_kb=%ld\n", rss_start);
				fflush(stdout);
			}
			trecv(c, FI_ADDR_UNSPEC, p, MAX_MSG, 7, e[k].op_context);
		}
		if (corrupt || dups)
			break;
	}
	printf("rss_end_kb=%ld rss_peak_kb=%ld got=%lu sent=%lu corrupt=%lu dups=%lu foreign=%lu "
	       "sanitized=%d\n", proc_status_kb("VmRSS:"), proc_status_kb("VmHWM:"), (unsigned long)got,
	       (unsigned long)msgs, (unsigned long)corrupt, (unsigned long)dups,
	       (unsigned long)foreign, SANITIZED);
	free(seen);
	return corrupt || dups || got != msgs ? BENCH_EXIT_FAIL : 0;
}

static int do_send(struct conn *c, const char *namefile, uint64_t msgs, const char *stopfile)
{
	fi_addr_t to = conn_insert_file(c, namefile);
	uint64_t seq = 0, done = 0;

	c->timeout_s = 30;
	while (done < msgs || access(stopfile, F_OK)) {
		int n = 0;

		for (; n < WINDOW && seq < MAX_SEQ; n++, seq++) {
			uint8_t *p = c->buf + (size_t)n * MAX_MSG;
			size_t len = sizes[seq % NSIZES];

			memcpy(p, &seq, 8);
			for (size_t i = 8; i < len; i++)
				p[i] = pattern(seq, i);
			tsend(c, to, p, len, 7, (void *)(uintptr_t)(n + 1));
		}
		wait_comps(c, n, NULL);	/* an error completion exits with BENCH_EXIT_FAIL */
		done += (uint64_t)n;
		if (seq == MAX_SEQ)
			break;
	}
	memcpy(c->buf, &done, 8);
	tsend(c, to, c->buf, 8, 8, (void *)(uintptr_t)1);
	wait_comps(c, 1, NULL);
	printf("sent=%lu\n", (unsigned long)done);
	return 0;
}

static int do_spray(const char *namefile, uint64_t pkts)
{
	struct sockaddr_in dst;
	uint8_t pkt[sizeof(struct braid_rd_data_hdr) + 900];
	int fds[SPRAY_PORTS];
	double t0 = now_s();
	uint64_t i, sent = 0;
	FILE *f = fopen(namefile, "r");

	/* braid's endpoint name is its sockaddr_in (FI_SOCKADDR_IN) */
	if (!f || fread(&dst, 1, sizeof(dst), f) != sizeof(dst) || dst.sin_family != AF_INET) {
		fprintf(stderr, "spray: no endpoint name in %s\n", namefile);
		return BENCH_EXIT_SETUP;
	}
	fclose(f);
	for (i = 0; i < SPRAY_PORTS; i++) {
		int buf = 4 << 20;

		fds[i] = socket(AF_INET, SOCK_DGRAM, 0);
		if (fds[i] < 0)
			return BENCH_EXIT_SETUP;
		(void)setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	}
	memset(pkt, 0xa5, sizeof(pkt));
	for (i = 0; i < pkts; i++) {
		uint64_t src = i / SPRAY_PORTS;
		bool half = i & 1;
		struct braid_rd_data_view v = {
			.src_port = 0,	/* the socket's, filled below */
			.flags = half ? BRAID_RD_F_TAGGED : 0,
			.src_epoch = (uint32_t)(i * 2654435761u) | 1,
			.psn = 0, .msg_id = 0, .offset = 0,
			.msg_len = half ? 1800 : 8,
			.tx_time = 1, .tag = half ? 7 : 0,
		};
		char cbuf[CMSG_SPACE(sizeof(struct in_pktinfo))] = { 0 };
		struct iovec iov = { pkt, sizeof(struct braid_rd_data_hdr) + (half ? 900 : 8) };
		struct msghdr mh = { .msg_name = &dst, .msg_namelen = sizeof(dst), .msg_iov = &iov,
				     .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		struct in_pktinfo pi = { 0 };
		struct sockaddr_in me;
		socklen_t ml = sizeof(me);
		int fd = fds[i % SPRAY_PORTS];

		/* 127.64.0.0 + src: never 127.0.0.1, the victim's and the sender's */
		pi.ipi_spec_dst.s_addr = htonl(0x7f400000u + (uint32_t)(src & 0x3fffff));
		cm->cmsg_level = IPPROTO_IP;
		cm->cmsg_type = IP_PKTINFO;
		cm->cmsg_len = CMSG_LEN(sizeof(pi));
		memcpy(CMSG_DATA(cm), &pi, sizeof(pi));
		if (i < SPRAY_PORTS) {
			/* bind each socket to a port once (the first send picks it) */
			struct sockaddr_in any = { .sin_family = AF_INET };

			if (bind(fd, (struct sockaddr *)&any, sizeof(any)))
				return BENCH_EXIT_SETUP;
		}
		if (getsockname(fd, (struct sockaddr *)&me, &ml))
			return BENCH_EXIT_SETUP;
		v.src_port = ntohs(me.sin_port);
		braid_rd_data_write(pkt, &v);
		while (sendmsg(fd, &mh, 0) < 0) {
			if (errno != EAGAIN && errno != ENOBUFS) {
				perror("spray: sendmsg");
				return BENCH_EXIT_SETUP;
			}
		}
		sent++;
	}
	printf("sprayed=%lu seconds=%.2f\n", (unsigned long)sent, now_s() - t0);
	return 0;
}

int main(int argc, char **argv)
{
	struct conn c;
	int ret;

	if (argc == 4 && !strcmp(argv[1], "spray"))
		return do_spray(argv[2], strtoull(argv[3], NULL, 0));
	if (!((argc == 3 && !strcmp(argv[1], "victim")) || (argc == 5 && !strcmp(argv[1], "send")))) {
		fprintf(stderr, "usage: flood victim NAMEFILE | flood send NAMEFILE MSGS STOPFILE | "
			"flood spray NAMEFILE PKTS\n");
		return BENCH_EXIT_USAGE;
	}
	conn_open(&c, "braid", "127.0.0.1", (size_t)WINDOW * MAX_MSG);
	if (!strcmp(argv[1], "victim"))
		ret = do_victim(&c, argv[2]);
	else
		ret = do_send(&c, argv[2], strtoull(argv[3], NULL, 0), argv[4]);
	fflush(stdout);
	conn_close(&c);
	return ret;
}
