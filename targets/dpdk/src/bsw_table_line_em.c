/* SPDX-License-Identifier: Apache-2.0 */
/* Large exact tables with their entries in one-cache-line buckets.
 *
 * DPDK 22.11's exact-match type keeps a bucket's four signatures and key
 * ids in one array, the keys in a second and the action data in a third:
 * a hit waits for three cache lines, one after the other (bucket, key,
 * data). With 40k subscriber sessions those lines are seldom in L1, and in
 * pppoe_up the bucket's and the key's waits were over a fifth of the
 * generated code's time (perf, README's Performance section). Here a
 * bucket is one 64-byte line holding whole entries: the key, a 2-byte tag
 * (action id + 1; 0 marks a free slot) and the action data. A lookup
 * hashes the key (CRC-32C, as DPDK's), reads that line and compares the
 * keys in it: one wait, which the straight-line code's early prefetch
 * (bsw_lem_prefetch) can start long before the lookup.
 *
 * Buckets are sized for half the slots to be used when the table is full,
 * so few buckets fill up. A key whose bucket is full takes a slot in its
 * neighbour (the other line of the same 128 bytes, which the CPU often
 * fetches with it), and where that is full too, in an object of DPDK's
 * exact type beside the buckets (the overflow, a quarter of the table's
 * size). A bit per bucket says that some key of that bucket may be in
 * its neighbour, another that one may be in the overflow, so a miss
 * elsewhere stays one line. At random about 4% of a full table's keys
 * land in the overflow (the Poisson tail beyond four keys of a pair of
 * two-slot buckets at a mean of two), under 1% at the bench's 40k
 * sessions in 64k; without the neighbours, 10% and 5%. A table that
 * wants more than the overflow holds (keys made to share buckets) gets
 * -ENOSPC for the add that does not fit, as a full table does.
 *
 * A table qualifies (bsw_line_em_eligible) when it is large (a small one
 * stays in cache whatever its layout), its key is the whole of its byte
 * span (no bytes of other fields between the key's, which DPDK's type
 * would mask), at most BSW_EM_KEY_SIZE_MAX bytes, with no hash of its own,
 * and two entries fit in a line. Entries are added and deleted in place
 * like DPDK's (an add of a present key replaces its action), so the table
 * manager's double-buffered updates (bsw_table.c) are unchanged. Entry ids
 * are the slot's number, and past the slots the overflow's id: unique,
 * not below the table's size, so a program with an entryid instruction
 * keeps DPDK's type (as for the index tables). */
#include <errno.h>
#include <string.h>

#include <rte_hash_crc.h>
#include <rte_malloc.h>
#include <rte_swx_table_em.h>

#include "bsw_internal.h"
#include "bsw_swx_em.h"
#include "bsw_swx_line_em.h"

static const struct rte_swx_table_ops *
overflow_ops(void)
{
	return &rte_swx_table_exact_match_unoptimized_ops;
}

static uint32_t
overflow_size(uint32_t n_keys_max)
{
	return RTE_MAX(n_keys_max / 4, 64u);
}

static void
lem_free(void *table)
{
	struct bsw_lem_table *t = table;

	if (!t)
		return;
	overflow_ops()->free(t->overflow);
	rte_free(t->buckets);
	rte_free(t->moved);
	rte_free(t->spilled);
	rte_free(t->n_moved);
	rte_free(t->n_spilled);
	rte_free(t);
}

/* The slot holding key, or NULL; *b is the key's bucket, *moved whether
 * the slot is in its neighbour. */
static uint8_t *
slot_find(const struct bsw_lem_table *t, const uint8_t *key, uint32_t *b, int *moved)
{
	uint32_t slot;
	uint8_t *e;

	bsw_lem_bucket(t, key, t->key_size, b);
	*moved = 0;
	e = bsw_lem_scan(t, *b, key, t->key_size, &slot);
	if (e || !bsw_lem_bit(t->moved, *b))
		return e;
	*moved = 1;
	return bsw_lem_scan(t, *b ^ 1, key, t->key_size, &slot);
}

static void
bit_set(uint64_t *map, uint32_t b)
{
	map[b >> 6] |= 1ULL << (b & 63);
}

static void
bit_clear(uint64_t *map, uint32_t b)
{
	map[b >> 6] &= ~(1ULL << (b & 63));
}

static uint8_t *
slot_free(const struct bsw_lem_table *t, uint32_t b)
{
	uint8_t *e = bsw_lem_line(t, b);
	uint32_t i;

	for (i = 0; i < t->n_per_bucket; i++, e += t->entry_size)
		if (!bsw_lem_tag(e, t->key_size))
			return e;
	return NULL;
}

