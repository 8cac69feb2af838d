//go:build linux

package link

import (
	"encoding/binary"
	"syscall"
	"testing"
)

// runBPF interprets the few classic BPF instructions pppoeFilter uses.
func runBPF(t *testing.T, prog []syscall.SockFilter, pkt []byte) uint32 {
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case 0x28: // ldh [k]
			if int(in.K)+2 > len(pkt) {
				return 0
			}
			a = uint32(binary.BigEndian.Uint16(pkt[in.K:]))
		case 0x15: // jeq #k
			if a == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case 0x06:
			return in.K
		default:
			t.Fatalf("unexpected opcode %#x", in.Code)
		}
	}
	t.Fatal("fell off the program")
	return 0
}

func frame(types ...uint16) []byte {
	b := make([]byte, 12, 64)
	for _, ty := range types {
		b = binary.BigEndian.AppendUint16(b, ty)
		b = append(b, 0, 5) // TCI, ignored for the last type
	}
	return append(b, make([]byte, 20)...)
}

func TestPPPoEFilter(t *testing.T) {
	for _, c := range []struct {
		types  []uint16
		accept bool
	}{
		{[]uint16{0x8863}, true},
		{[]uint16{0x8864}, true},
		{[]uint16{0x8100, 0x8864}, true},
		{[]uint16{0x88a8, 0x8100, 0x8863}, true},
		{[]uint16{0x9100, 0x8100, 0x8864}, true},
		{[]uint16{0x0800}, false},
		{[]uint16{0x86dd}, false},
		{[]uint16{0x8100, 0x0800}, false},
		{[]uint16{0x88a8, 0x8100, 0x0806}, false},
	} {
		f := frame(c.types...) // EtherTypes at 12, 16, 20 as on the wire
		if got := runBPF(t, pppoeFilter, f) != 0; got != c.accept {
			t.Errorf("%04x: accept=%v", c.types, got)
		}
	}
}

func TestMemoryPipe(t *testing.T) {
	a, b := NewPipe(2)
	a.Send([]byte{1})
	a.Send([]byte{2})
	a.Send([]byte{3}) // queue full: dropped
	bt := NewBatch(4)
	if err := b.Receive(bt); err != nil || bt.N != 2 || bt.Frames[1][0] != 2 || a.Dropped != 1 {
		t.Fatalf("n=%d err=%v dropped=%d", bt.N, err, a.Dropped)
	}
	b.Close()
	if err := b.Receive(bt); err != ErrClosed {
		t.Fatalf("after close: %v", err)
	}
}
