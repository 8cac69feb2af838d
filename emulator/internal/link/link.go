// Package link is how the emulator reaches the wire: a raw AF_PACKET socket
// on a Linux interface (afpacket_linux.go), or an in-memory pipe for tests.
// Frames are whole Ethernet frames, VLAN tags included, in both directions.
package link

import (
	"errors"
	"time"
)

// ErrClosed is returned by Receive once the link is closed.
var ErrClosed = errors.New("link: closed")

// Link sends and receives Ethernet frames.
type Link interface {
	// Send transmits one frame; the link does not keep the slice.
	Send(frame []byte) error
	// Receive fills b with the frames that are ready, waiting up to about
	// PollInterval for the first; b.N may be 0 after a quiet interval.
	Receive(b *Batch) error
	// Close releases the link; Receive must not be running.
	Close() error
}

// PollInterval bounds how long Receive blocks, so its caller can notice
// that it should stop.
const PollInterval = 100 * time.Millisecond

// FrameBuf is the receive buffer per frame: a jumbo frame plus room to
// re-insert a VLAN tag the kernel took off.
const FrameBuf = 9216 + 8

// Batch is a set of receive buffers and the frames read into them.
type Batch struct {
	bufs   [][]byte
	Frames [][]byte
	N      int
}

// NewBatch allocates n frame buffers.
func NewBatch(n int) *Batch {
	b := &Batch{bufs: make([][]byte, n), Frames: make([][]byte, n)}
	for i := range b.bufs {
		b.bufs[i] = make([]byte, FrameBuf)
	}
	return b
}

// Cap is the number of frames a batch can hold.
func (b *Batch) Cap() int { return len(b.bufs) }

// Memory is one end of an in-memory link; frames sent on one end are
// received on the other. A full queue drops (as a real link would).
type Memory struct {
	in      chan []byte
	peer    *Memory
	closed  chan struct{}
	Dropped uint64
}

// NewPipe returns two connected ends with queues of depth frames.
func NewPipe(depth int) (*Memory, *Memory) {
	a := &Memory{in: make(chan []byte, depth), closed: make(chan struct{})}
	b := &Memory{in: make(chan []byte, depth), closed: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

// Send implements Link.
func (m *Memory) Send(frame []byte) error {
	cp := append([]byte(nil), frame...)
	select {
	case m.peer.in <- cp:
	default:
		m.Dropped++
	}
	return nil
}

// Receive implements Link.
func (m *Memory) Receive(b *Batch) error {
	b.N = 0
	t := time.NewTimer(PollInterval)
	defer t.Stop()
	select {
	case f := <-m.in:
		b.Frames[0] = append(b.bufs[0][:0], f...)
		b.N = 1
	case <-t.C:
		return nil
	case <-m.closed:
		return ErrClosed
	}
	for b.N < len(b.bufs) {
		select {
		case f := <-m.in:
			b.Frames[b.N] = append(b.bufs[b.N][:0], f...)
			b.N++
		default:
			return nil
		}
	}
	return nil
}

// Close implements Link.
func (m *Memory) Close() error {
	select {
	case <-m.closed:
	default:
		close(m.closed)
	}
	return nil
}
