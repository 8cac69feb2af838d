/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Receive back-off for input ports whose empty receive is a system call.
 *
 * SWX's rx instruction tries the input ports in turn, one try per rx, and a
 * pipeline run of QUANTUM instructions with no traffic is QUANTUM tries. On a
 * NIC or an af_packet ring an empty try reads memory; on a libpcap port (the
 * lab's access port) it is a poll(2). A worker that had just forwarded a
 * packet spent its polling tail in those syscalls: during PPPoE session setup
 * (11k punted packets/s) the worker took 40% of a core, a third of it in
 * poll; with the back-off the switch's CPU per session fell from 1.1 to
 * 0.85 ms (make bench-setup, 12k sessions, two runs each).
 *
 * Each input port gets a wrapper that, after an empty receive, skips the next
 * tries on that port (returns "nothing" without calling it), doubling the
 * skip up to max_skip while the port stays empty; one received packet
 * resets it. A port with traffic is never skipped, so forwarding rates are
 * unchanged; an idle port is looked at every max_skip-th try, which delays
 * the first packet after a quiet spell by at most max_skip tries of each
 * port (microseconds). The worker resets the skips before its probes while
 * sleeping, which must see every port (bsw_worker.c). The wrapper is put on
 * the ports when the workers start with an idle back-off (idle_us > 0) and
 * taken off for pure polling. Where the frame-length prelude's wrapper is on
 * a port (bsw_frame_length.c), the back-off goes beneath it: straight-line
 * code calls beneath the prelude's wrapper and keeps the back-off.
 */
#include <errno.h>
#include <stdlib.h>

#include <rte_common.h>

#include "bsw_internal.h"
#include "rte_swx_pipeline_internal.h"

struct rx_backoff_port {
	rte_swx_port_in_pkt_rx_t pkt_rx;
	void *obj;
	/* where the port's receive is called from: the pipeline's port, or
	 * the frame-length prelude's wrapper on it */
	rte_swx_port_in_pkt_rx_t *rx_slot;
	void **obj_slot;
	uint32_t skip;		/* tries still to skip */
	uint32_t next_skip;	/* skip after the next empty try */
	uint32_t max_skip;	/* 0: never skip */
};

struct bsw_rx_backoff {
	uint32_t n_ports;
	struct rx_backoff_port port[];
};

static int
rx_backoff_rx(void *obj, struct rte_swx_pkt *pkt)
{
	struct rx_backoff_port *bp = obj;

	if (bp->skip) {
		bp->skip--;
		return 0;
	}
	if (bp->pkt_rx(bp->obj, pkt)) {
		bp->next_skip = 0;
		return 1;
	}
	bp->skip = bp->next_skip;
	bp->next_skip = bp->next_skip ? RTE_MIN(2 * bp->next_skip, bp->max_skip) : RTE_MIN(1u, bp->max_skip);
	return 0;
}

int
bsw_rx_backoff_enable(struct bsw_instance *inst)
{
	struct rte_swx_pipeline *p = inst->p;
	struct bsw_rx_backoff *b;
	uint32_t i;

	b = calloc(1, sizeof(*b) + p->n_ports_in * sizeof(b->port[0]));
	if (!b)
		return -ENOMEM;
	b->n_ports = p->n_ports_in;
	for (i = 0; i < p->n_ports_in; i++) {
		struct bsw_port_rx *fl = inst->frame_length_ports ? &inst->frame_length_ports[i] : NULL;
		struct rx_backoff_port *bp = &b->port[i];

		bp->rx_slot = fl ? &fl->pkt_rx : &p->in[i].pkt_rx;
		bp->obj_slot = fl ? &fl->obj : &p->in[i].obj;
		bp->pkt_rx = *bp->rx_slot;
		bp->obj = *bp->obj_slot;
	}
	inst->rx_backoff = b;
	return 0;
}

void
bsw_rx_backoff_reset(struct bsw_rx_backoff *b)
{
	uint32_t i;

	if (!b)
		return;
	for (i = 0; i < b->n_ports; i++) {
		b->port[i].skip = 0;
		b->port[i].next_skip = 0;
	}
}

void
bsw_rx_backoff_set(struct bsw_rx_backoff *b, uint32_t max_skip)
{
	uint32_t i;

	if (!b)
		return;
	bsw_rx_backoff_reset(b);
	for (i = 0; i < b->n_ports; i++) {
		struct rx_backoff_port *bp = &b->port[i];

		bp->max_skip = max_skip;
		/* Pure polling gets the ports as they were: not even the wrapper's call. */
		*bp->rx_slot = max_skip ? rx_backoff_rx : bp->pkt_rx;
		*bp->obj_slot = max_skip ? (void *)bp : bp->obj;
	}
}
