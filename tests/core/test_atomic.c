/* SPDX-License-Identifier: BSD-2-Clause */
/* test_atomic.c: unit tests of core/braid_atomic.c (which op on which datatype, and what it does). */
#include <complex.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fi_errno.h>

#include <rdma/fi_domain.h>	/* libfabric's collective values, which core refuses */

#include "braid_atomic.h"

/* every value below is worked out by hand, never with braid_atomic.c */

#define NDT	(BRAID_ADT_LONG_DOUBLE_COMPLEX + 1)	/* the point-to-point datatypes */
#define ELEM_MAX	32			/* the largest element (long double complex) */

static const char *const op_names[BRAID_AOP_LAST] = {
	"MIN", "MAX", "SUM", "PROD", "LOR", "LAND", "BOR", "BAND", "LXOR", "BXOR",
	"ATOMIC_READ", "ATOMIC_WRITE", "CSWAP", "CSWAP_NE", "CSWAP_LE", "CSWAP_LT",
	"CSWAP_GE", "CSWAP_GT", "MSWAP",
};

static const char *const dt_names[NDT] = {
	"INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64",
	"FLOAT", "DOUBLE", "FLOAT_COMPLEX", "DOUBLE_COMPLEX", "LONG_DOUBLE", "LONG_DOUBLE_COMPLEX",
};

static bool is_compare_op(enum braid_aop op)
{
	return op >= BRAID_AOP_CSWAP && op <= BRAID_AOP_MSWAP;
}

/* ---- which op on which datatype ---- */

#define INTS	"yyyyyyyy......"	/* one character per datatype BRAID_ADT_INT8..BRAID_ADT_LONG_DOUBLE_COMPLEX */
#define REALS	"yyyyyyyyyy..y."	/* integers, float, double, long double: not complex */
#define ALL	"yyyyyyyyyyyyyy"

/* the datatypes each op takes, and its kinds of call: "w" write, "f" fetch, "c" compare */
static const struct {
	const char *types, *kinds;
} by_hand[BRAID_AOP_LAST] = {
	[BRAID_AOP_MIN] = { REALS, "wf." },	[BRAID_AOP_MAX] = { REALS, "wf." },
	[BRAID_AOP_SUM] = { ALL, "wf." },	[BRAID_AOP_PROD] = { ALL, "wf." },
	[BRAID_AOP_LOR] = { INTS, "wf." },	[BRAID_AOP_LAND] = { INTS, "wf." },
	[BRAID_AOP_BOR] = { INTS, "wf." },	[BRAID_AOP_BAND] = { INTS, "wf." },
	[BRAID_AOP_LXOR] = { INTS, "wf." },	[BRAID_AOP_BXOR] = { INTS, "wf." },
	[BRAID_AOP_ATOMIC_READ] = { ALL, ".f." },
	[BRAID_AOP_ATOMIC_WRITE] = { ALL, "wf." },
	[BRAID_AOP_CSWAP] = { ALL, "..c" },	[BRAID_AOP_CSWAP_NE] = { ALL, "..c" },
	[BRAID_AOP_CSWAP_LE] = { REALS, "..c" },	[BRAID_AOP_CSWAP_LT] = { REALS, "..c" },
	[BRAID_AOP_CSWAP_GE] = { REALS, "..c" },	[BRAID_AOP_CSWAP_GT] = { REALS, "..c" },
	[BRAID_AOP_MSWAP] = { INTS, "..c" },
};

Test(braid_atomic_valid, every_op_datatype_and_kind)
{
	int op, dt, kind;

	for (op = 0; op < BRAID_AOP_LAST; op++)
		for (dt = 0; dt < NDT; dt++)
			for (kind = 0; kind < 3; kind++) {
				bool want = by_hand[op].types[dt] == 'y' &&
					    by_hand[op].kinds[kind] != '.';

				cr_assert_eq(braid_atomic_valid(op, dt, kind), want,
					     "%s on %s, kind %d: want %d", op_names[op],
					     dt_names[dt], kind, want);
			}
}

Test(braid_atomic_valid, out_of_range_is_false)
{
	cr_assert(!braid_atomic_valid(BRAID_AOP_LAST, BRAID_ADT_INT32, BRAID_ATOMIC_WRITE_KIND));
	cr_assert(!braid_atomic_valid((enum braid_aop)1000, BRAID_ADT_INT32, BRAID_ATOMIC_FETCH_KIND));
	cr_assert(!braid_atomic_valid((enum braid_aop)-1, BRAID_ADT_INT32, BRAID_ATOMIC_FETCH_KIND));
	cr_assert(!braid_atomic_valid((enum braid_aop)FI_NOOP, BRAID_ADT_INT32, BRAID_ATOMIC_WRITE_KIND));
	cr_assert(!braid_atomic_valid(BRAID_AOP_SUM, (enum braid_adt)99, BRAID_ATOMIC_WRITE_KIND));
	cr_assert(!braid_atomic_valid(BRAID_AOP_SUM, (enum braid_adt)-1, BRAID_ATOMIC_WRITE_KIND));
	cr_assert(!braid_atomic_valid(BRAID_AOP_SUM, (enum braid_adt)FI_VOID, BRAID_ATOMIC_WRITE_KIND));
	cr_assert(!braid_atomic_valid(BRAID_AOP_SUM, BRAID_ADT_INT32, (enum braid_atomic_kind)3));
	cr_assert(!braid_atomic_valid(BRAID_AOP_SUM, BRAID_ADT_INT32, (enum braid_atomic_kind)-1));
	cr_assert(braid_atomic_valid(BRAID_AOP_SUM, BRAID_ADT_INT32, BRAID_ATOMIC_WRITE_KIND), "the control");
}

Test(braid_atomic_dt_size, every_datatype)
{
	static const size_t want[NDT] = { 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16,
					  sizeof(long double), 2 * sizeof(long double) };
	int dt;

	for (dt = 0; dt < NDT; dt++)
		cr_assert_eq(braid_atomic_dt_size(dt), want[dt], "%s", dt_names[dt]);
	cr_assert_eq(braid_atomic_dt_size((enum braid_adt)99), 0);
	cr_assert_eq(braid_atomic_dt_size((enum braid_adt)-1), 0);
	cr_assert_eq(braid_atomic_dt_size((enum braid_adt)FI_VOID), 0);
}

