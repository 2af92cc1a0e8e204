/* SPDX-License-Identifier: BSD-2-Clause */
/* test_av.c: braid address vectors (fi_av(3)): map and table, insert/remove/lookup/straddr, FI_EVENT. */
#include "prov_test.h"

static void expect_lookup(struct fid_av *av, fi_addr_t fa, const char *ip, uint16_t port)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);
	int ret;

	memset(&sin, 0, sizeof(sin));
	ret = fi_av_lookup(av, fa, &sin, &len);
	cr_expect_eq(ret, 0, "fi_av_lookup(%llu) = %d", (unsigned long long)fa, ret);
	cr_expect_eq(len, sizeof(sin));
	cr_expect_eq(sin.sin_family, AF_INET);
	cr_expect_eq(ntohs(sin.sin_port), port);
	cr_expect_str_eq(inet_ntoa(sin.sin_addr), ip);
}

Test(fi_av_open, table)
{
	struct pt_dom d;
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fid_av *av;

	pt_dom_open(&d);
	cr_assert_eq(fi_av_open(d.domain, &attr, &av, NULL), 0);
	cr_expect_eq(av->fid.fclass, FI_CLASS_AV);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_open, map)
{
	struct pt_dom d;
	struct fi_av_attr attr = { .type = FI_AV_MAP };
	struct fid_av *av;

	pt_dom_open(&d);
	cr_assert_eq(fi_av_open(d.domain, &attr, &av, NULL), 0);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

/* fi_av(3): FI_AV_UNSPEC: "The AV type used will be returned through the type field". */
Test(fi_av_open, unspec_reports_type)
{
	struct pt_dom d;
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC };
	struct fid_av *av;

	pt_dom_open(&d);
	cr_assert_eq(fi_av_open(d.domain, &attr, &av, NULL), 0);
	cr_expect(attr.type == FI_AV_MAP || attr.type == FI_AV_TABLE, "type %d", attr.type);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_open, bad_flags)
{
	struct pt_dom d;
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_MULTI_RECV };
	struct fid_av *av = NULL;

	pt_dom_open(&d);
	cr_expect_eq(fi_av_open(d.domain, &attr, &av, NULL), -FI_EBADFLAGS);
	pt_dom_close(&d);
}

static void insert_one(enum fi_av_type type)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sin = pt_sin("127.0.0.1", 5000);
	fi_addr_t fa = FI_ADDR_NOTAVAIL;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, type);
	cr_expect_eq(fi_av_insert(av, &sin, 1, &fa, 0, NULL), 1);
	cr_expect_neq(fa, FI_ADDR_NOTAVAIL);
	if (type == FI_AV_TABLE)
		cr_expect_eq(fa, 0, "first table index is %llu", (unsigned long long)fa);
	expect_lookup(av, fa, "127.0.0.1", 5000);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_insert, one_table)
{
	insert_one(FI_AV_TABLE);
}

Test(fi_av_insert, one_map)
{
	insert_one(FI_AV_MAP);
}

static void insert_many(enum fi_av_type type)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sins[5];
	fi_addr_t fa[5], more[2];
	int i, j;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, type);
	for (i = 0; i < 5; i++)
		sins[i] = pt_sin("127.0.0.1", (uint16_t)(6000 + i));
	cr_expect_eq(fi_av_insert(av, sins, 5, fa, 0, NULL), 5);
	for (i = 0; i < 5; i++) {
		if (type == FI_AV_TABLE)
			cr_expect_eq(fa[i], (fi_addr_t)i);
		for (j = 0; j < i; j++)
			cr_expect_neq(fa[i], fa[j], "fi_addr %d and %d are equal", i, j);
		expect_lookup(av, fa[i], "127.0.0.1", (uint16_t)(6000 + i));
	}
	/* fi_av(3): table indices accumulate across insert calls */
	sins[0] = pt_sin("10.1.2.3", 7000);
	sins[1] = pt_sin("10.1.2.4", 7001);
	cr_expect_eq(fi_av_insert(av, sins, 2, more, 0, NULL), 2);
	if (type == FI_AV_TABLE) {
		cr_expect_eq(more[0], 5);
		cr_expect_eq(more[1], 6);
	}
	expect_lookup(av, more[0], "10.1.2.3", 7000);
	expect_lookup(av, more[1], "10.1.2.4", 7001);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_insert, many_table)
{
	insert_many(FI_AV_TABLE);
}

