package ipv4

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

var (
	testSrc = netip.MustParseAddr("198.51.100.7")
	testDst = netip.MustParseAddr("10.0.0.2")
)

func bigUDP(n int) []byte {
	payload := make([]byte, n)
	for i := range payload {
		payload[i] = byte(i)
	}
	return AppendUDP(nil, testSrc, testDst, 0x4242, 5, 6, payload)
}

func TestFragmentsFitAndReassemble(t *testing.T) {
	for _, mtu := range []int{1492, 1000, 576, 68} {
		pkt := bigUDP(3000)
		frags := Fragment(pkt, mtu)
		if len(frags) < 2 {
			t.Fatalf("mtu %d: %d fragments", mtu, len(frags))
		}
		var r Reassembler
		// in reverse order: the last fragment first
		var whole []byte
		for i := len(frags) - 1; i >= 0; i-- {
			f := frags[i]
			if len(f) > mtu || Checksum(0, f[:HeaderLen]) != 0xffff {
				t.Fatalf("mtu %d: fragment %d is %d bytes or has a bad checksum", mtu, i, len(f))
			}
			if !IsFragment(f) {
				t.Fatalf("mtu %d: fragment %d not seen as one", mtu, i)
			}
			w, err := r.Add(f, 0)
			if err != nil {
				t.Fatal(err)
			}
			if w != nil && i != 0 {
				t.Fatalf("mtu %d: whole before the last missing piece", mtu)
			}
			whole = w
		}
		// the datagram as sent, DF aside (cleared by fragmentation)
		want := append([]byte(nil), pkt...)
		binary.BigEndian.PutUint16(want[6:], 0)
		want[10], want[11] = 0, 0
		binary.BigEndian.PutUint16(want[10:], Finish(Checksum(0, want[:HeaderLen])))
		if !bytes.Equal(whole, want) {
			t.Fatalf("mtu %d: reassembled datagram differs", mtu)
		}
		p, err := Parse(whole)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseUDP(p); err != nil {
			t.Fatalf("mtu %d: %v", mtu, err)
		}
		if len(r.pending) != 0 {
			t.Fatalf("mtu %d: datagram left pending", mtu)
		}
	}
}

func TestDuplicatesAndOverlapsStillComplete(t *testing.T) {
	frags := Fragment(bigUDP(2000), 600)
	if len(frags) != 4 {
		t.Fatalf("%d fragments, want 4", len(frags))
	}
	// an overlapping copy: the first fragment's data again, at offset 0 but
	// only its first 288 bytes (a multiple of 8), MF set
	part := append([]byte(nil), frags[0][:HeaderLen+288]...)
	binary.BigEndian.PutUint16(part[2:], uint16(len(part)))
	part[10], part[11] = 0, 0
	binary.BigEndian.PutUint16(part[10:], Finish(Checksum(0, part[:HeaderLen])))
	var r Reassembler
	for i, f := range [][]byte{frags[0], frags[0], part, frags[2], frags[1]} {
		if w, err := r.Add(f, 0); err != nil || w != nil {
			t.Fatalf("step %d: %v, whole %v", i, err, w != nil)
		}
	}
	w, err := r.Add(frags[3], 0)
	if err != nil || w == nil {
		t.Fatalf("not complete after every fragment: %v", err)
	}
	if p, err := Parse(w); err != nil {
		t.Fatal(err)
	} else if _, err := ParseUDP(p); err != nil {
		t.Fatal(err)
	}
}

func TestIncompleteDatagramsExpireAndAreBounded(t *testing.T) {
	var r Reassembler
	for id := 0; id < MaxPendingDatagrams; id++ {
		f := Fragment(AppendUDP(nil, testSrc, testDst, uint16(id), 5, 6, make([]byte, 1500)), 576)
		if _, err := r.Add(f[0], 0); err != nil {
			t.Fatal(err)
		}
	}
	f := Fragment(AppendUDP(nil, testSrc, testDst, 999, 5, 6, make([]byte, 1500)), 576)
	if _, err := r.Add(f[0], time.Second); err != ErrTooMany {
		t.Fatalf("got %v, want ErrTooMany", err)
	}
	if _, err := r.Add(f[0], ReassemblyTimeout+time.Second); err != nil {
		t.Fatal(err)
	}
	if r.Expired != MaxPendingDatagrams || len(r.pending) != 1 {
		t.Fatalf("expired %d, pending %d", r.Expired, len(r.pending))
	}
}

func TestBadFragmentsAreRefused(t *testing.T) {
	frags := Fragment(bigUDP(2000), 600)
	var r Reassembler
	odd := append([]byte(nil), frags[0][:HeaderLen+13]...) // MF with 13 data bytes
	binary.BigEndian.PutUint16(odd[2:], uint16(len(odd)))
	odd[10], odd[11] = 0, 0
	binary.BigEndian.PutUint16(odd[10:], Finish(Checksum(0, odd[:HeaderLen])))
	if _, err := r.Add(odd, 0); err != ErrBadFragment {
		t.Fatalf("MF fragment of 13 bytes: %v", err)
	}
	bad := append([]byte(nil), frags[1]...)
	bad[10] ^= 1
	if _, err := r.Add(bad, 0); err != ErrBadFragment {
		t.Fatalf("bad checksum: %v", err)
	}
}

func TestAPacketThatFitsIsNotFragmented(t *testing.T) {
	pkt := bigUDP(100)
	if f := Fragment(pkt, 1492); len(f) != 1 || !bytes.Equal(f[0], pkt) || IsFragment(f[0]) {
		t.Fatal("a packet that fits was changed")
	}
}
