/* Differential check of targets/dpdk/src/bsw_swx_exact_access.h against the
 * DPDK functions it replaces: every replaced instruction form, on random
 * operand widths, offsets, byte orders and values, must leave the metadata,
 * the header and the register array exactly as DPDK's own leaves them.
 * Built and run by test_swx_exact_access.py; prints one line and exits 0
 * when every case agreed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rte_swx_pipeline_internal.h"

typedef void (*exec_fn)(struct rte_swx_pipeline *, struct thread *, const struct instruction *);
typedef uint64_t (*operand_fn)(struct thread *, const struct instr_operand *);

/* DPDK's functions, taken before the header under test renames them. */
#define FORMS(X)                                                              \
	X(mov) X(mov_mh) X(mov_hm) X(mov_hh) X(mov_i)                         \
	X(alu_add) X(alu_add_mh) X(alu_add_hm) X(alu_add_hh) X(alu_add_mi) X(alu_add_hi) \
	X(alu_sub) X(alu_sub_mh) X(alu_sub_hm) X(alu_sub_hh) X(alu_sub_mi) X(alu_sub_hi) \
	X(alu_shl) X(alu_shl_mh) X(alu_shl_hm) X(alu_shl_hh) X(alu_shl_mi) X(alu_shl_hi) \
	X(alu_shr) X(alu_shr_mh) X(alu_shr_hm) X(alu_shr_hh) X(alu_shr_mi) X(alu_shr_hi) \
	X(alu_and) X(alu_and_mh) X(alu_and_hm) X(alu_and_hh) X(alu_and_i)     \
	X(alu_or) X(alu_or_mh) X(alu_or_hm) X(alu_or_hh) X(alu_or_i)          \
	X(alu_xor) X(alu_xor_mh) X(alu_xor_hm) X(alu_xor_hh) X(alu_xor_i)     \
	X(regrd_mrm) X(regadd_rmm) X(regadd_rmi)                              \
	X(alu_ckadd_field) X(alu_cksub_field) X(alu_ckadd_struct20)

#define DPDK_FN(name) static const exec_fn dpdk_##name = __instr_##name##_exec;
FORMS(DPDK_FN)
static const operand_fn dpdk_operand_hbo = instr_operand_hbo;
static const operand_fn dpdk_operand_nbo = instr_operand_nbo;

#include "bsw_swx_exact_access.h"

#define BSW_FN(name) static const exec_fn bsw_##name = __instr_##name##_exec;
FORMS(BSW_FN)

struct form {
	const char *name;
	exec_fn dpdk, bsw;
};

#define ENTRY(name) { #name, dpdk_##name, bsw_##name },
static const struct form forms[] = { FORMS(ENTRY) };

#define STRUCT_BYTES 72			/* 8-byte accesses from offset <= 64 */
#define REGS 16

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct state {
	uint8_t meta[STRUCT_BYTES];
	uint8_t hdr[STRUCT_BYTES];
	uint64_t regs[REGS];
	uint8_t *structs[2];
	struct thread t;
	struct regarray_runtime rr;
	struct rte_swx_pipeline p;
};

static void
state_init(struct state *s, const struct state *from)
{
	if (from) {
		memcpy(s->meta, from->meta, sizeof(s->meta));
		memcpy(s->hdr, from->hdr, sizeof(s->hdr));
		memcpy(s->regs, from->regs, sizeof(s->regs));
	}
	s->structs[0] = s->meta;	/* struct id 0: metadata, host order */
	s->structs[1] = s->hdr;		/* struct id 1: a header, network order */
	memset(&s->t, 0, sizeof(s->t));
	s->t.structs = s->structs;
	s->rr.regarray = s->regs;
	s->rr.size_mask = REGS - 1;
	memset(&s->p, 0, sizeof(s->p));
	s->p.regarray_runtime = &s->rr;
}

static uint32_t
rnd_bits(void)
{
	return 8 * (1 + rnd() % 8);
}

static void
rnd_operand(struct instr_operand *o, uint8_t struct_id)
{
	o->struct_id = struct_id;
	o->n_bits = rnd_bits();
	o->offset = rnd() % (STRUCT_BYTES - 8 + 1);
}

