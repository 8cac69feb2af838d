/* SPDX-License-Identifier: Apache-2.0 */
/* The index table's object (bsw_table_index.c: exact tables keyed by one
 * small id, as an array of slots with DPDK's exact type beside it for the
 * keys beyond the array) and the lookup of a key in its array. One
 * definition for the table type and the straight-line code
 * (straight_codegen.py puts this file's text into it and inlines the
 * array lookup where the table's lookup function is the index table's). */
#ifndef BSW_SWX_INDEX_H
#define BSW_SWX_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct bsw_index_table {
	uint32_t n_slots;		/* keys below this are array slots */
	uint32_t key_size;		/* bytes: 1, 2 or 4 */
	uint32_t key_offset;		/* of the field in the key struct, bytes */
	uint32_t action_data_size;
	uint32_t slot_size;		/* 8 bytes: action id + 1 (0: empty), then the data */
	void *overflow;			/* DPDK's exact type, for keys >= n_slots */
	uint8_t *slots;
};

/* The key's value: a metadata field, host byte order. */
static inline __attribute__((always_inline)) uint32_t
bsw_index_key_value(const uint8_t *key, uint32_t key_size)
{
	uint32_t v32;
	uint16_t v16;

	switch (key_size) {
	case 1:
		return key[0];
	case 2:
		memcpy(&v16, key, 2);
		return v16;
	default:
		memcpy(&v32, key, 4);
		return v32;
	}
}

/* The array slot of a key, with the key's value in *k; NULL when the key
 * is beyond the array, where the overflow holds it. */
static inline __attribute__((always_inline)) uint8_t *
bsw_index_slot_of(const struct bsw_index_table *t, const uint8_t *key, uint32_t key_size, uint32_t *k)
{
	*k = bsw_index_key_value(key, key_size);
	return __builtin_expect(*k < t->n_slots, 1) ? &t->slots[(size_t)*k * t->slot_size] : NULL;
}

/* The lookup of the key (key_size bytes at the table's key offset in
 * *key) in the array, as the table's lookup function does it: 1 when the
 * array holds the key's slot (hit or not), 0 when the key is the
 * overflow's (or the table's key is not key_size bytes), for the caller to
 * ask the lookup function. */
static inline __attribute__((always_inline)) int
bsw_index_lookup_slot(const void *table, uint8_t *const *key, uint64_t *action_id, uint8_t **action_data,
		      size_t *entry_id, int *hit, uint32_t key_size)
{
	const struct bsw_index_table *t = table;
	const uint8_t *s;
	uint64_t tag;
	uint32_t k;

	if (t->key_size != key_size)
		return 0;
	s = bsw_index_slot_of(t, &(*key)[t->key_offset], key_size, &k);
	if (!s)
		return 0;
	memcpy(&tag, s, 8);
	if (!tag) {
		*hit = 0;
		return 1;
	}
	*action_id = tag - 1;
	*action_data = (uint8_t *)(uintptr_t)(s + 8);
	*entry_id = k;
	*hit = 1;
	return 1;
}

#endif