Test(fi_av_insert, many_map)
{
	insert_many(FI_AV_MAP);
}

Test(fi_av_insert, zero_count)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sin = pt_sin("127.0.0.1", 5000);

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_av_insert(av, &sin, 0, NULL, 0, NULL), 0);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

/* Insertion without an fi_addr array is allowed for tables (fi_av(3)). */
Test(fi_av_insert, table_null_fi_addr)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sins[2] = { pt_sin("127.0.0.1", 5000), pt_sin("127.0.0.1", 5001) };

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_av_insert(av, sins, 2, NULL, 0, NULL), 2);
	expect_lookup(av, 0, "127.0.0.1", 5000);
	expect_lookup(av, 1, "127.0.0.1", 5001);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

/* Three addresses, the middle one unusable: the return is the count inserted,
 * the failed slot gets FI_ADDR_NOTAVAIL (fi_av(3) RETURN VALUES). */
static void insert_bad(struct sockaddr_in bad)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sins[3] = { pt_sin("127.0.0.1", 5000), bad, pt_sin("127.0.0.1", 5002) };
	fi_addr_t fa[3] = { 0, 0, 0 };

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_av_insert(av, sins, 3, fa, 0, NULL), 2);
	cr_expect_neq(fa[0], FI_ADDR_NOTAVAIL);
	cr_expect_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_expect_neq(fa[2], FI_ADDR_NOTAVAIL);
	expect_lookup(av, fa[0], "127.0.0.1", 5000);
	expect_lookup(av, fa[2], "127.0.0.1", 5002);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_insert, bad_family)
{
	struct sockaddr_in bad = pt_sin("127.0.0.1", 5001);

	bad.sin_family = AF_INET6;
	insert_bad(bad);
}

Test(fi_av_insert, port_zero)
{
	insert_bad(pt_sin("127.0.0.1", 0));
}

Test(fi_av_insert, sync_err)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sins[3] = { pt_sin("127.0.0.1", 5000), pt_sin("127.0.0.1", 0),
				       pt_sin("127.0.0.1", 5002) };
	fi_addr_t fa[3];
	int errs[3] = { -1, 0, -1 };

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_av_insert(av, sins, 3, fa, FI_SYNC_ERR, errs), 2);
	cr_expect_eq(errs[0], 0);
	cr_expect_neq(errs[1], 0, "failed insertion reported as success");
	cr_expect_eq(errs[2], 0);
	cr_expect_eq(fa[1], FI_ADDR_NOTAVAIL);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_insert, bad_flags)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sin = pt_sin("127.0.0.1", 5000);
	fi_addr_t fa;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_av_insert(av, &sin, 1, &fa, FI_MULTI_RECV, NULL), -FI_EBADFLAGS);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_insert, more_flag_accepted)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in a = pt_sin("127.0.0.1", 5000), b = pt_sin("127.0.0.1", 5001);
	fi_addr_t fa, fb;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_av_insert(av, &a, 1, &fa, FI_MORE, NULL), 1);
	cr_expect_eq(fi_av_insert(av, &b, 1, &fb, 0, NULL), 1);
	expect_lookup(av, fa, "127.0.0.1", 5000);
	expect_lookup(av, fb, "127.0.0.1", 5001);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_insertsvc, node_service)
{
	struct pt_dom d;
	struct fid_av *av;
	fi_addr_t fa = FI_ADDR_NOTAVAIL;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_av_insertsvc(av, "127.0.0.1", "4000", &fa, 0, NULL), 1);
	cr_expect_neq(fa, FI_ADDR_NOTAVAIL);
	expect_lookup(av, fa, "127.0.0.1", 4000);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

