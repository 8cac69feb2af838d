/* Differential check of targets/dpdk/src/bsw_swx_exact_access.h against the
 * DPDK functions it replaces: every replaced instruction form, on random
 * operand widths, offsets, byte orders and values, must leave the metadata,
 * the header and the register array exactly as DPDK's own leaves them.
 * Built and run by test_swx_exact_access.py; prints one line and exits 0
 * when every case agreed. The meter is checked on its own (check_meter):
 * set meters must agree in everything, unset ones in what can be observed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>

/* The meters read the TSC: both implementations read this clock instead, so
 * that they see the same time. */
static uint64_t fake_tsc;
#define rte_get_tsc_cycles() (fake_tsc)

#include "rte_swx_pipeline_internal.h"

#include "swx_check_rng.h"

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
static const exec_fn dpdk_meter_mmi = __instr_meter_mmi_exec;

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

		if (is_reg) {
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

#define METERS 8

/* A meter caught in DPDK's reset (memset under way: the mask of a set meter,
 * the profile already NULL), which DPDK's instruction would dereference:
 * ours colours the packet GREEN and counts it, buckets untouched. */
static int
check_meter_being_reset(void)
{
	static struct state a;
	static struct meter m[1];
	struct metarray_runtime r = { .metarray = m, .size_mask = 0 };
	struct instruction ip;
	struct meter before;

	memset(m, 0, sizeof(m));
	m[0].color_mask = RTE_COLORS;
	m[0].m.tc = 7;
	before = m[0];
	memset(a.meta, 0, STRUCT_BYTES);
	a.meta[0] = 100;					/* the length */
	a.meta[8] = 0xff;					/* color_out, to be overwritten */
	state_init(&a, NULL);
	a.p.metarray_runtime = &r;
	memset(&ip, 0, sizeof(ip));
	ip.meter.idx.struct_id = 0;
	ip.meter.idx.n_bits = 8;
	ip.meter.idx.offset = 16;			/* 0: the one meter */
	ip.meter.length.n_bits = 8;
	ip.meter.length.offset = 0;
	ip.meter.color_in_val = RTE_COLOR_GREEN;
	ip.meter.color_out.n_bits = 8;
	ip.meter.color_out.offset = 8;
	__instr_meter_mmi_exec(&a.p, &a.t, &ip);
	before.n_pkts[RTE_COLOR_GREEN]++;
	before.n_bytes[RTE_COLOR_GREEN] += 100;
	if (a.meta[8] != RTE_COLOR_GREEN || memcmp(&before, &m[0], sizeof(before))) {
		printf("MISMATCH meter being reset: colour %u\n", a.meta[8]);
		return 1;
	}
	return 0;
}

/* meter m[m] length(m) color_in(i) -> color_out(m) on meters in random
 * states, all on one random profile: half set (colour mask RTE_COLORS),
 * half never set (mask GREEN, as DPDK leaves them). A set meter must end with the
 * same colour, buckets and statistics as DPDK's; an unset one with the same
 * colour and statistics (its buckets are never read: setting the meter
 * rewrites it). */
static int
check_meter(uint32_t cases)
{
	static struct state a, b;
	static struct meter ma[METERS], mb[METERS];
	static struct meter_profile mp;
	struct metarray_runtime ra = { .metarray = ma, .size_mask = METERS - 1 };
	struct metarray_runtime rb = { .metarray = mb, .size_mask = METERS - 1 };
	uint32_t c, set = 0, red = 0;

	for (c = 0; c < cases; c++) {
		struct instruction ip;
		struct rte_meter_trtcm_profile *pr = &mp.profile;
		uint32_t i;

		pr->cir_period = 1 + rnd() % 100000;
		pr->pir_period = 1 + rnd() % 100000;
		pr->cir_bytes_per_period = 1 + rnd() % 64;
		pr->pir_bytes_per_period = 1 + rnd() % 64;
		pr->cbs = rnd() % 20000;
		pr->pbs = pr->cbs + rnd() % 20000;
		fake_tsc = rnd() >> 8;
		for (i = 0; i < METERS; i++) {
			struct meter *m = &ma[i];

			memset(m, 0, sizeof(*m));
			m->profile = &mp;
			m->color_mask = (rnd() & 1) ? RTE_COLORS : RTE_COLOR_GREEN;
			m->m.time_tc = fake_tsc - rnd() % 2000000;
			m->m.time_tp = fake_tsc - rnd() % 2000000;
			m->m.tc = rnd() % (pr->cbs + 1);
			m->m.tp = rnd() % (pr->pbs + 1);
			for (uint32_t k = 0; k < RTE_COLORS; k++) {
				m->n_pkts[k] = rnd() >> 1;
				m->n_bytes[k] = rnd() >> 1;
			}
		}
		memcpy(mb, ma, sizeof(mb));
		for (i = 0; i < STRUCT_BYTES; i++)
			a.meta[i] = rnd();
		state_init(&a, NULL);
		a.p.metarray_runtime = &ra;

		memset(&ip, 0, sizeof(ip));
		ip.meter.metarray_id = 0;
		rnd_operand(&ip.meter.idx, 0);
		ip.meter.length.struct_id = 0;
		ip.meter.length.n_bits = 8 * (1 + rnd() % 2);
		ip.meter.length.offset = rnd() % (STRUCT_BYTES - 8 + 1);
		ip.meter.color_in_val = rnd() % RTE_COLORS;
		rnd_operand(&ip.meter.color_out, 0);

		state_init(&b, &a);
		b.p.metarray_runtime = &rb;
		i = instr_operand_hbo(&a.t, &ip.meter.idx) & (METERS - 1);	/* before color_out */
		dpdk_meter_mmi(&a.p, &a.t, &ip);
		__instr_meter_mmi_exec(&b.p, &b.t, &ip);
		if (ma[i].color_mask == RTE_COLOR_GREEN)
			mb[i].m = ma[i].m;	/* the buckets no one reads */
		else
			set++;
		red += instr_operand_hbo(&a.t, &ip.meter.color_out) == RTE_COLOR_RED;
		if (memcmp(a.meta, b.meta, STRUCT_BYTES) || memcmp(ma, mb, sizeof(ma))) {
			printf("MISMATCH meter_mmi case %u\n", c);
			return 1;
		}
	}
	/* Both kinds of meter and both outcomes must have been exercised. */
	if (set < cases / 4 || set > cases - cases / 4 || red < cases / 20) {
		printf("meter cases not spread: %u set, %u red of %u\n", set, red, cases);
		return 1;
	}
	return check_meter_being_reset();
}

int
main(int argc, char **argv)
{
	uint32_t cases = argc > 1 ? (uint32_t)atoi(argv[1]) : 20000, i, n = 0;

	if (check_operands(cases) || check_meter(cases))
		return 1;
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		if (check_form(&forms[i], cases))
			return 1;
		n++;
	}
	printf("ok: %u forms, the operand reads and the meter agree with DPDK on %u cases each\n",
	       n, cases);
	return 0;
}
