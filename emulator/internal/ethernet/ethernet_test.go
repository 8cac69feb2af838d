package ethernet

import "testing"

func TestHeaderRoundTrip(t *testing.T) {
	dst := MAC{0, 1, 2, 3, 4, 5}
	src := MAC{2, 0, 0, 0, 0, 7}
	for _, tags := range []Tags{Untagged(), SingleTagged(100), DoubleTagged(TPID8021AD, 10, 4094), DoubleTagged(TPID8021Q, 1, 2)} {
		b := AppendHeader(nil, dst, src, tags, TypePPPoESession)
		b = append(b, 0x11, 0x00)
		var f Frame
		if err := Parse(b, &f); err != nil {
			t.Fatal(err)
		}
		if f.Dst != dst || f.Src != src || f.Tags != tags || f.Type != TypePPPoESession || len(f.Payload) != 2 {
			t.Fatalf("%v: decoded %+v", tags, f)
		}
	}
}

func TestParseRejectsShortAndTripleTagged(t *testing.T) {
	var f Frame
	if Parse(make([]byte, 13), &f) != ErrShort {
		t.Fatal("13-byte frame accepted")
	}
	b := AppendHeader(nil, MAC{}, MAC{}, SingleTagged(5), 0x8100)
	if Parse(b[:len(b)-1], &f) != ErrShort {
		t.Fatal("truncated tag accepted")
	}
	b = AppendHeader(nil, MAC{}, MAC{}, DoubleTagged(TPID8021AD, 1, 2), TPID8021Q)
	b = append(b, 0, 3, 0x88, 0x64)
	if Parse(b, &f) != ErrTooManyTags {
		t.Fatal("three tags accepted")
	}
}

func TestMACArithmeticAndText(t *testing.T) {
	m, err := ParseMAC("02:00:00:00:00:ff")
	if err != nil {
		t.Fatal(err)
	}
	if got := MACFromUint64(m.Uint64() + 1).String(); got != "02:00:00:00:01:00" {
		t.Fatalf("got %s", got)
	}
	for _, bad := range []string{"", "02:00:00:00:00", "02:00:00:00:00:100", "zz:00:00:00:00:00"} {
		if _, err := ParseMAC(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}