/* apply @op on @dt to one element; Return: what apply returned, *@touched: whether target or result changed */
static int apply_once(enum braid_aop op, enum braid_adt dt, bool *touched)
{
	uint8_t target[ELEM_MAX], operand[ELEM_MAX] = { 0 }, compare[ELEM_MAX] = { 0 };
	uint8_t result[ELEM_MAX], mark[ELEM_MAX];
	int ret;

	memset(mark, 0x5a, sizeof(mark));
	memcpy(target, mark, sizeof(target));
	memcpy(result, mark, sizeof(result));
	ret = braid_atomic_apply(op, dt, target, operand, compare, result, 1);
	*touched = memcmp(target, mark, sizeof(target)) || memcmp(result, mark, sizeof(result));
	return ret;
}

Test(braid_atomic_apply, rejects_what_is_not_valid_and_touches_nothing)
{
	static const struct {
		enum braid_aop op;
		enum braid_adt dt;
	} bad[] = {
		{ BRAID_AOP_BOR, BRAID_ADT_FLOAT }, { BRAID_AOP_BAND, BRAID_ADT_DOUBLE }, { BRAID_AOP_BXOR, BRAID_ADT_LONG_DOUBLE },
		{ BRAID_AOP_LOR, BRAID_ADT_DOUBLE }, { BRAID_AOP_LAND, BRAID_ADT_FLOAT }, { BRAID_AOP_LXOR, BRAID_ADT_DOUBLE_COMPLEX },
		{ BRAID_AOP_MIN, BRAID_ADT_FLOAT_COMPLEX }, { BRAID_AOP_MAX, BRAID_ADT_DOUBLE_COMPLEX },
		{ BRAID_AOP_CSWAP_LT, BRAID_ADT_DOUBLE_COMPLEX }, { BRAID_AOP_CSWAP_GE, BRAID_ADT_LONG_DOUBLE_COMPLEX },
		{ BRAID_AOP_MSWAP, BRAID_ADT_DOUBLE }, { BRAID_AOP_MSWAP, BRAID_ADT_FLOAT_COMPLEX },
		{ BRAID_AOP_LAST, BRAID_ADT_INT32 }, { (enum braid_aop)1000, BRAID_ADT_UINT8 },
		{ (enum braid_aop)-1, BRAID_ADT_UINT8 }, { (enum braid_aop)FI_NOOP, BRAID_ADT_INT64 },
		{ BRAID_AOP_SUM, (enum braid_adt)99 }, { BRAID_AOP_SUM, (enum braid_adt)-1 }, { BRAID_AOP_SUM, (enum braid_adt)FI_VOID },
	};
	bool touched;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(apply_once(bad[i].op, bad[i].dt, &touched), -FI_EOPNOTSUPP,
			     "case %zu", i);
		cr_assert(!touched, "case %zu", i);
	}
}

Test(braid_atomic_apply, accepts_exactly_what_some_kind_takes)
{
	bool touched;
	int op, dt;

	for (op = 0; op < BRAID_AOP_LAST; op++)
		for (dt = 0; dt < NDT; dt++)
			cr_assert_eq(apply_once(op, dt, &touched),
				     by_hand[op].types[dt] == 'y' ? 0 : -FI_EOPNOTSUPP,
				     "%s on %s", op_names[op], dt_names[dt]);
}

Test(braid_atomic_apply, missing_operand_or_compare)
{
	uint32_t target = 7, operand = 1, compare = 7, result = 0;

	cr_assert_eq(braid_atomic_apply(BRAID_AOP_SUM, BRAID_ADT_UINT32, &target, NULL, NULL, NULL, 1), -FI_EINVAL);
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_CSWAP, BRAID_ADT_UINT32, &target, &operand, NULL, &result, 1),
		     -FI_EINVAL);
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_CSWAP, BRAID_ADT_UINT32, &target, NULL, &compare, &result, 1),
		     -FI_EINVAL);
	cr_assert(target == 7 && result == 0, "nothing touched");
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_SUM, BRAID_ADT_UINT32, &target, NULL, NULL, NULL, 0), 0,
		     "no elements: nothing needed");
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_ATOMIC_READ, BRAID_ADT_UINT32, &target, NULL, NULL, &result, 1), 0);
	cr_assert_eq(result, 7);
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_SUM, BRAID_ADT_UINT32, &target, &operand, NULL, NULL, 1), 0,
		     "compare and result are not needed");
	cr_assert_eq(target, 8);
}

/* ---- integers ---- */

static const enum braid_adt int_types[] = {
	BRAID_ADT_INT8, BRAID_ADT_UINT8, BRAID_ADT_INT16, BRAID_ADT_UINT16, BRAID_ADT_INT32, BRAID_ADT_UINT32, BRAID_ADT_INT64, BRAID_ADT_UINT64,
};

static size_t int_size(enum braid_adt dt)
{
	switch (dt) {
	case BRAID_ADT_INT8: case BRAID_ADT_UINT8: return 1;
	case BRAID_ADT_INT16: case BRAID_ADT_UINT16: return 2;
	case BRAID_ADT_INT32: case BRAID_ADT_UINT32: return 4;
	default: return 8;
	}
}

static bool int_signed(enum braid_adt dt)
{
	return dt == BRAID_ADT_INT8 || dt == BRAID_ADT_INT16 || dt == BRAID_ADT_INT32 || dt == BRAID_ADT_INT64;
}

/* store @v, reduced modulo 2^bits, as the integer @dt at @buf */
static void int_put(enum braid_adt dt, void *buf, int64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;
	uint64_t u64 = (uint64_t)v;

	switch (int_size(dt)) {
	case 1: memcpy(buf, &u8, 1); break;
	case 2: memcpy(buf, &u16, 2); break;
	case 4: memcpy(buf, &u32, 4); break;
	default: memcpy(buf, &u64, 8); break;
	}
}

