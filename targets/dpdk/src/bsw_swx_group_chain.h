/* SPDX-License-Identifier: Apache-2.0 */
/* One chain of calls per packet through a compiled SWX pipeline.
 *
 * Put in front of the C code that rte_swx_pipeline_codegen() writes; the
 * switch's copy of that code (bsw_group_chain.c) calls BSW_CHAIN(p) where
 * DPDK's code would return to the run loop with the thread already pointed
 * at its next instruction group.
 *
 * Why: the codegen makes one function per run of instructions between two
 * table lookups or jump targets (an instruction group). Each group returns to
 * rte_swx_pipeline_run(), which reloads the thread, its instruction pointer
 * and the instruction's handler and calls it through a pointer: one run-loop
 * turn per group and one per table, 10-20 per packet on the BNG's paths. A
 * call from the group itself skips the loop, and its indirect call has one
 * target per call site, which the branch predictor learns. Measured on the
 * BNG (make bench-ab, 40k sessions, 64 B, three runs): 1-10% more packets
 * per core on five roles, lns_up -1 to +4%.
 *
 * What stays as under the run loop: the instruction pointer is set before
 * every chained call, so the pipeline state at each group boundary is what
 * the run loop would see, and an instruction that yields the thread (rx, tx,
 * drop, a lookup that is not finished in one step) still returns to the run
 * loop, which goes on with the next thread. A chain never outlives its
 * packet: P4 control flow has no loops, and every path ends in tx or drop.
 * The table instruction is DPDK's instr_table_af_exec() (internal to
 * rte_swx_pipeline.c, so rewritten here from the same DPDK version's
 * internal header) followed by BSW_CHAIN, less DPDK's per-table statistics
 * (packets by hit/miss and by action, rte_swx_ctl_pipeline_table_stats_read):
 * nothing in the switch reads them, and without their two increments per
 * lookup five of the BNG's six roles forwarded 1-7% more packets per core
 * (two runs of make bench-ab BENCH_AB_ARGS="--env BSW_TABLE_STATS=0,1";
 * lac_down -1.8% and +0.4%). BSW_TABLE_STATS=1 at pipeline build time keeps
 * them (bsw_pipeline.c then defines the macro tested below); lookups that
 * return to the run loop (staged, not finished in one step) are counted by
 * DPDK, unless the thread rotation (bsw_thread_rotation.c) has pointed the
 * run loop's table handler at this chained one too. */
#ifndef BSW_SWX_GROUP_CHAIN_H
#define BSW_SWX_GROUP_CHAIN_H

#include "rte_swx_pipeline_internal.h"

static void bsw_table_af_chain(struct rte_swx_pipeline *p);

/* Run the instruction the thread points at, without returning to the run
 * loop first. Inlined at each call site, so each site has its own indirect
 * call. */
static inline __attribute__((always_inline)) void
bsw_chain(struct rte_swx_pipeline *p)
{
	struct thread *t = &p->threads[p->thread_id];
	struct instruction *ip = t->ip;

	if (ip->type == INSTR_TABLE_AF) {
		bsw_table_af_chain(p);
		return;
	}
	p->instruction_table[ip->type](p);
}

/* instr_table_af_exec() of DPDK 22.11, then the instruction after the table.
 * One copy, not inlined at every site: inlining it (and so giving each table
 * its own lookup call site) measured no faster. */
static __attribute__((noinline)) void
bsw_table_af_chain(struct rte_swx_pipeline *p)
{
	struct thread *t = &p->threads[p->thread_id];
	struct instruction *ip = t->ip;
	uint32_t table_id = ip->table.table_id;
	struct rte_swx_table_state *ts = &t->table_state[table_id];
	struct table_runtime *table = &t->tables[table_id];
	uint64_t action_id;
	uint8_t *action_data;
	size_t entry_id;
	int done, hit;

	done = table->func(ts->obj, table->mailbox, table->key, &action_id, &action_data,
			   &entry_id, &hit);
	if (!done) {
		thread_yield(p);
		return;
	}
	action_id = hit ? action_id : ts->default_action_id;
	action_data = hit ? action_data : ts->default_action_data;
	t->action_id = action_id;
	t->structs[0] = action_data;
	t->entry_id = hit ? 1 + entry_id : 0;
	t->hit = hit;
#ifdef BSW_TABLE_STATS
	p->table_stats[table_id].n_pkts_hit[hit]++;
	p->table_stats[table_id].n_pkts_action[action_id]++;
#endif
	thread_ip_inc(p);
	p->action_funcs[action_id](p);
	bsw_chain(p);
}

#define BSW_CHAIN(p) bsw_chain(p)
/* The hand-over to a group whose function is in this code. */
#define BSW_CHAIN_TO(p, group_func) group_func(p)

#endif /* BSW_SWX_GROUP_CHAIN_H */
