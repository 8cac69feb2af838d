/* SPDX-License-Identifier: Apache-2.0 */
/* Software distribution: one I/O thread per port spreads the port's traffic
 * over the pipeline instances by subscriber, for ports that cannot do it
 * themselves (one queue pair: libpcap, a tap; or a NIC whose RSS does not
 * hash PPPoE, which then lands on one queue).
 *
 * The thread reads the port's only rx queue, hashes each frame by flow
 * (bsw_flow_hash: one subscriber's packets always go to the same instance,
 * so their order is kept) and enqueues it on that instance's input ring;
 * it drains every instance's output ring and transmits on the only tx
 * queue. Instances see the port as a pair of rings (their I/O spec names
 * them; switch_config.py builds it). A full ring drops the frame and counts
 * it. Idle, the thread sleeps with back-off like the workers.
 */
#define _GNU_SOURCE		/* pthread_setname_np */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_hash_crc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bsw.h"
#include "bsw_internal.h"

#define DIST_BURST 32
#define DIST_MAX 16
#define EMPTY_POLLS_BEFORE_SLEEP 256

struct bsw_distributor {
	pthread_t thread;
	int running;
	int stop;
	uint16_t port_id;
	uint32_t n;
	uint32_t idle_us;
	struct rte_ring *to_inst[BSW_MAX_INSTANCES];
	struct rte_ring *from_inst[BSW_MAX_INSTANCES];
	struct bsw_distributor_stats stats;
};

static struct bsw_distributor dists[DIST_MAX];
static uint32_t n_dists;

static uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* A frame's flow, which is one subscriber's traffic in one direction: the
 * Ethernet addresses and VLAN ids; for PPPoE session frames also the
 * session id, and nothing inside; for plain IPv4 (downstream, toward a
 * subscriber) the destination address; for IPv6 the destination's first
 * 56 bits (a delegated prefix is /48 to /64, the default shortest /56);
 * for L2TP (UDP 1701) also the tunnel and session ids, so the subscribers
 * of one LAC-LNS tunnel spread too. Each worker polices with meters of its
 * own, so a subscriber's traffic must not spread: hashed by 5-tuple, a
 * session downloading from four servers was policed by up to four workers
 * at its full rate each. Whatever is cut short hashes what was read. */
uint32_t
bsw_flow_hash(const uint8_t *f, uint32_t len)
{
	uint32_t h = 0, off = 12, ihl;
	uint16_t et;

	if (len < 14)
		return rte_hash_crc(f, len, 0);
	h = rte_hash_crc(f, 12, h);
	et = be16(f + off);
	while ((et == 0x8100 || et == 0x88a8 || et == 0x9100) && off + 6 <= len) {
		h = rte_hash_crc_2byte(be16(f + off + 2) & 0x0fff, h);
		off += 4;
		et = be16(f + off);
	}
	off += 2;
	if (et == 0x8864 && off + 8 <= len)		/* PPPoE session: its id */
		return rte_hash_crc_2byte(be16(f + off + 2), h);
	if (et == 0x0800 && off + 20 <= len) {
		h = rte_hash_crc(f + off + 16, 4, h);
		ihl = (f[off] & 0x0f) * 4u;
		if (f[off + 9] == 17 && off + ihl + 8 + 6 <= len &&
		    (be16(f + off + ihl) == 1701 || be16(f + off + ihl + 2) == 1701)) {
			const uint8_t *l2tp = f + off + ihl + 8;
			uint32_t ids = (l2tp[0] & 0x40) ? 4 : 2;	/* after the Length field */

			if (off + ihl + 8 + ids + 4 <= len)
				h = rte_hash_crc(l2tp + ids, 4, h);
		}
	} else if (et == 0x86dd && off + 40 <= len) {
		h = rte_hash_crc(f + off + 24, 7, h);
	}
	return h;
}

/* Every instance's output ring to the port's tx queue; frames moved. */
static uint32_t
drain_tx(struct bsw_distributor *d)
{
	struct rte_mbuf *tx[DIST_BURST];
	uint32_t k, moved = 0;

	for (k = 0; k < d->n; k++) {
		uint32_t m = rte_ring_sc_dequeue_burst(d->from_inst[k], (void **)tx, DIST_BURST, NULL);
		uint16_t sent = 0;

		if (!m)
			continue;
		moved += m;
		while (sent < m) {
			uint16_t s = rte_eth_tx_burst(d->port_id, 0, tx + sent, (uint16_t)(m - sent));

			if (!s)
				break;
			sent += s;
		}
		__atomic_fetch_add(&d->stats.tx, sent, __ATOMIC_RELAXED);
		if (sent < m) {
			rte_pktmbuf_free_bulk(tx + sent, m - sent);
			__atomic_fetch_add(&d->stats.tx_dropped, m - sent, __ATOMIC_RELAXED);
		}
	}
	return moved;
}

