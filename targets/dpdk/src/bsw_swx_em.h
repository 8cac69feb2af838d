/* SPDX-License-Identifier: Apache-2.0 */
/* A one-step lookup in DPDK 22.11's exact-match table with the key size a
 * constant: the layout of the table object (private to DPDK's
 * lib/table/rte_swx_table_em.c, written out here from the same version),
 * its hash and its bucket walk. One definition for the switch's lookup
 * functions (bsw_table_em_lookup.c, which says why and how the layout is
 * checked) and the straight-line code (straight_codegen.py puts this
 * file's text into it and inlines the lookup where the table's lookup
 * function is the switch's for that key size). Needs rte_swx_table.h
 * and rte_hash_crc.h first. */
#ifndef BSW_SWX_EM_H
#define BSW_SWX_EM_H

#include <stdint.h>
#include <string.h>

#if defined(RTE_ARCH_X86_64) && defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

#define BSW_EM_KEYS_PER_BUCKET 4
#define BSW_EM_KEY_SIZE_MAX 32	/* larger keys keep DPDK's lookup */

/* struct bucket_extension and struct table of DPDK 22.11's
 * rte_swx_table_em.c. */
struct bsw_em_bucket {
	struct bsw_em_bucket *next;
	uint16_t sig[BSW_EM_KEYS_PER_BUCKET];
	uint32_t key_id[BSW_EM_KEYS_PER_BUCKET];
};

struct bsw_em_table {
	struct rte_swx_table_params params;
	uint32_t key_size_shl;
	uint32_t data_size_shl;
	uint32_t n_buckets;
	uint32_t n_buckets_ext;
	uint32_t key_stack_tos;
	uint32_t bkt_ext_stack_tos;
	uint64_t total_size;
	void *keycmp_func;
	struct bsw_em_bucket *buckets;
	struct bsw_em_bucket *buckets_ext;
	uint8_t *keys;
	uint32_t *key_stack;
	uint32_t *bkt_ext_stack;
	uint8_t *data;
};

/* rte_hash_crc(data, len, 0) (CRC-32C in 8-, 4-, 2- and 1-byte steps), in
 * the instructions themselves where the CPU has them: gcc keeps DPDK's as
 * one out-of-line loop for some lengths, whatever the call site asks. */
static inline __attribute__((always_inline)) uint32_t
bsw_em_hash(const uint8_t *data, uint32_t len)
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

/* DPDK's one-step lookup (table_lookup_unoptimized) for a key of key_size
 * bytes at the table's key offset in *key: the same buckets, signatures and
 * key order, the same result. Always 1 (done), as a one-step lookup. */
static inline __attribute__((always_inline)) int
bsw_em_lookup(const void *table, uint8_t *const *key, uint64_t *action_id, uint8_t **action_data,
	      size_t *entry_id, int *hit, uint32_t key_size)
{
	const struct bsw_em_table *t = table;
	const uint8_t *input_key = &(*key)[t->params.key_offset];
	uint32_t sig = bsw_em_hash(input_key, key_size);
	const struct bsw_em_bucket *bkt = &t->buckets[sig & (t->n_buckets - 1)];
	uint32_t i;

	sig = (sig >> 16) | 1;
	for (; bkt; bkt = bkt->next)
		for (i = 0; i < BSW_EM_KEYS_PER_BUCKET; i++) {
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

/* The first step of that lookup alone: the key's hash and a prefetch of its
 * bucket, for a caller with other work to do before it looks the key up. */
static inline __attribute__((always_inline)) void
bsw_em_prefetch(const void *table, const uint8_t *key, uint32_t key_size)
{
	const struct bsw_em_table *t = table;

	__builtin_prefetch(&t->buckets[bsw_em_hash(&key[t->params.key_offset], key_size) & (t->n_buckets - 1)]);
}

#endif
