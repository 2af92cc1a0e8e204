/* braid_atomic.h: the arithmetic of libfabric atomics, which op on which datatype and what it does to the target. */
#ifndef BRAID_ATOMIC_H
#define BRAID_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>

#include <rdma/fi_domain.h>	/* enum fi_op, enum fi_datatype: the enums only */

/**
 * enum braid_atomic_kind - the family of calls an op is used with (fi_atomic(3)).
 * @BRAID_ATOMIC_WRITE_KIND: fi_atomic*, fi_atomicvalid, fi_query_atomic with flags 0:
 *	FI_MIN..FI_BXOR and FI_ATOMIC_WRITE.
 * @BRAID_ATOMIC_FETCH_KIND: fi_fetch_atomic*, fi_fetch_atomicvalid, FI_FETCH_ATOMIC:
 *	FI_MIN..FI_BXOR, FI_ATOMIC_READ and FI_ATOMIC_WRITE.
 * @BRAID_ATOMIC_COMPARE_KIND: fi_compare_atomic*, fi_compare_atomicvalid,
 *	FI_COMPARE_ATOMIC: FI_CSWAP..FI_MSWAP.
 */
enum braid_atomic_kind {
	BRAID_ATOMIC_WRITE_KIND,
	BRAID_ATOMIC_FETCH_KIND,
	BRAID_ATOMIC_COMPARE_KIND,
};

/**
 * braid_atomic_dt_size() - the bytes of one element of @dt.
 * Return: the size, 0 when braid does not support @dt (FI_INT128 and
 * FI_UINT128 are supported where the compiler has __int128).
 */
size_t braid_atomic_dt_size(enum fi_datatype dt);

/**
 * braid_atomic_valid() - whether braid implements @op on @dt in calls of @kind.
 *
 * The datatypes fall in three classes. Integers (FI_INT8..FI_UINT64, and
 * FI_INT128/FI_UINT128 where supported) take every op. Reals (FI_FLOAT,
 * FI_DOUBLE, FI_LONG_DOUBLE) take every op but the logical and bitwise
 * ones (FI_LOR..FI_BXOR) and FI_MSWAP. Complex types take only FI_SUM,
 * FI_PROD, FI_ATOMIC_READ, FI_ATOMIC_WRITE, FI_CSWAP and FI_CSWAP_NE.
 * The op must also belong to @kind (enum braid_atomic_kind).
 *
 * Return: true when supported; false for any op, datatype or kind out of range.
 */
bool braid_atomic_valid(enum fi_op op, enum fi_datatype dt, enum braid_atomic_kind kind);

/**
 * braid_atomic_apply() - apply @op to @count elements of @dt at @target, one
 * element after the other, as fi_atomic(3) defines each op ("addr[i]" is
 * @target, "buf[i]" @operand, "compare[i]" @compare).
 * @op: the op.
 * @dt: the datatype of every array.
 * @target: the @count elements acted on.
 * @operand: @count elements, the operand; ignored (may be NULL) for FI_ATOMIC_READ.
 * @compare: @count elements, the compare values of FI_CSWAP..FI_MSWAP
 *	(FI_MSWAP: the mask); ignored (may be NULL) for the other ops.
 * @result: NULL, or room for @count elements, each receiving the bytes its
 *	target element held before the op (fetch and compare kinds).
 * @count: how many elements.
 *
 * Arrays may be unaligned. @result must not overlap @target; @operand and
 * @compare may be @target itself (an element is read before it is written).
 * An element is stored only when the op assigns it: FI_ATOMIC_READ, a
 * compare op whose comparison fails and FI_MIN/FI_MAX that keep the target
 * do not write it.
 * Signed integers wrap around (two's complement); logical ops yield 0 or 1.
 * Not atomic against other threads: the caller serialises.
 *
 * Return: 0; -FI_EOPNOTSUPP when braid_atomic_valid() is false for @op on
 * @dt in every kind; -FI_EINVAL when @operand or @compare is needed but NULL.
 * On error nothing is touched.
 */
int braid_atomic_apply(enum fi_op op, enum fi_datatype dt, void *target, const void *operand,
		       const void *compare, void *result, size_t count);

#endif /* BRAID_ATOMIC_H */
