package pppoe

import (
	"bytes"
	"testing"
)

func buildPADO(hostUniq []byte) []byte {
	b, off := AppendHeader(nil, CodePADO, 0)
	b = AppendTag(b, TagACName, []byte("bng-1"))
	b = AppendTag(b, TagServiceName, []byte("other"))
	b = AppendTag(b, TagServiceName, []byte("internet"))
	b = AppendTag(b, TagHostUniq, hostUniq)
	b = AppendTag(b, TagACCookie, []byte{1, 2, 3, 4})
	b = AppendTag(b, TagRelaySessionID, []byte{9})
	b = AppendTag(b, TagPPPMaxPayload, []byte{0x05, 0xdc})
	SetLength(b, off)
	return b
}

func TestDiscoveryRoundTrip(t *testing.T) {
	b := buildPADO([]byte("hu-1"))
	b = append(b, 0, 0, 0, 0) // Ethernet padding after the PPPoE length
	h, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Code != CodePADO || h.SessionID != 0 || len(h.Payload) != len(b)-HeaderLen-4 {
		t.Fatalf("header %+v", h)
	}
	var d Discovery
	if err := ParseDiscovery(h.Payload, &d); err != nil {
		t.Fatal(err)
	}
	if string(d.ACName) != "bng-1" || !bytes.Equal(d.HostUniq, []byte("hu-1")) || !d.HasACCookie ||
		!d.HasRelay || d.MaxPayload != 1500 || d.NServiceNames != 2 || d.ErrorTag != 0 {
		t.Fatalf("decoded %+v", d)
	}
	if !d.OffersService("internet") || !d.OffersService("") || d.OffersService("iptv") {
		t.Fatal("service matching")
	}
}

func TestEndOfListStopsTagParsing(t *testing.T) {
	b, off := AppendHeader(nil, CodePADS, 0x1234)
	b = AppendTag(b, TagHostUniq, []byte{1})
	b = AppendTag(b, TagEndOfList, nil)
	b = AppendTag(b, TagGenericError, []byte("ignored"))
	SetLength(b, off)
	h, _ := Parse(b)
	var d Discovery
	if err := ParseDiscovery(h.Payload, &d); err != nil || d.ErrorTag != 0 || !d.HasHostUniq {
		t.Fatalf("%v %+v", err, d)
	}
}

func TestErrorTags(t *testing.T) {
	b, off := AppendHeader(nil, CodePADS, 0)
	b = AppendTag(b, TagServiceNameError, []byte("no such service"))
	b = AppendTag(b, TagGenericError, nil)
	SetLength(b, off)
	h, _ := Parse(b)
	var d Discovery
	if err := ParseDiscovery(h.Payload, &d); err != nil {
		t.Fatal(err)
	}
	if d.ErrorTag != TagServiceNameError || string(d.ErrorText) != "no such service" {
		t.Fatalf("%+v", d)
	}
}

func TestMalformed(t *testing.T) {
	good := buildPADO([]byte("x"))
	cases := map[string][]byte{
		"short":   good[:5],
		"version": append([]byte{0x21}, good[1:]...),
		"length":  good[:len(good)-1],
		"tag-length": func() []byte {
			b, o := AppendHeader(nil, CodePADO, 0)
			b = append(b, 0x01, 0x02, 0x00, 0x09, 'a')
			SetLength(b, o)
			return b
		}(),
		"tag-header": func() []byte {
			b, o := AppendHeader(nil, CodePADO, 0)
			b = append(b, 0x01, 0x02, 0x00)
			SetLength(b, o)
			return b
		}(),
		"max-payload-size": func() []byte {
			b, o := AppendHeader(nil, CodePADO, 0)
			b = AppendTag(b, TagPPPMaxPayload, []byte{5})
			SetLength(b, o)
			return b
		}(),
	}
	for name, b := range cases {
		h, err := Parse(b)
		if err == nil {
			var d Discovery
			err = ParseDiscovery(h.Payload, &d)
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzDiscovery: the decoder never panics, and whatever it accepts re-encodes
// to tags it decodes the same way.
func FuzzDiscovery(f *testing.F) {
	f.Add(buildPADO([]byte("seed")))
	f.Add([]byte{0x11, 0x09, 0, 0, 0, 0})
	f.Add([]byte{0x11, 0x65, 0x12, 0x34, 0, 4, 0x02, 0x03, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b)
		if err != nil {
			return
		}
		var d Discovery
		if ParseDiscovery(h.Payload, &d) != nil {
			return
		}
		out, off := AppendHeader(nil, h.Code, h.SessionID)
		if d.HasHostUniq {
			out = AppendTag(out, TagHostUniq, d.HostUniq)
		}
		if d.HasACCookie {
			out = AppendTag(out, TagACCookie, d.ACCookie)
		}
		SetLength(out, off)
		h2, err := Parse(out)
		if err != nil {
			t.Fatal(err)
		}
		var d2 Discovery
		if err := ParseDiscovery(h2.Payload, &d2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(d.HostUniq, d2.HostUniq) || !bytes.Equal(d.ACCookie, d2.ACCookie) || h2.Code != h.Code {
			t.Fatal("re-encoding changed the tags")
		}
	})
}
