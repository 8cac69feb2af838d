package ipv4

import (
	"net/netip"
	"testing"
)

var (
	a = netip.MustParseAddr("100.64.0.7")
	z = netip.MustParseAddr("198.51.100.1")
)

// RFC 1071's example: the sum of 0001 f203 f4f5 f6f7 is ddf2.
func TestChecksumRFC1071Example(t *testing.T) {
	if got := Checksum(0, []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}); got != 0xddf2 {
		t.Fatalf("sum %04x", got)
	}
}

func TestUDPRoundTrip(t *testing.T) {
	b := AppendUDP(nil, a, z, 7, 40000, 9000, []byte("SUBEMU payload"))
	p, err := Parse(b)
	if err != nil || p.Src != a || p.Dst != z || p.Proto != ProtoUDP || p.TTL != DefaultTTL {
		t.Fatalf("%+v %v", p, err)
	}
	u, err := ParseUDP(p)
	if err != nil || u.SrcPort != 40000 || u.DstPort != 9000 || string(u.Payload) != "SUBEMU payload" {
		t.Fatalf("%+v %v", u, err)
	}
	// One flipped payload bit breaks the UDP checksum, one header bit the
	// header checksum.
	b[len(b)-1] ^= 1
	p, _ = Parse(b)
	if _, err := ParseUDP(p); err != ErrL4Checksum {
		t.Fatalf("corrupt payload: %v", err)
	}
	b[8]--
	if _, err := Parse(b); err != ErrChecksum {
		t.Fatalf("corrupt header: %v", err)
	}
}

func TestICMPEchoRoundTrip(t *testing.T) {
	b := AppendICMPEcho(nil, a, z, 1, ICMPEchoRequest, 0x1234, 9, []byte("abcdefgh"))
	b = append(b, 0, 0) // trailing bytes past Total Length are ignored
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseICMP(p)
	if err != nil || e.Type != ICMPEchoRequest || e.ID != 0x1234 || e.Seq != 9 || string(e.Data) != "abcdefgh" || e.NotEcho {
		t.Fatalf("%+v %v", e, err)
	}
}

func TestMalformed(t *testing.T) {
	good := AppendUDP(nil, a, z, 1, 1, 2, nil)
	frag := append([]byte(nil), good...)
	frag[6] = 0x20 // MF
	frag[10], frag[11] = 0, 0
	c := Finish(Checksum(0, frag[:20]))
	frag[10], frag[11] = byte(c>>8), byte(c)
	for name, b := range map[string][]byte{
		"short":    good[:19],
		"version":  append([]byte{0x65}, good[1:]...),
		"total":    good[:len(good)-1],
		"fragment": frag,
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
