/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Packet channel: the CPU port served to a local controller over a connected
 * SOCK_SEQPACKET socket by one C thread, so punted packets and the answers to
 * them never run through the Python server (bng_switch/packet_socket.py holds
 * the protocol description and does the hello and the grant; this file only
 * moves packets once the grant is given).
 *
 * One message per packet, both ways: a byte with the number of metadata
 * fields, then per field its P4Info metadata id (u32) and value (u64), big
 * endian, then the frame. Packet-ins carry every field of the packet_in
 * header, read from the front of the frame the pipeline sent to the CPU
 * port; a packet-out's fields are written into a packet_out header put in
 * front of its frame. Fields a packet-out does not name are 0; an unknown id
 * or a value wider than its field drops the packet-out and counts it.
 */
#define _GNU_SOURCE		/* pthread_setname_np, ppoll */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "bsw_internal.h"

#define CHANNEL_BURST 32
/* Sleep when nothing moved: from MIN, doubling to MAX. Shorter first sleeps
 * cost more wake-ups than they save latency (a PPP exchange is ~16 packets
 * over tens of ms); each is cut short by a packet-out anyway. */
#define CHANNEL_MIN_IDLE_US 20
#define CHANNEL_MAX_IDLE_US 500
#define CHANNEL_MSG_MAX 65536
#define CHANNEL_FIELD_BYTES 12	/* per metadata field: u32 id, u64 value */

struct bsw_packet_channel {
	struct bsw_pipeline *bp;
	int fd;
	pthread_t thread;
	volatile int stop;
	volatile int running;
	struct bsw_channel_field in[BSW_CHANNEL_MAX_FIELDS], out[BSW_CHANNEL_MAX_FIELDS];
	uint32_t n_in, n_out, in_bytes, out_bytes;
	uint64_t stats[BSW_CHANNEL_N_STATS];
	/* A packet-in the socket had no room for, in tx: sent before any other
	 * packet-in is taken from the rings (which hold the rest meanwhile). */
	uint32_t pending;
	uint8_t tx[CHANNEL_MSG_MAX + 1 + BSW_CHANNEL_MAX_FIELDS * CHANNEL_FIELD_BYTES];
	uint8_t rx[CHANNEL_MSG_MAX];
	uint8_t frame[CHANNEL_MSG_MAX + 256];	/* + the controller header */
};

static uint64_t
bits_get(const uint8_t *p, uint32_t off, uint32_t width)
{
	uint64_t v = 0;
	uint32_t i;

	for (i = off; i < off + width; i++)
		v = (v << 1) | ((p[i >> 3] >> (7 - (i & 7))) & 1);
	return v;
}

static void
bits_set(uint8_t *p, uint32_t off, uint32_t width, uint64_t v)
{
	uint32_t i;

	for (i = 0; i < width; i++) {
		uint32_t b = off + width - 1 - i;
		uint8_t mask = 1 << (7 - (b & 7));

		if ((v >> i) & 1)
			p[b >> 3] |= mask;
		else
			p[b >> 3] &= ~mask;
	}
}

static void
put_u32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static void
put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, v >> 32);
	put_u32(p + 4, (uint32_t)v);
}