/* the integer @dt at @buf, sign- or zero-extended (BRAID_ADT_UINT64: its bits) */
static int64_t int_get(enum braid_adt dt, const void *buf)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (int_size(dt)) {
	case 1: memcpy(&u8, buf, 1); return int_signed(dt) ? (int64_t)(int8_t)u8 : (int64_t)u8;
	case 2: memcpy(&u16, buf, 2); return int_signed(dt) ? (int64_t)(int16_t)u16 : (int64_t)u16;
	case 4: memcpy(&u32, buf, 4); return int_signed(dt) ? (int64_t)(int32_t)u32 : (int64_t)u32;
	default: memcpy(&u64, buf, 8); return (int64_t)u64;
	}
}

/* @op on the target @t with operand @o (and compare @c) leaves @want */
struct int_case {
	enum braid_adt dt;	/* of the typed cases only */
	enum braid_aop op;
	int64_t t, o, c, want;
};

/* one element of @dt through @k, with and without a result buffer */
static void int_case_check(enum braid_adt dt, const struct int_case *k)
{
	uint8_t target[8], operand[8], compare[8], result[8];
	const void *cmp = is_compare_op(k->op) ? compare : NULL;
	const char *op = op_names[k->op], *dtn = dt_names[dt];

	int_put(dt, target, k->t);
	int_put(dt, operand, k->o);
	int_put(dt, compare, k->c);
	memset(result, 0xa5, sizeof(result));
	cr_assert_eq(braid_atomic_apply(k->op, dt, target, k->op == BRAID_AOP_ATOMIC_READ ? NULL : operand,
					cmp, result, 1), 0, "%s on %s", op, dtn);
	cr_assert_eq(int_get(dt, target), k->want, "%s on %s of %lld, %lld, %lld: %lld, want %lld",
		     op, dtn, (long long)k->t, (long long)k->o, (long long)k->c,
		     (long long)int_get(dt, target), (long long)k->want);
	cr_assert_eq(int_get(dt, result), k->t, "%s on %s: fetched %lld, want %lld", op, dtn,
		     (long long)int_get(dt, result), (long long)k->t);
	if (k->op == BRAID_AOP_ATOMIC_READ)
		return;
	int_put(dt, target, k->t);
	cr_assert_eq(braid_atomic_apply(k->op, dt, target, operand, cmp, NULL, 1), 0);
	cr_assert_eq(int_get(dt, target), k->want, "%s on %s without a result", op, dtn);
}

/* small values every width holds: 12 = 0b1100, 10 = 0b1010 */
static const struct int_case every_width[] = {
	{ 0, BRAID_AOP_MIN, 12, 10, 0, 10 },	{ 0, BRAID_AOP_MIN, 10, 12, 0, 10 },
	{ 0, BRAID_AOP_MAX, 12, 10, 0, 12 },	{ 0, BRAID_AOP_MAX, 10, 12, 0, 12 },
	{ 0, BRAID_AOP_SUM, 12, 10, 0, 22 },	{ 0, BRAID_AOP_PROD, 12, 10, 0, 120 },
	{ 0, BRAID_AOP_LOR, 12, 10, 0, 1 },	{ 0, BRAID_AOP_LOR, 0, 10, 0, 1 },
	{ 0, BRAID_AOP_LOR, 12, 0, 0, 1 },	{ 0, BRAID_AOP_LOR, 0, 0, 0, 0 },
	{ 0, BRAID_AOP_LAND, 12, 10, 0, 1 },	{ 0, BRAID_AOP_LAND, 0, 10, 0, 0 },
	{ 0, BRAID_AOP_LAND, 12, 0, 0, 0 },	{ 0, BRAID_AOP_LAND, 0, 0, 0, 0 },
	{ 0, BRAID_AOP_LXOR, 12, 10, 0, 0 },	{ 0, BRAID_AOP_LXOR, 0, 10, 0, 1 },
	{ 0, BRAID_AOP_LXOR, 12, 0, 0, 1 },	{ 0, BRAID_AOP_LXOR, 0, 0, 0, 0 },
	{ 0, BRAID_AOP_BOR, 12, 10, 0, 14 },	{ 0, BRAID_AOP_BAND, 12, 10, 0, 8 },
	{ 0, BRAID_AOP_BXOR, 12, 10, 0, 6 },
	{ 0, BRAID_AOP_ATOMIC_READ, 12, 0, 0, 12 },
	{ 0, BRAID_AOP_ATOMIC_WRITE, 12, 10, 0, 10 },
	{ 0, BRAID_AOP_CSWAP, 12, 10, 12, 10 },	{ 0, BRAID_AOP_CSWAP, 12, 10, 11, 12 },
	{ 0, BRAID_AOP_CSWAP_NE, 12, 10, 11, 10 },	{ 0, BRAID_AOP_CSWAP_NE, 12, 10, 12, 12 },
	{ 0, BRAID_AOP_CSWAP_LE, 12, 10, 11, 10 },	{ 0, BRAID_AOP_CSWAP_LE, 12, 10, 12, 10 },
	{ 0, BRAID_AOP_CSWAP_LE, 12, 10, 13, 12 },
	{ 0, BRAID_AOP_CSWAP_LT, 12, 10, 11, 10 },	{ 0, BRAID_AOP_CSWAP_LT, 12, 10, 12, 12 },
	{ 0, BRAID_AOP_CSWAP_GE, 12, 10, 13, 10 },	{ 0, BRAID_AOP_CSWAP_GE, 12, 10, 12, 10 },
	{ 0, BRAID_AOP_CSWAP_GE, 12, 10, 11, 12 },
	{ 0, BRAID_AOP_CSWAP_GT, 12, 10, 13, 10 },	{ 0, BRAID_AOP_CSWAP_GT, 12, 10, 12, 12 },
	/* (0b1010 & 0b0011) | (0b1100 & ~0b0011) = 0b0010 | 0b1100 */
	{ 0, BRAID_AOP_MSWAP, 12, 10, 3, 14 },	{ 0, BRAID_AOP_MSWAP, 12, 10, 0, 12 },
	{ 0, BRAID_AOP_MSWAP, 12, 10, -1, 10 },
};