/* Writes v into a field the way the pipeline would (host or network order)
 * so that shift counts stay below 64 (larger ones are undefined in C for
 * DPDK and for us alike). */
static void
put_small(struct state *s, const struct instr_operand *o, uint64_t v)
{
	uint8_t *f = &s->structs[o->struct_id][o->offset];
	uint32_t i, n = o->n_bits / 8;

	for (i = 0; i < n; i++)
		f[o->struct_id ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

static int
check_form(const struct form *f, uint32_t cases)
{
	static struct state a, b;
	const char *n = f->name;
	int is_alu = !strncmp(n, "alu_", 4), is_reg = !strncmp(n, "reg", 3);
	int is_ck = !strncmp(n, "alu_ck", 6);
	int shift = strstr(n, "_shl") || strstr(n, "_shr");
	size_t len = strlen(n);
	uint32_t c;

	for (c = 0; c < cases; c++) {
		struct instruction ip;
		struct instr_operand *dst, *src;
		int imm = 0, dst_h = 0, src_h = 0;

		memset(&ip, 0, sizeof(ip));
		for (uint32_t i = 0; i < STRUCT_BYTES; i++) {
			a.meta[i] = rnd();
			a.hdr[i] = rnd();
		}
		for (uint32_t i = 0; i < REGS; i++)
			a.regs[i] = rnd();
		state_init(&a, NULL);

		if (is_ck) {
			/* A 16-bit checksum in the header; the source: any field
			 * (field forms) or the header's first 20 bytes (struct20). */
			rnd_operand(&ip.alu.dst, 1);
			ip.alu.dst.n_bits = 16;
			rnd_operand(&ip.alu.src, rnd() & 1);
			if (strstr(n, "struct20"))
				ip.alu.src.struct_id = 1;
		} else if (is_reg) {
			ip.regarray.regarray_id = 0;
			rnd_operand(&ip.regarray.idx, 0);
			if (!strcmp(n, "regadd_rmi"))
				ip.regarray.dstsrc_val = rnd();
			else
				rnd_operand(&ip.regarray.dstsrc, 0);
		} else {
			if (len > 3 && n[len - 3] == '_') {	/* _mh, _hm, _hh, _mi, _hi */
				dst_h = n[len - 2] == 'h';
				src_h = n[len - 1] == 'h';
				imm = n[len - 1] == 'i';
			} else if (len > 2 && !strcmp(n + len - 2, "_i")) {
				imm = 1;
				dst_h = rnd() & 1;	/* raw bytes: either order */
			}
			dst = is_alu ? &ip.alu.dst : &ip.mov.dst;
			src = is_alu ? &ip.alu.src : &ip.mov.src;
			rnd_operand(dst, dst_h);
			if (imm) {
				uint64_t v = shift ? rnd() % 64 : rnd();

				if (is_alu)
					ip.alu.src_val = v;
				else
					ip.mov.src_val = v;
			} else {
				rnd_operand(src, src_h);
				if (shift) {
					if (src->struct_id == dst->struct_id &&
					    src->offset < dst->offset + 8 && dst->offset < src->offset + 8)
						src->offset = (dst->offset + 8 + rnd() % 8) % (STRUCT_BYTES - 8);
					if (src->struct_id == dst->struct_id &&
					    src->offset < dst->offset + 8 && dst->offset < src->offset + 8)
						continue;	/* no room for a separate count */
					put_small(&a, src, rnd() % 64);
				}
			}
		}

		state_init(&b, &a);
		f->dpdk(&a.p, &a.t, &ip);
		f->bsw(&b.p, &b.t, &ip);
		if (memcmp(a.meta, b.meta, STRUCT_BYTES) || memcmp(a.hdr, b.hdr, STRUCT_BYTES) ||
		    memcmp(a.regs, b.regs, sizeof(a.regs))) {
			printf("MISMATCH %s case %u\n", n, c);
			return 1;
		}
	}
	return 0;
}

static int
check_operands(uint32_t cases)
{
	static struct state s;
	uint32_t c;

	for (c = 0; c < cases; c++) {
		struct instr_operand o;

		for (uint32_t i = 0; i < STRUCT_BYTES; i++)
			s.meta[i] = rnd();
		state_init(&s, NULL);
		rnd_operand(&o, 0);
		if (dpdk_operand_hbo(&s.t, &o) != instr_operand_hbo(&s.t, &o) ||
		    dpdk_operand_nbo(&s.t, &o) != instr_operand_nbo(&s.t, &o)) {
			printf("MISMATCH operand case %u\n", c);
			return 1;
		}
	}
	return 0;
}

/* The meter reads bsw_tsc_now, not rdtsc: its colour and its buckets are
 * DPDK's trTCM check at that time, or at the meter's own last time when
 * the clock is behind it (another worker's later run). */
static int
check_meter(uint32_t cases)
{
	static struct state s;
	struct meter_profile profile;
	struct meter m;
	struct metarray_runtime mr;
	struct rte_meter_trtcm ref;
	struct instruction ip;
	uint64_t time = 1000000, last_tc = 0, last_tp = 0;
	uint32_t c;

	/* Periods in TSC cycles, set directly: rte_meter_trtcm_profile_config()
	 * needs the TSC rate, which needs the EAL. */
	memset(&profile, 0, sizeof(profile));
	profile.profile.cbs = 3000;
	profile.profile.pbs = 6000;
	profile.profile.cir_period = 1000;
	profile.profile.cir_bytes_per_period = 3;
	profile.profile.pir_period = 500;
	profile.profile.pir_bytes_per_period = 3;
	memset(&m, 0, sizeof(m));
	m.m.tc = profile.profile.cbs;
	m.m.tp = profile.profile.pbs;
	m.profile = &profile;
	m.color_mask = RTE_COLORS;	/* as rte_swx_ctl_meter_set() leaves it */
	m.m.time_tc = m.m.time_tp = time;
	ref = m.m;
	mr.metarray = &m;
	mr.size_mask = 0;
	state_init(&s, NULL);
	s.p.metarray_runtime = &mr;
	memset(&ip, 0, sizeof(ip));
	ip.meter.idx = (struct instr_operand){ .struct_id = 0, .n_bits = 32, .offset = 0 };
	ip.meter.length = (struct instr_operand){ .struct_id = 0, .n_bits = 16, .offset = 4 };
	ip.meter.color_out = (struct instr_operand){ .struct_id = 0, .n_bits = 8, .offset = 6 };
	ip.meter.color_in_val = RTE_COLOR_GREEN;

	for (c = 0; c < cases; c++) {
		uint32_t length = 64 + rnd() % 1400;
		uint64_t step = rnd() % 4 ? rnd() % 200000 : 0;
		int behind = rnd() % 8 == 0;
		enum rte_color want;

		time += step;
		bsw_tsc_now = behind ? time - 1 - rnd() % 100000 : time;
		memset(s.meta, 0, sizeof(s.meta));
		s.meta[4] = (uint8_t)length;
		s.meta[5] = (uint8_t)(length >> 8);
		want = rte_meter_trtcm_color_aware_check(&ref, &profile.profile,
							 RTE_MAX(bsw_tsc_now, RTE_MAX(ref.time_tc,
										      ref.time_tp)),
							 length, RTE_COLOR_GREEN);
		__instr_meter_mmi_exec(&s.p, &s.t, &ip);
		if (s.meta[6] != want || memcmp(&ref, &m.m, sizeof(ref))) {
			printf("MISMATCH meter case %u\n", c);
			return 1;
		}
		if (m.m.time_tc < last_tc || m.m.time_tp < last_tp) {
			printf("MISMATCH meter case %u: its time went back\n", c);
			return 1;
		}
		last_tc = m.m.time_tc;
		last_tp = m.m.time_tp;
	}
	return 0;
}

/* The tx path's header layout (bsw_emit_handler) against DPDK's
 * emit_handler(): random extracted headers in a packet, random generated
 * ones in header storage, and a random list of emitted runs of them (kept,
 * dropped, reordered, repeated, pushed in front, behind, between) must
 * leave the same bytes in the packet buffer and the same offset and length.
 * Layouts that keep or push headers take bsw's direct copies; those that
 * move a header towards the payload take the staging path. */
#define EMIT_BUF 1024
#define EMIT_HEADROOM 320		/* > 6 runs of up to 40 bytes */

static int
check_emit(uint32_t cases)
{
	static uint8_t buf_a[EMIT_BUF], buf_b[EMIT_BUF], storage[256], staging[EMIT_BUF];
	static struct header_out_runtime out_a[8], out_b[8];
	static struct thread ta, tb;
	uint32_t c, direct = 0;

	for (c = 0; c < cases; c++) {
		uint32_t n_ext = 1 + rnd() % 6, n_gen = rnd() % 4, n_out = rnd() % 7;
		uint32_t ext_off[7], gen_off[5], off = EMIT_HEADROOM, goff = 0, i;

		for (i = 0; i < n_ext; i++) {
			ext_off[i] = off;
			off += 1 + rnd() % 40;
		}
		ext_off[n_ext] = off;
		for (i = 0; i < n_gen; i++) {
			gen_off[i] = goff;
			goff += 1 + rnd() % 40;
		}
		gen_off[n_gen] = goff;
		for (i = 0; i < EMIT_BUF; i++)
			buf_a[i] = rnd();
		for (i = 0; i < sizeof(storage); i++)
			storage[i] = rnd();

		for (i = 0; i < n_out; i++) {
			/* A run of consecutive extracted headers, or of generated
			 * ones: what one headers_out entry holds. */
			int gen = n_gen && rnd() % 2;
			uint32_t n = gen ? n_gen : n_ext, first = rnd() % n;
			uint32_t last = first + rnd() % (n - first);
			uint32_t *o = gen ? gen_off : ext_off;
			uint8_t *base = gen ? storage : buf_a;

			out_a[i].ptr0 = out_a[i].ptr = base + o[first];
			out_a[i].n_bytes = o[last + 1] - o[first];
		}

		memset(&ta, 0, sizeof(ta));
		ta.pkt.pkt = buf_a;
		ta.pkt.offset = off;
		ta.pkt.length = EMIT_BUF - off;
		ta.ptr = buf_a + off;
		ta.headers_out = out_a;
		ta.n_headers_out = n_out;
		ta.header_out_storage = staging;

		memcpy(buf_b, buf_a, EMIT_BUF);
		tb = ta;
		tb.pkt.pkt = buf_b;
		tb.ptr = buf_b + off;
		tb.headers_out = out_b;
		for (i = 0; i < n_out; i++) {
			out_b[i] = out_a[i];
			if (out_a[i].ptr >= buf_a && out_a[i].ptr < buf_a + EMIT_BUF)
				out_b[i].ptr0 = out_b[i].ptr = buf_b + (out_a[i].ptr - buf_a);
		}

		/* Whether bsw copies directly: no extracted run moves back. */
		{
			uint8_t *d = buf_a + off;
			int back = 0;

			for (i = 0; i < n_out; i++)
				d -= out_a[i].n_bytes;
			for (i = 0; i < n_out; i++) {
				if (out_a[i].ptr >= buf_a && out_a[i].ptr < buf_a + EMIT_BUF &&
				    out_a[i].ptr < d)
					back = 1;
				d += out_a[i].n_bytes;
			}
			direct += !back;
		}

		emit_handler(&ta);
		bsw_emit_handler(&tb);
		if (memcmp(buf_a, buf_b, EMIT_BUF) || ta.pkt.offset != tb.pkt.offset ||
		    ta.pkt.length != tb.pkt.length) {
			printf("MISMATCH emit case %u (%u runs)\n", c, n_out);
			return 1;
		}
	}
	if (direct < cases / 4 || direct > cases - cases / 4) {
		printf("MISMATCH emit: %u of %u layouts copied directly, the test is lopsided\n",
		       direct, cases);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	uint32_t cases = argc > 1 ? (uint32_t)atoi(argv[1]) : 20000, i, n = 0;

	if (check_operands(cases) || check_meter(cases) || check_emit(cases))
		return 1;
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (check_form(&forms[i], cases))
			return 1;
		n++;
	}
	printf("ok: %u forms, the operand reads, the meter and the tx header layout agree "
	       "with DPDK on %u cases each\n", n, cases);
	return 0;
}
