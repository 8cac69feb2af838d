/* SPDX-License-Identifier: Apache-2.0 */
/* Header emits for compiled SWX pipelines that look at a header's valid bit
 * before anything else.
 *
 * Put in front of the C code that rte_swx_pipeline_codegen() writes (after
 * bsw_swx_exact_access.h when that is used); it replaces the emit
 * instructions, alone and fused with tx, by the #defines at the end.
 *
 * Why: a P4 deparser emits every header the program knows, in order, and
 * most of them are not valid in any one packet (the BNG's deparser has 21
 * emits; a routed PPPoE packet has two or three valid headers). DPDK 22.11's
 * emit loads the header's runtime record and its struct pointer and, after
 * the valid-bit test, stores the thread's count of output headers whether
 * or not it emitted anything; gcc cannot drop that store, so each emit of
 * an invalid header cost about ten instructions, three loads and a store.
 * Deleting the 17 emits of headers a routed PPPoE packet never has from the
 * spec made pppoe_up forward 8.5% more packets per core (make bench-ab,
 * --program-a). Here an invalid header costs a bit test: the valid bits are
 * read once per run of emits, and only a valid header touches the thread's
 * output list, whose state stays in registers within a fused emit as in
 * DPDK's. Measured against DPDK's (three runs of make bench-ab, --env
 * BSW_SWX_EMIT=1,0): +0 to +3% on pppoe_up, pppoe_down, lac_up and lns_up,
 * lac_down and lns_down unchanged within the noise. An earlier version that
 * reread the output list for every valid header lost up to 3% on the roles
 * that emit many valid headers.
 *
 * Semantics are DPDK's: a valid header is appended to the thread's output
 * headers, extending the last one when its bytes follow them in memory
 * (what tx then copies in one piece), exactly as a sequence of DPDK's own
 * single emits leaves them. Built only without DPDK's trace (a traced build
 * keeps DPDK's emits and their per-header trace lines). */
#ifndef BSW_SWX_EMIT_H
#define BSW_SWX_EMIT_H

#include "rte_swx_pipeline_internal.h"

/* DPDK's __instr_hdr_emit_many_exec() with the valid-bit test first and
 * the thread's output list written only when a header was emitted. */
static __rte_always_inline void
bsw_hdr_emit_many_exec(struct thread *t, const struct instruction *ip, uint32_t n_emit)
{
	uint64_t valid_headers = t->valid_headers;
	struct header_out_runtime *ho = NULL;
	uint32_t n_headers_out = 0, ho_nbytes = 0, i;
	uint8_t *ho_ptr = NULL;

	for (i = 0; i < n_emit; i++) {
		uint32_t header_id = ip->io.hdr.header_id[i];
		struct header_runtime *hi;
		uint8_t *hi_ptr;

		if (!MASK64_BIT_GET(valid_headers, header_id))
			continue;
		hi = &t->headers[header_id];
		hi_ptr = t->structs[ip->io.hdr.struct_id[i]];
		if (!ho) {
			n_headers_out = t->n_headers_out;
			if (!n_headers_out) {
				ho = &t->headers_out[0];
				ho->ptr0 = hi->ptr0;
				ho->ptr = hi_ptr;
				ho_ptr = hi_ptr;
				ho_nbytes = hi->n_bytes;
				n_headers_out = 1;
				continue;
			}
			ho = &t->headers_out[n_headers_out - 1];
			ho_ptr = ho->ptr;
			ho_nbytes = ho->n_bytes;
		}
		if (ho_ptr + ho_nbytes == hi_ptr) {
			ho_nbytes += hi->n_bytes;
		} else {
			ho->n_bytes = ho_nbytes;
			ho++;
			ho->ptr0 = hi->ptr0;
			ho->ptr = hi_ptr;
			ho_ptr = hi_ptr;
			ho_nbytes = hi->n_bytes;
			n_headers_out++;
		}
	}
	if (ho) {
		ho->n_bytes = ho_nbytes;
		t->n_headers_out = n_headers_out;
	}
}

static __rte_always_inline void
bsw_hdr_emit_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t, const struct instruction *ip)
{
	bsw_hdr_emit_many_exec(t, ip, 1);
}

#define BSW_HDR_EMIT_TX(name, n)							\
static __rte_always_inline void								\
name(struct rte_swx_pipeline *p, struct thread *t, const struct instruction *ip)	\
{											\
	bsw_hdr_emit_many_exec(t, ip, n);						\
	__instr_tx_exec(p, t, ip);							\
}

BSW_HDR_EMIT_TX(bsw_hdr_emit_tx_exec, 1)
BSW_HDR_EMIT_TX(bsw_hdr_emit2_tx_exec, 2)
BSW_HDR_EMIT_TX(bsw_hdr_emit3_tx_exec, 3)
BSW_HDR_EMIT_TX(bsw_hdr_emit4_tx_exec, 4)
BSW_HDR_EMIT_TX(bsw_hdr_emit5_tx_exec, 5)
BSW_HDR_EMIT_TX(bsw_hdr_emit6_tx_exec, 6)
BSW_HDR_EMIT_TX(bsw_hdr_emit7_tx_exec, 7)
BSW_HDR_EMIT_TX(bsw_hdr_emit8_tx_exec, 8)

#define __instr_hdr_emit_exec bsw_hdr_emit_exec
#define __instr_hdr_emit_tx_exec bsw_hdr_emit_tx_exec
#define __instr_hdr_emit2_tx_exec bsw_hdr_emit2_tx_exec
#define __instr_hdr_emit3_tx_exec bsw_hdr_emit3_tx_exec
#define __instr_hdr_emit4_tx_exec bsw_hdr_emit4_tx_exec
#define __instr_hdr_emit5_tx_exec bsw_hdr_emit5_tx_exec
#define __instr_hdr_emit6_tx_exec bsw_hdr_emit6_tx_exec
#define __instr_hdr_emit7_tx_exec bsw_hdr_emit7_tx_exec
#define __instr_hdr_emit8_tx_exec bsw_hdr_emit8_tx_exec

#endif /* BSW_SWX_EMIT_H */
