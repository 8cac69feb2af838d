/* Differential check of targets/dpdk/src/bsw_swx_emit.h against the DPDK
 * emit instructions it replaces: random runs of emits (alone and fused with
 * up to 8 headers) over random valid bits, header sizes and header
 * positions (following the previous header in memory or not) must leave the
 * thread's output header list exactly as DPDK's own leave it. tx itself is
 * the same DPDK function in both, so the fused forms are checked through
 * their emit part. The fused runs that bsw_emit_run.c writes
 * (bsw_hdr_emit_run_exec) are checked the same way, in both of their forms:
 * a run known at compile time whose header ids rise (as the BNG's deparser
 * is), and runs of random instructions, which take the bit-by-bit path.
 * The output header handler that tx and drop run (bsw_emit_handler) is
 * checked against DPDK's emit_handler() on random output header lists:
 * headers parsed in the packet, in place in front of the payload or not,
 * overlapping where they move to or not, and headers of their own storage;
 * the packet's bytes, offset and length must come out the same.
 * Built and run by test_swx_exact_access.py; prints one line and exits 0
 * when every case agreed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rte_swx_pipeline_internal.h"

#include "swx_check_rng.h"

static void
dpdk_emit(struct thread *t, const struct instruction *ip, uint32_t n)
{
	__instr_hdr_emit_many_exec(NULL, t, ip, n);
}

/* Counts the fused runs that took the walk over set bits, so that a check
 * in which gcc no longer sees the run as a constant fails. */
static uint32_t ordered_runs;
#define BSW_EMIT_RUN_ORDERED_TAKEN() (ordered_runs++)

#include "bsw_swx_emit.h"

static void
bsw_emit(struct thread *t, const struct instruction *ip, uint32_t n)
{
	if (n == 1)
		__instr_hdr_emit_exec(NULL, t, ip);	/* the #define: ours */
	else
		bsw_hdr_emit_many_exec(t, ip, n);
}

#define N_HEADERS 24
#define MAX_OUT (N_HEADERS * 4)
#define BUF 4096


struct world {
	struct thread t;
	struct header_runtime headers[N_HEADERS];
	struct header_out_runtime out[MAX_OUT];
	uint8_t *structs[N_HEADERS + 1];
};

static void
world_init(struct world *w, uint8_t *buf)
{
	uint32_t i, pos = 0;

	memset(w, 0, sizeof(*w));
	w->t.headers = w->headers;
	w->t.headers_out = w->out;
	w->t.structs = w->structs;
	w->t.valid_headers = rnd();
	for (i = 0; i <= N_HEADERS; i++) {
		uint32_t n = 1 + rnd() % 40;

		/* Most headers follow the one before, as parsed headers do; some
		 * sit elsewhere, as pushed ones do. */
		if (rnd() % 3 == 0)
			pos += 1 + rnd() % 64;
		if (pos + n > BUF)
			pos = 0;
		if (i < N_HEADERS) {
			w->headers[i].ptr0 = buf + BUF + i * 64;
			w->headers[i].n_bytes = n;
		}
		w->structs[i] = buf + pos;
		pos += n;
	}
}

static int
same(const struct world *a, const struct world *b)
{
	uint32_t i;

	if (a->t.n_headers_out != b->t.n_headers_out)
		return 0;
	for (i = 0; i < a->t.n_headers_out; i++)
		if (a->out[i].ptr0 != b->out[i].ptr0 || a->out[i].ptr != b->out[i].ptr ||
		    a->out[i].n_bytes != b->out[i].n_bytes)
			return 0;
	return 1;
}

/* A deparser's run as the BNG's is compiled: 13 single emits of headers 2
 * to 14, then 8 fused with tx, headers 15 to 22; each struct id is the
 * header id plus one (metadata is struct 0). */
#define SINGLE(h) { .type = INSTR_HDR_EMIT, .io.hdr = { .header_id = { h }, .struct_id = { (h) + 1 } } }
static const struct instruction run_first[13] = {
	SINGLE(2), SINGLE(3), SINGLE(4), SINGLE(5), SINGLE(6), SINGLE(7), SINGLE(8),
	SINGLE(9), SINGLE(10), SINGLE(11), SINGLE(12), SINGLE(13), SINGLE(14),
};
static const struct instruction run_last = {
	.type = INSTR_HDR_EMIT8_TX,
	.io.hdr = { .header_id = { 15, 16, 17, 18, 19, 20, 21, 22 },
		    .struct_id = { 16, 17, 18, 19, 20, 21, 22, 23 } },
};

