/* SPDX-License-Identifier: Apache-2.0 */
/* Exact-width field access for compiled SWX pipelines.
 *
 * Prepended to the C code that rte_swx_pipeline_codegen() writes, before its
 * own #include of DPDK's internal header (which this one includes first, so
 * that its include guard skips the second one). It replaces the field-moving
 * instructions with versions that read and write a field with loads and
 * stores of the field's own width.
 *
 * Why: DPDK 22.11 reads every field as the 8 bytes at its offset and writes
 * it by loading those 8 bytes, merging, and storing 8 bytes back. The
 * metadata of a P4 program is a packed struct of 1-, 2- and 4-byte fields,
 * so a write to one field loads bytes that the write to its neighbour just
 * stored at a different offset. The CPU cannot forward a store to a load that
 * only partly overlaps it and waits for the store to reach the cache: on the
 * BNG's downstream path the fourteen metadata resets at the top of the
 * control cost about as much as all of its table lookups (measured: the
 * same spec with those resets reordered so no two neighbours follow each
 * other ran 8% faster, without them 17% faster). With stores and loads of
 * the field's width a field is only ever read back with the width it was
 * written with, which store forwarding handles, and a write needs no load.
 *
 * The accesses are typed: a 1-, 2-, 4- or 8-byte field (a 6-byte one as 4
 * and 2) is read and written as the member of a packed one-member struct of
 * that width. An access
 * through memcpy or a uint8_t pointer may, by C's rules, change any object,
 * and one through a plain uint32_t or uint64_t may change any structure that
 * holds one (DPDK's thread state does); after each such store gcc reloaded
 * the thread's struct pointer array and the field's struct pointer, two
 * dependent loads in front of every field access. A store to one of these
 * structs can change nothing else, so gcc keeps the pointers in registers.
 * In turn, typed accesses may be reordered against DPDK's own instructions
 * that read or write the same bytes through other types (its remaining
 * checksum forms and field moves): the switch puts a compiler fence
 * (BSW_FENCE) on each side of every such call in the generated code
 * (bsw_exact_access_fence.c). Fields 3, 5 or 7 bytes wide keep DPDK's
 * 8-byte read-modify-write, through memcpy.
 *
 * Semantics are DPDK's: values are host byte order in metadata and network
 * byte order in headers, truncated or zero-extended to the destination width
 * as DPDK does. Each function here replaces the DPDK function whose name is
 * #defined to it below, and must compute the same result for every operand
 * width DPDK accepts (8 to 64 bits, whole bytes). The immediate operands of
 * the instructions are constants in the generated code, so the switch on the
 * width folds away and each access is a single mov.
 *
 * The checksum instructions the BNG uses (ckadd and cksub of a field, the
 * sum of a 20-byte header) are replaced too: they read the header's words
 * through a type that may alias any other, so they need no fence, and the
 * fences they had made gcc reload every struct pointer after them.
 * Instructions not replaced here (header extract and emit, other checksum
 * forms, table lookups, the register and meter forms the BNG does not use)
 * keep DPDK's 8-byte accesses; they are correct, and at worst wait as before.
 */
#ifndef BSW_SWX_EXACT_ACCESS_H
#define BSW_SWX_EXACT_ACCESS_H

#include <string.h>

#include "rte_swx_pipeline_internal.h"

/* Orders memory around a DPDK instruction the generated code calls. */
#define BSW_FENCE() __asm__ volatile("" ::: "memory")

/* Field access types (see above): packed, so unaligned, and types that no
 * DPDK structure contains. */
typedef struct { uint8_t v; } __attribute__((packed)) bsw_u8_t;
typedef struct { uint16_t v; } __attribute__((packed)) bsw_u16_t;
typedef struct { uint32_t v; } __attribute__((packed)) bsw_u32_t;
typedef struct { uint64_t v; } __attribute__((packed)) bsw_u64_t;

/* The field's value as an unsigned number of its little-endian bytes (what
 * DPDK's masked 8-byte load yields). */