Test(braid_atomic_apply, every_integer_op_on_every_width)
{
	size_t i, j;

	for (i = 0; i < sizeof(int_types) / sizeof(int_types[0]); i++)
		for (j = 0; j < sizeof(every_width) / sizeof(every_width[0]); j++)
			int_case_check(int_types[i], &every_width[j]);
}

#define U64(x)	((int64_t)UINT64_C(x))	/* the bits of an BRAID_ADT_UINT64 value */

/* signedness, wraparound and the high bits: each for its own datatype */
static const struct int_case typed[] = {
	/* signed compare signed, unsigned unsigned */
	{ BRAID_ADT_INT8, BRAID_AOP_MIN, -5, 3, 0, -5 },		{ BRAID_ADT_INT8, BRAID_AOP_MAX, -5, 3, 0, 3 },
	{ BRAID_ADT_UINT8, BRAID_AOP_MIN, 0xfb, 3, 0, 3 },		{ BRAID_ADT_UINT8, BRAID_AOP_MAX, 0xfb, 3, 0, 0xfb },
	{ BRAID_ADT_INT16, BRAID_AOP_MIN, -5, 3, 0, -5 },		{ BRAID_ADT_INT16, BRAID_AOP_MAX, -5, 3, 0, 3 },
	{ BRAID_ADT_UINT16, BRAID_AOP_MIN, 0xfffb, 3, 0, 3 },		{ BRAID_ADT_UINT16, BRAID_AOP_MAX, 0xfffb, 3, 0, 0xfffb },
	{ BRAID_ADT_INT32, BRAID_AOP_MIN, -5, 3, 0, -5 },		{ BRAID_ADT_INT32, BRAID_AOP_MAX, -5, 3, 0, 3 },
	{ BRAID_ADT_UINT32, BRAID_AOP_MIN, 0xfffffffb, 3, 0, 3 },
	{ BRAID_ADT_UINT32, BRAID_AOP_MAX, 0xfffffffb, 3, 0, 0xfffffffb },
	{ BRAID_ADT_INT64, BRAID_AOP_MIN, -5, 3, 0, -5 },		{ BRAID_ADT_INT64, BRAID_AOP_MAX, -5, 3, 0, 3 },
	{ BRAID_ADT_UINT64, BRAID_AOP_MIN, U64(0xfffffffffffffffb), 3, 0, 3 },
	{ BRAID_ADT_UINT64, BRAID_AOP_MAX, U64(0xfffffffffffffffb), 3, 0, U64(0xfffffffffffffffb) },
	{ BRAID_ADT_INT8, BRAID_AOP_CSWAP_GT, -2, 7, -1, 7 },		/* -1 > -2 */
	{ BRAID_ADT_UINT8, BRAID_AOP_CSWAP_GT, 0xfe, 7, 1, 0xfe },	/* 1 > 254: no */
	{ BRAID_ADT_INT16, BRAID_AOP_CSWAP_LT, 5, 9, -7, 9 },		/* -7 < 5 */
	{ BRAID_ADT_UINT16, BRAID_AOP_CSWAP_LT, 5, 9, 0xfff9, 5 },	/* 65529 < 5: no */
	{ BRAID_ADT_INT32, BRAID_AOP_CSWAP_GE, -1, 4, 0, 4 },		/* 0 >= -1 */
	{ BRAID_ADT_UINT32, BRAID_AOP_CSWAP_GE, 0xffffffff, 4, 0, 0xffffffff },
	{ BRAID_ADT_INT64, BRAID_AOP_CSWAP_LE, 3, 4, INT64_MIN, 4 },
	{ BRAID_ADT_UINT64, BRAID_AOP_CSWAP_LE, 3, 4, U64(0x8000000000000000), 3 },
	/* wraparound, two's complement */
	{ BRAID_ADT_INT8, BRAID_AOP_SUM, 127, 1, 0, -128 },		{ BRAID_ADT_UINT8, BRAID_AOP_SUM, 255, 1, 0, 0 },
	{ BRAID_ADT_INT8, BRAID_AOP_PROD, -128, -1, 0, -128 },	{ BRAID_ADT_UINT8, BRAID_AOP_PROD, 16, 16, 0, 0 },
	{ BRAID_ADT_INT16, BRAID_AOP_SUM, 32767, 1, 0, -32768 },
	{ BRAID_ADT_INT16, BRAID_AOP_PROD, -300, 300, 0, -24464 },	/* -90000 + 2 * 65536 - 65536 */
	{ BRAID_ADT_UINT16, BRAID_AOP_PROD, 65535, 65535, 0, 1 },	/* 0xfffe0001 */
	{ BRAID_ADT_INT32, BRAID_AOP_SUM, INT32_MAX, 1, 0, INT32_MIN },
	{ BRAID_ADT_UINT32, BRAID_AOP_SUM, 0xffffffff, 2, 0, 1 },	{ BRAID_ADT_UINT32, BRAID_AOP_PROD, 0x10000, 0x10000, 0, 0 },
	{ BRAID_ADT_INT64, BRAID_AOP_SUM, INT64_MAX, 1, 0, INT64_MIN },
	{ BRAID_ADT_INT64, BRAID_AOP_PROD, INT64_MIN, -1, 0, INT64_MIN },
	{ BRAID_ADT_UINT64, BRAID_AOP_SUM, U64(0xffffffffffffffff), 2, 0, 1 },
	{ BRAID_ADT_UINT64, BRAID_AOP_PROD, U64(0x100000000), U64(0x100000000), 0, 0 },
	{ BRAID_ADT_UINT64, BRAID_AOP_PROD, U64(0x100000001), 3, 0, U64(0x300000003) },
	/* all the bits of the width */
	{ BRAID_ADT_INT8, BRAID_AOP_BXOR, -1, 0x0f, 0, -16 },		{ BRAID_ADT_INT16, BRAID_AOP_MSWAP, -1, 0, 0xff, -256 },
	{ BRAID_ADT_INT32, BRAID_AOP_BAND, -1, 0x0f0f0f0f, 0, 0x0f0f0f0f },
	{ BRAID_ADT_UINT64, BRAID_AOP_BXOR, U64(0xffff0000ffff0000), U64(0x0f0f0f0f0f0f0f0f), 0,
	  U64(0xf0f00f0ff0f00f0f) },
	{ BRAID_ADT_UINT64, BRAID_AOP_BAND, U64(0xffff0000ffff0000), U64(0x0f0f0f0f0f0f0f0f), 0,
	  U64(0x0f0f00000f0f0000) },
	{ BRAID_ADT_UINT64, BRAID_AOP_BOR, U64(0xff00000000000000), 0xff, 0, U64(0xff000000000000ff) },
	{ BRAID_ADT_UINT64, BRAID_AOP_MSWAP, U64(0x1111111111111111), U64(0x2222222222222222),
	  U64(0xffffffff00000000), U64(0x2222222211111111) },
	{ BRAID_ADT_INT64, BRAID_AOP_MSWAP, 0, -1, U64(0x8000000000000001), U64(0x8000000000000001) },
	{ BRAID_ADT_UINT16, BRAID_AOP_LOR, 0x100, 0, 0, 1 },		{ BRAID_ADT_UINT32, BRAID_AOP_LXOR, 0x10000, 0, 0, 1 },
	{ BRAID_ADT_INT8, BRAID_AOP_LAND, -128, -1, 0, 1 },
	{ BRAID_ADT_UINT64, BRAID_AOP_LAND, U64(0x10000000000), 1, 0, 1 },
	{ BRAID_ADT_INT64, BRAID_AOP_LXOR, INT64_MIN, U64(0x100000000), 0, 0 },
	{ BRAID_ADT_UINT64, BRAID_AOP_CSWAP, U64(0x8000000000000001), 5, 1, U64(0x8000000000000001) },
	{ BRAID_ADT_UINT64, BRAID_AOP_CSWAP_NE, U64(0x8000000000000001), 5, 1, 5 },
	{ BRAID_ADT_UINT32, BRAID_AOP_CSWAP, 0x10005, 5, 5, 0x10005 },
};

