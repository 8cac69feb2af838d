package ppp

import (
	"bytes"
	"testing"
)

func TestFrameAndPacketRoundTrip(t *testing.T) {
	opts := AppendOptionUint16(nil, 1, 1492)
	opts = AppendOptionUint32(opts, 5, 0xdeadbeef)
	opts = AppendOption(opts, 3, []byte{0xc0, 0x23})
	pkt := AppendPacket(nil, ConfigureRequest, 7, opts)
	frame := append([]byte{0xc0, 0x21}, pkt...)
	frame = append(frame, 0, 0, 0) // padding after Length
	proto, body, err := ParseFrame(frame)
	if err != nil || proto != ProtoLCP {
		t.Fatal(proto, err)
	}
	p, err := ParsePacket(body)
	if err != nil || p.Code != ConfigureRequest || p.ID != 7 || !bytes.Equal(p.Data, opts) {
		t.Fatalf("%+v %v", p, err)
	}
	if err := ValidateOptions(p.Data); err != nil {
		t.Fatal(err)
	}
	var types []uint8
	ForEachOption(p.Data, func(o Option) { types = append(types, o.Type) })
	if !bytes.Equal(types, []byte{1, 5, 3}) || !ContainsOption(opts, AppendOptionUint32(nil, 5, 0xdeadbeef)) {
		t.Fatalf("options %v", types)
	}
}

func TestMalformedPackets(t *testing.T) {
	if _, _, err := ParseFrame([]byte{0xc0}); err != ErrShort {
		t.Fatal("1-byte frame")
	}
	if _, _, err := ParseFrame([]byte{0xc0, 0x20, 1}); err != ErrProtocol {
		t.Fatal("even protocol accepted")
	}
	if _, _, err := ParseFrame([]byte{0x01, 0x21}); err != ErrProtocol {
		t.Fatal("odd high octet accepted")
	}
	for _, b := range [][]byte{{1, 1, 0}, {1, 1, 0, 3}, {1, 1, 0, 9, 0}} {
		if _, err := ParsePacket(b); err == nil {
			t.Fatalf("%x accepted", b)
		}
	}
	for _, o := range [][]byte{{1}, {1, 1}, {1, 0}, {1, 4, 0}} {
		if ValidateOptions(o) == nil {
			t.Fatalf("options %x accepted", o)
		}
	}
}

// FuzzControlPacket: the decoders never panic, and a packet they accept
// re-encodes to the same bytes.
func FuzzControlPacket(f *testing.F) {
	f.Add(append([]byte{0xc0, 0x21}, AppendPacket(nil, ConfigureRequest, 1, AppendOptionUint16(nil, 1, 1492))...))
	f.Add([]byte{0x80, 0x21, 1, 1, 0, 4})
	f.Add([]byte{0xc0, 0x21, 9, 1, 0, 8, 1, 2, 3, 4, 5, 6})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, body, err := ParseFrame(b)
		if err != nil {
			return
		}
		p, err := ParsePacket(body)
		if err != nil {
			return
		}
		re := AppendPacket(nil, p.Code, p.ID, p.Data)
		if !bytes.Equal(re, body[:len(re)]) {
			t.Fatalf("re-encoded %x from %x", re, body)
		}
		if ValidateOptions(p.Data) == nil {
			var rebuilt []byte
			ForEachOption(p.Data, func(o Option) { rebuilt = AppendOption(rebuilt, o.Type, o.Data) })
			if !bytes.Equal(rebuilt, p.Data) {
				t.Fatalf("options re-encoded %x from %x", rebuilt, p.Data)
			}
		}
	})
}
