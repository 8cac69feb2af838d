package dhcpv6

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

var mac = [6]byte{2, 0, 0, 0, 0, 1}

// server answers like a delegating router: it echoes the client id and
// IA_PD's IAID and delegates pfx.
func server(t *testing.T, msg []byte, typ uint8, pfx netip.Prefix, status *Status) []byte {
	t.Helper()
	m, err := Parse(msg)
	if err != nil {
		t.Fatal(err)
	}
	cid, _ := FindOption(m.Options, OptClientID)
	iaData, ok := FindOption(m.Options, OptIAPD)
	if !ok {
		t.Fatal("no IA_PD in client message")
	}
	ia, err := ParseIAPD(iaData)
	if err != nil {
		t.Fatal(err)
	}
	b := AppendHeader(nil, typ, m.TxID)
	b = AppendOption(b, OptServerID, []byte{0, 3, 0, 1, 0xaa, 0, 0, 0, 0, 1})
	b = AppendOption(b, OptClientID, cid)
	reply := IAPD{IAID: ia.IAID, T1: 1800, T2: 2880}
	if status != nil {
		reply.Status = *status
	} else {
		reply.Prefixes = []IAPrefix{{Preferred: 3600, Valid: 7200, Prefix: pfx}}
	}
	b = AppendIAPD(b, reply)
	return AppendOption(b, OptDNSServers, netip.MustParseAddr("2001:db8::53").AsSlice())
}

func TestPrefixDelegationExchange(t *testing.T) {
	pfx := netip.MustParsePrefix("2001:db8:100::/56")
	c := NewClient(mac, 7)
	c.Start(0x123456, 0)
	sol, rt := c.Message(nil, 0, 1)
	if rt != time.Second {
		t.Fatalf("first timeout %v", rt)
	}
	m, _ := Parse(sol)
	if m.Type != Solicit || m.TxID != 0x123456 {
		t.Fatalf("%+v", m)
	}
	if _, ok := FindOption(m.Options, OptServerID); ok {
		t.Fatal("Solicit carries a server id")
	}
	// Retransmission doubles the timeout and keeps the transaction.
	if _, rt2 := c.Message(nil, time.Second, 1); rt2 != 2*time.Second {
		t.Fatalf("second timeout %v", rt2)
	}
	if c.Input(server(t, sol, Reply, pfx, nil), time.Second) != Ignored {
		t.Fatal("Reply to a Solicit without Rapid Commit accepted")
	}
	if c.Input(server(t, sol, Advertise, pfx, nil), time.Second) != SendRequest {
		t.Fatal("Advertise refused")
	}
	req, _ := c.Message(nil, 2*time.Second, 1)
	m, _ = Parse(req)
	sid, ok := FindOption(m.Options, OptServerID)
	iaData, _ := FindOption(m.Options, OptIAPD)
	ia, _ := ParseIAPD(iaData)
	if m.Type != Request || !ok || !bytes.Equal(sid[4:], []byte{0xaa, 0, 0, 0, 0, 1}) || len(ia.Prefixes) != 1 || ia.Prefixes[0].Prefix != pfx {
		t.Fatalf("Request %+v ia %+v", m, ia)
	}
	if et, _ := FindOption(m.Options, OptElapsedTime); !bytes.Equal(et, []byte{0, 200}) {
		t.Fatalf("elapsed time %x", et)
	}
	if c.Input(server(t, sol, Reply, pfx, nil), 2*time.Second) != Ignored {
		t.Fatal("Reply with the Solicit's transaction id accepted")
	}
	if c.Input(server(t, req, Reply, pfx, nil), 2*time.Second) != Bound || c.Delegated != pfx || len(c.DNS) != 1 {
		t.Fatalf("not bound: %v %v", c.Delegated, c.DNS)
	}
}

func TestNoPrefixAvailable(t *testing.T) {
	c := NewClient(mac, 1)
	c.Start(1, 0)
	sol, _ := c.Message(nil, 0, 2)
	st := Status{Code: StatusNoPrefixAvail, Message: "pool empty", Present: true}
	if c.Input(server(t, sol, Advertise, netip.Prefix{}, &st), 0) != Ignored {
		t.Fatal("Advertise without prefix accepted")
	}
	if c.Status.Code != StatusNoPrefixAvail || c.Status.Message != "pool empty" {
		t.Fatalf("status %+v", c.Status)
	}
}

func TestRequestsExhaustedGoBackToSolicit(t *testing.T) {
	c := NewClient(mac, 1)
	c.Start(1, 0)
	sol, _ := c.Message(nil, 0, 2)
	c.Input(server(t, sol, Advertise, netip.MustParsePrefix("2001:db8::/48"), nil), 0)
	for i := 0; i < ReqMRC; i++ {
		c.Message(nil, 0, 99)
	}
	b, rt := c.Message(nil, 0, 99)
	m, _ := Parse(b)
	if m.Type != Solicit || m.TxID != 99 || rt != SolIRT {
		t.Fatalf("after %d Requests: %+v rt %v", ReqMRC, m, rt)
	}
}

func TestMalformed(t *testing.T) {
	for name, b := range map[string][]byte{
		"short":        {1, 2, 3},
		"option-short": {2, 0, 0, 1, 0, 1, 0},
		"option-long":  {2, 0, 0, 1, 0, 1, 0, 9, 1},
	} {
		if _, err := Parse(b); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	for name, d := range map[string][]byte{
		"short":        {0, 0, 0, 1},
		"prefix-short": AppendOption(make([]byte, 12), OptIAPrefix, make([]byte, 10)),
		"prefix-bits":  AppendOption(make([]byte, 12), OptIAPrefix, append(make([]byte, 8), append([]byte{200}, make([]byte, 16)...)...)),
	} {
		if _, err := ParseIAPD(d); err == nil {
			t.Errorf("IA_PD %s accepted", name)
		}
	}
}

// FuzzDHCPv6: decoding never panics; an accepted IA_PD re-encodes to one
// that decodes the same; the client survives any server message.
func FuzzDHCPv6(f *testing.F) {
	c := NewClient(mac, 7)
	c.Start(5, 0)
	sol, _ := c.Message(nil, 0, 6)
	f.Add(sol)
	f.Add(AppendIAPD(AppendHeader(nil, Reply, 5), IAPD{IAID: 7, Prefixes: []IAPrefix{{1, 2, netip.MustParsePrefix("2001:db8::/56")}}}))
	f.Add([]byte{2, 0, 0, 5, 0, 25, 0, 12, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		cl := NewClient(mac, 7)
		cl.Start(5, 0)
		cl.Message(nil, 0, 6)
		cl.Input(b, 0)
		m, err := Parse(b)
		if err != nil {
			return
		}
		ForEachOption(m.Options, func(code uint16, d []byte) {
			if code != OptIAPD {
				return
			}
			ia, err := ParseIAPD(d)
			if err != nil {
				return
			}
			re := AppendIAPD(nil, ia)
			ia2, err := ParseIAPD(re[4:])
			if err != nil || ia2.IAID != ia.IAID || len(ia2.Prefixes) != len(ia.Prefixes) {
				t.Fatalf("IA_PD re-encoding: %+v vs %+v (%v)", ia, ia2, err)
			}
			for i := range ia.Prefixes {
				if ia.Prefixes[i] != ia2.Prefixes[i] {
					t.Fatalf("prefix %d changed", i)
				}
			}
		})
	})
}