static __rte_always_inline uint64_t
bsw_ld(const uint8_t *p, uint32_t n_bits)
{
	uint64_t v64;

	switch (n_bits) {
	case 8:
		return ((const bsw_u8_t *)p)->v;
	case 16:
		return ((const bsw_u16_t *)p)->v;
	case 32:
		return ((const bsw_u32_t *)p)->v;
	case 48:
		return (uint64_t)((const bsw_u32_t *)p)->v |
		       (uint64_t)((const bsw_u16_t *)(p + 4))->v << 32;
	case 64:
		return ((const bsw_u64_t *)p)->v;
	default:
		/* Other widths read 8 bytes, some of them other fields': through
		 * memcpy, which is ordered against every access. */
		memcpy(&v64, p, 8);
		return v64 & (UINT64_MAX >> (64 - n_bits));
	}
}

/* Writes the low n_bits of v as the field's little-endian bytes. */
static __rte_always_inline void
bsw_st(uint8_t *p, uint32_t n_bits, uint64_t v)
{
	uint64_t v64, mask;

	switch (n_bits) {
	case 8:
		((bsw_u8_t *)p)->v = (uint8_t)v;
		return;
	case 16:
		((bsw_u16_t *)p)->v = (uint16_t)v;
		return;
	case 32:
		((bsw_u32_t *)p)->v = (uint32_t)v;
		return;
	case 48:
		((bsw_u32_t *)p)->v = (uint32_t)v;
		((bsw_u16_t *)(p + 4))->v = (uint16_t)(v >> 32);
		return;
	case 64:
		((bsw_u64_t *)p)->v = v;
		return;
	default:
		/* Read-modify-write of 8 bytes that hold other fields too: through
		 * memcpy, so that it sees their latest stores and they see it. */
		mask = UINT64_MAX >> (64 - n_bits);
		memcpy(&v64, p, 8);
		v64 = (v64 & ~mask) | (v & mask);
		memcpy(p, &v64, 8);
		return;
	}
}

static __rte_always_inline uint8_t *
bsw_field(struct thread *t, const struct instr_operand *x)
{
	return &t->structs[x->struct_id][x->offset];
}

/* Host byte order value of a metadata field. */
static __rte_always_inline uint64_t
bsw_operand_hbo(struct thread *t, const struct instr_operand *x)
{
	return bsw_ld(bsw_field(t, x), x->n_bits);
}

/* Host byte order value of a header field (network byte order). */
static __rte_always_inline uint64_t
bsw_operand_nbo(struct thread *t, const struct instr_operand *x)
{
	return ntoh64(bsw_ld(bsw_field(t, x), x->n_bits)) >> (64 - x->n_bits);
}

static __rte_always_inline void
bsw_set_hbo(struct thread *t, const struct instr_operand *x, uint64_t v)
{
	bsw_st(bsw_field(t, x), x->n_bits, v);
}

static __rte_always_inline void
bsw_set_nbo(struct thread *t, const struct instr_operand *x, uint64_t v)
{
	bsw_st(bsw_field(t, x), x->n_bits, hton64(v << (64 - x->n_bits)));
}

/* Raw bytes of a header field moved to a header field of another width:
 * the low-order (last) bytes are kept, or zeros are put in front. */
static __rte_always_inline uint64_t
bsw_raw_resize(uint64_t raw, uint32_t src_bits, uint32_t dst_bits)
{
	return (raw << (64 - src_bits)) >> (64 - dst_bits);
}

/* ---- mov ---------------------------------------------------------------- */

static __rte_always_inline void
bsw_mov_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
	     const struct instruction *ip)
{
	bsw_set_hbo(t, &ip->mov.dst, bsw_operand_hbo(t, &ip->mov.src));
}

static __rte_always_inline void
bsw_mov_mh_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
		const struct instruction *ip)
{
	bsw_set_hbo(t, &ip->mov.dst, bsw_operand_nbo(t, &ip->mov.src));
}

