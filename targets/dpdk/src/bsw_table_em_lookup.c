/* SPDX-License-Identifier: Apache-2.0 */
/* A one-step lookup in DPDK's exact-match table, one function per key size.
 *
 * DPDK 22.11's one-step lookup (rte_swx_table_exact_match_unoptimized_ops)
 * hashes the key through a function pointer (rte_hash_crc, a loop over the
 * key's length) and compares each candidate key through another
 * (rte_swx_keycmp), for a length it reads from the table: two indirect
 * calls and a loop for what, at a key size known in advance, is two or
 * three crc32 instructions and as many compares. Each lookup here is that
 * lookup with the key size a constant: the same hash (rte_hash_crc's
 * CRC-32C, inlined), the same buckets, signatures and key order, the same
 * result. It reads the table object that DPDK built and the table manager
 * fills; nothing else changes. The keys' cache misses stay (in pppoe_up
 * about half of this lookup's time is its wait for the bucket).
 *
 * DPDK keeps the object's layout private (lib/table/rte_swx_table_em.c), so
 * it is written out in bsw_swx_em.h from the same DPDK version, with the
 * lookup itself (the straight-line code inlines it); bsw_table_em_fast()
 * checks what it can of it on the object itself (the parameters it was
 * created with, the bucket count a power of two) and declines otherwise, and
 * tests/integration compares every lookup with DPDK's on a filled table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_hash_crc.h>
#include <rte_swx_table.h>
#include <rte_swx_table_em.h>

#include "bsw_internal.h"
#include "bsw_swx_em.h"

#define EM_LOOKUP(n)								\
static int									\
em_lookup_##n(void *table, void *mailbox __rte_unused, uint8_t **key,		\
	      uint64_t *action_id, uint8_t **action_data, size_t *entry_id,	\
	      int *hit)								\
{										\
	return bsw_em_lookup(table, key, action_id, action_data, entry_id, hit, n);\
}

EM_LOOKUP(1) EM_LOOKUP(2) EM_LOOKUP(3) EM_LOOKUP(4) EM_LOOKUP(5) EM_LOOKUP(6)
EM_LOOKUP(7) EM_LOOKUP(8) EM_LOOKUP(9) EM_LOOKUP(10) EM_LOOKUP(11) EM_LOOKUP(12)
EM_LOOKUP(13) EM_LOOKUP(14) EM_LOOKUP(15) EM_LOOKUP(16) EM_LOOKUP(17) EM_LOOKUP(18)
EM_LOOKUP(19) EM_LOOKUP(20) EM_LOOKUP(21) EM_LOOKUP(22) EM_LOOKUP(23) EM_LOOKUP(24)
EM_LOOKUP(25) EM_LOOKUP(26) EM_LOOKUP(27) EM_LOOKUP(28) EM_LOOKUP(29) EM_LOOKUP(30)
EM_LOOKUP(31) EM_LOOKUP(32)

static rte_swx_table_lookup_t const em_lookups[BSW_EM_KEY_SIZE_MAX + 1] = {
	NULL, em_lookup_1, em_lookup_2, em_lookup_3, em_lookup_4, em_lookup_5,
	em_lookup_6, em_lookup_7, em_lookup_8, em_lookup_9, em_lookup_10, em_lookup_11,
	em_lookup_12, em_lookup_13, em_lookup_14, em_lookup_15, em_lookup_16,
	em_lookup_17, em_lookup_18, em_lookup_19, em_lookup_20, em_lookup_21,
	em_lookup_22, em_lookup_23, em_lookup_24, em_lookup_25, em_lookup_26,
	em_lookup_27, em_lookup_28, em_lookup_29, em_lookup_30, em_lookup_31,
	em_lookup_32,
};

rte_swx_table_lookup_t const *
bsw_table_em_lookups(void)
{
	return em_lookups;
}

rte_swx_table_lookup_t
bsw_table_em_fast(const struct bsw_table *bt, const void *obj)
{
	const struct bsw_em_table *t = obj;
	uint32_t size = bt->params.key_size;

	/* Only a table of DPDK's exact-match type, with DPDK's default hash (a
	 * table that names its own is hashed by that), and only an object
	 * whose parameters read back as the table's were set: otherwise its
	 * layout is not the one above. */
	if (!bsw_table_is_dpdk_em(bt) || !obj || bt->params.hash_func || !size || size > BSW_EM_KEY_SIZE_MAX ||
	    t->params.key_size != size || t->params.key_offset != bt->params.key_offset ||
	    t->params.action_data_size != bt->params.action_data_size ||
	    t->params.n_keys_max != bt->params.n_keys_max ||
	    !t->n_buckets || (t->n_buckets & (t->n_buckets - 1)) || !t->buckets || !t->keys ||
	    !t->data)
		return NULL;
	return em_lookups[size];
}

int
bsw_table_em_compare(struct bsw_pipeline *bp, uint32_t table_id, const uint8_t *keys,
		     uint32_t n_keys, uint32_t *n_hits, uint32_t *n_differ)
{
	const struct bsw_table *bt;
	rte_swx_table_lookup_t fast;
	uint8_t *buf;
	void *obj;
	uint32_t i;

	*n_hits = *n_differ = 0;
	if (table_id >= bp->n_tables || bp->released) {
		bsw_set_error("table %u: no such table", table_id);
		return -EINVAL;
	}
	bt = &bp->tables[table_id];
	obj = bp->inst[0].active[table_id].obj;
	fast = bsw_table_em_fast(bt, obj);
	if (!fast) {
		bsw_set_error("table %u: no fast exact-match lookup", table_id);
		return -ENOTSUP;
	}
	/* Both lookups read the key at key_offset of a key struct. */
	buf = calloc(1, bt->params.key_offset + BSW_EM_KEY_SIZE_MAX);
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < n_keys; i++) {
		uint64_t ids[2] = {0, 0};
		uint8_t *data[2] = {NULL, NULL}, *kp = buf;
		size_t entries[2] = {0, 0};
		int hits[2] = {0, 0};

		memcpy(&buf[bt->params.key_offset], &keys[(size_t)i * bt->params.key_size],
		       bt->params.key_size);
		rte_swx_table_exact_match_unoptimized_ops.lkp(obj, NULL, &kp, &ids[0], &data[0],
							      &entries[0], &hits[0]);
		fast(obj, NULL, &kp, &ids[1], &data[1], &entries[1], &hits[1]);
		*n_hits += hits[0] != 0;
		if (hits[0] != hits[1] ||
		    (hits[0] && (ids[0] != ids[1] || data[0] != data[1] || entries[0] != entries[1])))
			(*n_differ)++;
	}
	free(buf);
	return 0;
}