/* DPDK's way through a run: one instruction after the other. */
static void
dpdk_run(struct thread *t, const struct instruction *first, uint32_t n_single,
	 const struct instruction *last, uint32_t n_last)
{
	uint32_t i;

	for (i = 0; i < n_single; i++)
		dpdk_emit(t, &first[i], 1);
	if (n_last)
		dpdk_emit(t, last, n_last);
}

/* One fused run, given random or constant instructions. */
static void
bsw_run(struct thread *t, uint32_t which, const struct instruction *first, uint32_t n_single,
	const struct instruction *last, uint32_t n_last)
{
	switch (which) {
	case 0:
		bsw_hdr_emit_run_exec(t, run_first, 13, &run_last, 8);
		break;
	case 1:
		bsw_hdr_emit_run_exec(t, run_first, 13, run_first, 0);
		break;
	case 2:
		bsw_hdr_emit_run_exec(t, run_first + 4, 6, run_first, 0);
		break;
	default:
		bsw_hdr_emit_run_exec(t, first, n_single, last, n_last);
	}
}

#define PKT 512
#define HEADROOM 256

/* One random output header list over packet bytes pkt, with the payload at
 * pkt + HEADROOM, the way a deparser leaves it after decaps and encaps:
 * parsed headers in order from a random start (some dropped, two sometimes
 * swapped), each either in the packet or, as a pushed header is, in its own
 * storage at hstore. */
static void
handler_case_init(struct thread *t, struct header_out_runtime *out, uint8_t *pkt, uint8_t *hstore,
		  uint32_t *kinds)
{
	uint32_t n_parsed = rnd() % 6, sizes[6], pos, i, total = 0, n = 0, store = 0;

	for (i = 0; i < PKT; i++)
		pkt[i] = (uint8_t)rnd();
	t->ptr = pkt + HEADROOM;
	t->pkt.pkt = pkt;
	t->pkt.offset = HEADROOM;
	t->pkt.length = 64;
	for (i = 0; i < n_parsed; i++) {
		sizes[i] = 1 + rnd() % 40;
		total += sizes[i];
	}
	/* The parsed headers end at the payload, as the parser leaves them. */
	pos = HEADROOM - total;
	for (i = 0; i < n_parsed; i++) {
		int keep = rnd() % 4 != 0;

		if (rnd() % 4 == 0) {
			/* A pushed header before this parsed one. */
			uint32_t size = 1 + rnd() % 40;

			out[n].ptr = out[n].ptr0 = hstore + store;
			out[n].n_bytes = size;
			store += size;
			n++;
			kinds[1]++;
		}
		if (keep) {
			out[n].ptr0 = hstore + 1024 + i * 64;
			out[n].ptr = pkt + pos;
			out[n].n_bytes = sizes[i];
			/* DPDK's emit merges a header that follows the last one. */
			if (n && out[n - 1].ptr + out[n - 1].n_bytes == out[n].ptr)
				out[n - 1].n_bytes += sizes[i];
			else
				n++;
			kinds[0]++;
		}
		pos += sizes[i];
	}
	if (rnd() % 3 == 0) {
		uint32_t size = 1 + rnd() % 80;

		out[n].ptr = out[n].ptr0 = hstore + store;
		out[n].n_bytes = size;
		n++;
		kinds[1]++;
	}
	if (n >= 2 && rnd() % 4 == 0) {
		/* Two headers emitted in the other order than they were parsed
		 * in (their moves may then cross). */
		struct header_out_runtime x;

		i = rnd() % (n - 1);
		x = out[i];
		out[i] = out[i + 1];
		out[i + 1] = x;
	}
	t->n_headers_out = n;
	t->headers_out = out;
}

