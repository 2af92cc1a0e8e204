/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_atomic.h: the arithmetic of atomics (fi_atomic(3)): which op on which datatype, and what it does to the target. */
#ifndef BRAID_ATOMIC_H
#define BRAID_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>

/**
 * enum braid_aop - an atomic operation. The numbers are libfabric's enum
 * fi_op's, which the wire carries (protocol.md §4.7, aop); the provider
 * checks that they agree.
 */
enum braid_aop {
	BRAID_AOP_MIN, BRAID_AOP_MAX, BRAID_AOP_SUM, BRAID_AOP_PROD,
	BRAID_AOP_LOR, BRAID_AOP_LAND, BRAID_AOP_BOR, BRAID_AOP_BAND,
	BRAID_AOP_LXOR, BRAID_AOP_BXOR, BRAID_AOP_ATOMIC_READ, BRAID_AOP_ATOMIC_WRITE,
	BRAID_AOP_CSWAP, BRAID_AOP_CSWAP_NE, BRAID_AOP_CSWAP_LE, BRAID_AOP_CSWAP_LT,
	BRAID_AOP_CSWAP_GE, BRAID_AOP_CSWAP_GT, BRAID_AOP_MSWAP,
	BRAID_AOP_LAST
};

/**
 * enum braid_adt - an atomic datatype; the numbers are libfabric's enum
 * fi_datatype's (protocol.md §4.7, dt).
 */
enum braid_adt {
	BRAID_ADT_INT8, BRAID_ADT_UINT8, BRAID_ADT_INT16, BRAID_ADT_UINT16,
	BRAID_ADT_INT32, BRAID_ADT_UINT32, BRAID_ADT_INT64, BRAID_ADT_UINT64,
	BRAID_ADT_FLOAT, BRAID_ADT_DOUBLE, BRAID_ADT_FLOAT_COMPLEX, BRAID_ADT_DOUBLE_COMPLEX,
	BRAID_ADT_LONG_DOUBLE, BRAID_ADT_LONG_DOUBLE_COMPLEX, BRAID_ADT_INT128, BRAID_ADT_UINT128,
	BRAID_ADT_LAST
};

/**
 * enum braid_atomic_kind - the family of calls an op is used with (fi_atomic(3)).
 * @BRAID_ATOMIC_WRITE_KIND: fi_atomic*, fi_atomicvalid, fi_query_atomic with flags 0:
 *	BRAID_AOP_MIN..BRAID_AOP_BXOR and BRAID_AOP_ATOMIC_WRITE.
 * @BRAID_ATOMIC_FETCH_KIND: fi_fetch_atomic*, fi_fetch_atomicvalid, FI_FETCH_ATOMIC:
 *	BRAID_AOP_MIN..BRAID_AOP_BXOR, BRAID_AOP_ATOMIC_READ and BRAID_AOP_ATOMIC_WRITE.
 * @BRAID_ATOMIC_COMPARE_KIND: fi_compare_atomic*, fi_compare_atomicvalid,
 *	FI_COMPARE_ATOMIC: BRAID_AOP_CSWAP..BRAID_AOP_MSWAP.
 */
enum braid_atomic_kind {
	BRAID_ATOMIC_WRITE_KIND,
	BRAID_ATOMIC_FETCH_KIND,
	BRAID_ATOMIC_COMPARE_KIND,
};

/**
 * braid_atomic_dt_size() - the bytes of one element of @dt.
 * Return: the size, 0 when braid does not support @dt (BRAID_ADT_INT128 and
 * BRAID_ADT_UINT128 are supported where the compiler has __int128).
 */
size_t braid_atomic_dt_size(enum braid_adt dt);

/**
 * braid_atomic_valid() - whether braid implements @op on @dt in calls of @kind.
 *
 * The datatypes fall in three classes. Integers (BRAID_ADT_INT8..BRAID_ADT_UINT64, and
 * BRAID_ADT_INT128/BRAID_ADT_UINT128 where supported) take every op. Reals (BRAID_ADT_FLOAT,
 * BRAID_ADT_DOUBLE, BRAID_ADT_LONG_DOUBLE) take every op but the logical and bitwise
 * ones (BRAID_AOP_LOR..BRAID_AOP_BXOR) and BRAID_AOP_MSWAP. Complex types take only BRAID_AOP_SUM,
 * BRAID_AOP_PROD, BRAID_AOP_ATOMIC_READ, BRAID_AOP_ATOMIC_WRITE, BRAID_AOP_CSWAP and BRAID_AOP_CSWAP_NE.
 * The op must also belong to @kind (enum braid_atomic_kind).
 *
 * Return: true when supported; false for any op, datatype or kind out of range.
 */
bool braid_atomic_valid(enum braid_aop op, enum braid_adt dt, enum braid_atomic_kind kind);

/**
 * braid_atomic_apply() - apply @op to @count elements of @dt at @target, one
 * element after the other, as fi_atomic(3) defines each op ("addr[i]" is
 * @target, "buf[i]" @operand, "compare[i]" @compare).
 * @op: the op.
 * @dt: the datatype of every array.
 * @target: the @count elements acted on.
 * @operand: @count elements, the operand; ignored (may be NULL) for BRAID_AOP_ATOMIC_READ.
 * @compare: @count elements, the compare values of BRAID_AOP_CSWAP..BRAID_AOP_MSWAP
 *	(BRAID_AOP_MSWAP: the mask); ignored (may be NULL) for the other ops.
 * @result: NULL, or room for @count elements, each receiving the bytes its
 *	target element held before the op (fetch and compare kinds).
 * @count: how many elements.
 *
 * Arrays may be unaligned. @result must not overlap @target; @operand and
 * @compare may be @target itself (an element is read before it is written).
 * An element is stored only when the op assigns it: BRAID_AOP_ATOMIC_READ, a
 * compare op whose comparison fails and BRAID_AOP_MIN/BRAID_AOP_MAX that keep the target
 * do not write it.
 * Signed integers wrap around (two's complement); logical ops yield 0 or 1.
 * Not atomic against other threads: the caller serialises.
 *
 * Return: 0; -FI_EOPNOTSUPP when braid_atomic_valid() is false for @op on
 * @dt in every kind; -FI_EINVAL when @operand or @compare is needed but NULL.
 * On error nothing is touched.
 */
int braid_atomic_apply(enum braid_aop op, enum braid_adt dt, void *target, const void *operand,
		       const void *compare, void *result, size_t count);

#endif /* BRAID_ATOMIC_H */
