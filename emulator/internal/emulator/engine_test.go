package emulator

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"p4bng/emulator/internal/auth"
	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/fakeac"
	"p4bng/emulator/internal/ipv4"
	"p4bng/emulator/internal/lcp"
	"p4bng/emulator/internal/ppp"
	"p4bng/emulator/internal/pppoe"
	"p4bng/emulator/internal/session"
	"p4bng/emulator/internal/traffic"
)

// bench connects an Engine and a fake AC through an in-order queue on the
// engine's virtual clock: deterministic, and a 60 s scenario runs in
// milliseconds.
type bench struct {
	t      testing.TB
	e      *Engine
	ac     *fakeac.AC
	cfg    *Config
	acCfg  fakeac.Config
	queue  []event
	loss   func(toAC bool, frame []byte) bool
	toAC   int
	toEmu  int
	frames []string // a log of discovery codes seen by the AC, for assertions
}

type event struct {
	at    time.Duration
	toAC  bool
	frame []byte
}

// latency is the one-way delay of the bench's wire.
const latency = time.Millisecond

func (b *bench) Send(frame []byte) error {
	b.queue = append(b.queue, event{b.e.Now() + latency, true, append([]byte(nil), frame...)})
	return nil
}

func baseConfig(n int) *Config {
	return &Config{
		Sessions: n, MACBase: ethernet.MAC{2, 0, 0, 0, 0, 0}, SessionsPerLine: 1,
		Username: "user{i}@lab.test", Password: "secret{i}", MaxOutstanding: 1000,
		Session: session.Config{
			ServiceName: "internet", DiscoveryRetries: 5, DiscoveryTimeout: time.Second,
			PPP: ppp.DefaultConfig(), WantDNS: true, SetupTimeout: 60 * time.Second,
			LCP:            lcp.Config{MRU: 1492, MaxPeerMRU: 1492, Allowed: []auth.Method{auth.PAP, auth.CHAPMD5, auth.MSCHAPv2}},
			EchoFailures:   3,
			ReconnectDelay: time.Second,
			PingInterval:   time.Second,
			PingSize:       56,
		},
		StreamSize: 64, Seed: 1, TeardownWait: time.Second, StatusInterval: time.Second,
	}
}

func acConfig() fakeac.Config {
	return fakeac.Config{
		MAC: ethernet.MAC{0, 0xac, 0, 0, 0, 1}, Name: "fake-bng", Services: []string{"internet"},
		Auth: auth.PAP,
		Password: func(u string) (string, bool) {
			var i int
			if _, err := fmt.Sscanf(u, "user%d@lab.test", &i); err != nil {
				return "", false
			}
			return fmt.Sprintf("secret%d", i), true
		},
		PeerAddr:   netip.MustParseAddr("100.64.0.1"),
		PoolBase:   netip.MustParseAddr("100.64.0.0"),
		DNS:        [2]netip.Addr{netip.MustParseAddr("192.0.2.53"), netip.MustParseAddr("192.0.2.54")},
		PingTarget: netip.MustParseAddr("198.51.100.1"),
		AnswerEcho: true,
		RAPrefix: func(sid uint16) netip.Prefix {
			return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, byte(sid >> 8), byte(sid)}), 64)
		},
		PDPrefix: func(sid uint16) netip.Prefix {
			return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0x80, 0, byte(sid >> 8), 0}), 56)
		},
	}
}

func newBench(t testing.TB, cfg *Config, ac fakeac.Config) *bench {
	b := &bench{t: t, cfg: cfg, acCfg: ac}
	b.e = New(cfg, b)
	b.ac = fakeac.New(ac, b.e.Sched(), func(f []byte) {
		b.queue = append(b.queue, event{b.e.Now() + latency, false, append([]byte(nil), f...)})
	})
	return b
}