static __rte_always_inline void
bsw_mov_hm_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
		const struct instruction *ip)
{
	bsw_set_nbo(t, &ip->mov.dst, bsw_operand_hbo(t, &ip->mov.src));
}

static __rte_always_inline void
bsw_mov_hh_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
		const struct instruction *ip)
{
	uint64_t raw = bsw_ld(bsw_field(t, &ip->mov.src), ip->mov.src.n_bits);

	bsw_st(bsw_field(t, &ip->mov.dst), ip->mov.dst.n_bits,
	       bsw_raw_resize(raw, ip->mov.src.n_bits, ip->mov.dst.n_bits));
}

/* The immediate is already in the destination's byte order (DPDK converts
 * it when it translates the instruction). */
static __rte_always_inline void
bsw_mov_i_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
	       const struct instruction *ip)
{
	bsw_st(bsw_field(t, &ip->mov.dst), ip->mov.dst.n_bits, ip->mov.src_val);
}

/* ---- alu ---------------------------------------------------------------- */

/* Operand forms, as in DPDK: m = metadata (host order), h = header (network
 * order), i = immediate. The plain form is m op= m; _i (and, or, xor only)
 * works on the destination's raw bytes with an immediate DPDK converted to
 * the destination's byte order, which for bitwise operators is the same. */
#define BSW_ALU_FORMS(op, OP)                                                  \
static __rte_always_inline void                                                \
bsw_alu_##op##_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t, \
		    const struct instruction *ip)                              \
{                                                                              \
	bsw_set_hbo(t, &ip->alu.dst, bsw_operand_hbo(t, &ip->alu.dst) OP       \
		    bsw_operand_hbo(t, &ip->alu.src));                         \
}                                                                              \
static __rte_always_inline void                                                \
bsw_alu_##op##_mh_exec(struct rte_swx_pipeline *p __rte_unused,                \
		       struct thread *t, const struct instruction *ip)         \
{                                                                              \
	bsw_set_hbo(t, &ip->alu.dst, bsw_operand_hbo(t, &ip->alu.dst) OP       \
		    bsw_operand_nbo(t, &ip->alu.src));                         \
}                                                                              \
static __rte_always_inline void                                                \
bsw_alu_##op##_hm_exec(struct rte_swx_pipeline *p __rte_unused,                \
		       struct thread *t, const struct instruction *ip)         \
{                                                                              \
	bsw_set_nbo(t, &ip->alu.dst, bsw_operand_nbo(t, &ip->alu.dst) OP       \
		    bsw_operand_hbo(t, &ip->alu.src));                         \
}                                                                              \
static __rte_always_inline void                                                \
bsw_alu_##op##_hh_exec(struct rte_swx_pipeline *p __rte_unused,                \
		       struct thread *t, const struct instruction *ip)         \
{                                                                              \
	bsw_set_nbo(t, &ip->alu.dst, bsw_operand_nbo(t, &ip->alu.dst) OP       \
		    bsw_operand_nbo(t, &ip->alu.src));                         \
}

#define BSW_ALU_IMM_FORMS(op, OP)                                              \
static __rte_always_inline void                                                \
bsw_alu_##op##_mi_exec(struct rte_swx_pipeline *p __rte_unused,                \
		       struct thread *t, const struct instruction *ip)         \
{                                                                              \
	bsw_set_hbo(t, &ip->alu.dst, bsw_operand_hbo(t, &ip->alu.dst) OP       \
		    ip->alu.src_val);                                          \
}                                                                              \
static __rte_always_inline void                                                \
bsw_alu_##op##_hi_exec(struct rte_swx_pipeline *p __rte_unused,                \
		       struct thread *t, const struct instruction *ip)         \
{                                                                              \
	bsw_set_nbo(t, &ip->alu.dst, bsw_operand_nbo(t, &ip->alu.dst) OP       \
		    ip->alu.src_val);                                          \
}

