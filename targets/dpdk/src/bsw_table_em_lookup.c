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
 * it is written out below from the same DPDK version; bsw_table_em_fast()
 * checks what it can of it on the object itself (the parameters it was
 * created with, the bucket count a power of two) and declines otherwise, and
 * tests/integration compares every lookup with DPDK's on a filled table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_hash_crc.h>
#if defined(RTE_ARCH_X86_64) && defined(__SSE4_2__)
#include <nmmintrin.h>
#endif
#include <rte_swx_table.h>
#include <rte_swx_table_em.h>

#include "bsw_internal.h"

#define EM_KEYS_PER_BUCKET 4
#define EM_KEY_SIZE_MAX 32	/* larger keys keep DPDK's lookup */

/* struct bucket_extension and struct table of DPDK 22.11's
 * rte_swx_table_em.c. */
struct em_bucket {
	struct em_bucket *next;
	uint16_t sig[EM_KEYS_PER_BUCKET];
	uint32_t key_id[EM_KEYS_PER_BUCKET];
};

struct em_table {
	struct rte_swx_table_params params;
	uint32_t key_size_shl;
	uint32_t data_size_shl;
	uint32_t n_buckets;
	uint32_t n_buckets_ext;
	uint32_t key_stack_tos;
	uint32_t bkt_ext_stack_tos;
	uint64_t total_size;
	void *keycmp_func;
	struct em_bucket *buckets;
	struct em_bucket *buckets_ext;
	uint8_t *keys;
	uint32_t *key_stack;
	uint32_t *bkt_ext_stack;
	uint8_t *data;
};

/* rte_hash_crc(data, len, 0) (CRC-32C in 8-, 4-, 2- and 1-byte steps), in
 * the instructions themselves where the CPU has them: gcc keeps DPDK's as
 * one out-of-line loop for some lengths, whatever the call site asks. */
static inline __attribute__((always_inline)) uint32_t
em_hash(const uint8_t *data, uint32_t len)
{
#if defined(RTE_ARCH_X86_64) && defined(__SSE4_2__)
	uint64_t crc = 0;
	uint64_t v8;
	uint32_t v4, i;
	uint16_t v2;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&v8, data + i, 8);
		crc = _mm_crc32_u64(crc, v8);
	}
	if (len & 4) {
		memcpy(&v4, data + i, 4);
		crc = _mm_crc32_u32((uint32_t)crc, v4);
		i += 4;
	}
	if (len & 2) {
		memcpy(&v2, data + i, 2);
		crc = _mm_crc32_u16((uint32_t)crc, v2);
		i += 2;
	}
	if (len & 1)
		crc = _mm_crc32_u8((uint32_t)crc, data[i]);
	return (uint32_t)crc;
#else
	return rte_hash_crc(data, len, 0);
#endif
}

static inline __attribute__((always_inline)) int
em_lookup(void *table, uint8_t **key, uint64_t *action_id, uint8_t **action_data,
	  size_t *entry_id, int *hit, uint32_t key_size)
{
	const struct em_table *t = table;
	const uint8_t *input_key = &(*key)[t->params.key_offset];
	uint32_t sig = em_hash(input_key, key_size);
	const struct em_bucket *bkt = &t->buckets[sig & (t->n_buckets - 1)];
	uint32_t i;

	sig = (sig >> 16) | 1;
	for (; bkt; bkt = bkt->next)
		for (i = 0; i < EM_KEYS_PER_BUCKET; i++) {
			uint32_t id = bkt->key_id[i];
			const uint64_t *data;

			if (bkt->sig[i] != sig ||
			    memcmp(&t->keys[(uint64_t)id << t->key_size_shl], input_key, key_size))
				continue;
			data = (const uint64_t *)&t->data[(uint64_t)id << t->data_size_shl];
			*action_id = data[0];
			*action_data = (uint8_t *)(uintptr_t)&data[1];
			*entry_id = id;
			*hit = 1;
			return 1;
		}
	*hit = 0;
	return 1;
}

#define EM_LOOKUP(n)								\
static int									\
em_lookup_##n(void *table, void *mailbox __rte_unused, uint8_t **key,		\
	      uint64_t *action_id, uint8_t **action_data, size_t *entry_id,	\
	      int *hit)								\
{										\
	return em_lookup(table, key, action_id, action_data, entry_id, hit, n);\
}

EM_LOOKUP(1) EM_LOOKUP(2) EM_LOOKUP(3) EM_LOOKUP(4) EM_LOOKUP(5) EM_LOOKUP(6)
EM_LOOKUP(7) EM_LOOKUP(8) EM_LOOKUP(9) EM_LOOKUP(10) EM_LOOKUP(11) EM_LOOKUP(12)
EM_LOOKUP(13) EM_LOOKUP(14) EM_LOOKUP(15) EM_LOOKUP(16) EM_LOOKUP(17) EM_LOOKUP(18)
EM_LOOKUP(19) EM_LOOKUP(20) EM_LOOKUP(21) EM_LOOKUP(22) EM_LOOKUP(23) EM_LOOKUP(24)
EM_LOOKUP(25) EM_LOOKUP(26) EM_LOOKUP(27) EM_LOOKUP(28) EM_LOOKUP(29) EM_LOOKUP(30)
EM_LOOKUP(31) EM_LOOKUP(32)

static rte_swx_table_lookup_t const em_lookups[EM_KEY_SIZE_MAX + 1] = {
	NULL, em_lookup_1, em_lookup_2, em_lookup_3, em_lookup_4, em_lookup_5,
	em_lookup_6, em_lookup_7, em_lookup_8, em_lookup_9, em_lookup_10, em_lookup_11,
	em_lookup_12, em_lookup_13, em_lookup_14, em_lookup_15, em_lookup_16,
	em_lookup_17, em_lookup_18, em_lookup_19, em_lookup_20, em_lookup_21,
	em_lookup_22, em_lookup_23, em_lookup_24, em_lookup_25, em_lookup_26,
	em_lookup_27, em_lookup_28, em_lookup_29, em_lookup_30, em_lookup_31,
	em_lookup_32,
};

rte_swx_table_lookup_t
bsw_table_em_fast(const struct bsw_table *bt, const void *obj)
{
	const struct em_table *t = obj;
	uint32_t size = bt->params.key_size;

	/* Only a table of DPDK's exact-match type, with DPDK's default hash (a
	 * table that names its own is hashed by that), and only an object
	 * whose parameters read back as the table's were set: otherwise its
	 * layout is not the one above. */
	if (!bsw_table_is_dpdk_em(bt) || !obj || bt->params.hash_func || !size || size > EM_KEY_SIZE_MAX ||
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
	buf = calloc(1, bt->params.key_offset + EM_KEY_SIZE_MAX);
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
