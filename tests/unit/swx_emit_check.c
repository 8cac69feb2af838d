/* Differential check of targets/dpdk/src/bsw_swx_emit.h against the DPDK
 * emit instructions it replaces: random runs of emits (alone and fused with
 * up to 8 headers) over random valid bits, header sizes and header
 * positions (following the previous header in memory or not) must leave the
 * thread's output header list exactly as DPDK's own leave it. tx itself is
 * the same DPDK function in both, so the fused forms are checked through
 * their emit part. Built and run by test_swx_exact_access.py; prints one
 * line and exits 0 when every case agreed. */
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
	uint8_t *structs[N_HEADERS];
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
	for (i = 0; i < N_HEADERS; i++) {
		uint32_t n = 1 + rnd() % 40;

		/* Most headers follow the one before, as parsed headers do; some
		 * sit elsewhere, as pushed ones do. */
		if (rnd() % 3 == 0)
			pos += 1 + rnd() % 64;
		if (pos + n > BUF)
			pos = 0;
		w->headers[i].ptr0 = buf + BUF + i * 64;
		w->headers[i].n_bytes = n;
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

int
main(int argc, char **argv)
{
	static uint8_t buf[2 * BUF + N_HEADERS * 64];
	static struct world a, b;
	uint32_t cases = argc > 1 ? (uint32_t)atoi(argv[1]) : 1000, c, emits = 0, valid = 0;

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

			memset(&ip, 0, sizeof(ip));
			for (k = 0; k < n; k++) {
				ip.io.hdr.header_id[k] = ip.io.hdr.struct_id[k] = rnd() % N_HEADERS;
				valid += (a.t.valid_headers >> ip.io.hdr.header_id[k]) & 1;
			}
			dpdk_emit(&a.t, &ip, n);
			bsw_emit(&b.t, &ip, n);
			emits += n;
			if (a.t.n_headers_out >= MAX_OUT - 8)
				break;
			if (!same(&a, &b)) {
				printf("case %u run %u (%u emits): %u output headers against DPDK's %u\n",
				       c, r, n, b.t.n_headers_out, a.t.n_headers_out);
				return 1;
			}
		}
	}
	printf("ok: %u cases, %u emits, %u of them valid\n", cases, emits, valid);
	return 0;
}