static void *
distributor_main(void *arg)
{
	struct bsw_distributor *d = arg;
	struct rte_mbuf *rx[DIST_BURST], *per[BSW_MAX_INSTANCES][DIST_BURST];
	uint32_t cnt[BSW_MAX_INSTANCES], empty = 0, sleep_us = 1, i, k;

	while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
		uint16_t n = rte_eth_rx_burst(d->port_id, 0, rx, DIST_BURST);
		uint32_t moved = n;

		if (n) {
			memset(cnt, 0, sizeof(cnt[0]) * d->n);
			for (i = 0; i < n; i++) {
				k = bsw_flow_hash(rte_pktmbuf_mtod(rx[i], const uint8_t *),
						  rte_pktmbuf_data_len(rx[i])) % d->n;
				per[k][cnt[k]++] = rx[i];
			}
			__atomic_fetch_add(&d->stats.rx, n, __ATOMIC_RELAXED);
			for (k = 0; k < d->n; k++) {
				uint32_t q;

				if (!cnt[k])
					continue;
				q = rte_ring_sp_enqueue_burst(d->to_inst[k], (void **)per[k], cnt[k], NULL);
				__atomic_fetch_add(&d->stats.to_instance[k], q, __ATOMIC_RELAXED);
				if (q < cnt[k]) {
					rte_pktmbuf_free_bulk(&per[k][q], cnt[k] - q);
					__atomic_fetch_add(&d->stats.rx_dropped, cnt[k] - q, __ATOMIC_RELAXED);
				}
			}
		}
		moved += drain_tx(d);
		if (moved) {
			empty = 0;
			sleep_us = 1;
			continue;
		}
		if (!d->idle_us || ++empty < EMPTY_POLLS_BEFORE_SLEEP)
			continue;
		usleep(sleep_us);
		if (sleep_us < d->idle_us)
			sleep_us = sleep_us * 2 > d->idle_us ? d->idle_us : sleep_us * 2;
	}
	while (drain_tx(d))		/* the workers' last flush */
		;
	return NULL;
}

int
bsw_distributor_start(uint16_t port_id, const char *ring_prefix, uint32_t n_instances, uint32_t idle_us)
{
	struct bsw_distributor *d;
	char name[BSW_NAME_SIZE];
	uint32_t k;
	int ret;

	if (n_dists == DIST_MAX) {
		bsw_set_error("at most %d distributed ports", DIST_MAX);
		return -ENOSPC;
	}
	if (!n_instances || n_instances > BSW_MAX_INSTANCES) {
		bsw_set_error("distributor: %u instances", n_instances);
		return -EINVAL;
	}
	d = &dists[n_dists];
	memset(d, 0, sizeof(*d));
	d->port_id = port_id;
	d->n = n_instances;
	d->idle_us = idle_us;
	for (k = 0; k < n_instances; k++) {
		snprintf(name, sizeof(name), "%s%u_rx", ring_prefix, k);
		d->to_inst[k] = rte_ring_lookup(name);
		snprintf(name, sizeof(name), "%s%u_tx", ring_prefix, k);
		d->from_inst[k] = rte_ring_lookup(name);
		if (!d->to_inst[k] || !d->from_inst[k]) {
			bsw_set_error("distributor: ring %s not found", name);
			return -ENOENT;
		}
	}
	ret = pthread_create(&d->thread, NULL, distributor_main, d);
	if (ret) {
		bsw_set_error("distributor thread: %s", strerror(ret));
		return -ret;
	}
	snprintf(name, sizeof(name), "bsw-dist-%u", port_id);
	pthread_setname_np(d->thread, name);
	d->running = 1;
	return (int)n_dists++;
}

int
bsw_distributor_stats(uint32_t idx, struct bsw_distributor_stats *out)
{
	if (idx >= n_dists) {
		bsw_set_error("no distributor %u", idx);
		return -EINVAL;
	}
	*out = dists[idx].stats;
	return 0;
}

void
bsw_distributors_stop(void)
{
	uint32_t i;

	for (i = 0; i < n_dists; i++)
		__atomic_store_n(&dists[i].stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < n_dists; i++)
		if (dists[i].running) {
			pthread_join(dists[i].thread, NULL);
			dists[i].running = 0;
		}
	n_dists = 0;
}
