package lcp

import (
	"encoding/binary"
	"math/rand"
	"testing"

	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/ppp"
	"p4bng/emulator/internal/timer"
)

type events struct {
	up, loop, answered int
	rejected           []ppp.Protocol
	replies            []uint32
}

func (e *events) Up(*ppp.FSM)                     { e.up++ }
func (e *events) Down(*ppp.FSM)                   {}
func (e *events) Started(*ppp.FSM)                {}
func (e *events) Finished(*ppp.FSM)               {}
func (e *events) EchoReply(id uint8, m uint32)    { e.replies = append(e.replies, m) }
func (e *events) EchoRequestAnswered()            { e.answered++ }
func (e *events) ProtocolRejected(p ppp.Protocol) { e.rejected = append(e.rejected, p) }
func (e *events) LoopbackDetected()               { e.loop++ }

type out struct{ pkts []ppp.Packet }

func (o *out) SendControl(p ppp.Protocol, b []byte) {
	pk, _ := ppp.ParsePacket(append([]byte(nil), b...))
	o.pkts = append(o.pkts, pk)
}
func (o *out) last(c ppp.Code) ppp.Packet {
	for i := len(o.pkts) - 1; i >= 0; i-- {
		if o.pkts[i].Code == c {
			return o.pkts[i]
		}
	}
	return ppp.Packet{}
}

func setup(allowed ...auth.Method) (*Policy, *ppp.FSM, *events, *out) {
	cfg := &Config{MRU: PPPoEMRU, MaxPeerMRU: PPPoEMRU, Allowed: allowed}
	ev := &events{}
	o := &out{}
	p := New(cfg, ev, rand.New(rand.NewSource(1)))
	fc := ppp.DefaultConfig()
	f := ppp.NewFSM(ppp.ProtoLCP, &fc, p, o, timer.New(), ppp.NewScratch(), 0)
	f.Open()
	f.Up()
	return p, f, ev, o
}

func TestOurRequestIsMRUAndMagic(t *testing.T) {
	p, _, _, o := setup(auth.PAP)
	req := o.last(ppp.ConfigureRequest)
	want := ppp.AppendOptionUint32(ppp.AppendOptionUint16(nil, OptMRU, 1492), OptMagic, p.Magic())
	if string(req.Data) != string(want) || p.Magic() == 0 {
		t.Fatalf("request %x", req.Data)
	}
}

func TestPeerOptionsPolicy(t *testing.T) {
	p, f, _, o := setup(auth.CHAPMD5, auth.PAP)
	rcr := func(opts []byte) ppp.Packet {
		f.Input(ppp.AppendPacket(nil, ppp.ConfigureRequest, 1, opts))
		return o.pkts[len(o.pkts)-1]
	}
	// Acceptable: MRU 1492, a magic, PAP (allowed though not preferred).
	good := ppp.AppendOptionUint16(nil, OptMRU, 1480)
	good = ppp.AppendOptionUint32(good, OptMagic, 0x01020304)
	good = ppp.AppendOption(good, OptAuthProtocol, auth.PAP.OptionData())
	if r := rcr(good); r.Code != ppp.ConfigureAck || string(r.Data) != string(good) {
		t.Fatalf("good request -> %v %x", r.Code, r.Data)
	}
	if p.PeerMRU != 1480 || p.PeerMagic != 0x01020304 || p.Auth != auth.PAP {
		t.Fatalf("peer values %d %x %v", p.PeerMRU, p.PeerMagic, p.Auth)
	}
	// MRU above the PPPoE limit: Nak with 1492.
	if r := rcr(ppp.AppendOptionUint16(nil, OptMRU, 1500)); r.Code != ppp.ConfigureNak || binary.BigEndian.Uint16(r.Data[2:]) != 1492 {
		t.Fatalf("MRU 1500 -> %v %x", r.Code, r.Data)
	}
	// An unsupported CHAP algorithm: Nak with our preferred method.
	if r := rcr(ppp.AppendOption(nil, OptAuthProtocol, []byte{0xc2, 0x23, 0x80})); r.Code != ppp.ConfigureNak ||
		string(r.Data) != string(ppp.AppendOption(nil, OptAuthProtocol, auth.CHAPMD5.OptionData())) {
		t.Fatalf("MS-CHAPv1 -> %v %x", r.Code, r.Data)
	}
	// ACCM and PFC are not for PPPoE; an unknown option is rejected too.
	bad := ppp.AppendOptionUint32(nil, OptACCM, 0)
	bad = ppp.AppendOption(bad, OptPFC, nil)
	bad = ppp.AppendOption(bad, 77, []byte{1})
	if r := rcr(append(append([]byte(nil), good...), bad...)); r.Code != ppp.ConfigureReject || string(r.Data) != string(bad) {
		t.Fatalf("ACCM/PFC -> %v %x", r.Code, r.Data)
	}
	// Magic zero is always Naked.
	if r := rcr(ppp.AppendOptionUint32(nil, OptMagic, 0)); r.Code != ppp.ConfigureNak {
		t.Fatalf("magic 0 -> %v", r.Code)
	}
}

func TestLoopbackDetection(t *testing.T) {
	p, f, ev, o := setup(auth.PAP)
	for i := 0; i < LoopbackLimit; i++ {
		m := p.Magic()
		f.Input(ppp.AppendPacket(nil, ppp.ConfigureRequest, uint8(i), ppp.AppendOptionUint32(nil, OptMagic, m)))
		r := o.pkts[len(o.pkts)-1]
		if r.Code != ppp.ConfigureNak || binary.BigEndian.Uint32(r.Data[2:]) == m || p.Magic() == m {
			t.Fatalf("own magic echoed: reply %v %x, our new magic %x", r.Code, r.Data, p.Magic())
		}
	}
	if ev.loop != 1 {
		t.Fatalf("loopback reported %d times", ev.loop)
	}
}

