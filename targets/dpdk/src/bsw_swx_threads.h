/* SPDX-License-Identifier: Apache-2.0 */
/* The instructions that hand a compiled SWX pipeline to its next thread,
 * compiled with the generated code, for a pipeline that rotates over fewer
 * threads than DPDK's 16 (bsw_thread_rotation.c).
 *
 * Put in front of the generated code after bsw_swx_group_chain.h, and only
 * when the code is compiled against the copy of DPDK's internal header whose
 * thread_yield() and thread_yield_cond() wrap at BSW_SWX_THREADS. The
 * generated groups then yield within those threads; but an instruction that
 * is a group of its own (the rx a thread waits at while no packet comes, a
 * lone table lookup, tx or drop) runs from DPDK's library, whose yields wrap
 * at 16. A thread entered that way would hold its packet until another of
 * the library's yields happened to land on it again: late, and out of order
 * with the packets behind it. So the switch points the pipeline's handlers
 * of every instruction type that yields at these copies (the bodies of
 * DPDK 22.11's rte_swx_pipeline.c, which does not export them), and refuses
 * programs with yielding instructions it has no copy of (learners,
 * selectors, externs). */
#ifndef BSW_SWX_THREADS_H
#define BSW_SWX_THREADS_H

#include "rte_swx_pipeline_internal.h"

void
bsw_instr_rx(struct rte_swx_pipeline *p)
{
	instr_rx_exec(p);
}

#define BSW_INSTR_THEN_RX(name, exec)						\
void										\
name(struct rte_swx_pipeline *p)						\
{										\
	struct thread *t = &p->threads[p->thread_id];				\
	struct instruction *ip = t->ip;						\
										\
	exec(p, t, ip);								\
	thread_ip_reset(p, t);							\
	instr_rx_exec(p);							\
}

BSW_INSTR_THEN_RX(bsw_instr_tx, __instr_tx_exec)
BSW_INSTR_THEN_RX(bsw_instr_tx_i, __instr_tx_i_exec)
BSW_INSTR_THEN_RX(bsw_instr_drop, __instr_drop_exec)
BSW_INSTR_THEN_RX(bsw_instr_hdr_emit_tx, __instr_hdr_emit_tx_exec)
BSW_INSTR_THEN_RX(bsw_instr_hdr_emit2_tx, __instr_hdr_emit2_tx_exec)
BSW_INSTR_THEN_RX(bsw_instr_hdr_emit3_tx, __instr_hdr_emit3_tx_exec)
BSW_INSTR_THEN_RX(bsw_instr_hdr_emit4_tx, __instr_hdr_emit4_tx_exec)
BSW_INSTR_THEN_RX(bsw_instr_hdr_emit5_tx, __instr_hdr_emit5_tx_exec)
BSW_INSTR_THEN_RX(bsw_instr_hdr_emit6_tx, __instr_hdr_emit6_tx_exec)
BSW_INSTR_THEN_RX(bsw_instr_hdr_emit7_tx, __instr_hdr_emit7_tx_exec)
BSW_INSTR_THEN_RX(bsw_instr_hdr_emit8_tx, __instr_hdr_emit8_tx_exec)

/* DPDK's instr_table_af_exec() is bsw_table_af_chain() less the chaining
 * (and less DPDK's per-table statistics, as every chained lookup): the
 * chained one serves the run loop as well. */
void
bsw_instr_table_af(struct rte_swx_pipeline *p)
{
	bsw_table_af_chain(p);
}

#endif /* BSW_SWX_THREADS_H */