Test(braid_atomic_apply, signedness_wraparound_and_high_bits)
{
	size_t i;

	for (i = 0; i < sizeof(typed) / sizeof(typed[0]); i++)
		int_case_check(typed[i].dt, &typed[i]);
}

#ifdef __SIZEOF_INT128__
Test(braid_atomic_apply, int128)
{
	unsigned __int128 t = UINT64_MAX, o = 1, r = 0, c = 0;
	__int128 s = -1, so = 1;

	cr_assert_eq(braid_atomic_dt_size(BRAID_ADT_INT128), 16);
	cr_assert_eq(braid_atomic_dt_size(BRAID_ADT_UINT128), 16);
	cr_assert(braid_atomic_valid(BRAID_AOP_MSWAP, BRAID_ADT_UINT128, BRAID_ATOMIC_COMPARE_KIND));
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_SUM, BRAID_ADT_UINT128, &t, &o, NULL, &r, 1), 0);
	cr_assert(t == (unsigned __int128)1 << 64, "the carry crosses 64 bits");
	cr_assert(r == UINT64_MAX);
	o = (unsigned __int128)0xab << 100;
	c = (unsigned __int128)0xff << 100;
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MSWAP, BRAID_ADT_UINT128, &t, &o, &c, NULL, 1), 0);
	cr_assert(t == (((unsigned __int128)0xab << 100) | ((unsigned __int128)1 << 64)));
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MIN, BRAID_ADT_INT128, &s, &so, NULL, NULL, 1), 0);
	cr_assert(s == -1, "signed: -1 < 1");
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MIN, BRAID_ADT_UINT128, &s, &so, NULL, NULL, 1), 0);
	cr_assert(s == 1, "unsigned: 1 < 2^128 - 1");
}
#else
Test(braid_atomic_apply, int128_unsupported)
{
	cr_assert_eq(braid_atomic_dt_size(BRAID_ADT_INT128), 0);
	cr_assert(!braid_atomic_valid(BRAID_AOP_SUM, BRAID_ADT_UINT128, BRAID_ATOMIC_WRITE_KIND));
}
#endif

/* ---- reals ---- */

static const enum braid_adt real_types[] = { BRAID_ADT_FLOAT, BRAID_ADT_DOUBLE, BRAID_ADT_LONG_DOUBLE };

static void real_put(enum braid_adt dt, void *buf, long double v)
{
	float f = (float)v;
	double d = (double)v;

	if (dt == BRAID_ADT_FLOAT)
		memcpy(buf, &f, sizeof(f));
	else if (dt == BRAID_ADT_DOUBLE)
		memcpy(buf, &d, sizeof(d));
	else
		memcpy(buf, &v, sizeof(v));
}

static long double real_get(enum braid_adt dt, const void *buf)
{
	float f;
	double d;
	long double l;

	if (dt == BRAID_ADT_FLOAT) {
		memcpy(&f, buf, sizeof(f));
		return f;
	}
	if (dt == BRAID_ADT_DOUBLE) {
		memcpy(&d, buf, sizeof(d));
		return d;
	}
	memcpy(&l, buf, sizeof(l));
	return l;
}

struct real_case {
	enum braid_aop op;
	long double t, o, c, want;
};

