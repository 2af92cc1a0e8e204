/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * peer_death.c: one side of the fabric's peer-death check (test_liveness.sh): a
 * receiver whose only receive is bound to a large message from a sender that is
 * killed half way must get an error completion (FI_EHOSTUNREACH) within about the
 * peer timeout, not wait for ever.
 *
 *   peer_death recv IP NAMEFILE SIZE   post one tagged receive of SIZE bytes (any
 *                                      source), write the endpoint name to NAMEFILE,
 *                                      wait for its completion; print "recv err=E
 *                                      t=REALTIME_S placed=BYTES" (placed: bytes of
 *                                      the buffer the sender's pattern reached)
 *   peer_death send IP NAMEFILE SIZE   send SIZE bytes to the name in NAMEFILE, then
 *                                      keep progressing until killed
 * Exit: 0 as described, 1 a wrong outcome, 2 usage, 3 setup (bench_common.h).
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

static double realtime_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int do_recv(struct conn *c, const char *namefile, size_t size)
{
	uint8_t name[64];
	size_t len = sizeof(name), placed = 0, i;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	FILE *f;
	ssize_t r;

	memset(c->buf, 0, size);
	trecv(c, FI_ADDR_UNSPEC, c->buf, size, 1, NULL);
	conn_name(c, name, &len);
	f = fopen(namefile, "w");
	if (!f || fwrite(name, 1, len, f) != len || fclose(f))
		return BENCH_EXIT_SETUP;
	for (;;) {
		r = fi_cq_read(c->cq, &e, 1);
		if (r == 1) {
			printf("recv err=0 t=%.3f placed=%zu\n", realtime_s(), size);
			return BENCH_EXIT_FAIL;	/* the sender was to die first */
		}
		if (r == -FI_EAVAIL)
			break;
		if (r != -FI_EAGAIN) {
			fprintf(stderr, "fi_cq_read: %s\n", fi_strerror((int)-r));
			return BENCH_EXIT_FAIL;
		}
	}
	fi_cq_readerr(c->cq, &err, 0);
	for (i = 0; i < size; i++)
		placed += c->buf[i] != 0;
	printf("recv err=%d t=%.3f placed=%zu (%s)\n", err.err, realtime_s(), placed,
	       fi_strerror(err.err));
	fflush(stdout);
	return err.err == FI_EHOSTUNREACH && placed ? 0 : BENCH_EXIT_FAIL;
}

static int do_send(struct conn *c, const char *namefile, size_t size)
{
	size_t i;
	fi_addr_t to;

	to = conn_insert_file(c, namefile);
	for (i = 0; i < size; i++)
		c->buf[i] = (uint8_t)(i % 251 + 1);	/* never 0: the receiver counts what came */
	tsend(c, to, c->buf, size, 1, NULL);
	printf("send started t=%.3f\n", realtime_s());
	fflush(stdout);
	for (;;)
		(void)fi_cq_read(c->cq, NULL, 0);
	return 0;	/* not reached: the test kills it */
}

int main(int argc, char **argv)
{
	struct conn c;
	size_t size;
	int ret;

	if (argc != 5 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send")))
		return BENCH_EXIT_USAGE;
	size = strtoull(argv[4], NULL, 0);
	if (!size)
		return BENCH_EXIT_USAGE;
	conn_open(&c, "braid", argv[2], size);
	if (strcmp(c.info->fabric_attr->prov_name, "braid")) {
		fprintf(stderr, "provider %s, not braid's native RDM\n", c.info->fabric_attr->prov_name);
		return BENCH_EXIT_SETUP;
	}
	c.timeout_s = 30;
	ret = !strcmp(argv[1], "recv") ? do_recv(&c, argv[3], size) : do_send(&c, argv[3], size);
	conn_close(&c);
	return ret;
}
