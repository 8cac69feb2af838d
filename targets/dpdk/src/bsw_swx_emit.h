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
 * The deparser's emits, one instruction each, reach here as one call where
 * bsw_emit_run.c fuses them (bsw_hdr_emit_run, bsw_hdr_emit_run_tx): the
 * whole run is then a constant that gcc sees at once, and with the headers'
 * ids rising in emit order (the BNG declares its headers in deparser order)
 * only the valid ones are visited, found with a count of trailing zeros of
 * the valid bits under the run's mask. Measured against one call per emit
 * (make bench-ab, --env BSW_SWX_EMIT_RUN=1,0, two runs, see README): +0.5%
 * to +7% by role, lac_down -1.1% and +1.1%.
 *
 * Semantics are DPDK's: a valid header is appended to the thread's output
 * headers, extending the last one when its bytes follow them in memory
 * (what tx then copies in one piece), exactly as a sequence of DPDK's own
 * single emits leaves them. Built only without DPDK's trace (a traced build
 * keeps DPDK's emits and their per-header trace lines). */
#ifndef BSW_SWX_EMIT_H
#define BSW_SWX_EMIT_H

#include "rte_swx_pipeline_internal.h"

/* The thread's output list as a fused emit holds it: in registers, written
 * back by bsw_emit_finish() only when a header was emitted. */
struct bsw_emit_state {
	struct header_out_runtime *ho;
	uint8_t *ho_ptr;
	uint32_t n_headers_out;
	uint32_t ho_nbytes;
};

/* Append one valid header, as DPDK's emit does: extending the last output
 * header when its bytes follow that one's in memory. */
static __rte_always_inline void
bsw_emit_one(struct thread *t, struct bsw_emit_state *s, uint32_t header_id, uint32_t struct_id)
{
	struct header_runtime *hi = &t->headers[header_id];
	uint8_t *hi_ptr = t->structs[struct_id];

	if (!s->ho) {
		s->n_headers_out = t->n_headers_out;
		if (!s->n_headers_out) {
			s->ho = &t->headers_out[0];
			s->ho->ptr0 = hi->ptr0;
			s->ho->ptr = hi_ptr;
			s->ho_ptr = hi_ptr;
			s->ho_nbytes = hi->n_bytes;
			s->n_headers_out = 1;
			return;
		}
		s->ho = &t->headers_out[s->n_headers_out - 1];
		s->ho_ptr = s->ho->ptr;
		s->ho_nbytes = s->ho->n_bytes;
	}
	if (s->ho_ptr + s->ho_nbytes == hi_ptr) {
		s->ho_nbytes += hi->n_bytes;
	} else {
		s->ho->n_bytes = s->ho_nbytes;
		s->ho++;
		s->ho->ptr0 = hi->ptr0;
		s->ho->ptr = hi_ptr;
		s->ho_ptr = hi_ptr;
		s->ho_nbytes = hi->n_bytes;
		s->n_headers_out++;
	}
}

static __rte_always_inline void
bsw_emit_finish(struct thread *t, const struct bsw_emit_state *s)
{
	if (s->ho) {
		s->ho->n_bytes = s->ho_nbytes;
		t->n_headers_out = s->n_headers_out;
	}
}

/* DPDK's __instr_hdr_emit_many_exec() with the valid-bit test first and
 * the thread's output list written only when a header was emitted. */
static __rte_always_inline void
bsw_hdr_emit_many_exec(struct thread *t, const struct instruction *ip, uint32_t n_emit)
{
	uint64_t valid_headers = t->valid_headers;
	struct bsw_emit_state s = { NULL, NULL, 0, 0 };
	uint32_t i;

	for (i = 0; i < n_emit; i++) {
		uint32_t header_id = ip->io.hdr.header_id[i];

		if (MASK64_BIT_GET(valid_headers, header_id))
			bsw_emit_one(t, &s, header_id, ip->io.hdr.struct_id[i]);
	}
	bsw_emit_finish(t, &s);
}