#define BSW_ALU_BITWISE_IMM(op, OP)                                            \
static __rte_always_inline void                                                \
bsw_alu_##op##_i_exec(struct rte_swx_pipeline *p __rte_unused,                 \
		      struct thread *t, const struct instruction *ip)          \
{                                                                              \
	uint8_t *dst = bsw_field(t, &ip->alu.dst);                             \
	uint32_t n_bits = ip->alu.dst.n_bits;                                  \
									       \
	bsw_st(dst, n_bits, bsw_ld(dst, n_bits) OP ip->alu.src_val);           \
}

BSW_ALU_FORMS(add, +)
BSW_ALU_FORMS(sub, -)
BSW_ALU_FORMS(shl, <<)
BSW_ALU_FORMS(shr, >>)
BSW_ALU_FORMS(and, &)
BSW_ALU_FORMS(or, |)
BSW_ALU_FORMS(xor, ^)
BSW_ALU_IMM_FORMS(add, +)
BSW_ALU_IMM_FORMS(sub, -)
BSW_ALU_IMM_FORMS(shl, <<)
BSW_ALU_IMM_FORMS(shr, >>)
BSW_ALU_BITWISE_IMM(and, &)
BSW_ALU_BITWISE_IMM(or, |)
BSW_ALU_BITWISE_IMM(xor, ^)

/* ---- registers and meters indexed by metadata ---------------------------- */

/* The register that r[m] names: the index read at its width, masked to the
 * array's size as DPDK does. */
static __rte_always_inline uint64_t *
bsw_register(struct rte_swx_pipeline *p, struct thread *t, const struct instruction *ip)
{
	struct regarray_runtime *r = &p->regarray_runtime[ip->regarray.regarray_id];

	return &r->regarray[bsw_operand_hbo(t, &ip->regarray.idx) & r->size_mask];
}

static __rte_always_inline void
bsw_regrd_mrm_exec(struct rte_swx_pipeline *p, struct thread *t,
		   const struct instruction *ip)
{
	bsw_set_hbo(t, &ip->regarray.dstsrc, *bsw_register(p, t, ip));
}

static __rte_always_inline void
bsw_regadd_rmm_exec(struct rte_swx_pipeline *p, struct thread *t,
		    const struct instruction *ip)
{
	*bsw_register(p, t, ip) += bsw_operand_hbo(t, &ip->regarray.dstsrc);
}

static __rte_always_inline void
bsw_regadd_rmi_exec(struct rte_swx_pipeline *p, struct thread *t,
		    const struct instruction *ip)
{
	*bsw_register(p, t, ip) += ip->regarray.dstsrc_val;
}

/* meter m[m] length(m) color_in(i) -> color_out(m): DPDK's trTCM check, with
 * the operands read and the colour written at their widths.
 *
 * A meter that was never set, or was reset, has DPDK's colour mask GREEN:
 * whatever its buckets say, its colour is GREEN (0). Its buckets are never
 * read either: setting the meter rewrites the whole struct. So for such a
 * meter the TSC read and the check (two 64-bit divisions) change nothing
 * that can be observed and are skipped; its statistics count as before. A
 * BNG session without a rate limit is such a meter.
 *
 * The control thread sets and resets meters while workers run, and DPDK
 * does both by clearing the live struct with memset first: a worker can
 * find the mask of a set meter beside the NULL profile of one being reset,
 * which DPDK's instruction dereferences. The mask and the profile are read
 * once each here, and a NULL profile counts as a meter being reset: GREEN.
 * (Profiles are never freed by the switch, so a profile read before the
 * memset stays valid; a check on half-cleared buckets colours one packet.) */