static uint32_t
get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t
get_u64(const uint8_t *p)
{
	return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

/* Send the pending packet-in: 0 when sent or still waiting for room,
 * -1 once the peer is gone. Never blocks: the same thread reads the
 * packet-outs, which the controller may be waiting to send. */
static int
channel_flush(struct bsw_packet_channel *ch)
{
	while (ch->pending) {
		if (send(ch->fd, ch->tx, ch->pending, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) {
			ch->pending = 0;
			ch->stats[BSW_CHANNEL_PACKET_IN]++;
			return 0;
		}
		if (errno == EAGAIN || errno == ENOBUFS)
			return 0;
		if (errno != EINTR)
			return -1;
	}
	return 0;
}

/* Forward up to a burst of packet-ins; -1 once the peer is gone. */
static int
channel_packet_ins(struct bsw_packet_channel *ch, uint32_t *moved)
{
	struct bsw_pipeline *bp = ch->bp;
	uint32_t i, f;

	for (i = 0; i < CHANNEL_BURST; i++) {
		struct rte_mbuf *m;
		uint32_t len, hdr = 1 + ch->n_in * CHANNEL_FIELD_BYTES;
		const uint8_t *data;

		if (channel_flush(ch) < 0)
			return -1;
		if (ch->pending)
			return 0;
		m = bsw_cpu_in_dequeue(bp);
		if (!m)
			return 0;
		(*moved)++;
		len = rte_pktmbuf_pkt_len(m);
		if (len < ch->in_bytes || len - ch->in_bytes > CHANNEL_MSG_MAX) {
			rte_pktmbuf_free(m);
			ch->stats[BSW_CHANNEL_PACKET_IN_DROPS]++;
			continue;
		}
		data = rte_pktmbuf_read(m, 0, len, ch->frame);
		ch->tx[0] = ch->n_in;
		for (f = 0; f < ch->n_in; f++) {
			put_u32(ch->tx + 1 + f * CHANNEL_FIELD_BYTES, ch->in[f].id);
			put_u64(ch->tx + 5 + f * CHANNEL_FIELD_BYTES, bits_get(data, ch->in[f].bit_offset, ch->in[f].width));
		}
		memcpy(ch->tx + hdr, data + ch->in_bytes, len - ch->in_bytes);
		rte_pktmbuf_free(m);
		ch->pending = hdr + len - ch->in_bytes;
	}
	return channel_flush(ch);
}

/* A packet-out message -> packet_out header + frame in ch->frame; its
 * length, or 0 when the message is malformed. */
static uint32_t
channel_decode_out(struct bsw_packet_channel *ch, uint32_t n)
{
	uint32_t n_fields, body, i, f;

	if (n < 1)
		return 0;
	n_fields = ch->rx[0];
	body = 1 + n_fields * CHANNEL_FIELD_BYTES;
	if (n < body || n - body + ch->out_bytes > CHANNEL_MSG_MAX)
		return 0;
	memset(ch->frame, 0, ch->out_bytes);
	for (i = 0; i < n_fields; i++) {
		uint32_t id = get_u32(ch->rx + 1 + i * CHANNEL_FIELD_BYTES);
		uint64_t v = get_u64(ch->rx + 5 + i * CHANNEL_FIELD_BYTES);

		for (f = 0; f < ch->n_out && ch->out[f].id != id; f++)
			;
		if (f == ch->n_out || (ch->out[f].width < 64 && v >> ch->out[f].width))
			return 0;
		bits_set(ch->frame, ch->out[f].bit_offset, ch->out[f].width, v);
	}
	memcpy(ch->frame + ch->out_bytes, ch->rx + body, n - body);
	return ch->out_bytes + n - body;
}

/* Inject up to a burst of packet-outs; -1 once the peer is gone. */
static int
channel_packet_outs(struct bsw_packet_channel *ch, uint32_t *moved)
{
	uint32_t i;

	for (i = 0; i < CHANNEL_BURST; i++) {
		ssize_t n = recv(ch->fd, ch->rx, sizeof(ch->rx), MSG_DONTWAIT);
		uint32_t len;

		if (n == 0)
			return -1;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		(*moved)++;
		len = channel_decode_out(ch, (uint32_t)n);
		if (!len || bsw_packet_out_send(ch->bp, ch->frame, len) < 0)
			ch->stats[BSW_CHANNEL_PACKET_OUT_ERRORS]++;
		else
			ch->stats[BSW_CHANNEL_PACKET_OUT]++;
	}
	return 0;
}

static void *
channel_main(void *arg)
{
	struct bsw_packet_channel *ch = arg;
	uint32_t idle_us = CHANNEL_MIN_IDLE_US;

	while (!ch->stop) {
		uint32_t moved = 0;
		struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
		struct timespec ts;

		if (channel_packet_ins(ch, &moved) < 0 || channel_packet_outs(ch, &moved) < 0)
			break;
		if (moved) {
			idle_us = CHANNEL_MIN_IDLE_US;
			continue;
		}
		/* Nothing moved: sleep, but wake at once on a packet-out or on
		 * room for the pending packet-in. Packet-ins come from a ring
		 * with nothing to wait on, hence the timeout. */
		if (ch->pending)
			pfd.events |= POLLOUT;
		ts.tv_sec = 0;
		ts.tv_nsec = idle_us * 1000L;
		if (ppoll(&pfd, 1, &ts, NULL) > 0 && (pfd.revents & (POLLHUP | POLLERR)) &&
		    !(pfd.revents & POLLIN))
			break;
		if (idle_us < CHANNEL_MAX_IDLE_US)
			idle_us *= 2;
	}
	if (ch->pending)		/* taken from the ring, never sent */
		ch->stats[BSW_CHANNEL_PACKET_IN_DROPS]++;
	ch->running = 0;
	return NULL;
}

int
bsw_packet_channel_start(struct bsw_pipeline *bp, int fd,
			 const struct bsw_channel_field *in, uint32_t n_in, uint32_t in_bytes,
			 const struct bsw_channel_field *out, uint32_t n_out, uint32_t out_bytes)
{
	struct bsw_packet_channel *ch;
	uint32_t i;
	int ret;

	if (bp->channel) {
		bsw_set_error("a packet channel is already being served");
		return -EBUSY;
	}
	if (!bp->pktmbuf_pool || !bp->inst[0].cpu_out) {
		bsw_set_error("CPU port not configured");
		return -ENODEV;
	}
	if (n_in > BSW_CHANNEL_MAX_FIELDS || n_out > BSW_CHANNEL_MAX_FIELDS ||
	    in_bytes > 256 || out_bytes > 256) {
		bsw_set_error("controller header too large for the packet channel");
		return -EINVAL;
	}
	for (i = 0; i < n_in + n_out; i++) {
		const struct bsw_channel_field *f = i < n_in ? &in[i] : &out[i - n_in];
		uint32_t bytes = i < n_in ? in_bytes : out_bytes;

		/* written so that no sum can wrap */
		if (!f->width || f->width > 64 || f->bit_offset > bytes * 8 ||
		    f->width > bytes * 8 - f->bit_offset) {
			bsw_set_error("controller header field %u: bad offset/width", f->id);
			return -EINVAL;
		}
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		bsw_set_error("packet channel: out of memory");
		return -ENOMEM;
	}
	ch->bp = bp;
	ch->fd = fd;
	memcpy(ch->in, in, n_in * sizeof(*in));
	memcpy(ch->out, out, n_out * sizeof(*out));
	ch->n_in = n_in;
	ch->n_out = n_out;
	ch->in_bytes = in_bytes;
	ch->out_bytes = out_bytes;
	ch->running = 1;
	ret = pthread_create(&ch->thread, NULL, channel_main, ch);
	if (ret) {
		free(ch);
		bsw_set_error("packet channel thread: %s", strerror(ret));
		return -ret;
	}
	pthread_setname_np(ch->thread, "bsw-pktchan");
	bp->channel = ch;
	return 0;
}

void
bsw_packet_channel_stop(struct bsw_pipeline *bp)
{
	struct bsw_packet_channel *ch = bp->channel;

	if (!ch)
		return;
	ch->stop = 1;
	pthread_join(ch->thread, NULL);
	bp->channel = NULL;
	free(ch);
}

int
bsw_packet_channel_stats(struct bsw_pipeline *bp, uint64_t *stats)
{
	struct bsw_packet_channel *ch = bp->channel;

	if (!ch) {
		memset(stats, 0, BSW_CHANNEL_N_STATS * sizeof(*stats));
		return 0;
	}
	memcpy(stats, ch->stats, sizeof(ch->stats));
	return ch->running;
}