/* bsw_emit_handler() against DPDK's emit_handler() on `cases` random lists. */
static int
handler_check(uint32_t cases, uint32_t *kinds)
{
	static uint8_t pkt_a[PKT], pkt_b[PKT], hstore_a[2048], hstore_b[2048];
	static uint8_t storage_a[PKT], storage_b[PKT];
	static struct header_out_runtime out_a[16], out_b[16];
	struct thread a, b;
	uint32_t c, i;

	for (c = 0; c < cases; c++) {
		memset(&a, 0, sizeof(a));
		handler_case_init(&a, out_a, pkt_a, hstore_a, kinds);
		for (i = 0; i < sizeof(hstore_a); i++)
			hstore_a[i] = (uint8_t)rnd();
		b = a;
		memcpy(pkt_b, pkt_a, PKT);
		memcpy(hstore_b, hstore_a, sizeof(hstore_b));
		for (i = 0; i < a.n_headers_out; i++) {
			out_b[i] = out_a[i];
			out_b[i].ptr += out_a[i].ptr >= pkt_a && out_a[i].ptr < pkt_a + PKT ?
				pkt_b - pkt_a : hstore_b - hstore_a;
			out_b[i].ptr0 += hstore_b - hstore_a;
		}
		b.headers_out = out_b;
		b.ptr = pkt_b + HEADROOM;
		b.pkt.pkt = pkt_b;
		a.header_out_storage = storage_a;
		b.header_out_storage = storage_b;
		emit_handler(&a);
		bsw_emit_handler(&b);
		if (a.pkt.offset != b.pkt.offset || a.pkt.length != b.pkt.length ||
		    memcmp(pkt_a, pkt_b, PKT)) {
			printf("handler case %u (%u output headers): offset %u length %u against "
			       "DPDK's %u %u, packet bytes %s\n", c, a.n_headers_out, b.pkt.offset,
			       b.pkt.length, a.pkt.offset, a.pkt.length,
			       memcmp(pkt_a, pkt_b, PKT) ? "differ" : "the same");
			return 1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static uint8_t buf[2 * BUF + N_HEADERS * 64];
	static struct world a, b;
	static struct instruction first[16], last;
	uint32_t cases = argc > 1 ? (uint32_t)atoi(argv[1]) : 1000, c, emits = 0, valid = 0;
	uint32_t fused = 0, kinds[2] = { 0, 0 };

	for (c = 0; c < cases; c++) {
		uint32_t runs = 1 + rnd() % 12, r;

		world_init(&a, buf);
		b = a;
		b.t.headers = b.headers;
		b.t.headers_out = b.out;
		b.t.structs = b.structs;
		for (r = 0; r < runs; r++) {
			struct instruction ip;
			uint32_t n = rnd() % 2 ? 1 : 1 + rnd() % 8, k;

			if (a.t.n_headers_out >= MAX_OUT - 24)
				break;
			if (rnd() % 4 == 0) {
				/* A fused run: one of the constant ones or a random one. */
				uint32_t which = rnd() % 4, n_single = 1 + rnd() % 16;
				uint32_t n_last = rnd() % 9;

				memset(first, 0, sizeof(first));
				memset(&last, 0, sizeof(last));
				for (k = 0; k < n_single; k++)
					first[k].io.hdr.header_id[0] = first[k].io.hdr.struct_id[0] =
						rnd() % N_HEADERS;
				for (k = 0; k < n_last; k++)
					last.io.hdr.header_id[k] = last.io.hdr.struct_id[k] =
						rnd() % N_HEADERS;
				if (which == 0)
					dpdk_run(&a.t, run_first, 13, &run_last, 8);
				else if (which == 1)
					dpdk_run(&a.t, run_first, 13, run_first, 0);
				else if (which == 2)
					dpdk_run(&a.t, run_first + 4, 6, run_first, 0);
				else
					dpdk_run(&a.t, first, n_single, &last, n_last);
				bsw_run(&b.t, which, first, n_single, &last, n_last);
				fused++;
				if (!same(&a, &b)) {
					printf("case %u run %u (fused run %u): %u output headers "
					       "against DPDK's %u\n",
					       c, r, which, b.t.n_headers_out, a.t.n_headers_out);
					return 1;
				}
				continue;
			}

			memset(&ip, 0, sizeof(ip));
			for (k = 0; k < n; k++) {
				ip.io.hdr.header_id[k] = ip.io.hdr.struct_id[k] = rnd() % N_HEADERS;
				valid += (a.t.valid_headers >> ip.io.hdr.header_id[k]) & 1;
			}
			dpdk_emit(&a.t, &ip, n);
			bsw_emit(&b.t, &ip, n);
			emits += n;
			if (!same(&a, &b)) {
				printf("case %u run %u (%u emits): %u output headers against DPDK's %u\n",
				       c, r, n, b.t.n_headers_out, a.t.n_headers_out);
				return 1;
			}
		}
	}
	if (!ordered_runs) {
		printf("no fused run took the walk over set bits: gcc did not see the "
		       "constant runs as constants\n");
		return 1;
	}
	if (handler_check(cases, kinds))
		return 1;
	printf("ok: %u cases, %u emits, %u of them valid, %u fused runs (%u walked); "
	       "%u output header lists (%u parsed headers, %u pushed)\n", cases, emits, valid,
	       fused, ordered_runs, cases, kinds[0], kinds[1]);
	return 0;
}