static __rte_always_inline void
bsw_meter_mmi_exec(struct rte_swx_pipeline *p, struct thread *t,
		   const struct instruction *ip)
{
	struct metarray_runtime *r = &p->metarray_runtime[ip->meter.metarray_id];
	struct meter *m = &r->metarray[bsw_operand_hbo(t, &ip->meter.idx) & r->size_mask];
	uint32_t length = (uint32_t)bsw_operand_hbo(t, &ip->meter.length);
	enum rte_color color_out = RTE_COLOR_GREEN;
	enum rte_color mask = __atomic_load_n(&m->color_mask, __ATOMIC_RELAXED);

	rte_prefetch0(m->n_pkts);
	if (mask != RTE_COLOR_GREEN) {
		struct meter_profile *mp = __atomic_load_n(&m->profile, __ATOMIC_RELAXED);

		if (likely(mp != NULL)) {
			color_out = rte_meter_trtcm_color_aware_check(
				&m->m, &mp->profile, rte_get_tsc_cycles(), length,
				(enum rte_color)ip->meter.color_in_val);
			color_out &= mask;
		}
	}
	bsw_set_hbo(t, &ip->meter.color_out, (uint64_t)color_out);
	m->n_pkts[color_out]++;
	m->n_bytes[color_out] += length;
}

/* ---- checksums ------------------------------------------------------------ */

/* A 4-byte word of a header that a checksum sums: its bytes may have been
 * written as fields of any width (a TTL byte, a 2-byte length), so the load
 * may alias every type; being a load, it makes gcc reload nothing. */
typedef uint32_t __attribute__((may_alias, aligned(1))) bsw_u32_any_t;

/* The 16-bit one's complement folds DPDK's checksum instructions end with,
 * for a sum of up to 36 bits. */
static __rte_always_inline uint16_t
bsw_ck_fold(uint64_t r)
{
	r = (r & 0xFFFF) + (r >> 16);
	r = (r & 0xFFFF) + (r >> 16);
	r = (r & 0xFFFF) + (r >> 16);
	r = ~r & 0xFFFF;
	return r ? (uint16_t)r : 0xFFFF;
}

/* ckadd h.f h.f / cksub h.f h.f: a field added to or taken out of a 16-bit
 * checksum. DPDK reads the field as the 8 bytes at its offset (masked);
 * bsw_ld gives the same value from the field's own width, so a field that
 * was just written is forwarded from its store. The checksum field itself
 * is read and written as the 2-byte field it is everywhere else. */
static __rte_always_inline void
bsw_alu_ck_field(struct thread *t, const struct instruction *ip, int subtract)
{
	bsw_u16_t *dst = (bsw_u16_t *)bsw_field(t, &ip->alu.dst);
	uint64_t src = bsw_operand_hbo(t, &ip->alu.src);
	uint64_t r = ~(uint64_t)dst->v & 0xFFFF;

	if (subtract)
		r += 0xFFFF00000ULL - (src >> 32) - (src & 0xFFFFFFFF);	/* + a multiple of 0xFFFF */
	else
		r += (src >> 32) + (src & 0xFFFFFFFF);
	dst->v = bsw_ck_fold(r);
}

static __rte_always_inline void
bsw_alu_ckadd_field_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
			 const struct instruction *ip)
{
	bsw_alu_ck_field(t, ip, 0);
}

static __rte_always_inline void
bsw_alu_cksub_field_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
			 const struct instruction *ip)
{
	bsw_alu_ck_field(t, ip, 1);
}

/* ckadd h.f h.<20-byte header>: the IPv4 header sum, as DPDK adds its five
 * words. */
static __rte_always_inline void
bsw_alu_ckadd_struct20_exec(struct rte_swx_pipeline *p __rte_unused, struct thread *t,
			    const struct instruction *ip)
{
	bsw_u16_t *dst = (bsw_u16_t *)bsw_field(t, &ip->alu.dst);
	const bsw_u32_any_t *w = (const bsw_u32_any_t *)t->structs[ip->alu.src.struct_id];
	uint64_t r0 = ~(uint64_t)dst->v & 0xFFFF, r1;

	r0 += w[0];
	r1 = w[1];
	r0 += w[2];
	r1 += w[3];
	r0 += r1 + w[4];
	dst->v = bsw_ck_fold(r0);
}

/* ---- what the generated code calls ---------------------------------------- */

#define instr_operand_hbo bsw_operand_hbo
#define instr_operand_nbo bsw_operand_nbo

