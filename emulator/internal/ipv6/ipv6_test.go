package ipv6

import (
	"net/netip"
	"testing"
)

var (
	cpe = netip.MustParseAddr("fe80::1234:5678:9abc:def0")
	bng = netip.MustParseAddr("fe80::1")
)

func TestRouterSolicit(t *testing.T) {
	b := AppendRouterSolicit(nil, cpe)
	p, err := Parse(b)
	if err != nil || p.Dst != AllRouters || p.HopLimit != 255 || p.NextHeader != ProtoICMPv6 || !UpperChecksumOK(p) {
		t.Fatalf("%+v %v", p, err)
	}
	if len(p.Payload) != 8 || p.Payload[0] != RouterSolicit {
		t.Fatalf("RS body %x", p.Payload)
	}
}

func TestRouterAdvertisementAndSLAAC(t *testing.T) {
	pfx := netip.MustParsePrefix("2001:db8:1:2::/64")
	p, _ := Parse(AppendRA(nil, bng, AllNodes, pfx, true))
	ra, err := ParseRA(p)
	if err != nil || !ra.HasPrefix || ra.Prefix != pfx || ra.RouterLifetime != 1800 {
		t.Fatalf("%+v %v", ra, err)
	}
	a, ok := SLAAC(ra.Prefix, 0x123456789abcdef0)
	if !ok || a != netip.MustParseAddr("2001:db8:1:2:1234:5678:9abc:def0") {
		t.Fatalf("SLAAC %v", a)
	}
	// Without the A flag there is no address to form.
	p, _ = Parse(AppendRA(nil, bng, AllNodes, pfx, false))
	if ra, err := ParseRA(p); err != nil || ra.HasPrefix {
		t.Fatalf("%+v %v", ra, err)
	}
	if _, ok := SLAAC(netip.MustParsePrefix("2001:db8::/56"), 1); ok {
		t.Fatal("SLAAC from a /56")
	}
}

func TestRAValidation(t *testing.T) {
	pfx := netip.MustParsePrefix("2001:db8::/64")
	good := AppendRA(nil, bng, AllNodes, pfx, true)
	hop := append([]byte(nil), good...)
	hop[7] = 254 // forwarded: not from an on-link router
	global := AppendRA(nil, netip.MustParseAddr("2001:db8::1"), AllNodes, pfx, true)
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-1] ^= 0xff
	badopt := append([]byte(nil), good...)
	badopt[HeaderLen+17] = 9 // prefix option claims 72 bytes
	for name, b := range map[string][]byte{"hop-limit": hop, "global-source": global, "checksum": corrupt, "option-length": badopt, "short": good[:HeaderLen+8]} {
		p, err := Parse(b)
		if err == nil {
			_, err = ParseRA(p)
		}
		if err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestUDPRoundTrip(t *testing.T) {
	b := AppendUDP(nil, cpe, AllRouters, 1, 546, 547, []byte{1, 2, 3})
	p, err := Parse(append(b, 0xee)) // trailing byte past Payload Length
	if err != nil {
		t.Fatal(err)
	}
	u, err := ParseUDP(p)
	if err != nil || u.SrcPort != 546 || u.DstPort != 547 || string(u.Payload) != "\x01\x02\x03" {
		t.Fatalf("%+v %v", u, err)
	}
	b[len(b)-1] ^= 1
	p, _ = Parse(b)
	if _, err := ParseUDP(p); err != ErrChecksum {
		t.Fatalf("corrupt UDP: %v", err)
	}
}