/* values exact in a float */
static const struct real_case real_cases[] = {
	{ BRAID_AOP_MIN, 1.5, 2.25, 0, 1.5 },		{ BRAID_AOP_MIN, 2.25, 1.5, 0, 1.5 },
	{ BRAID_AOP_MIN, -0.5, 0.25, 0, -0.5 },	{ BRAID_AOP_MIN, 0.25, -0.5, 0, -0.5 },
	{ BRAID_AOP_MAX, 1.5, 2.25, 0, 2.25 },		{ BRAID_AOP_MAX, 2.25, 1.5, 0, 2.25 },
	{ BRAID_AOP_MAX, -3, -0.5, 0, -0.5 },
	{ BRAID_AOP_SUM, 1.5, 2.25, 0, 3.75 },		{ BRAID_AOP_SUM, -1.5, 0.25, 0, -1.25 },
	{ BRAID_AOP_PROD, 1.5, 2.25, 0, 3.375 },	{ BRAID_AOP_PROD, -2, 0.75, 0, -1.5 },
	{ BRAID_AOP_ATOMIC_READ, 1.5, 0, 0, 1.5 },	{ BRAID_AOP_ATOMIC_WRITE, 1.5, 2.25, 0, 2.25 },
	{ BRAID_AOP_CSWAP, 1.5, 2.25, 1.5, 2.25 },	{ BRAID_AOP_CSWAP, 1.5, 2.25, 1.25, 1.5 },
	{ BRAID_AOP_CSWAP_NE, 1.5, 2.25, 1.25, 2.25 },	{ BRAID_AOP_CSWAP_NE, 1.5, 2.25, 1.5, 1.5 },
	{ BRAID_AOP_CSWAP_LE, 1.5, 2.25, 1.25, 2.25 },	{ BRAID_AOP_CSWAP_LE, 1.5, 2.25, 1.5, 2.25 },
	{ BRAID_AOP_CSWAP_LE, 1.5, 2.25, 1.75, 1.5 },
	{ BRAID_AOP_CSWAP_LT, 1.5, 2.25, 1.25, 2.25 },	{ BRAID_AOP_CSWAP_LT, 1.5, 2.25, 1.5, 1.5 },
	{ BRAID_AOP_CSWAP_GE, 1.5, 2.25, 1.75, 2.25 },	{ BRAID_AOP_CSWAP_GE, 1.5, 2.25, 1.5, 2.25 },
	{ BRAID_AOP_CSWAP_GE, 1.5, 2.25, 1.25, 1.5 },
	{ BRAID_AOP_CSWAP_GT, 1.5, 2.25, 1.75, 2.25 },	{ BRAID_AOP_CSWAP_GT, 1.5, 2.25, 1.5, 1.5 },
	{ BRAID_AOP_CSWAP_GT, -1, 4, -0.5, 4 },	{ BRAID_AOP_CSWAP_LT, -1, 4, -0.5, -1 },
};

Test(braid_atomic_apply, every_real_op_on_float_double_long_double)
{
	uint8_t target[16], operand[16], compare[16], result[16];
	size_t i, j;

	for (i = 0; i < sizeof(real_types) / sizeof(real_types[0]); i++)
		for (j = 0; j < sizeof(real_cases) / sizeof(real_cases[0]); j++) {
			enum braid_adt dt = real_types[i];
			const struct real_case *k = &real_cases[j];

			real_put(dt, target, k->t);
			real_put(dt, operand, k->o);
			real_put(dt, compare, k->c);
			memset(result, 0xa5, sizeof(result));
			cr_assert_eq(braid_atomic_apply(k->op, dt, target, operand,
							is_compare_op(k->op) ? compare : NULL,
							result, 1), 0);
			cr_assert_eq(real_get(dt, target), k->want, "%s on %s of %Lg, %Lg, %Lg: %Lg",
				     op_names[k->op], dt_names[dt], k->t, k->o, k->c,
				     real_get(dt, target));
			cr_assert_eq(real_get(dt, result), k->t, "%s on %s: fetched",
				     op_names[k->op], dt_names[dt]);
		}
}

Test(braid_atomic_apply, nan_compares_false_but_not_equal)
{
	double t = NAN, o = 1, c = NAN;

	cr_assert_eq(braid_atomic_apply(BRAID_AOP_CSWAP, BRAID_ADT_DOUBLE, &t, &o, &c, NULL, 1), 0);
	cr_assert(isnan(t), "NaN == NaN is false");
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MAX, BRAID_ADT_DOUBLE, &t, &o, NULL, NULL, 1), 0);
	cr_assert(isnan(t), "1 > NaN is false");
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_CSWAP_NE, BRAID_ADT_DOUBLE, &t, &o, &c, NULL, 1), 0);
	cr_assert_eq(t, 1, "NaN != NaN is true");
	o = NAN;
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MIN, BRAID_ADT_DOUBLE, &t, &o, NULL, NULL, 1), 0);
	cr_assert_eq(t, 1, "NaN < 1 is false");
}

/* ---- complex ---- */

static const enum braid_adt complex_types[] = {
	BRAID_ADT_FLOAT_COMPLEX, BRAID_ADT_DOUBLE_COMPLEX, BRAID_ADT_LONG_DOUBLE_COMPLEX,
};

static void complex_put(enum braid_adt dt, void *buf, long double complex v)
{
	float complex f = (float complex)v;
	double complex d = (double complex)v;

	if (dt == BRAID_ADT_FLOAT_COMPLEX)
		memcpy(buf, &f, sizeof(f));
	else if (dt == BRAID_ADT_DOUBLE_COMPLEX)
		memcpy(buf, &d, sizeof(d));
	else
		memcpy(buf, &v, sizeof(v));
}

static long double complex complex_get(enum braid_adt dt, const void *buf)
{
	float complex f;
	double complex d;
	long double complex l;

	if (dt == BRAID_ADT_FLOAT_COMPLEX) {
		memcpy(&f, buf, sizeof(f));
		return f;
	}
	if (dt == BRAID_ADT_DOUBLE_COMPLEX) {
		memcpy(&d, buf, sizeof(d));
		return d;
	}
	memcpy(&l, buf, sizeof(l));
	return l;
}

/* @re + @im i (glibc's CMPLXL() is gcc-only) */
static long double complex cx(long double re, long double im)
{
	return re + im * I;
}

struct complex_case {
	enum braid_aop op;
	long double complex t, o, c, want;
};

