/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CPU port: the pipeline's packet-in/packet-out path to the controller. Each
 * instance sends to ring "<prefix><k>_in" and reads ring "<prefix><k>_out";
 * the rings are named in the instance's I/O spec as ordinary ring ports, so
 * the P4 program just sends to (or receives from) the CPU port number.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "bsw_internal.h"

int
bsw_cpu_port_config(struct bsw_pipeline *bp, const char *ring_prefix, const char *mempool)
{
	uint32_t k;

	bp->pktmbuf_pool = rte_mempool_lookup(mempool);
	if (!bp->pktmbuf_pool) {
		bsw_set_error("mempool %s not found", mempool);
		return -EINVAL;
	}
	for (k = 0; k < bp->n_instances; k++) {
		char name[64];

		snprintf(name, sizeof(name), "%s%u_in", ring_prefix, k);
		bp->inst[k].cpu_in = rte_ring_lookup(name);
		snprintf(name, sizeof(name), "%s%u_out", ring_prefix, k);
		bp->inst[k].cpu_out = rte_ring_lookup(name);
		if (!bp->inst[k].cpu_in || !bp->inst[k].cpu_out) {
			bsw_set_error("CPU port rings %s%u_in/_out not found", ring_prefix, k);
			return -EINVAL;
		}
	}
	return 0;
}

struct rte_mbuf *
bsw_cpu_in_dequeue(struct bsw_pipeline *bp)
{
	struct rte_mbuf *m = NULL;
	uint32_t k;

	rte_spinlock_lock(&bp->cpu_in_lock);
	for (k = 0; k < bp->n_instances; k++) {
		uint32_t i = (bp->rr_next + k) % bp->n_instances;
		struct rte_ring *r = bp->inst[i].cpu_in;

		if (r && !rte_ring_dequeue(r, (void **)&m)) {
			bp->rr_next = (i + 1) % bp->n_instances;
			break;
		}
		m = NULL;
	}
	rte_spinlock_unlock(&bp->cpu_in_lock);
	return m;
}

int
bsw_packet_in_recv(struct bsw_pipeline *bp, uint8_t *buf, uint32_t buf_size,
		   uint32_t timeout_us)
{
	uint64_t deadline = rte_get_timer_cycles() + rte_get_timer_hz() / 1000000 * timeout_us;
	uint32_t sleep_us = 1;

	for (;;) {
		struct rte_mbuf *m;

		/* While a packet channel is served, its thread takes every
		 * packet-in: sleep out the timeout. */
		if (bp->channel) {
			usleep(timeout_us);
			return 0;
		}
		m = bsw_cpu_in_dequeue(bp);

		if (m) {
			uint32_t len = rte_pktmbuf_pkt_len(m);

			if (len > buf_size) {
				rte_pktmbuf_free(m);
				bsw_set_error("packet-in of %u bytes dropped: buffer %u", len,
					      buf_size);
				return -ENOSPC;
			}
			const void *data = rte_pktmbuf_read(m, 0, len, buf);

			if (data && data != buf)
				memcpy(buf, data, len);
			rte_pktmbuf_free(m);
			return (int)len;
		}
		if (rte_get_timer_cycles() >= deadline)
			return 0;
		usleep(sleep_us);
		if (sleep_us < 500)
			sleep_us *= 2;
	}
}

int
bsw_packet_out_send(struct bsw_pipeline *bp, const uint8_t *data, uint32_t len)
{
	struct rte_mbuf *m;
	char *dst;
	int full;

	if (!bp->pktmbuf_pool || !bp->inst[0].cpu_out)
		return -ENODEV;
	m = rte_pktmbuf_alloc(bp->pktmbuf_pool);
	if (!m) {
		bsw_set_error("packet-out: no mbuf");
		return -ENOMEM;
	}
	/* rte_pktmbuf_append takes a 16-bit length: 65536 + x would append x
	 * and the copy below would run past the mbuf. */
	dst = len <= rte_pktmbuf_tailroom(m) ? rte_pktmbuf_append(m, (uint16_t)len) : NULL;
	if (!dst) {
		rte_pktmbuf_free(m);
		bsw_set_error("packet-out of %u bytes does not fit one mbuf", len);
		return -EMSGSIZE;
	}
	memcpy(dst, data, len);
	/* the ring has a single producer: the server's threads and the packet
	 * channel's take turns */
	rte_spinlock_lock(&bp->cpu_out_lock);
	full = rte_ring_enqueue(bp->inst[0].cpu_out, m);
	rte_spinlock_unlock(&bp->cpu_out_lock);
	if (full) {
		rte_pktmbuf_free(m);
		bsw_set_error("packet-out ring full");
		return -ENOBUFS;
	}
	return 0;
}