/* fi_av(3), fi_av_insertsvc: "Applications may also pass in an FI_ADDR_STR formatted
 * address as the node parameter. In such cases, the service parameter must be NULL." */
Test(fi_av_insertsvc, addr_str_node)
{
	struct pt_dom d;
	struct fid_av *av;
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	int ret;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	ret = fi_av_insertsvc(av, "fi_sockaddr_in://127.0.0.1:4567", NULL, &fa, 0, NULL);
	cr_expect_eq(ret, 1, "fi_av_insertsvc(FI_ADDR_STR node, NULL service) = %d", ret);
	if (ret == 1)
		expect_lookup(av, fa, "127.0.0.1", 4567);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

static void remove_lookup(enum fi_av_type type)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sins[2] = { pt_sin("127.0.0.1", 5000), pt_sin("127.0.0.1", 5001) };
	struct sockaddr_in out;
	size_t len = sizeof(out);
	fi_addr_t fa[2], again;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, type);
	cr_assert_eq(fi_av_insert(av, sins, 2, fa, 0, NULL), 2);
	cr_expect_eq(fi_av_remove(av, &fa[0], 1, 0), 0);
	cr_expect_lt(fi_av_lookup(av, fa[0], &out, &len), 0, "lookup of a removed fi_addr succeeded");
	/* the other entry is untouched */
	expect_lookup(av, fa[1], "127.0.0.1", 5001);
	/* removing it again is an error */
	cr_expect_lt(fi_av_remove(av, &fa[0], 1, 0), 0);
	/* fi_av(3) NOTES: removal followed by re-insertion must work */
	cr_expect_eq(fi_av_insert(av, &sins[0], 1, &again, 0, NULL), 1);
	expect_lookup(av, again, "127.0.0.1", 5000);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_remove, lookup_removed_table)
{
	remove_lookup(FI_AV_TABLE);
}

Test(fi_av_remove, lookup_removed_map)
{
	remove_lookup(FI_AV_MAP);
}

Test(fi_av_remove, bad_flags)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sin = pt_sin("127.0.0.1", 5000);
	fi_addr_t fa;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_assert_eq(fi_av_insert(av, &sin, 1, &fa, 0, NULL), 1);
	cr_expect_eq(fi_av_remove(av, &fa, 1, FI_MORE), -FI_EBADFLAGS);
	expect_lookup(av, fa, "127.0.0.1", 5000);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_lookup, never_inserted)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in out;
	size_t len = sizeof(out);

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_lt(fi_av_lookup(av, 42, &out, &len), 0);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

/* fi_av(3): "If the actual address is larger than what can fit into the buffer, it will be
 * truncated. On output, addrlen is set to the size of the buffer needed". */