Test(braid_atomic_apply, every_complex_op)
{
	const long double complex t = cx(1, 2), o = cx(3, -1);
	const struct complex_case cases[] = {
		{ BRAID_AOP_SUM, t, o, 0, cx(4, 1) },
		{ BRAID_AOP_PROD, t, o, 0, cx(5, 5) },	/* 3 - i + 6i - 2i^2 */
		{ BRAID_AOP_ATOMIC_READ, t, 0, 0, t },
		{ BRAID_AOP_ATOMIC_WRITE, t, o, 0, o },
		{ BRAID_AOP_CSWAP, t, o, cx(1, 2), o },
		{ BRAID_AOP_CSWAP, t, o, cx(1, -2), t },	/* the imaginary parts differ */
		{ BRAID_AOP_CSWAP, t, o, cx(2, 2), t },	/* the real parts differ */
		{ BRAID_AOP_CSWAP_NE, t, o, cx(1, -2), o },
		{ BRAID_AOP_CSWAP_NE, t, o, cx(1, 2), t },
	};
	uint8_t target[32], operand[32], compare[32], result[32];
	size_t i, j;

	for (i = 0; i < sizeof(complex_types) / sizeof(complex_types[0]); i++)
		for (j = 0; j < sizeof(cases) / sizeof(cases[0]); j++) {
			enum braid_adt dt = complex_types[i];
			const struct complex_case *k = &cases[j];
			long double complex got;

			complex_put(dt, target, k->t);
			complex_put(dt, operand, k->o);
			complex_put(dt, compare, k->c);
			memset(result, 0xa5, sizeof(result));
			cr_assert_eq(braid_atomic_apply(k->op, dt, target, operand,
							is_compare_op(k->op) ? compare : NULL,
							result, 1), 0);
			got = complex_get(dt, target);
			cr_assert(got == k->want, "%s on %s, case %zu: %Lg%+Lgi", op_names[k->op],
				  dt_names[dt], j, creall(got), cimagl(got));
			cr_assert(complex_get(dt, result) == k->t, "%s on %s: fetched",
				  op_names[k->op], dt_names[dt]);
		}
}

Test(braid_atomic_apply, complex_is_real_then_imaginary)
{
	double target[2] = { 1, 2 }, operand[2] = { 3, -1 };

	cr_assert_eq(braid_atomic_apply(BRAID_AOP_PROD, BRAID_ADT_DOUBLE_COMPLEX, target, operand, NULL, NULL, 1), 0);
	cr_assert(target[0] == 5 && target[1] == 5, "(1 + 2i)(3 - i) = 5 + 5i, got %g, %g",
		  target[0], target[1]);
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_SUM, BRAID_ADT_DOUBLE_COMPLEX, target, operand, NULL, NULL, 1), 0);
	cr_assert(target[0] == 8 && target[1] == 4);
}

/* ---- arrays: count > 1, any alignment, stores only where the op assigns ---- */

#define GUARD	0xee

/* @n bytes of @src at offset @off of @buf, GUARD bytes all around */
static uint8_t *guarded(uint8_t *buf, size_t size, size_t off, const void *src, size_t n)
{
	memset(buf, GUARD, size);
	if (src)
		memcpy(buf + off, src, n);
	return buf + off;
}

/* the bytes of @buf outside [@off, @off + @n) are still GUARD */
static bool guard_intact(const uint8_t *buf, size_t size, size_t off, size_t n)
{
	size_t i;

	for (i = 0; i < size; i++)
		if ((i < off || i >= off + n) && buf[i] != GUARD)
			return false;
	return true;
}

Test(braid_atomic_apply, cswap_array_unaligned_writes_only_where_equal)
{
	const uint32_t t[4] = { 10, 20, 30, 40 }, o[4] = { 1, 2, 3, 4 }, c[4] = { 10, 21, 30, 41 };
	const uint32_t want[4] = { 1, 20, 3, 40 };
	uint8_t tb[24], ob[24], cb[24], rb[24];
	uint8_t *tp = guarded(tb, sizeof(tb), 1, t, sizeof(t));
	uint32_t got[4];

	cr_assert_eq(braid_atomic_apply(BRAID_AOP_CSWAP, BRAID_ADT_UINT32, tp, guarded(ob, sizeof(ob), 3, o, sizeof(o)),
					guarded(cb, sizeof(cb), 5, c, sizeof(c)),
					guarded(rb, sizeof(rb), 7, NULL, 0), 4), 0);
	memcpy(got, tp, sizeof(got));
	cr_assert_arr_eq(got, want, sizeof(want));
	cr_assert_arr_eq(rb + 7, t, sizeof(t), "every old value fetched, written or not");
	cr_assert(guard_intact(tb, sizeof(tb), 1, sizeof(t)));
	cr_assert(guard_intact(rb, sizeof(rb), 7, sizeof(t)));
	cr_assert(guard_intact(ob, sizeof(ob), 3, sizeof(o)) && guard_intact(cb, sizeof(cb), 5, sizeof(c)));
}

