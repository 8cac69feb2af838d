/* SPDX-License-Identifier: Apache-2.0 */
/* Exact-match lookups in one step.
 *
 * SWX's exact-match table looks a key up in three stages (hash and prefetch
 * the bucket, prefetch the key, compare), and the pipeline switches to
 * another packet between stages. That hides memory latency when keys are not
 * in cache, and costs two thread switches per lookup when they are. The
 * table type also has a one-step lookup over the same table object
 * (rte_swx_table_exact_match_unoptimized_ops). This sets, per instance and
 * pipeline thread, which of the two the pipeline calls for each exact-match
 * table; the tables, their entries and the table manager are untouched.
 * One step is DPDK's own, or the same lookup with the key size a constant
 * (bsw_table_em_lookup.c) where the table allows it, unless
 * BSW_TABLE_EM_FAST=0 keeps DPDK's (to measure the difference).
 * Reaches into the pipeline's thread state (rte_swx_pipeline_internal.h of
 * the same DPDK version, as codegen does), so call it while no worker runs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_swx_table_em.h>

#include "bsw_internal.h"
#include "rte_swx_pipeline_internal.h"

int
bsw_table_lookup_set(struct bsw_pipeline *bp, int one_step)
{
	const char *fast_env = getenv("BSW_TABLE_EM_FAST");
	int fast = one_step && !(fast_env && !strcmp(fast_env, "0"));
	uint32_t k, i, id;

	if (bp->workers_started) {
		bsw_set_error("table lookups can be switched only before the workers start");
		return -EBUSY;
	}
	for (k = 0; k < bp->n_instances; k++) {
		struct rte_swx_pipeline *p = bp->inst[k].p;

		for (i = 0; i < RTE_SWX_PIPELINE_THREADS_MAX; i++) {
			struct thread *t = &p->threads[i];

			for (id = 0; id < bp->n_tables; id++) {
				struct bsw_table *bt = &bp->tables[id];
				rte_swx_table_lookup_t own;

				if (!bsw_table_is_dpdk_em(bt))
					continue;
				own = fast ? bsw_table_em_fast(bt, bp->inst[k].active[id].obj) : NULL;
				t->tables[id].func = own ? own : one_step ?
					rte_swx_table_exact_match_unoptimized_ops.lkp :
					rte_swx_table_exact_match_ops.lkp;
			}
		}
	}
	return 0;
}
