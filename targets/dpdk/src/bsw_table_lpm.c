/* SPDX-License-Identifier: Apache-2.0 */
/* LPM tables on one 32-bit metadata field (the IPv4 FIB) as DIR-24-8.
 *
 * DPDK 22.11 gives every SWX table that is not all-exact to its
 * wildcard-match type: an ACL classifier, called for one packet at a time,
 * so on its scalar path. On the development VM that lookup cost pppoe_up
 * 15-18% with a one-route FIB (measured by taking it out of a copy of the
 * spec). rte_lpm answers the same question in one or two memory reads.
 *
 * These ops keep the contract the table manager (bsw_table.c) has with
 * wildcard tables: an object is built from the full entry list and never
 * modified, so the manager's rebuild-and-swap is unchanged. The table
 * manager puts them in place of the pipeline's own (own_tables_install()
 * in bsw_table.c). Metadata fields are in host byte order in SWX, and so
 * are the key and mask bytes the server writes for them. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <rte_lpm.h>
#include <rte_malloc.h>

#include "bsw_internal.h"
#include "bsw_swx_lpm.h"

/* The prefix length of a host-order mask, or -1 if it is no prefix. */
static int
prefix_len(uint32_t mask)
{
	int len = __builtin_popcount(mask);

	if (mask != (len ? ~0u << (32 - len) : 0))
		return -1;
	return len;
}

static void
lpm32_free(void *table)
{
	struct bsw_lpm32_table *t = table;

	if (!t)
		return;
	rte_lpm_free(t->lpm);
	rte_free(t->data);
	rte_free(t);
}

static void *
lpm32_create(struct rte_swx_table_params *params, struct rte_swx_table_entry_list *entries,
	     const char *args, int numa_node)
{
	static atomic_uint serial;
	struct rte_swx_table_entry *e;
	struct rte_lpm_config cfg;
	struct bsw_lpm32_table *t;
	char name[RTE_LPM_NAMESIZE];
	uint32_t n = 0, rule = 0;

	if (!params || params->key_size != 4)
		return NULL;
	if (entries)
		TAILQ_FOREACH(e, entries, node)
			n++;
	t = rte_zmalloc_socket("bsw_lpm32", sizeof(*t), RTE_CACHE_LINE_SIZE, numa_node);
	if (!t)
		return NULL;
	t->key_offset = params->key_offset;
	t->entry_data_size = 8 + params->action_data_size;
	t->default_rule = BSW_LPM32_NO_RULE;
	t->data = rte_zmalloc_socket("bsw_lpm32_data", (size_t)(n ? n : 1) * t->entry_data_size,
				     RTE_CACHE_LINE_SIZE, numa_node);
	snprintf(name, sizeof(name), "bsw_lpm32_%u", atomic_fetch_add(&serial, 1));
	memset(&cfg, 0, sizeof(cfg));
	cfg.max_rules = n ? n : 1;
	cfg.number_tbl8s = n > 256 ? n : 256;	/* at most one per prefix longer than /24 */
	t->lpm = rte_lpm_create(name, numa_node, &cfg);
	if (!t->data || !t->lpm)
		goto error;
	if (entries)
		TAILQ_FOREACH(e, entries, node) {
			uint32_t key, mask = ~0u;
			uint8_t *d = &t->data[(size_t)rule * t->entry_data_size];
			int len;

			memcpy(&key, e->key, 4);
			if (e->key_mask)
				memcpy(&mask, e->key_mask, 4);
			len = prefix_len(mask);
			if (len < 0) {
				bsw_set_error("LPM entry %08x/%08x: the mask is no prefix", key, mask);
				goto error;
			}
			memcpy(d, &e->action_id, 8);
			if (params->action_data_size)
				memcpy(d + 8, e->action_data, params->action_data_size);
			if (len == 0)
				t->default_rule = rule;
			else if (rte_lpm_add(t->lpm, key & mask, (uint8_t)len, rule) < 0)
				goto error;
			rule++;
		}
	return t;
error:
	lpm32_free(t);
	return NULL;
}

static int
lpm32_lookup(void *table, void *mailbox, uint8_t **key, uint64_t *action_id, uint8_t **action_data,
	     size_t *entry_id, int *hit)
{
	RTE_SET_USED(mailbox);
	return bsw_lpm32_lookup(table, key, action_id, action_data, entry_id, hit);
}

static uint64_t
lpm32_mailbox_size(void)
{
	return 0;
}

const struct rte_swx_table_ops bsw_lpm32_table_ops = {
	.mailbox_size_get = lpm32_mailbox_size,
	.create = lpm32_create,
	.lkp = lpm32_lookup,
	.free = lpm32_free,
};

int
bsw_lpm32_eligible(struct rte_swx_pipeline *p, uint32_t table_id, uint32_t n_match_fields)
{
	struct rte_swx_ctl_table_match_field_info mf;

	if (n_match_fields != 1 || rte_swx_ctl_table_match_field_info_get(p, table_id, 0, &mf))
		return 0;
	return mf.match_type == RTE_SWX_TABLE_MATCH_LPM && mf.n_bits == 32 && !mf.is_header;
}