func TestEchoAndProtocolReject(t *testing.T) {
	p, f, ev, o := setup(auth.PAP)
	req := o.last(ppp.ConfigureRequest)
	f.Input(ppp.AppendPacket(nil, ppp.ConfigureAck, req.ID, req.Data))
	f.Input(ppp.AppendPacket(nil, ppp.ConfigureRequest, 1, ppp.AppendOptionUint32(nil, OptMagic, 0x55)))
	if f.State() != ppp.Opened || ev.up != 1 {
		t.Fatalf("state %v", f.State())
	}
	f.Input(ppp.AppendPacket(nil, ppp.EchoRequest, 9, []byte{0, 0, 0, 0x55, 'h', 'i'}))
	r := o.last(ppp.EchoReply)
	if r.ID != 9 || binary.BigEndian.Uint32(r.Data) != p.Magic() || string(r.Data[4:]) != "hi" || ev.answered != 1 {
		t.Fatalf("echo reply %+v", r)
	}
	id := p.SendEchoRequest(f)
	if q := o.last(ppp.EchoRequest); q.ID != id || binary.BigEndian.Uint32(q.Data) != p.Magic() {
		t.Fatalf("echo request %+v", q)
	}
	f.Input(ppp.AppendPacket(nil, ppp.EchoReply, id, []byte{0, 0, 0, 0x55}))
	if len(ev.replies) != 1 || ev.replies[0] != 0x55 {
		t.Fatalf("replies %v", ev.replies)
	}
	// Our own magic in an Echo-Request means a looped line.
	var m [4]byte
	binary.BigEndian.PutUint32(m[:], p.Magic())
	f.Input(ppp.AppendPacket(nil, ppp.EchoRequest, 10, m[:]))
	if ev.loop != 1 {
		t.Fatal("looped echo not detected")
	}
	f.Input(ppp.AppendPacket(nil, ppp.ProtocolReject, 11, []byte{0x80, 0x57, 1, 1, 0, 4}))
	if len(ev.rejected) != 1 || ev.rejected[0] != ppp.ProtoIPv6CP {
		t.Fatalf("protocol reject %v", ev.rejected)
	}
	p.SendProtocolReject(f, []byte{0x80, 0xfd, 1, 2, 0, 4})
	if q := o.last(ppp.ProtocolReject); string(q.Data) != string([]byte{0x80, 0xfd, 1, 2, 0, 4}) {
		t.Fatalf("protocol reject sent %x", q.Data)
	}
}

func TestNakAndRejectOfOurRequest(t *testing.T) {
	p, f, _, o := setup(auth.PAP)
	req := o.last(ppp.ConfigureRequest)
	old := p.Magic()
	nak := ppp.AppendOptionUint16(nil, OptMRU, 1400)
	nak = ppp.AppendOptionUint32(nak, OptMagic, 1)
	f.Input(ppp.AppendPacket(nil, ppp.ConfigureNak, req.ID, nak))
	req = o.last(ppp.ConfigureRequest)
	if p.MRU() != 1400 || p.Magic() == old || binary.BigEndian.Uint16(req.Data[2:]) != 1400 {
		t.Fatalf("after Nak: MRU %d magic %x req %x", p.MRU(), p.Magic(), req.Data)
	}
	f.Input(ppp.AppendPacket(nil, ppp.ConfigureReject, req.ID, req.Data))
	if req = o.last(ppp.ConfigureRequest); len(req.Data) != 0 || p.Magic() != 0 {
		t.Fatalf("after Reject: %x", req.Data)
	}
}

// FuzzLCP feeds arbitrary packets to an LCP automaton in every state: it
// must never panic, and whatever it sends must be well-formed.
func FuzzLCP(f *testing.F) {
	f.Add(uint8(9), ppp.AppendPacket(nil, ppp.ConfigureRequest, 1, ppp.AppendOptionUint16(nil, OptMRU, 1492)))
	f.Add(uint8(6), ppp.AppendPacket(nil, ppp.ConfigureNak, 1, ppp.AppendOptionUint32(nil, OptMagic, 0)))
	f.Add(uint8(9), ppp.AppendPacket(nil, ppp.EchoRequest, 1, []byte{1, 2, 3, 4}))
	f.Add(uint8(9), ppp.AppendPacket(nil, ppp.CodeReject, 1, []byte{1}))
	f.Fuzz(func(t *testing.T, state uint8, pkt []byte) {
		_, fsm, _, o := setup(auth.PAP, auth.CHAPMD5)
		// Walk to Opened when asked, else stay in Req-Sent.
		if state%2 == 1 {
			req := o.last(ppp.ConfigureRequest)
			fsm.Input(ppp.AppendPacket(nil, ppp.ConfigureAck, req.ID, req.Data))
			fsm.Input(ppp.AppendPacket(nil, ppp.ConfigureRequest, 1, nil))
		}
		fsm.Input(pkt)
		for _, p := range o.pkts {
			if p.Code == ppp.ConfigureRequest || p.Code == ppp.ConfigureAck || p.Code == ppp.ConfigureNak || p.Code == ppp.ConfigureReject {
				if ppp.ValidateOptions(p.Data) != nil {
					t.Fatalf("sent malformed %v %x", p.Code, p.Data)
				}
			}
		}
	})
}
