package ipcp

import (
	"net/netip"
	"testing"

	"p4bng/emulator/internal/ppp"
)

type nopLayer struct{}

func (nopLayer) Up(*ppp.FSM)       {}
func (nopLayer) Down(*ppp.FSM)     {}
func (nopLayer) Started(*ppp.FSM)  {}
func (nopLayer) Finished(*ppp.FSM) {}

func opt(t uint8, a string) []byte {
	return ppp.AppendOption(nil, t, netip.MustParseAddr(a).AsSlice())
}

func TestRequestNakAndReject(t *testing.T) {
	p := New(nopLayer{}, true)
	want := append(append(opt(OptIPAddress, "0.0.0.0"), opt(OptPrimaryDNS, "0.0.0.0")...), opt(OptSecondaryDNS, "0.0.0.0")...)
	if got := p.AppendRequest(nil); string(got) != string(want) {
		t.Fatalf("request %x", got)
	}
	// RFC 1332/1877: the BNG Naks with the values it assigns.
	p.NakReceived(append(append(opt(OptIPAddress, "100.64.0.9"), opt(OptPrimaryDNS, "192.0.2.53")...), opt(OptSecondaryDNS, "192.0.2.54")...))
	if p.Address() != netip.MustParseAddr("100.64.0.9") || len(p.DNS()) != 2 {
		t.Fatalf("after Nak: %v %v", p.Address(), p.DNS())
	}
	p.RejectReceived(opt(OptSecondaryDNS, "192.0.2.54"))
	want = append(opt(OptIPAddress, "100.64.0.9"), opt(OptPrimaryDNS, "192.0.2.53")...)
	if got := p.AppendRequest(nil); string(got) != string(want) || len(p.DNS()) != 1 {
		t.Fatalf("after Reject: %x", got)
	}
	if got := New(nopLayer{}, false).AppendRequest(nil); string(got) != string(opt(OptIPAddress, "0.0.0.0")) {
		t.Fatalf("without DNS: %x", got)
	}
}

func TestPeerOptions(t *testing.T) {
	p := New(nopLayer{}, true)
	p.BeginRequest()
	o, _ := ppp.NextOption(opt(OptIPAddress, "100.64.0.1"))
	if v, _ := p.CheckOption(o, nil); v != ppp.Ack || p.PeerAddress() != netip.MustParseAddr("100.64.0.1") {
		t.Fatal("BNG address not acked")
	}
	for _, raw := range [][]byte{
		opt(OptIPAddress, "0.0.0.0"),                                    // asks us for an address: we have none
		ppp.AppendOption(nil, OptIPCompression, []byte{0, 0x2d, 15, 1}), // Van Jacobson
		opt(OptPrimaryDNS, "192.0.2.1"),                                 // we announce no servers
		ppp.AppendOption(nil, OptIPAddress, []byte{1, 2, 3}),            // bad length
	} {
		o, _ := ppp.NextOption(raw)
		if v, _ := p.CheckOption(o, nil); v != ppp.Reject {
			t.Fatalf("%x not rejected", raw)
		}
	}
}
