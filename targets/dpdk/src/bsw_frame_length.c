/* SPDX-License-Identifier: Apache-2.0 */
/* Frame length prelude: the PNA DPDK target gives a P4 program no packet
 * length, and the SWX parser extracts headers without bounds checks, so a
 * program cannot tell a truncated frame from a whole one. A program that
 * declares the header type `bsw_frame_length_h` (bit<16> length, bit<16>
 * reserved) gets it prepended to every received frame: each input port's
 * receive function is wrapped to write the 4 bytes into the mbuf headroom.
 * The program extracts it first and never emits it. Straight-line code
 * (bng_switch/straight_codegen.py) calls beneath the wrapper and makes the
 * prelude itself. The receive back-off (bsw_rx_backoff.c) goes beneath the
 * wrapper too, so that it stays on a port for both. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "bsw_internal.h"
#include "rte_swx_pipeline_internal.h"

#define FRAME_PRELUDE_TYPE "struct bsw_frame_length_h"
#define FRAME_PRELUDE_SIZE 4

static int
frame_length_rx(void *obj, struct rte_swx_pkt *pkt)
{
	const struct bsw_port_rx *fp = obj;
	uint32_t prelude;

	if (!fp->pkt_rx(fp->obj, pkt))
		return 0;
	/* The length (network order), then 0. One 4-byte store: the program
	 * reads the length at once, before the store can have reached the
	 * cache (the headroom's cache line is rarely there), and a CPU forwards
	 * a store to a load only if the one store holds all the loaded bytes;
	 * with a store per byte the read waited for the stores to reach the
	 * cache, every packet. */
	prelude = rte_cpu_to_be_32((uint32_t)(uint16_t)pkt->length << 16);
	/* Every reader hands over an mbuf with RTE_PKTMBUF_HEADROOM in front. */
	pkt->offset -= FRAME_PRELUDE_SIZE;
	memcpy(pkt->pkt + pkt->offset, &prelude, FRAME_PRELUDE_SIZE);
	pkt->length += FRAME_PRELUDE_SIZE;
	return 1;
}

int
bsw_spec_wants_frame_length(const char *spec_path)
{
	return bsw_spec_has_line(spec_path, FRAME_PRELUDE_TYPE " ") == 1;
}

int
bsw_frame_length_enable(struct bsw_instance *inst)
{
	struct rte_swx_pipeline *p = inst->p;
	struct bsw_port_rx *ports;
	uint32_t i;

	ports = calloc(p->n_ports_in, sizeof(*ports));
	if (!ports)
		return -ENOMEM;
	for (i = 0; i < p->n_ports_in; i++) {
		ports[i].pkt_rx = p->in[i].pkt_rx;
		ports[i].obj = p->in[i].obj;
		p->in[i].pkt_rx = frame_length_rx;
		p->in[i].obj = &ports[i];
	}
	inst->frame_length_ports = ports;
	return 0;
}