static void
slot_write(const struct bsw_lem_table *t, uint8_t *e, const struct rte_swx_table_entry *entry)
{
	uint16_t tag = (uint16_t)(entry->action_id + 1);

	memcpy(e, entry->key, t->key_size);
	if (t->action_data_size) {
		if (entry->action_data)
			memcpy(e + t->key_size + BSW_LEM_TAG_SIZE, entry->action_data, t->action_data_size);
		else
			memset(e + t->key_size + BSW_LEM_TAG_SIZE, 0, t->action_data_size);
	}
	memcpy(e + t->key_size, &tag, BSW_LEM_TAG_SIZE);
}

/* Whether the overflow holds key (key_size bytes, at offset 0 there). */
static int
overflow_has(const struct bsw_lem_table *t, uint8_t *key)
{
	uint8_t *ad, *kp = key;
	uint64_t action_id;
	size_t entry_id;
	int hit = 0;

	overflow_ops()->lkp(t->overflow, NULL, &kp, &action_id, &ad, &entry_id, &hit);
	return hit;
}

static int
lem_add(void *table, struct rte_swx_table_entry *entry)
{
	struct bsw_lem_table *t = table;
	uint8_t *e;
	uint32_t b;
	int status, moved;

	if (!t || !entry || !entry->key || entry->action_id >= UINT16_MAX)
		return -EINVAL;
	e = slot_find(t, entry->key, &b, &moved);
	if (e) {
		slot_write(t, e, entry);	/* present: the add replaces it */
		return 0;
	}
	if (bsw_lem_bit(t->spilled, b) && overflow_has(t, entry->key))
		return overflow_ops()->add(t->overflow, entry);	/* replaced there */
	e = slot_free(t, b);
	if (!e && (e = slot_free(t, b ^ 1))) {
		t->n_moved[b]++;
		bit_set(t->moved, b);
	}
	if (e) {
		slot_write(t, e, entry);
		return 0;
	}
	status = overflow_ops()->add(t->overflow, entry);	/* new to two full buckets */
	if (status)
		return status;
	t->n_spilled[b]++;
	bit_set(t->spilled, b);
	return 0;
}

static int
lem_del(void *table, struct rte_swx_table_entry *entry)
{
	struct bsw_lem_table *t = table;
	uint8_t *e;
	uint32_t b;
	int status, moved;

	if (!t || !entry || !entry->key)
		return -EINVAL;
	e = slot_find(t, entry->key, &b, &moved);
	if (e) {
		memset(e, 0, t->entry_size);
		if (moved && !--t->n_moved[b])
			bit_clear(t->moved, b);
		return 0;
	}
	if (!bsw_lem_bit(t->spilled, b) || !overflow_has(t, entry->key))
		return 0;	/* absent: as DPDK's type, not an error */
	status = overflow_ops()->del(t->overflow, entry);
	if (status)
		return status;
	if (!--t->n_spilled[b])
		bit_clear(t->spilled, b);
	return 0;
}

static void *
lem_create(struct rte_swx_table_params *params, struct rte_swx_table_entry_list *entries,
	   const char *args, int numa_node)
{
	struct rte_swx_table_params op;
	struct rte_swx_table_entry *e;
	struct bsw_lem_table *t;
	uint32_t entry_size, n_per, n_buckets = 2;	/* two at least: a bucket has a neighbour */

	if (!params || params->match_type != RTE_SWX_TABLE_MATCH_EXACT || !params->key_size ||
	    params->key_size > BSW_EM_KEY_SIZE_MAX || !params->n_keys_max || params->hash_func)
		return NULL;
	entry_size = params->key_size + BSW_LEM_TAG_SIZE + params->action_data_size;
	n_per = bsw_lem_per_bucket(params->key_size, params->action_data_size);
	if (n_per < 2)
		return NULL;
	while ((uint64_t)n_buckets * n_per < 2ULL * params->n_keys_max)
		n_buckets <<= 1;

	t = rte_zmalloc_socket("bsw_line_em", sizeof(*t), RTE_CACHE_LINE_SIZE, numa_node);
	if (!t)
		return NULL;
	t->key_size = params->key_size;
	t->key_offset = params->key_offset;
	t->action_data_size = params->action_data_size;
	t->entry_size = entry_size;
	t->n_per_bucket = n_per;
	t->bucket_mask = n_buckets - 1;
	t->n_line_ids = (uint64_t)n_buckets * n_per;
	t->buckets = rte_zmalloc_socket("bsw_line_em_buckets", (size_t)n_buckets * BSW_LEM_LINE,
					BSW_LEM_LINE, numa_node);
	t->moved = rte_zmalloc_socket("bsw_line_em_moved", RTE_MAX(n_buckets / 64, 1u) * 8,
				      RTE_CACHE_LINE_SIZE, numa_node);
	t->spilled = rte_zmalloc_socket("bsw_line_em_spilled", RTE_MAX(n_buckets / 64, 1u) * 8,
					RTE_CACHE_LINE_SIZE, numa_node);
	t->n_moved = rte_zmalloc_socket("bsw_line_em_n_moved", (size_t)n_buckets * 4,
					RTE_CACHE_LINE_SIZE, numa_node);
	t->n_spilled = rte_zmalloc_socket("bsw_line_em_n_spilled", (size_t)n_buckets * 4,
					  RTE_CACHE_LINE_SIZE, numa_node);
	op = *params;
	op.key_offset = 0;
	op.n_keys_max = overflow_size(params->n_keys_max);
	t->overflow = overflow_ops()->create(&op, NULL, args, numa_node);
	if (!t->buckets || !t->moved || !t->spilled || !t->n_moved || !t->n_spilled || !t->overflow)
		goto error;
	if (entries)
		TAILQ_FOREACH(e, entries, node)
			if (lem_add(t, e))
				goto error;
	return t;
error:
	lem_free(t);
	return NULL;
}

