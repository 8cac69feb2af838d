package ipv6cp

import (
	"encoding/binary"
	"math/rand"
	"testing"

	"p4bng/emulator/internal/ppp"
)

type nopLayer struct{}

func (nopLayer) Up(*ppp.FSM)       {}
func (nopLayer) Down(*ppp.FSM)     {}
func (nopLayer) Started(*ppp.FSM)  {}
func (nopLayer) Finished(*ppp.FSM) {}

func iid(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return ppp.AppendOption(nil, OptInterfaceID, b[:])
}

func TestInterfaceIdentifierNegotiation(t *testing.T) {
	p := New(nopLayer{}, rand.New(rand.NewSource(3)))
	ours := p.InterfaceID()
	if ours == 0 || string(p.AppendRequest(nil)) != string(iid(ours)) {
		t.Fatal("request")
	}
	check := func(raw []byte) (ppp.Verdict, []byte) {
		o, _ := ppp.NextOption(raw)
		return p.CheckOption(o, nil)
	}
	// RFC 5072 4.1: zero, or equal to ours, gets a Nak with a new value.
	for _, bad := range []uint64{0, ours} {
		v, nak := check(iid(bad))
		if v != ppp.Nak || len(nak) != 10 || binary.BigEndian.Uint64(nak[2:]) == 0 || binary.BigEndian.Uint64(nak[2:]) == ours {
			t.Fatalf("iid %x -> %v %x", bad, v, nak)
		}
	}
	if v, _ := check(iid(0xac)); v != ppp.Ack || p.PeerInterfaceID() != 0xac {
		t.Fatal("good iid not acked")
	}
	if v, _ := check(ppp.AppendOption(nil, OptIPv6Compression, []byte{0, 0x4f})); v != ppp.Reject {
		t.Fatal("compression not rejected")
	}
	// A Nak suggesting the BNG's own identifier is not adopted.
	p.NakReceived(iid(0xac))
	if p.InterfaceID() == 0xac || p.InterfaceID() == 0 {
		t.Fatal("adopted the peer's identifier")
	}
	p.NakReceived(iid(0x1234))
	if p.InterfaceID() != 0x1234 || p.LinkLocal().String() != "fe80::1234" {
		t.Fatalf("after Nak: %x %v", p.InterfaceID(), p.LinkLocal())
	}
}
