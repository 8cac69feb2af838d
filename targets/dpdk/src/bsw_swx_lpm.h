/* SPDX-License-Identifier: Apache-2.0 */
/* The LPM table's object (bsw_table_lpm.c: an IPv4 FIB on one 32-bit
 * metadata field, as rte_lpm's DIR-24-8 and the entries' action data
 * beside it) and its lookup. One definition for the table type and the
 * straight-line code (straight_codegen.py puts this file's text into it
 * and inlines the lookup where the table's lookup function is this
 * type's). Needs rte_lpm.h first. */
#ifndef BSW_SWX_LPM_H
#define BSW_SWX_LPM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BSW_LPM32_NO_RULE UINT32_MAX

struct bsw_lpm32_table {
	struct rte_lpm *lpm;
	uint32_t key_offset;		/* of the field in the key struct, bytes */
	uint32_t entry_data_size;	/* action id (8 bytes), then its data */
	uint32_t default_rule;		/* a /0 entry (rte_lpm has no depth 0) */
	uint8_t *data;			/* entry_data_size per rule */
};

/* The longest prefix holding the key's address (host order, as metadata
 * is), else the /0 entry; a miss without one. Always 1 (done), as a
 * one-step lookup. */
static inline __attribute__((always_inline)) int
bsw_lpm32_lookup(const void *table, uint8_t *const *key, uint64_t *action_id, uint8_t **action_data,
		 size_t *entry_id, int *hit)
{
	const struct bsw_lpm32_table *t = table;
	uint32_t addr, rule;
	uint8_t *d;

	memcpy(&addr, &key[0][t->key_offset], 4);
	if (rte_lpm_lookup(t->lpm, addr, &rule) != 0) {
		rule = t->default_rule;
		if (rule == BSW_LPM32_NO_RULE) {
			*hit = 0;
			return 1;
		}
	}
	d = &t->data[(size_t)rule * t->entry_data_size];
	memcpy(action_id, d, 8);
	*action_data = d + 8;
	*entry_id = rule;
	*hit = 1;
	return 1;
}

#endif