/* A hook for the differential check (tests/unit/swx_emit_check.c), which
 * counts the runs that take the walk over set bits. */
#ifndef BSW_EMIT_RUN_ORDERED_TAKEN
#define BSW_EMIT_RUN_ORDERED_TAKEN() do { } while (0)
#endif

/* The i-th header of a run of emits: n_single one-header emits at first[],
 * then the emits of `last` (an emit fused with tx), if any. */
#define BSW_RUN_HEADER(first, n_single, last, i, field)				\
	((i) < (n_single) ? (first)[i].io.hdr.field[0] : (last)->io.hdr.field[(i) - (n_single)])

/* A deparser's run of emits as one (bsw_emit_run.c fuses them in the
 * generated code): n_single one-header emits at first[], then the n_last
 * emits of `last`. When the run's header ids rise in emit order and each
 * header's struct id is its header id plus one constant (what DPDK gives
 * headers declared in deparser order), the valid headers are found by
 * walking the set bits of valid_headers & the run's mask, and an invalid
 * header costs nothing; otherwise each header's valid bit is tested in turn.
 * Every instruction is a constant of the generated code, so gcc works out
 * which of the two applies, and the mask, at compile time. */
static __rte_always_inline void
bsw_hdr_emit_run_exec(struct thread *t, const struct instruction *first, uint32_t n_single,
		      const struct instruction *last, uint32_t n_last)
{
	uint32_t n = n_single + n_last, i, prev = 0;
	int32_t delta = (int32_t)BSW_RUN_HEADER(first, n_single, last, 0, struct_id) -
			(int32_t)BSW_RUN_HEADER(first, n_single, last, 0, header_id);
	struct bsw_emit_state s = { NULL, NULL, 0, 0 };
	uint64_t mask = 0, valid_headers;
	int ordered = 1;

#pragma GCC unroll 64
	for (i = 0; i < n; i++) {
		uint32_t h = BSW_RUN_HEADER(first, n_single, last, i, header_id);
		uint32_t sid = BSW_RUN_HEADER(first, n_single, last, i, struct_id);

		ordered &= h < 64 && (i == 0 || h > prev) && (int32_t)sid - (int32_t)h == delta;
		mask |= h < 64 ? 1ULL << h : 0;
		prev = h;
	}
	valid_headers = t->valid_headers;
	if (__builtin_constant_p(ordered) && __builtin_constant_p(mask) &&
	    __builtin_constant_p(delta) && ordered) {
		uint64_t m = valid_headers & mask;

		BSW_EMIT_RUN_ORDERED_TAKEN();
		while (m) {
			uint32_t h = (uint32_t)__builtin_ctzll(m);

			m &= m - 1;
			bsw_emit_one(t, &s, h, (uint32_t)((int32_t)h + delta));
		}
	} else {
#pragma GCC unroll 64
		for (i = 0; i < n; i++) {
			uint32_t h = BSW_RUN_HEADER(first, n_single, last, i, header_id);

			if (MASK64_BIT_GET(valid_headers, h))
				bsw_emit_one(t, &s, h,
					     BSW_RUN_HEADER(first, n_single, last, i, struct_id));
		}
	}
	bsw_emit_finish(t, &s);
}

/* The fused forms that bsw_emit_run.c writes. */
static __rte_always_inline void
bsw_hdr_emit_run(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
		 const struct instruction *first, uint32_t n_single)
{
	bsw_hdr_emit_run_exec(t, first, n_single, first, 0);
}

static __rte_always_inline void
bsw_hdr_emit_run_tx(struct rte_swx_pipeline *p, struct thread *t, const struct instruction *first,
		    uint32_t n_single, const struct instruction *last, uint32_t n_last)
{
	bsw_hdr_emit_run_exec(t, first, n_single, last, n_last);
	__instr_tx_exec(p, t, last);
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
