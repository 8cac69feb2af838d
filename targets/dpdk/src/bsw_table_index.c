/* SPDX-License-Identifier: Apache-2.0 */
/* Exact tables keyed by one small id (a next hop, a tunnel) as arrays.
 *
 * DPDK 22.11's exact-match type hashes the key, walks a bucket of four
 * signatures and compares the key through a function pointer: the right
 * work for 40k sessions keyed on addresses, and more than a table of at
 * most a few thousand ids needs, where the id can index an array. The
 * controller numbers next hops and tunnels from 1 up to the table's size
 * (IndexAllocator), so every id it writes has a slot.
 *
 * A table qualifies when its key is one exact-match metadata field of 1,
 * 2 or 4 bytes and its size is at most BSW_INDEX_MAX_SLOTS. Keys below the
 * size sit in the array; any other key (P4Runtime lets a user write one)
 * goes to an object of DPDK's type kept beside it, so the table holds what
 * any exact table holds. Entries are added and deleted in place like DPDK's
 * (an add of a present key replaces its action), so the table manager's
 * double-buffered updates (bsw_table.c) are unchanged. Metadata fields are
 * in host byte order in SWX, and so are the key bytes the server writes.
 *
 * An entry's id (what a lookup reports, and SWX's entryid instruction
 * gives the program) is its key in the array and the size plus DPDK's id
 * in the overflow: unique, but not always below the size, which direct
 * counters and meters (arrays of size + 1 indexed by entry id) need. A
 * program with an entryid instruction therefore keeps DPDK's type for all
 * its tables (bsw_pipeline.c: index_tables_wanted()). */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_swx_table_em.h>

#include "bsw_internal.h"
#include "bsw_swx_index.h"

static const struct rte_swx_table_ops *
overflow_ops(void)
{
	return &rte_swx_table_exact_match_unoptimized_ops;
}

static void
index_free(void *table)
{
	struct bsw_index_table *t = table;

	if (!t)
		return;
	overflow_ops()->free(t->overflow);
	rte_free(t->slots);
	rte_free(t);
}

static inline uint8_t *
slot_of(const struct bsw_index_table *t, const uint8_t *key, uint32_t *k)
{
	return bsw_index_slot_of(t, key, t->key_size, k);
}

static int
index_add(void *table, struct rte_swx_table_entry *entry)
{
	struct bsw_index_table *t = table;
	uint64_t tag;
	uint8_t *s;
	uint32_t k;

	if (!t || !entry || !entry->key)
		return -EINVAL;
	s = slot_of(t, entry->key, &k);
	if (!s)
		return overflow_ops()->add(t->overflow, entry);
	tag = entry->action_id + 1;
	if (t->action_data_size)
		memcpy(s + 8, entry->action_data, t->action_data_size);
	memcpy(s, &tag, 8);
	return 0;
}

static int
index_del(void *table, struct rte_swx_table_entry *entry)
{
	struct bsw_index_table *t = table;
	uint8_t *s;
	uint32_t k;

	if (!t || !entry || !entry->key)
		return -EINVAL;
	s = slot_of(t, entry->key, &k);
	if (!s)
		return overflow_ops()->del(t->overflow, entry);
	memset(s, 0, t->slot_size);
	return 0;
}

static void *
index_create(struct rte_swx_table_params *params, struct rte_swx_table_entry_list *entries,
	     const char *args, int numa_node)
{
	struct rte_swx_table_entry *e;
	struct bsw_index_table *t;

	if (!params || (params->key_size != 1 && params->key_size != 2 && params->key_size != 4) ||
	    !params->n_keys_max || params->n_keys_max > BSW_INDEX_MAX_SLOTS)
		return NULL;
	t = rte_zmalloc_socket("bsw_index", sizeof(*t), RTE_CACHE_LINE_SIZE, numa_node);
	if (!t)
		return NULL;
	t->n_slots = params->n_keys_max;
	t->key_size = params->key_size;
	t->key_offset = params->key_offset;
	t->action_data_size = params->action_data_size;
	t->slot_size = 8 + params->action_data_size;
	t->slots = rte_zmalloc_socket("bsw_index_slots", (size_t)t->n_slots * t->slot_size,
				      RTE_CACHE_LINE_SIZE, numa_node);
	t->overflow = overflow_ops()->create(params, NULL, args, numa_node);
	if (!t->slots || !t->overflow)
		goto error;
	if (entries)
		TAILQ_FOREACH(e, entries, node)
			if (index_add(t, e))
				goto error;
	return t;
error:
	index_free(t);
	return NULL;
}

static int
index_lookup(void *table, void *mailbox, uint8_t **key, uint64_t *action_id,
	     uint8_t **action_data, size_t *entry_id, int *hit)
{
	struct bsw_index_table *t = table;
	int status;

	if (likely(bsw_index_lookup_slot(t, key, action_id, action_data, entry_id, hit, t->key_size)))
		return 1;
	status = overflow_ops()->lkp(t->overflow, mailbox, key, action_id, action_data, entry_id, hit);
	if (*hit)
		*entry_id += t->n_slots;	/* ids of the array and the overflow apart */
	return status;
}

static uint64_t
index_mailbox_size(void)
{
	return 0;	/* the overflow is DPDK's one-step lookup: no mailbox either */
}

const struct rte_swx_table_ops bsw_index_table_ops = {
	.mailbox_size_get = index_mailbox_size,
	.create = index_create,
	.add = index_add,
	.del = index_del,
	.lkp = index_lookup,
	.free = index_free,
};

int
bsw_index_eligible(struct rte_swx_pipeline *p, uint32_t table_id, uint32_t n_match_fields,
		   uint32_t size)
{
	struct rte_swx_ctl_table_match_field_info mf;

	if (n_match_fields != 1 || rte_swx_ctl_table_match_field_info_get(p, table_id, 0, &mf))
		return 0;
	return mf.match_type == RTE_SWX_TABLE_MATCH_EXACT && !mf.is_header &&
	       (mf.n_bits == 8 || mf.n_bits == 16 || mf.n_bits == 32) &&
	       size && size <= BSW_INDEX_MAX_SLOTS;
}

