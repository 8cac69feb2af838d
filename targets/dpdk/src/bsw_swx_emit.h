/* SPDX-License-Identifier: Apache-2.0 */
/* Header emits for compiled SWX pipelines that look at a header's valid bit
 * before anything else, and the tx and drop that write the emitted headers
 * into the packet without calls to memcpy (bsw_emit_handler below).
 *
 * Put in front of the C code that rte_swx_pipeline_codegen() writes (after
 * bsw_swx_exact_access.h when that is used); it replaces the emit
 * instructions, alone and fused with tx, by the #defines at the end, and
 * tx and drop by those after bsw_emit_handler().
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

#include <string.h>

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

/* The first and the last w bytes of n (w <= n <= 2 w, so the two cover all
 * n), all loaded before any is stored: source and destination may overlap,
 * as memmove() allows. w (at most 32) is a constant at every call, so each
 * copy is loads and stores of registers, of 16 bytes at most each. */
typedef uint8_t bsw_bytes16 __attribute__((vector_size(16)));

static __rte_always_inline void
bsw_move_ends(uint8_t *dst, const uint8_t *src, uint32_t n, uint32_t w)
{
	uint32_t c = w < 16 ? w : 16, k;
	bsw_bytes16 head[2], tail[2];

	for (k = 0; k * c < w; k++) {
		memcpy(&head[k], src + k * c, c);
		memcpy(&tail[k], src + n - w + k * c, c);
	}
	for (k = 0; k * c < w; k++) {
		memcpy(dst + k * c, &head[k], c);
		memcpy(dst + n - w + k * c, &tail[k], c);
	}
}

/* Moves n bytes as memmove() does, without its call: the headers a packet
 * leaves with are a few tens of bytes each. Over 64 bytes it is memmove(). */
static __rte_always_inline void
bsw_move_small(uint8_t *dst, const uint8_t *src, uint32_t n)
{
	if (n > 64)
		memmove(dst, src, n);
	else if (n > 32)
		bsw_move_ends(dst, src, n, 32);
	else if (n >= 16)
		bsw_move_ends(dst, src, n, 16);
	else if (n >= 8)
		bsw_move_ends(dst, src, n, 8);
	else if (n >= 4)
		bsw_move_ends(dst, src, n, 4);
	else if (n >= 2)
		bsw_move_ends(dst, src, n, 2);
	else if (n)
		*dst = *src;
}

static __rte_always_inline int
bsw_overlap(const uint8_t *a, uint32_t na, const uint8_t *b, uint32_t nb)
{
	return a < b + nb && b < a + na;
}

/* Two output headers moved straight to their places in front of the
 * payload (and the headers in place there), in the order in which neither
 * move writes over the other's source; 0 where both orders would (then
 * they go through the staging area). */
static __rte_always_inline int
bsw_emit_two(struct thread *t, uint32_t tail)
{
	const struct header_out_runtime *h0 = &t->headers_out[0], *h1 = &t->headers_out[1];
	uint8_t *d1 = t->ptr - tail - h1->n_bytes, *d0 = d1 - h0->n_bytes;

	if (!bsw_overlap(d0, h0->n_bytes, h1->ptr, h1->n_bytes)) {
		bsw_move_small(d0, h0->ptr, h0->n_bytes);
		bsw_move_small(d1, h1->ptr, h1->n_bytes);
		return 1;
	}
	if (!bsw_overlap(d1, h1->n_bytes, h0->ptr, h0->n_bytes)) {
		bsw_move_small(d1, h1->ptr, h1->n_bytes);
		bsw_move_small(d0, h0->ptr, h0->n_bytes);
		return 1;
	}
	return 0;
}

/* DPDK 22.11's emit_handler(): writes the thread's output headers in front
 * of the payload (t->ptr) and grows the packet by them.
 *
 * Why not DPDK's: any packet that lost a header from the middle (a PPPoE or
 * L2TP decap) or gained one that does not start the packet (an L2TP encap
 * behind Ethernet) takes its "complex case", three calls to the C library's
 * memcpy per packet (every header into a staging area, then the lot in
 * front of the payload): 4% of the BNG's samples on pppoe_up (perf, 64 B).
 * Here the output headers that already end at the payload stay where they
 * are (after a decap the inner IP header does), one or two headers left are
 * moved straight to their places (two in the order in which neither
 * overwrites the other's source), and only more, or two that cross, go
 * through the staging area; every copy is bsw_move_small(). The bytes left
 * in the packet, its offset and length are DPDK's: its two simple cases are
 * the same moves (nothing, or one header), and in its complex case every
 * source is read before any byte is written, as in each of the ways here
 * (swx_emit_check.c compares the two on random header lists). */
static __rte_always_inline void
bsw_emit_handler(struct thread *t)
{
	uint32_t n = t->n_headers_out, tail = 0, offset = 0, i;

	while (n && t->headers_out[n - 1].ptr + t->headers_out[n - 1].n_bytes == t->ptr - tail) {
		tail += t->headers_out[n - 1].n_bytes;
		n--;
	}
	if (n == 1) {
		offset = t->headers_out[0].n_bytes;
		bsw_move_small(t->ptr - tail - offset, t->headers_out[0].ptr, offset);
	} else if (n == 2 && bsw_emit_two(t, tail)) {
		offset = t->headers_out[0].n_bytes + t->headers_out[1].n_bytes;
	} else if (n) {
		for (i = 0; i < n; i++) {
			struct header_out_runtime *h = &t->headers_out[i];

			bsw_move_small(&t->header_out_storage[offset], h->ptr, h->n_bytes);
			offset += h->n_bytes;
		}
		bsw_move_small(t->ptr - tail - offset, t->header_out_storage, offset);
	}
	offset += tail;
	t->pkt.offset -= offset;
	t->pkt.length += offset;
}

/* DPDK 22.11's tx, tx with the port a constant, and drop, with
 * bsw_emit_handler(). */
static __rte_always_inline void
bsw_tx_to(struct rte_swx_pipeline *p, struct thread *t, uint64_t port_id)
{
	struct port_out_runtime *port = &p->out[port_id];
	struct rte_swx_pkt *pkt = &t->pkt;

	bsw_emit_handler(t);
	mirroring_handler(p, t, pkt);
	if (!t->recirculate)
		port->pkt_tx(port->obj, pkt);
}

static __rte_always_inline void
bsw_tx_exec(struct rte_swx_pipeline *p, struct thread *t, const struct instruction *ip)
{
	bsw_tx_to(p, t, METADATA_READ(t, ip->io.io.offset, ip->io.io.n_bits));
}

static __rte_always_inline void
bsw_tx_i_exec(struct rte_swx_pipeline *p, struct thread *t, const struct instruction *ip)
{
	bsw_tx_to(p, t, ip->io.io.val);
}

static __rte_always_inline void
bsw_drop_exec(struct rte_swx_pipeline *p, struct thread *t,
	      const struct instruction *ip __rte_unused)
{
	struct port_out_runtime *port = &p->out[p->n_ports_out - 1];

	bsw_emit_handler(t);
	mirroring_handler(p, t, &t->pkt);
	port->pkt_tx(port->obj, &t->pkt);
}

#ifndef BSW_EMIT_DPDK_HANDLER
#define __instr_tx_exec bsw_tx_exec
#define __instr_tx_i_exec bsw_tx_i_exec
#define __instr_drop_exec bsw_drop_exec
#endif

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
