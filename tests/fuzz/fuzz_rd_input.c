/*
 * fuzz_rd_input.c: libFuzzer target for the RD engine's receive path and the
 * wire decoders: every input is a sequence of packets fed to one engine that
 * also has sends and receives of its own in flight. Nothing may crash, read
 * out of bounds or leak; tools/fuzz.sh builds and runs it with ASan/UBSan.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "braid_hdr.h"
#include "braid_peer.h"
#include "braid_rd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t sbuf[20000], rbuf[4][20000];
	struct braid_rd_config cfg;
	struct braid_peer_table *t;
	struct braid_rd_comp comps[64];
	struct braid_rd_out out[64];
	struct braid_rd *rd;
	uint64_t now = 1000;
	size_t off = 0;
	int i;

	braid_rd_config_default(&cfg);
	cfg.local_ip = 0x7f000001;
	cfg.local_port = 4000;
	cfg.epoch = 7;
	cfg.mtu = 1500;
	cfg.stage_pkts = 16;
	cfg.max_msgs = 16;
	if (braid_peer_table_open(&t, 16, NULL) || braid_rd_open(&cfg, t, &rd))
		abort();
	for (i = 0; i < 4; i++) {
		struct iovec iov = { rbuf[i], sizeof(rbuf[i]) };
		struct braid_rd_recv r = { .iov = &iov, .iov_count = 1,
					   .flags = i % 2 ? BRAID_RD_TAGGED : 0, .ignore = ~0ull };

		braid_rd_post_recv(rd, &r, now);
	}
	{
		struct iovec iov = { sbuf, sizeof(sbuf) };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1,
					   .peer = braid_peer_key(0x7f000002, 5555) };

		braid_rd_send(rd, &s, now);
	}
	/* input: [u16 length][u8 source][packet bytes]... */
	while (off + 3 <= size) {
		size_t len = (size_t)data[off] | (size_t)data[off + 1] << 8;
		uint32_t src = 0x7f000001u + data[off + 2] % 4;

		off += 3;
		if (len > size - off)
			len = size - off;
		/* a copy, so the sanitizer sees reads past the packet */
		{
			uint8_t *pkt = malloc(len ? len : 1);

			memcpy(pkt, data + off, len);
			braid_rd_input(rd, pkt, len, src, data[off - 1] & 0x80, now);
			free(pkt);
		}
		off += len;
		now += 5000;
		if (braid_rd_next_deadline(rd) <= now)
			braid_rd_timer(rd, now);
		while (braid_rd_output(rd, now, out, 64) > 0)
			;
		while (braid_rd_poll(rd, comps, 64) > 0)
			;
	}
	braid_rd_close(rd);
	braid_peer_table_close(t);
	return 0;
}
