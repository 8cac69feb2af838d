/* SPDX-License-Identifier: Apache-2.0 */
/* The line table's object (bsw_table_line_em.c: large exact tables whose
 * entries, key, action and data, sit in 64-byte buckets, so that a lookup
 * waits for one cache line) and the lookup of a key in its buckets. One
 * definition for the table type and the straight-line code
 * (straight_codegen.py puts this file's text into it and inlines the
 * lookup where the table's lookup function is the line table's). Uses
 * bsw_em_hash (bsw_swx_em.h), which comes first. */
#ifndef BSW_SWX_LINE_EM_H
#define BSW_SWX_LINE_EM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BSW_LEM_LINE 64			/* bytes per bucket: one cache line */
#define BSW_LEM_TAG_SIZE 2		/* action id + 1 (0: empty), after the key */

/* A bucket holds n_per_bucket entries of entry_size bytes from its start:
 * the key (key_size bytes), the tag, the action data. A key whose bucket
 * b is full goes to its neighbour b ^ 1 (the other line of the same 128
 * bytes), and b's bit in moved is set while any of its keys live there;
 * a key whose neighbour is full too goes to the overflow, an object of
 * DPDK's exact type, and b's bit in spilled is set while any of its keys
 * live there. A lookup that misses in b looks in b ^ 1 only with b's moved
 * bit, and is a miss without its spilled bit. */
struct bsw_lem_table {
	uint32_t key_size;
	uint32_t key_offset;		/* of the key in the key struct, bytes */
	uint32_t action_data_size;
	uint32_t entry_size;
	uint32_t n_per_bucket;
	uint32_t bucket_mask;		/* buckets - 1, a power of two */
	uint8_t *buckets;
	uint64_t *moved;		/* one bit per bucket */
	uint64_t *spilled;		/* one bit per bucket */
	uint32_t *n_moved;		/* keys in the neighbour per bucket (updates only) */
	uint32_t *n_spilled;		/* keys in the overflow per bucket (updates only) */
	void *overflow;			/* DPDK's exact type, key at offset 0 */
	uint64_t n_line_ids;		/* entry ids below: bucket * n_per_bucket + slot */
};

/* Entries of key_size and action_data_size bytes a bucket holds. */
static inline __attribute__((always_inline)) uint32_t
bsw_lem_per_bucket(uint32_t key_size, uint32_t action_data_size)
{
	return BSW_LEM_LINE / (key_size + BSW_LEM_TAG_SIZE + action_data_size);
}

static inline __attribute__((always_inline)) uint8_t *
bsw_lem_line(const struct bsw_lem_table *t, uint32_t b)
{
	return &t->buckets[(size_t)b * BSW_LEM_LINE];
}

/* An entry's tag: its action id + 1, 0 for a free slot. */
static inline __attribute__((always_inline)) uint16_t
bsw_lem_tag(const uint8_t *e, uint32_t key_size)
{
	uint16_t tag;

	memcpy(&tag, e + key_size, BSW_LEM_TAG_SIZE);
	return tag;
}

static inline __attribute__((always_inline)) uint8_t *
bsw_lem_bucket(const struct bsw_lem_table *t, const uint8_t *key, uint32_t key_size, uint32_t *b)
{
	*b = bsw_em_hash(key, key_size) & t->bucket_mask;
	return bsw_lem_line(t, *b);
}

static inline __attribute__((always_inline)) int
bsw_lem_bit(const uint64_t *map, uint32_t b)
{
	return (map[b >> 6] >> (b & 63)) & 1;
}

/* The entry with key k in bucket b, or NULL. */
static inline __attribute__((always_inline)) uint8_t *
bsw_lem_scan(const struct bsw_lem_table *t, uint32_t b, const uint8_t *k, uint32_t key_size, uint32_t *slot)
{
	uint8_t *e = bsw_lem_line(t, b);
	uint32_t i;

	for (i = 0; i < t->n_per_bucket; i++, e += t->entry_size) {
		if (bsw_lem_tag(e, key_size) && !memcmp(e, k, key_size)) {
			*slot = b * t->n_per_bucket + i;
			return e;
		}
	}
	return NULL;
}

/* The lookup of the key (key_size bytes at the table's key offset in
 * *key) in its bucket and, where keys moved there, its neighbour, as the
 * table's lookup function does it: 1 when they settle it (a hit, or a
 * miss in a bucket that never spilled), 0 when the key may be in the
 * overflow (or the table's key is not key_size bytes), for the caller to
 * ask the lookup function. */
static inline __attribute__((always_inline)) int
bsw_lem_lookup_bucket(const void *table, uint8_t *const *key, uint64_t *action_id, uint8_t **action_data,
		      size_t *entry_id, int *hit, uint32_t key_size)
{
	const struct bsw_lem_table *t = table;
	const uint8_t *k = &(*key)[t->key_offset];
	uint32_t b, slot;
	uint8_t *e;

	if (t->key_size != key_size)
		return 0;
	bsw_lem_bucket(t, k, key_size, &b);
	e = bsw_lem_scan(t, b, k, key_size, &slot);
	if (!e && bsw_lem_bit(t->moved, b))
		e = bsw_lem_scan(t, b ^ 1, k, key_size, &slot);
	if (e) {
		*action_id = bsw_lem_tag(e, key_size) - 1u;
		*action_data = e + key_size + BSW_LEM_TAG_SIZE;
		*entry_id = slot;
		*hit = 1;
		return 1;
	}
	if (bsw_lem_bit(t->spilled, b))
		return 0;
	*hit = 0;
	return 1;
}

/* The first step of that lookup alone: the key's hash and a prefetch of its
 * bucket, for a caller with other work to do before it looks the key up. */
static inline __attribute__((always_inline)) void
bsw_lem_prefetch(const void *table, const uint8_t *key, uint32_t key_size)
{
	const struct bsw_lem_table *t = table;
	uint32_t b;

	if (t->key_size == key_size)
		__builtin_prefetch(bsw_lem_bucket(t, &key[t->key_offset], key_size, &b));
}

#endif