// run delivers frames in order and advances the clock when the wire is
// idle, until stop() or the engine finishes or limit is reached.
func (b *bench) run(limit time.Duration, stop func() bool) {
	for steps := 0; steps < 5_000_000; steps++ {
		if b.e.Done() {
			// What the emulator sent last (PADTs) still reaches the AC.
			for _, ev := range b.queue {
				if ev.toAC {
					b.ac.Handle(ev.frame)
				}
			}
			b.queue = nil
			return
		}
		if stop != nil && stop() {
			return
		}
		if len(b.queue) > 0 && b.queue[0].at <= b.e.Now() {
			ev := b.queue[0]
			b.queue = b.queue[1:]
			if b.loss != nil && b.loss(ev.toAC, ev.frame) {
				continue
			}
			if ev.toAC {
				b.toAC++
				b.ac.Handle(ev.frame)
			} else {
				b.toEmu++
				b.e.HandleFrame(ev.frame)
			}
			continue
		}
		next, ok := b.e.Next()
		if len(b.queue) > 0 && (!ok || b.queue[0].at < next) {
			next, ok = b.queue[0].at, true
		}
		if !ok || next > limit {
			b.e.Advance(limit)
			return
		}
		b.e.Advance(next)
	}
	b.t.Fatal("bench did not settle")
}

func (b *bench) start() *bench {
	b.e.Start()
	return b
}

func (b *bench) finish(limit time.Duration) {
	b.run(limit, nil)
	if !b.e.Done() {
		b.t.Fatalf("run not finished by %v (phase %s)", limit, b.e.Phase())
	}
}

func (b *bench) checkACErrors() {
	if len(b.ac.Errors) > 0 {
		b.t.Fatalf("the fake AC saw protocol errors: %v", b.ac.Errors)
	}
}

func TestPAPSessionsComeUpAndTearDown(t *testing.T) {
	cfg := baseConfig(3)
	b := newBench(t, cfg, acConfig()).start()
	b.finish(30 * time.Second)
	r := b.e.Report(true)
	if r.Established != 3 || r.Failed != 0 || b.e.ExitCode() != 0 {
		t.Fatalf("established %d failed %d reasons %v exit %d", r.Established, r.Failed, nonZero(r.FailedReasons), b.e.ExitCode())
	}
	b.checkACErrors()
	for i, s := range r.Sessions {
		acs := b.ac.Sessions[i]
		if s.IPv4 != acs.Address().String() || strings.Join(s.DNS, ",") != "192.0.2.53,192.0.2.54" || s.Auth != "pap" {
			t.Fatalf("session %d: %+v", i+1, s)
		}
		if s.Username != fmt.Sprintf("user%d@lab.test", i+1) || s.MAC != fmt.Sprintf("02:00:00:00:00:%02x", i+1) {
			t.Fatalf("identity %+v", s)
		}
		if s.PeerMagic != 0xac000000|uint32(acs.SID) || s.Magic == 0 || s.PPPoESessionID != acs.SID {
			t.Fatalf("magic/sid %+v", s)
		}
		// Teardown: LCP Terminate-Request answered, then our PADT.
		if !acs.PADTReceived {
			t.Fatalf("session %d: no PADT at teardown", i+1)
		}
	}
	if b.ac.PADIs != 3 || b.ac.PADRs != 3 {
		t.Fatalf("PADIs %d PADRs %d", b.ac.PADIs, b.ac.PADRs)
	}
	if r.SetupRateCPS <= 0 || r.SetupTimeMS.Max <= 0 || len(r.EstablishedTimeline) == 0 {
		t.Fatalf("setup figures %+v %v", r.SetupTimeMS, r.SetupRateCPS)
	}
	if r.Control.Tx == 0 || r.Control.Rx == 0 || len(r.ProtocolErrors) != 0 {
		t.Fatalf("control %+v errors %v", r.Control, r.ProtocolErrors)
	}
}

