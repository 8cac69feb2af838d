/* SPDX-License-Identifier: Apache-2.0 */
/* EAL, mempools, ethdev ports and rings: the DPDK resources a pipeline's I/O
 * spec refers to by name. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_dev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bsw_internal.h"

static __thread char last_error[512];

const char *
bsw_last_error(void)
{
	return last_error;
}

void
bsw_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

int
bsw_eal_init(int argc, char **argv)
{
	int ret = rte_eal_init(argc, argv);

	if (ret < 0) {
		bsw_set_error("rte_eal_init failed: %s", rte_strerror(rte_errno));
		return -rte_errno;
	}
	return 0;
}

uint32_t
bsw_n_worker_lcores(void)
{
	return rte_lcore_count() - 1;
}

int
bsw_mempool_create(const char *name, uint32_t n_mbufs, uint32_t mbuf_size)
{
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create(name, n_mbufs, 256, 0, mbuf_size, rte_socket_id());
	if (!mp) {
		bsw_set_error("mempool %s: %s", name, rte_strerror(rte_errno));
		return -rte_errno;
	}
	return 0;
}

int
bsw_ethdev_open(const char *devargs, const char *dev_name, uint32_t n_queues,
		uint32_t mtu, const char *mempool)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info dev_info;
	struct rte_mempool *mp = rte_mempool_lookup(mempool);
	uint16_t port_id;
	uint32_t q;
	int ret;

	if (!mp) {
		bsw_set_error("mempool %s not found", mempool);
		return -EINVAL;
	}
	if (rte_eth_dev_get_port_by_name(dev_name, &port_id)) {
		ret = rte_dev_probe(devargs);
		if (ret) {
			bsw_set_error("probe %s: %s", devargs, rte_strerror(-ret));
			return ret;
		}
		if (rte_eth_dev_get_port_by_name(dev_name, &port_id)) {
			bsw_set_error("device %s not found after probing %s", dev_name, devargs);
			return -ENODEV;
		}
	}

	ret = rte_eth_dev_info_get(port_id, &dev_info);
	if (ret) {
		bsw_set_error("%s: dev_info_get: %s", dev_name, rte_strerror(-ret));
		return ret;
	}
	if (n_queues > dev_info.max_rx_queues || n_queues > dev_info.max_tx_queues) {
		bsw_set_error("%s: %u queues asked, device has %u rx / %u tx", dev_name, n_queues,
			      dev_info.max_rx_queues, dev_info.max_tx_queues);
		return -EINVAL;
	}

	memset(&conf, 0, sizeof(conf));
	if (n_queues > 1 && dev_info.flow_type_rss_offloads) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) &
			dev_info.flow_type_rss_offloads;
	}
	ret = rte_eth_dev_configure(port_id, n_queues, n_queues, &conf);
	if (ret) {
		bsw_set_error("%s: configure: %s", dev_name, rte_strerror(-ret));
		return ret;
	}
	if (mtu)
		rte_eth_dev_set_mtu(port_id, mtu);	/* best effort: virtual devices may refuse */

	for (q = 0; q < n_queues; q++) {
		ret = rte_eth_rx_queue_setup(port_id, q, 1024, rte_eth_dev_socket_id(port_id),
					     NULL, mp);
		if (ret) {
			bsw_set_error("%s: rxq %u: %s", dev_name, q, rte_strerror(-ret));
			return ret;
		}
		ret = rte_eth_tx_queue_setup(port_id, q, 1024, rte_eth_dev_socket_id(port_id),
					     NULL);
		if (ret) {
			bsw_set_error("%s: txq %u: %s", dev_name, q, rte_strerror(-ret));
			return ret;
		}
	}
	rte_eth_promiscuous_enable(port_id);
	ret = rte_eth_dev_start(port_id);
	if (ret) {
		bsw_set_error("%s: start: %s", dev_name, rte_strerror(-ret));
		return ret;
	}
	return port_id;
}

int
bsw_ring_create(const char *name, uint32_t size)
{
	struct rte_ring *r = rte_ring_lookup(name);

	if (r)
		return 0;
	/* One producer (a worker or the controller thread), one consumer. */
	r = rte_ring_create(name, size, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (!r) {
		bsw_set_error("ring %s: %s", name, rte_strerror(rte_errno));
		return -rte_errno;
	}
	return 0;
}