#define __instr_mov_exec bsw_mov_exec
#define __instr_mov_mh_exec bsw_mov_mh_exec
#define __instr_mov_hm_exec bsw_mov_hm_exec
#define __instr_mov_hh_exec bsw_mov_hh_exec
#define __instr_mov_i_exec bsw_mov_i_exec

#define __instr_alu_add_exec bsw_alu_add_exec
#define __instr_alu_add_mh_exec bsw_alu_add_mh_exec
#define __instr_alu_add_hm_exec bsw_alu_add_hm_exec
#define __instr_alu_add_hh_exec bsw_alu_add_hh_exec
#define __instr_alu_add_mi_exec bsw_alu_add_mi_exec
#define __instr_alu_add_hi_exec bsw_alu_add_hi_exec
#define __instr_alu_sub_exec bsw_alu_sub_exec
#define __instr_alu_sub_mh_exec bsw_alu_sub_mh_exec
#define __instr_alu_sub_hm_exec bsw_alu_sub_hm_exec
#define __instr_alu_sub_hh_exec bsw_alu_sub_hh_exec
#define __instr_alu_sub_mi_exec bsw_alu_sub_mi_exec
#define __instr_alu_sub_hi_exec bsw_alu_sub_hi_exec
#define __instr_alu_shl_exec bsw_alu_shl_exec
#define __instr_alu_shl_mh_exec bsw_alu_shl_mh_exec
#define __instr_alu_shl_hm_exec bsw_alu_shl_hm_exec
#define __instr_alu_shl_hh_exec bsw_alu_shl_hh_exec
#define __instr_alu_shl_mi_exec bsw_alu_shl_mi_exec
#define __instr_alu_shl_hi_exec bsw_alu_shl_hi_exec
#define __instr_alu_shr_exec bsw_alu_shr_exec
#define __instr_alu_shr_mh_exec bsw_alu_shr_mh_exec
#define __instr_alu_shr_hm_exec bsw_alu_shr_hm_exec
#define __instr_alu_shr_hh_exec bsw_alu_shr_hh_exec
#define __instr_alu_shr_mi_exec bsw_alu_shr_mi_exec
#define __instr_alu_shr_hi_exec bsw_alu_shr_hi_exec
#define __instr_alu_and_exec bsw_alu_and_exec
#define __instr_alu_and_mh_exec bsw_alu_and_mh_exec
#define __instr_alu_and_hm_exec bsw_alu_and_hm_exec
#define __instr_alu_and_hh_exec bsw_alu_and_hh_exec
#define __instr_alu_and_i_exec bsw_alu_and_i_exec
#define __instr_alu_or_exec bsw_alu_or_exec
#define __instr_alu_or_mh_exec bsw_alu_or_mh_exec
#define __instr_alu_or_hm_exec bsw_alu_or_hm_exec
#define __instr_alu_or_hh_exec bsw_alu_or_hh_exec
#define __instr_alu_or_i_exec bsw_alu_or_i_exec
#define __instr_alu_xor_exec bsw_alu_xor_exec
#define __instr_alu_xor_mh_exec bsw_alu_xor_mh_exec
#define __instr_alu_xor_hm_exec bsw_alu_xor_hm_exec
#define __instr_alu_xor_hh_exec bsw_alu_xor_hh_exec
#define __instr_alu_xor_i_exec bsw_alu_xor_i_exec

#define __instr_regrd_mrm_exec bsw_regrd_mrm_exec
#define __instr_regadd_rmm_exec bsw_regadd_rmm_exec
#define __instr_regadd_rmi_exec bsw_regadd_rmi_exec
#define __instr_meter_mmi_exec bsw_meter_mmi_exec

#define __instr_alu_ckadd_field_exec bsw_alu_ckadd_field_exec
#define __instr_alu_cksub_field_exec bsw_alu_cksub_field_exec
#define __instr_alu_ckadd_struct20_exec bsw_alu_ckadd_struct20_exec

#endif /* BSW_SWX_EXACT_ACCESS_H */