func nonZero(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func TestCHAPOnQinQLinesWithWrongPasswords(t *testing.T) {
	cfg := baseConfig(8)
	cfg.Lines = BuildLines(100, 101, 10, 11, true, true, ethernet.TPID8021AD)
	cfg.SessionsPerLine = 2
	cfg.WrongPasswordEvery = 4
	ac := acConfig()
	ac.Auth = auth.CHAPMD5
	b := newBench(t, cfg, ac).start()
	b.finish(60 * time.Second)
	r := b.e.Report(true)
	if r.Established != 6 || r.ExpectedRejects != 2 || r.Failed != 0 || r.UnexpectedAccepts != 0 || b.e.ExitCode() != 0 {
		t.Fatalf("established %d rejects %d failed %d %v", r.Established, r.ExpectedRejects, r.Failed, nonZero(r.FailedReasons))
	}
	b.checkACErrors()
	// Session i is on line (i-1)/2; lines enumerate c-VLAN fastest.
	wantLines := [][2]uint16{{100, 10}, {100, 10}, {100, 11}, {100, 11}, {101, 10}, {101, 10}, {101, 11}, {101, 11}}
	for i, s := range r.Sessions {
		if s.Line != wantLines[i] {
			t.Fatalf("session %d on %v, want %v", i+1, s.Line, wantLines[i])
		}
		acs := b.ac.Session(cfg.MACOf(i + 1))
		if acs.Line != cfg.LineOf(i+1) || acs.Line.Tag[0].TPID != ethernet.TPID8021AD {
			t.Fatalf("AC saw session %d on %v", i+1, acs.Line)
		}
		if (i+1)%4 == 0 {
			if s.Failure != session.ReasonAuthRejected || s.IPv4 != "" {
				t.Fatalf("wrong-password session %d: %+v", i+1, s)
			}
		} else if s.Auth != "chap" || s.IPv4 == "" {
			t.Fatalf("session %d: %+v", i+1, s)
		}
	}
}

func TestMSCHAPv2WithIPv6AndPrefixDelegation(t *testing.T) {
	cfg := baseConfig(2)
	cfg.Session.IPv6, cfg.Session.DHCPv6PD = true, true
	ac := acConfig()
	ac.Auth = auth.MSCHAPv2
	b := newBench(t, cfg, ac).start()
	b.finish(60 * time.Second)
	r := b.e.Report(true)
	if r.Established != 2 || b.e.ExitCode() != 0 {
		t.Fatalf("established %d failed %v", r.Established, nonZero(r.FailedReasons))
	}
	b.checkACErrors()
	for i, s := range r.Sessions {
		sid := b.ac.Sessions[i].SID
		if s.Auth != "mschapv2" || s.IPv6Prefix != ac.RAPrefix(sid).String() || s.DelegatedPrefix != ac.PDPrefix(sid).String() {
			t.Fatalf("session %d: %+v", i+1, s)
		}
		if !strings.HasPrefix(s.IPv6Address, "2001:db8:1:") {
			t.Fatalf("SLAAC address %q", s.IPv6Address)
		}
	}
}

// A BNG that proposes an authentication method we do not allow gets a Nak
// with the one we prefer.
func TestAuthNakToAllowedMethod(t *testing.T) {
	cfg := baseConfig(1)
	cfg.Session.LCP.Allowed = []auth.Method{auth.CHAPMD5}
	b := newBench(t, cfg, acConfig()).start() // the AC proposes PAP
	b.finish(30 * time.Second)
	r := b.e.Report(true)
	if r.Established != 1 || r.Sessions[0].Auth != "chap" {
		t.Fatalf("%+v", r.Sessions[0])
	}
}

func TestKeepaliveFailureIsAFlapAndReconnects(t *testing.T) {
	cfg := baseConfig(2)
	cfg.Session.EchoInterval = 5 * time.Second
	cfg.Session.Reconnect = true
	cfg.Hold = true
	b := newBench(t, cfg, acConfig()).start()
	b.run(60*time.Second, nil)
	r := b.e.Report(false)
	if r.Established != 2 || r.Echo.RequestsSent < 20 || r.Echo.RepliesReceived != r.Echo.RequestsSent {
		t.Fatalf("echo %+v established %d", r.Echo, r.Established)
	}
	// The BNG stops answering: after 3 missed replies both sessions are
	// down (flaps), then reconnect.
	b.ac.Sessions[0].Terminated = true // silent from now on
	b.ac.Sessions[1].Terminated = true
	b.run(b.e.Now()+25*time.Second, func() bool { return b.e.Report(false).Flaps == 2 })
	r = b.e.Report(false)
	if r.Flaps != 2 || r.FlapReasons[session.ReasonEchoTimeout] != 2 {
		t.Fatalf("flaps %d %v", r.Flaps, r.FlapReasons)
	}
	b.run(b.e.Now()+30*time.Second, nil)
	r = b.e.Report(false)
	if r.Established != 2 || r.Reconnects != 2 {
		t.Fatalf("after reconnect: established %d reconnects %d", r.Established, r.Reconnects)
	}
	b.e.Stop()
	b.finish(b.e.Now() + 10*time.Second)
	if b.e.ExitCode() != 0 {
		t.Fatal("reconnected run should exit 0")
	}
}

func TestPADTFromTheACIsAFlap(t *testing.T) {
	cfg := baseConfig(2)
	cfg.Hold = true
	b := newBench(t, cfg, acConfig()).start()
	b.run(30*time.Second, func() bool { return b.e.Phase() == PhaseRunning })
	b.ac.SendPADT(b.ac.Sessions[0])
	b.ac.Terminate(b.ac.Sessions[1]) // LCP Terminate-Request instead
	b.run(b.e.Now()+10*time.Second, nil)
	r := b.e.Report(true)
	if r.Flaps != 2 || r.FlapReasons[session.ReasonPADT] != 1 || r.FlapReasons[session.ReasonLCPTerminated] != 1 || r.Established != 0 {
		t.Fatalf("flaps %v established %d", r.FlapReasons, r.Established)
	}
	b.e.Stop()
	b.finish(b.e.Now() + 5*time.Second)
	if b.e.ExitCode() != 1 {
		t.Fatal("flapped run without --reconnect must exit 1")
	}
}

// Loss, duplication and reordering of control frames (our impairments plus
// loss on the wire towards the AC): every session still converges.
func TestLossyLineStillConverges(t *testing.T) {
	cfg := baseConfig(30)
	cfg.Impair.DropRx, cfg.Impair.DupTx, cfg.Impair.ReorderTx = 15, 15, 10
	cfg.Session.SetupTimeout = 120 * time.Second
	cfg.Session.DiscoveryRetries = 8
	ac := acConfig()
	ac.Auth = auth.CHAPMD5
	b := newBench(t, cfg, ac)
	n := 0
	b.loss = func(toAC bool, f []byte) bool { n++; return toAC && n%11 == 0 }
	b.start()
	b.finish(300 * time.Second)
	r := b.e.Report(false)
	if r.Established != 30 || b.e.ExitCode() != 0 {
		t.Fatalf("established %d/30 failed %v errors %v flaps %v phase %s ever %d", r.Established, nonZero(r.FailedReasons), r.ProtocolErrors, r.FlapReasons, r.Phase, r.EverEstablished)
	}
	if r.Control.DroppedRx == 0 || r.Control.DupTx == 0 || r.Control.ReorderedTx == 0 {
		t.Fatalf("impairments not exercised: %+v", r.Control)
	}
}

// PADRs that go unanswered send the CPE back to PADI (RFC 2516 section 7)
// with a new Host-Uniq, and the second exchange brings the session up.
func TestUnansweredPADRsStartOverWithPADI(t *testing.T) {
	cfg := baseConfig(1)
	cfg.Session.DiscoveryRetries = 3
	ac := acConfig()
	ac.IgnorePADRs = 3
	b := newBench(t, cfg, ac).start()
	b.finish(120 * time.Second)
	r := b.e.Report(true)
	if r.Established != 1 || r.Failed != 0 || b.ac.PADIs != 2 || b.ac.PADRs != 4 {
		t.Fatalf("established %d failed %v PADIs %d PADRs %d", r.Established, nonZero(r.FailedReasons), b.ac.PADIs, b.ac.PADRs)
	}
	if r.Events["discovery_restarts"] != 1 {
		t.Fatalf("events %v", r.Events)
	}
	b.checkACErrors()
}

// Only the PADIs' own budget ends discovery: an AC that never answers a
// PADR keeps the CPE cycling PADI, PADR until the setup timer fires.
func TestPADRsNeverAnsweredFailAtSetupTimeout(t *testing.T) {
	cfg := baseConfig(1)
	cfg.Session.SetupTimeout = 40 * time.Second
	ac := acConfig()
	ac.IgnorePADRs = 1000
	b := newBench(t, cfg, ac).start()
	b.finish(120 * time.Second)
	r := b.e.Report(true)
	if r.Failed != 1 || r.FailedReasons[session.ReasonDiscoveryTimeout] != 1 || b.ac.PADIs < 2 {
		t.Fatalf("failed %v PADIs %d PADRs %d", nonZero(r.FailedReasons), b.ac.PADIs, b.ac.PADRs)
	}
	if now := b.e.Now(); now < 40*time.Second || now > 42*time.Second {
		t.Fatalf("gave up at %v, not at the setup timeout", now)
	}
}

// --discovery-max-wait stops the doubling: waits of 1, 2, 2, 2, 2 s.
func TestDiscoveryMaxWaitCapsBackoff(t *testing.T) {
	cfg := baseConfig(1)
	cfg.Session.DiscoveryMaxWait = 2 * time.Second
	ac := acConfig()
	ac.IgnorePADIs = 1000
	b := newBench(t, cfg, ac).start()
	b.finish(120 * time.Second)
	r := b.e.Report(true)
	if r.FailedReasons[session.ReasonDiscoveryTimeout] != 1 || b.ac.PADIs != 5 {
		t.Fatalf("failed %v PADIs %d", nonZero(r.FailedReasons), b.ac.PADIs)
	}
	if now := b.e.Now(); now < 9*time.Second || now > 10*time.Second {
		t.Fatalf("gave up at %v", now)
	}
}

func TestDiscoveryTimeoutBackoff(t *testing.T) {
	cfg := baseConfig(1)
	ac := acConfig()
	ac.IgnorePADIs = 1000
	b := newBench(t, cfg, ac).start()
	b.finish(120 * time.Second)
	r := b.e.Report(true)
	if r.Failed != 1 || r.FailedReasons[session.ReasonDiscoveryTimeout] != 1 || b.ac.PADIs != 5 {
		t.Fatalf("failed %v PADIs %d", nonZero(r.FailedReasons), b.ac.PADIs)
	}
	// 1 + 2 + 4 + 8 + 16 s of back-off.
	if now := b.e.Now(); now < 31*time.Second || now > 33*time.Second {
		t.Fatalf("gave up at %v", now)
	}
	if b.e.ExitCode() != 1 {
		t.Fatal("exit code")
	}
}

func TestPADSErrorAndMissingHostUniq(t *testing.T) {
	cfg := baseConfig(1)
	ac := acConfig()
	ac.PADSError = pppoe.TagServiceNameError
	b := newBench(t, cfg, ac).start()
	b.finish(30 * time.Second)
	r := b.e.Report(true)
	if r.FailedReasons[session.ReasonPADSError] != 1 || !strings.Contains(r.Sessions[0].FailureDetail, "Service-Name-Error") {
		t.Fatalf("%v %+v", nonZero(r.FailedReasons), r.Sessions[0])
	}

	ac = acConfig()
	ac.NoHostUniq = true
	b = newBench(t, baseConfig(2), ac).start()
	b.finish(30 * time.Second)
	r = b.e.Report(false)
	if r.Established != 2 || r.ProtocolErrors["discovery_without_host_uniq"] == 0 {
		t.Fatalf("established %d errors %v", r.Established, r.ProtocolErrors)
	}
	// Every session is up: a pass, unless protocol errors fail the run.
	if b.e.ExitCode() != 0 {
		t.Fatal("exit code without --strict")
	}
	b.e.cfg.Strict = true
	if b.e.ExitCode() != 1 {
		t.Fatal("exit code with --strict")
	}
}

func TestPingAndStreams(t *testing.T) {
	cfg := baseConfig(4)
	cfg.Session.PingTarget = netip.MustParseAddr("198.51.100.1")
	cfg.StreamPPS = 400
	cfg.StreamTarget = netip.MustParseAddrPort("198.51.100.9:9000")
	cfg.Duration = 5 * time.Second
	b := newBench(t, cfg, acConfig()).start()
	b.run(30*time.Second, func() bool { return b.e.Phase() == PhaseRunning })
	// Downstream: the AC sends each session but the last a stream with one
	// gap and one late packet; the last gets nothing back (silent).
	for _, acs := range b.ac.Sessions[:len(b.ac.Sessions)-1] {
		for _, seq := range []uint64{0, 1, 2, 4, 3, 6} {
			p := traffic.AppendPayload(nil, uint32(acs.SID-0x100), seq, 0, 64)
			acs.SendIPv4(ipv4.AppendUDP(nil, netip.MustParseAddr("198.51.100.9"), acs.Address(), 1, 9000, 5000, p))
		}
	}
	b.finish(60 * time.Second)
	r := b.e.Report(false)
	if r.Ping.Sent < 12 || r.Ping.Received != r.Ping.Sent {
		t.Fatalf("ping %+v", r.Ping)
	}
	if r.StreamUp.Sent < 1900 || r.StreamUp.Sent > 2100 {
		t.Fatalf("stream up sent %d in 5 s at 400 pps", r.StreamUp.Sent)
	}
	total := 0
	for _, acs := range b.ac.Sessions {
		total += acs.UDPFromClient
		for i := 1; i < len(acs.StreamSeqs); i++ {
			if acs.StreamSeqs[i] != acs.StreamSeqs[i-1]+1 {
				t.Fatalf("upstream sequence gap %v", acs.StreamSeqs[i-1:i+1])
			}
		}
	}
	if uint64(total) != r.StreamUp.Sent {
		t.Fatalf("AC received %d of %d", total, r.StreamUp.Sent)
	}
	if r.StreamDown.Received != 18 || r.StreamDown.Lost != 3 || r.StreamDown.Reordered != 3 ||
		r.StreamDown.WrongSession != 0 || r.StreamDown.SessionsSilent != 1 {
		t.Fatalf("stream down %+v", r.StreamDown)
	}
	b.checkACErrors()
}

// A frame over our MRU (1492, PPPoE's) is the BNG's protocol error; one of
// exactly the MRU is not.
func TestFrameOverMRU(t *testing.T) {
	cfg := baseConfig(1)
	cfg.Duration = 2 * time.Second
	b := newBench(t, cfg, acConfig()).start()
	b.run(30*time.Second, func() bool { return b.e.Phase() == PhaseRunning })
	acs := b.ac.Sessions[0]
	for _, size := range []int{1492, 1493} {
		// IPv4 20 + UDP 8 + payload: an IPv4 packet of size bytes.
		p := traffic.AppendPayload(nil, uint32(acs.SID-0x100), 0, 0, size-28)
		acs.SendIPv4(ipv4.AppendUDP(nil, netip.MustParseAddr("198.51.100.9"), acs.Address(), 1, 9000, 5000, p))
	}
	b.finish(60 * time.Second)
	r := b.e.Report(false)
	if r.ProtocolErrors["frame_over_mru"] != 1 {
		t.Fatalf("errors %v", r.ProtocolErrors)
	}
}

// IPv4 the BNG fragmented (larger than our MRU, DF clear) is put back
// together, and the echo reply, larger than the BNG's MRU too, goes back in
// fragments; a datagram the BNG fragmented though it fitted our MRU is the
// BNG's protocol error.
func TestFragmentsBothWays(t *testing.T) {
	cfg := baseConfig(1)
	cfg.Duration = 2 * time.Second
	b := newBench(t, cfg, acConfig()).start()
	b.run(30*time.Second, func() bool { return b.e.Phase() == PhaseRunning })
	acs := b.ac.Sessions[0]
	core := netip.MustParseAddr("198.51.100.9")
	data := make([]byte, 1972) // a 2000-byte echo request
	for i := range data {
		data[i] = byte(i * 7)
	}
	ping := ipv4.AppendICMPEcho(nil, core, acs.Address(), 77, ipv4.ICMPEchoRequest, 0x1234, 1, data)
	frags := ipv4.Fragment(ping, 1492)
	for i := len(frags) - 1; i >= 0; i-- { // out of order
		acs.SendIPv4(frags[i])
	}
	small := ipv4.AppendUDP(nil, core, acs.Address(), 78, 9000, 5000, make([]byte, 900))
	for _, f := range ipv4.Fragment(small, 600) {
		acs.SendIPv4(f)
	}
	b.finish(60 * time.Second)
	r := b.e.Report(false)
	if r.Events["ipv4_reassembled"] != 2 || r.Events["ipv4_fragments_sent"] != 2 || r.Ping.Answered != 1 {
		t.Fatalf("events %v, ping %+v", r.Events, r.Ping)
	}
	if len(acs.EchoRepliesFromClient) != 1 || !bytes.Equal(acs.EchoRepliesFromClient[0], data) ||
		acs.FragmentsFromClient != 2 {
		t.Fatalf("AC saw %d replies from %d fragments", len(acs.EchoRepliesFromClient), acs.FragmentsFromClient)
	}
	if r.ProtocolErrors["ipv4_needless_fragmentation"] != 1 || len(r.ProtocolErrors) != 1 {
		t.Fatalf("errors %v", r.ProtocolErrors)
	}
	b.checkACErrors()
}

func TestCHAPRechallengeWhileUp(t *testing.T) {
	cfg := baseConfig(1)
	cfg.Hold = true
	ac := acConfig()
	ac.Auth = auth.CHAPMD5
	b := newBench(t, cfg, ac).start()
	b.run(30*time.Second, func() bool { return b.e.Phase() == PhaseRunning })
	b.ac.Sessions[0].Rechallenge()
	b.run(b.e.Now()+10*time.Second, nil)
	r := b.e.Report(false)
	if r.Established != 1 || r.Flaps != 0 {
		t.Fatalf("after re-challenge: established %d flaps %d", r.Established, r.Flaps)
	}
	b.checkACErrors()
}

// Rate limiting: 20 sessions at 10/s take about two seconds to start.
func TestSetupRate(t *testing.T) {
	cfg := baseConfig(20)
	cfg.Rate = 10
	b := newBench(t, cfg, acConfig()).start()
	b.finish(60 * time.Second)
	r := b.e.Report(false)
	if r.Established != 20 || r.SetupRateCPS > 12 || r.SetupRateCPS < 8 {
		t.Fatalf("established %d at %.1f/s", r.Established, r.SetupRateCPS)
	}
	cfg = baseConfig(20)
	cfg.MaxOutstanding = 3
	b = newBench(t, cfg, acConfig()).start()
	maxSeen := 0
	b.run(60*time.Second, func() bool {
		if b.e.outstanding > maxSeen {
			maxSeen = b.e.outstanding
		}
		return false
	})
	if maxSeen != 3 || b.e.Report(false).Established != 20 {
		t.Fatalf("outstanding peaked at %d", maxSeen)
	}
}

func TestNoTeardownSendsNothingAtTheEnd(t *testing.T) {
	cfg := baseConfig(2)
	cfg.NoTeardown = true
	b := newBench(t, cfg, acConfig()).start()
	b.finish(30 * time.Second)
	for _, s := range b.ac.Sessions {
		if s.PADTReceived {
			t.Fatal("PADT sent with --no-teardown")
		}
	}
	if b.e.ExitCode() != 0 {
		t.Fatal("exit code")
	}
}

func TestPADIFlood(t *testing.T) {
	cfg := baseConfig(1)
	cfg.FloodPPS, cfg.FloodDuration = 1000, 2*time.Second
	cfg.Hold = true
	b := newBench(t, cfg, acConfig()).start()
	b.run(5*time.Second, nil)
	r := b.e.Report(false)
	if r.PADIFloodSent < 1900 || r.PADIFloodSent > 2100 || r.PADIFloodAnswered != r.PADIFloodSent || r.Established != 1 {
		t.Fatalf("flood sent %d answered %d established %d", r.PADIFloodSent, r.PADIFloodAnswered, r.Established)
	}
}

// RFC 4638: with PPP-Max-Payload echoed in PADO/PADS both ends may use an
// MRU above 1492; without it the client keeps (and enforces) 1492.
func TestPPPMaxPayload(t *testing.T) {
	for _, echo := range []bool{true, false} {
		cfg := baseConfig(1)
		cfg.Session.MaxPayload = 1500
		ac := acConfig()
		ac.MaxPayload, ac.LCPMRU = echo, 1500
		b := newBench(t, cfg, ac).start()
		b.finish(30 * time.Second)
		if b.e.Report(false).Established != 1 {
			t.Fatalf("echo=%v: not established", echo)
		}
		acs := b.ac.Sessions[0]
		want := uint16(1492)
		if echo {
			want = 1500
		}
		if acs.PeerMRU() != want {
			t.Fatalf("echo=%v: client requested MRU %d, want %d", echo, acs.PeerMRU(), want)
		}
	}
}

func TestRepliesOnTheWrongVLANAreRefused(t *testing.T) {
	cfg := baseConfig(1)
	cfg.Lines = []ethernet.Tags{ethernet.SingleTagged(100)}
	cfg.Session.SetupTimeout = 5 * time.Second
	ac := acConfig()
	ac.ReplyLine = func(ethernet.Tags) ethernet.Tags { return ethernet.SingleTagged(101) }
	b := newBench(t, cfg, ac).start()
	b.finish(30 * time.Second)
	r := b.e.Report(false)
	if r.FailedReasons[session.ReasonDiscoveryTimeout] != 1 || r.ProtocolErrors["wrong_vlan"] == 0 {
		t.Fatalf("failed %v errors %v", nonZero(r.FailedReasons), r.ProtocolErrors)
	}
}

func TestMSCHAPv2WrongPasswordIsAnExpectedReject(t *testing.T) {
	cfg := baseConfig(4)
	cfg.WrongPasswordEvery = 2
	ac := acConfig()
	ac.Auth = auth.MSCHAPv2
	b := newBench(t, cfg, ac).start()
	b.finish(30 * time.Second)
	r := b.e.Report(true)
	if r.Established != 2 || r.ExpectedRejects != 2 || r.Failed != 0 || b.e.ExitCode() != 0 {
		t.Fatalf("established %d rejects %d failed %v", r.Established, r.ExpectedRejects, nonZero(r.FailedReasons))
	}
	if !strings.Contains(r.Sessions[1].FailureDetail, "E=691") {
		t.Fatalf("failure detail %q", r.Sessions[1].FailureDetail)
	}
}

// FuzzSessionFrames: whatever a (buggy) BNG sends into an established
// session, or as a discovery frame, the emulator neither panics nor stops
// serving its other sessions.
func FuzzSessionFrames(f *testing.F) {
	f.Add(uint16(0xc021), []byte{1, 1, 0, 8, 1, 4, 5, 0xdc})
	f.Add(uint16(0xc021), []byte{9, 1, 0, 8, 0, 0, 0, 1})
	f.Add(uint16(0x8021), []byte{1, 1, 0, 10, 3, 6, 10, 0, 0, 1})
	f.Add(uint16(0x0021), ipv4.AppendICMPEcho(nil, netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("100.64.1.1"), 1, 8, 1, 1, nil))
	f.Add(uint16(0xc223), []byte{1, 7, 0, 21, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add(uint16(0x8863), []byte{0x11, 0xa7, 0x01, 0x01, 0, 0})
	f.Fuzz(func(t *testing.T, proto uint16, payload []byte) {
		cfg := baseConfig(2)
		cfg.Hold = true
		cfg.Session.IPv6 = true
		b := newBench(t, cfg, acConfig()).start()
		b.run(30*time.Second, func() bool { return b.e.Phase() == PhaseRunning })
		if b.e.Report(false).Established != 2 {
			t.Fatal("bench did not come up")
		}
		acs := b.ac.Sessions[0]
		var frame []byte
		if proto == 0x8863 { // a raw discovery frame
			frame = ethernet.AppendHeader(nil, cfg.MACOf(1), acConfig().MAC, ethernet.Untagged(), ethernet.TypePPPoEDiscovery)
			frame = append(frame, payload...)
		} else { // a PPP frame of protocol proto in the established session
			frame = ethernet.AppendHeader(nil, cfg.MACOf(1), acConfig().MAC, ethernet.Untagged(), ethernet.TypePPPoESession)
			var off int
			frame, off = pppoe.AppendHeader(frame, pppoe.CodeSession, acs.SID)
			frame = append(frame, byte(proto>>8), byte(proto))
			frame = append(frame, payload...)
			pppoe.SetLength(frame, off)
		}
		b.e.HandleFrame(frame)
		b.run(b.e.Now()+20*time.Second, nil)
		if s := b.e.Sessions()[1]; s.Phase() != session.Established {
			t.Fatalf("the other session is %v", s.Phase())
		}
	})
}