Test(braid_atomic_apply, arrays_of_other_types_unaligned)
{
	const double dt[3] = { 1.5, -2, 0.25 }, dop[3] = { 0.5, 0.5, 0.5 }, dwant[3] = { 2, -1.5, 0.75 };
	const int16_t it[5] = { -3, 7, 0, -32768, 32767 }, iop[5] = { 2, -7, 0, 1, -1 };
	const int16_t iwant[5] = { -3, -7, 0, -32768, -1 };
	const uint64_t ut[2] = { 0x1111111111111111, 0xaaaaaaaaaaaaaaaa };
	const uint64_t uop[2] = { 0x2222222222222222, 0x5555555555555555 };
	const uint64_t umask[2] = { 0xff, 0xf0f0f0f0f0f0f0f0 };
	const uint64_t uwant[2] = { 0x1111111111111122, 0x5a5a5a5a5a5a5a5a };
	const double complex ct[2] = { cx(1, 1), cx(0, 2) }, cop[2] = { cx(1, -1), cx(0, 2) };
	const double complex cwant[2] = { cx(2, 0), cx(-4, 0) };
	uint8_t tb[48], ob[48], cb[48], rb[48];
	uint8_t *tp;

	tp = guarded(tb, sizeof(tb), 3, dt, sizeof(dt));
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_SUM, BRAID_ADT_DOUBLE, tp, guarded(ob, sizeof(ob), 1, dop, sizeof(dop)),
					NULL, NULL, 3), 0);
	cr_assert_arr_eq(tp, dwant, sizeof(dwant));
	cr_assert(guard_intact(tb, sizeof(tb), 3, sizeof(dt)));

	tp = guarded(tb, sizeof(tb), 1, it, sizeof(it));
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MIN, BRAID_ADT_INT16, tp, guarded(ob, sizeof(ob), 5, iop, sizeof(iop)),
					NULL, guarded(rb, sizeof(rb), 3, NULL, 0), 5), 0);
	cr_assert_arr_eq(tp, iwant, sizeof(iwant));
	cr_assert_arr_eq(rb + 3, it, sizeof(it));
	cr_assert(guard_intact(tb, sizeof(tb), 1, sizeof(it)) && guard_intact(rb, sizeof(rb), 3, sizeof(it)));

	tp = guarded(tb, sizeof(tb), 7, ut, sizeof(ut));
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MSWAP, BRAID_ADT_UINT64, tp, guarded(ob, sizeof(ob), 2, uop, sizeof(uop)),
					guarded(cb, sizeof(cb), 5, umask, sizeof(umask)),
					guarded(rb, sizeof(rb), 1, NULL, 0), 2), 0);
	cr_assert_arr_eq(tp, uwant, sizeof(uwant));
	cr_assert_arr_eq(rb + 1, ut, sizeof(ut));
	cr_assert(guard_intact(tb, sizeof(tb), 7, sizeof(ut)) && guard_intact(rb, sizeof(rb), 1, sizeof(ut)));

	/* (1 + i)(1 - i) = 2; (2i)(2i) = -4 */
	tp = guarded(tb, sizeof(tb), 5, ct, sizeof(ct));
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_PROD, BRAID_ADT_DOUBLE_COMPLEX, tp,
					guarded(ob, sizeof(ob), 3, cop, sizeof(cop)), NULL, NULL, 2), 0);
	cr_assert_arr_eq(tp, cwant, sizeof(cwant));
	cr_assert(guard_intact(tb, sizeof(tb), 5, sizeof(ct)));
}

Test(braid_atomic_apply, read_array_fetches_and_leaves_the_target)
{
	const uint8_t t[5] = { 0, 1, 0x7f, 0x80, 0xff };
	uint8_t tb[16], rb[16];
	uint8_t *tp = guarded(tb, sizeof(tb), 3, t, sizeof(t));

	cr_assert_eq(braid_atomic_apply(BRAID_AOP_ATOMIC_READ, BRAID_ADT_UINT8, tp, NULL, NULL,
					guarded(rb, sizeof(rb), 1, NULL, 0), 5), 0);
	cr_assert_arr_eq(rb + 1, t, sizeof(t));
	cr_assert_arr_eq(tp, t, sizeof(t));
	cr_assert(guard_intact(rb, sizeof(rb), 1, sizeof(t)));
}

Test(braid_atomic_apply, operand_may_be_the_target)
{
	int32_t v[3] = { 3, -4, 1000 };

	cr_assert_eq(braid_atomic_apply(BRAID_AOP_SUM, BRAID_ADT_INT32, v, v, NULL, NULL, 3), 0);
	cr_assert(v[0] == 6 && v[1] == -8 && v[2] == 2000);
}

Test(braid_atomic_apply, count_zero_touches_nothing)
{
	uint32_t t = 5, o = 1, r = 9;

	cr_assert_eq(braid_atomic_apply(BRAID_AOP_SUM, BRAID_ADT_UINT32, &t, &o, NULL, &r, 0), 0);
	cr_assert(t == 5 && r == 9);
}

/*
 * On a read-only page, an op that assigns nothing must not write: a failed
 * compare, BRAID_AOP_MIN/BRAID_AOP_MAX keeping the target, BRAID_AOP_ATOMIC_READ. A store, even
 * of the same bytes, would fault.
 */
Test(braid_atomic_apply, stores_nothing_when_the_op_assigns_nothing)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const int64_t t[2] = { 12, -12 };
	int64_t o[2] = { 99, 99 }, c[2], r[2];
	int op, i;

	cr_assert(p != MAP_FAILED);
	memcpy(p + 1, t, sizeof(t));
	cr_assert_eq(mprotect(p, (size_t)page, PROT_READ), 0);
	for (op = BRAID_AOP_CSWAP; op <= BRAID_AOP_CSWAP_GT; op++) {
		/* a compare value that fails: c == t fails !=, c < t fails >= and >, c > t the others */
		int64_t d = op == BRAID_AOP_CSWAP_NE ? 0 : op == BRAID_AOP_CSWAP_GE || op == BRAID_AOP_CSWAP_GT ? -1 : 1;

		for (i = 0; i < 2; i++)
			c[i] = t[i] + d;
		memset(r, 0, sizeof(r));
		cr_assert_eq(braid_atomic_apply(op, BRAID_ADT_INT64, p + 1, o, c, r, 2), 0);
		cr_assert_arr_eq(r, t, sizeof(t), "%s fetched", op_names[op]);
	}
	o[0] = 12, o[1] = -11;	/* equal, above: not below */
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MIN, BRAID_ADT_INT64, p + 1, o, NULL, NULL, 2), 0);
	o[0] = 11, o[1] = -12;	/* below, equal: not above */
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_MAX, BRAID_ADT_INT64, p + 1, o, NULL, NULL, 2), 0);
	cr_assert_eq(braid_atomic_apply(BRAID_AOP_ATOMIC_READ, BRAID_ADT_INT64, p + 1, NULL, NULL, r, 2), 0);
	cr_assert_arr_eq(p + 1, t, sizeof(t));
	munmap(p, (size_t)page);
}
