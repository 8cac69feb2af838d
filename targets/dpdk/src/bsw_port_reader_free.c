/* SPDX-License-Identifier: Apache-2.0 */
/* Input ports freed without freeing the packets they already gave away.
 *
 * DPDK 22.11's ring and ethdev readers dequeue a burst into an array and
 * hand its packets to the pipeline one by one (pos of n_pkts). Their free
 * then frees every mbuf of that last burst, including the ones already
 * handed over, which the pipeline has long since transmitted or dropped,
 * and which may be in another owner's hands again by then. So every
 * pipeline free (a new program through SetForwardingPipelineConfig, a
 * shutdown) put up to a burst of mbufs per port back into the mempool a
 * second time: later, two packets got the same mbuf. Seen as a packet-out
 * lost and the next one sent twice after a pipeline was rebuilt in the same
 * process (tests/integration/test_cpu_port_loop.py).
 *
 * Before the pipeline is freed, this frees only the packets a reader still
 * holds (pos..n_pkts) and marks its burst empty, so that DPDK's free frees
 * its memory and nothing else. The reader structures are private to
 * librte_port; they are mirrored from DPDK 22.11, used only under the 22.11
 * library (rte_version()), and each object is also checked for sane burst
 * bounds and, for a ring reader, against the ring its name looks up, before
 * anything is touched. An object that does not pass is left alone (DPDK's
 * free then does as before). */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_version.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_swx_port_ethdev.h>
#include <rte_swx_port_ring.h>

#include "bsw_internal.h"
#include "rte_swx_pipeline_internal.h"

/* The burst state both readers keep after their parameters and stats. */
struct reader_burst {
	struct rte_swx_port_in_stats stats;
	struct rte_mbuf **pkts;
	int n_pkts;
	int pos;
};

struct ring_reader {		/* lib/port/rte_swx_port_ring.c, 22.11 */
	struct {
		struct rte_ring *ring;
		char *name;
		uint32_t burst_size;
	} params;
	struct reader_burst b;
};

struct ethdev_reader {		/* lib/port/rte_swx_port_ethdev.c, 22.11 */
	struct {
		uint16_t port_id;
		uint16_t queue_id;
		uint32_t burst_size;
	} params;
	struct reader_burst b;
};

static int
burst_consistent(const struct rte_swx_port_in_ops *ops, void *obj, const struct reader_burst *b,
		 uint32_t burst_size)
{
	struct rte_swx_port_in_stats s;

	ops->stats_read(obj, &s);
	return s.n_pkts == b->stats.n_pkts && s.n_bytes == b->stats.n_bytes &&
	       s.n_empty == b->stats.n_empty && b->pkts && burst_size &&
	       b->pos >= 0 && b->pos <= b->n_pkts && (uint32_t)b->n_pkts <= burst_size;
}

static void
burst_release(struct reader_burst *b)
{
	int i;

	for (i = b->pos; i < b->n_pkts; i++)
		rte_pktmbuf_free(b->pkts[i]);
	b->n_pkts = 0;
	b->pos = 0;
}

uint32_t
bsw_port_readers_release(struct rte_swx_pipeline *p)
{
	struct port_in *port;
	uint32_t n_left = 0;
	int layout_known = !strncmp(rte_version(), "DPDK 22.11", 10);

	TAILQ_FOREACH(port, &p->ports_in, node) {
		const struct rte_swx_port_in_ops *ops = &port->type->ops;

		if (!port->obj)
			continue;
		if (ops->free == rte_swx_port_ring_reader_ops.free) {
			struct ring_reader *r = port->obj;

			if (layout_known && burst_consistent(ops, r, &r->b, r->params.burst_size) &&
			    r->params.name && rte_ring_lookup(r->params.name) == r->params.ring)
				burst_release(&r->b);
			else
				n_left++;
		} else if (ops->free == rte_swx_port_ethdev_reader_ops.free) {
			struct ethdev_reader *r = port->obj;

			if (layout_known && rte_eth_dev_is_valid_port(r->params.port_id) &&
			    burst_consistent(ops, r, &r->b, r->params.burst_size))
				burst_release(&r->b);
			else
				n_left++;
		}
	}
	return n_left;
}