/* The bucket lookup with the key size a constant (its compare a few
 * loads, not a call of memcmp), chosen by the table's. */
#define LEM_BUCKET(n)								\
	case n:									\
		done = bsw_lem_lookup_bucket(t, key, action_id, action_data, entry_id, hit, n);\
		break;

static int
lem_lookup(void *table, void *mailbox, uint8_t **key, uint64_t *action_id,
	   uint8_t **action_data, size_t *entry_id, int *hit)
{
	struct bsw_lem_table *t = table;
	uint8_t *kp;
	int done;

	switch (t->key_size) {
	LEM_BUCKET(1) LEM_BUCKET(2) LEM_BUCKET(3) LEM_BUCKET(4) LEM_BUCKET(5) LEM_BUCKET(6)
	LEM_BUCKET(7) LEM_BUCKET(8) LEM_BUCKET(9) LEM_BUCKET(10) LEM_BUCKET(11) LEM_BUCKET(12)
	LEM_BUCKET(13) LEM_BUCKET(14) LEM_BUCKET(15) LEM_BUCKET(16) LEM_BUCKET(17) LEM_BUCKET(18)
	LEM_BUCKET(19) LEM_BUCKET(20) LEM_BUCKET(21) LEM_BUCKET(22) LEM_BUCKET(23) LEM_BUCKET(24)
	LEM_BUCKET(25) LEM_BUCKET(26) LEM_BUCKET(27) LEM_BUCKET(28) LEM_BUCKET(29) LEM_BUCKET(30)
	LEM_BUCKET(31) LEM_BUCKET(32)
	default:
		done = bsw_lem_lookup_bucket(t, key, action_id, action_data, entry_id, hit, t->key_size);
	}
	if (likely(done))
		return 1;
	kp = &(*key)[t->key_offset];
	overflow_ops()->lkp(t->overflow, mailbox, &kp, action_id, action_data, entry_id, hit);
	if (*hit)
		*entry_id += t->n_line_ids;
	return 1;
}

static uint64_t
lem_mailbox_size(void)
{
	return 0;	/* the overflow is DPDK's one-step lookup: no mailbox either */
}

const struct rte_swx_table_ops bsw_line_em_table_ops = {
	.mailbox_size_get = lem_mailbox_size,
	.create = lem_create,
	.add = lem_add,
	.del = lem_del,
	.lkp = lem_lookup,
	.free = lem_free,
};

int
bsw_line_em_eligible(struct rte_swx_pipeline *p, uint32_t table_id, uint32_t n_match_fields,
		     uint32_t size, uint32_t key_size, uint32_t action_data_size)
{
	struct rte_swx_ctl_table_info ti;
	uint32_t i, bits = 0;

	if (size < BSW_LINE_EM_MIN_KEYS || !key_size || key_size > BSW_EM_KEY_SIZE_MAX ||
	    bsw_lem_per_bucket(key_size, action_data_size) < 2 ||
	    rte_swx_ctl_table_info_get(p, table_id, &ti) || ti.hash_func)
		return 0;
	for (i = 0; i < n_match_fields; i++) {
		struct rte_swx_ctl_table_match_field_info mf;

		if (rte_swx_ctl_table_match_field_info_get(p, table_id, i, &mf) ||
		    mf.match_type != RTE_SWX_TABLE_MATCH_EXACT)
			return 0;
		bits += mf.n_bits;
	}
	return bits == 8 * key_size;	/* the fields cover the key's span */
}