Test(fi_av_lookup, short_buffer)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sin = pt_sin("127.0.0.1", 5000);
	uint8_t out[sizeof(struct sockaddr_in)];
	size_t len = 4;
	fi_addr_t fa;
	int ret;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	cr_assert_eq(fi_av_insert(av, &sin, 1, &fa, 0, NULL), 1);
	memset(out, 0xa5, sizeof(out));
	ret = fi_av_lookup(av, fa, out, &len);
	cr_expect(ret == 0 || ret == -FI_ETOOSMALL, "fi_av_lookup = %d", ret);
	cr_expect_eq(len, sizeof(struct sockaddr_in), "needed length %zu", len);
	cr_expect_arr_eq(out, &sin, 4, "the first 4 bytes are not the address'");
	for (size_t i = 4; i < sizeof(out); i++)
		cr_expect_eq(out[i], 0xa5, "byte %zu written past addrlen", i);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_straddr, format)
{
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sin = pt_sin("127.0.0.1", 4242);
	char buf[128];
	size_t len = sizeof(buf);
	const char *s;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	s = fi_av_straddr(av, &sin, buf, &len);
	cr_assert_eq(s, buf, "fi_av_straddr must return buf");
	cr_expect_str_eq(buf, "fi_sockaddr_in://127.0.0.1:4242");
	cr_expect_eq(len, strlen("fi_sockaddr_in://127.0.0.1:4242") + 1);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_straddr, short_buffer)
{
	static const char full[] = "fi_sockaddr_in://127.0.0.1:4242";
	struct pt_dom d;
	struct fid_av *av;
	struct sockaddr_in sin = pt_sin("127.0.0.1", 4242);
	char buf[32];
	size_t len = 10;
	const char *s;

	pt_dom_open(&d);
	av = pt_av_open(d.domain, FI_AV_TABLE);
	memset(buf, 'X', sizeof(buf));
	s = fi_av_straddr(av, &sin, buf, &len);
	cr_assert_eq(s, buf);
	cr_expect_eq(len, sizeof(full), "needed length %zu", len);
	cr_expect_eq(strncmp(buf, full, 9), 0, "truncated text is not a prefix");
	for (size_t i = 10; i < sizeof(buf); i++)
		cr_expect_eq(buf[i], 'X', "byte %zu written past len", i);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(fi_av_bind, bad_flags)
{
	struct pt_dom d;
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fid_av *av;
	struct fid_eq *eq;

	pt_dom_open(&d);
	cr_assert_eq(fi_av_open(d.domain, &attr, &av, NULL), 0);
	cr_assert_eq(fi_eq_open(d.fabric, &eq_attr, &eq, NULL), 0);
	cr_expect_eq(fi_av_bind(av, &eq->fid, FI_MORE), -FI_EBADFLAGS);
	cr_expect_eq(fi_close(&av->fid), 0);
	cr_expect_eq(fi_close(&eq->fid), 0);
	pt_dom_close(&d);
}

/* fi_av(3): "If an AV is opened with FI_EVENT, any insertions attempted before an EQ is
 * bound to the AV will fail with -FI_ENOEQ." */
Test(fi_av_insert, event_without_eq)
{
	struct pt_dom d;
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct sockaddr_in sin = pt_sin("127.0.0.1", 5000);
	struct fid_av *av;
	fi_addr_t fa;

	pt_dom_open(&d);
	cr_assert_eq(fi_av_open(d.domain, &attr, &av, NULL), 0);
	cr_expect_eq(fi_av_insert(av, &sin, 1, &fa, 0, NULL), -FI_ENOEQ);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

/* fi_av(3) FI_EVENT: one error entry per failed address (data = its index), then one
 * FI_AV_COMPLETE whose data is the number inserted; the call itself returns 0. */
Test(fi_av_insert, event_with_eq)
{
	struct pt_dom d;
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct sockaddr_in sins[3] = { pt_sin("127.0.0.1", 5000), pt_sin("127.0.0.1", 0),
				       pt_sin("127.0.0.1", 5002) };
	struct fi_eq_err_entry err;
	struct fi_eq_entry ev;
	struct fid_av *av;
	struct fid_eq *eq;
	fi_addr_t fa[3];
	uint32_t event = 0;
	int ctx;
	ssize_t ret;

	pt_dom_open(&d);
	cr_assert_eq(fi_av_open(d.domain, &attr, &av, NULL), 0);
	cr_assert_eq(fi_eq_open(d.fabric, &eq_attr, &eq, NULL), 0);
	cr_assert_eq(fi_av_bind(av, &eq->fid, 0), 0);
	cr_expect_eq(fi_av_insert(av, sins, 3, fa, 0, &ctx), 0);

	ret = fi_eq_read(eq, &event, &ev, sizeof(ev), 0);
	cr_expect_eq(ret, -FI_EAVAIL, "the error entry must come first: fi_eq_read = %zd", ret);
	memset(&err, 0, sizeof(err));
	ret = fi_eq_readerr(eq, &err, 0);
	cr_expect_gt(ret, 0, "fi_eq_readerr = %zd", ret);
	cr_expect_eq(err.fid, &av->fid);
	cr_expect_eq(err.context, &ctx);
	cr_expect_eq(err.data, 1, "index of the failed address: %llu", (unsigned long long)err.data);
	cr_expect_gt(err.err, 0, "err must be a positive fabric errno");

	ret = fi_eq_read(eq, &event, &ev, sizeof(ev), 0);
	cr_expect_eq(ret, (ssize_t)sizeof(ev), "fi_eq_read = %zd", ret);
	cr_expect_eq(event, FI_AV_COMPLETE);
	cr_expect_eq(ev.fid, &av->fid);
	cr_expect_eq(ev.context, &ctx);
	cr_expect_eq(ev.data, 2, "inserted count %llu", (unsigned long long)ev.data);
	cr_expect_eq(fi_eq_read(eq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);

	cr_expect_eq(fa[1], FI_ADDR_NOTAVAIL);
	expect_lookup(av, fa[0], "127.0.0.1", 5000);
	expect_lookup(av, fa[2], "127.0.0.1", 5002);
	/* the EQ is bound: it cannot go first */
	cr_expect_eq(fi_close(&eq->fid), -FI_EBUSY);
	cr_expect_eq(fi_close(&av->fid), 0);
	cr_expect_eq(fi_close(&eq->fid), 0);
	pt_dom_close(&d);
}

/* Many entries: every other one removed, the rest still there; FI_AV_MAP
 * hands removed entries out again, FI_AV_TABLE keeps its indexes consecutive. */
static void remove_many(enum fi_av_type type)
{
	enum { N = 100000 };
	struct sockaddr_in *sins = calloc(N, sizeof(*sins)), out;
	fi_addr_t *fa = calloc(N, sizeof(*fa)), *odd = calloc(N / 2, sizeof(*odd)), again;
	struct fid_av *av;
	struct pt_dom d;
	size_t len, i;

	cr_assert(sins && fa && odd);
	for (i = 0; i < N; i++) {
		sins[i].sin_family = AF_INET;
		sins[i].sin_addr.s_addr = htonl(0x0a000000u + (uint32_t)(i / 50000));
		sins[i].sin_port = htons((uint16_t)(1000 + i % 50000));
	}
	pt_dom_open(&d);
	av = pt_av_open(d.domain, type);
	cr_assert_eq(fi_av_insert(av, sins, N, fa, 0, NULL), N);
	for (i = 0; i < N / 2; i++)
		odd[i] = fa[2 * i + 1];
	cr_assert_eq(fi_av_remove(av, odd, N / 2, 0), 0);
	for (i = 0; i < N; i++) {
		len = sizeof(out);
		if (i % 2) {
			cr_assert_lt(fi_av_lookup(av, fa[i], &out, &len), 0, "entry %zu was removed", i);
			continue;
		}
		cr_assert_eq(fi_av_lookup(av, fa[i], &out, &len), 0, "entry %zu is kept", i);
		cr_assert_eq(out.sin_addr.s_addr, sins[i].sin_addr.s_addr);
		cr_assert_eq(out.sin_port, sins[i].sin_port);
	}
	cr_assert_eq(fi_av_insert(av, &sins[1], 1, &again, 0, NULL), 1);
	if (type == FI_AV_TABLE)
		cr_assert_eq(again, (fi_addr_t)N, "a table's next index");
	else
		cr_assert(again % 2 == 1 && again < N, "a map reuses a removed entry (%lu)",
			  (unsigned long)again);
	len = sizeof(out);
	cr_assert_eq(fi_av_lookup(av, again, &out, &len), 0);
	cr_assert_eq(out.sin_port, sins[1].sin_port);
	cr_assert_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
	free(sins);
	free(fa);
	free(odd);
}

Test(fi_av_remove, many_table)
{
	remove_many(FI_AV_TABLE);
}

Test(fi_av_remove, many_map)
{
	remove_many(FI_AV_MAP);
}
