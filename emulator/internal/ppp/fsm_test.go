package ppp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"p4bng/emulator/internal/timer"
)

// testPolicy: we request option 1 = 0xaa; of the peer's options, type 1 is
// acceptable, type 2 gets a Nak suggesting 0x02, anything else a Reject.
type testPolicy struct {
	log       *[]string
	naks      int
	rejects   int
	dropOpt1  bool
	finished  []Cause
	otherSeen []Code
}

func (p *testPolicy) AppendRequest(b []byte) []byte {
	if p.dropOpt1 {
		return b
	}
	return AppendOption(b, 1, []byte{0xaa})
}
func (p *testPolicy) BeginRequest() {}
func (p *testPolicy) CheckOption(o Option, nak []byte) (Verdict, []byte) {
	switch o.Type {
	case 1:
		return Ack, nak
	case 2:
		return Nak, AppendOption(nak, 2, []byte{0x02})
	}
	return Reject, nak
}
func (p *testPolicy) NakReceived([]byte) { p.naks++ }
func (p *testPolicy) RejectReceived([]byte) {
	p.rejects++
	p.dropOpt1 = true
}
func (p *testPolicy) ReceiveOther(f *FSM, pk Packet) bool {
	p.otherSeen = append(p.otherSeen, pk.Code)
	return pk.Code == EchoRequest
}
func (p *testPolicy) Up(*FSM)      { *p.log = append(*p.log, "tlu") }
func (p *testPolicy) Down(*FSM)    { *p.log = append(*p.log, "tld") }
func (p *testPolicy) Started(*FSM) { *p.log = append(*p.log, "tls") }
func (p *testPolicy) Finished(f *FSM) {
	*p.log = append(*p.log, "tlf")
	p.finished = append(p.finished, f.Cause())
}

type recorder struct {
	log  *[]string
	sent []Packet
	raw  [][]byte
}

func (r *recorder) SendControl(p Protocol, b []byte) {
	pk, err := ParsePacket(b)
	if err != nil {
		panic(err)
	}
	cp := append([]byte(nil), b...)
	r.raw = append(r.raw, cp)
	pk, _ = ParsePacket(cp)
	r.sent = append(r.sent, pk)
	act := map[Code]string{ConfigureRequest: "scr", ConfigureAck: "sca", ConfigureNak: "scn",
		ConfigureReject: "scn", TerminateRequest: "str", TerminateAck: "sta", CodeReject: "scj"}[pk.Code]
	if act == "" {
		act = pk.Code.String()
	}
	*r.log = append(*r.log, act)
}

type harness struct {
	s   *timer.Scheduler
	cfg Config
	log []string
	pol *testPolicy
	out *recorder
	f   *FSM
}

func newHarness() *harness {
	h := &harness{s: timer.New(), cfg: DefaultConfig()}
	h.pol = &testPolicy{log: &h.log}
	h.out = &recorder{log: &h.log}
	h.f = NewFSM(ProtoLCP, &h.cfg, h.pol, h.out, h.s, NewScratch(), 0)
	return h
}

func (h *harness) input(code Code, id uint8, data []byte) {
	h.f.Input(AppendPacket(nil, code, id, data))
}

var events = map[string]func(h *harness){
	"Up":    func(h *harness) { h.f.Up() },
	"Down":  func(h *harness) { h.f.Down() },
	"Open":  func(h *harness) { h.f.Open() },
	"Close": func(h *harness) { h.f.Close() },
	"TO+":   func(h *harness) { h.f.restartCount = 5; h.f.timeout() },
	"TO-":   func(h *harness) { h.f.restartCount = 0; h.f.timeout() },
	"RCR+":  func(h *harness) { h.input(ConfigureRequest, 77, AppendOption(nil, 1, []byte{1})) },
	"RCR-":  func(h *harness) { h.input(ConfigureRequest, 77, AppendOption(nil, 2, []byte{1})) },
	"RCA":   func(h *harness) { h.input(ConfigureAck, h.f.reqID, AppendOption(nil, 1, []byte{0xaa})) },
	"RCN":   func(h *harness) { h.input(ConfigureNak, h.f.reqID, AppendOption(nil, 1, []byte{0xbb})) },
	"RTR":   func(h *harness) { h.input(TerminateRequest, 78, nil) },
	"RTA":   func(h *harness) { h.input(TerminateAck, 79, nil) },
	"RUC":   func(h *harness) { h.input(Code(42), 80, []byte{1, 2}) },
	"RXJ+":  func(h *harness) { h.input(CodeReject, 81, AppendPacket(nil, EchoRequest, 1, []byte{0, 0, 0, 0})) },
	"RXJ-":  func(h *harness) { h.input(CodeReject, 81, AppendPacket(nil, ConfigureRequest, 1, nil)) },
}

// The state transition table of RFC 1661 section 4.1, cell by cell, in its
// own notation ("-": cannot happen / no change). irc and zrc are checked
// through the restart counter.
var rfcTable = []struct {
	event string
	cells [10]string
}{
	{"Up", [10]string{"2", "irc,scr/6", "-", "-", "-", "-", "-", "-", "-", "-"}},
	{"Down", [10]string{"-", "-", "0", "tls/1", "0", "1", "1", "1", "1", "tld/1"}},
	{"Open", [10]string{"tls/1", "1", "irc,scr/6", "3", "5", "5", "6", "7", "8", "9"}},
	{"Close", [10]string{"0", "tlf/0", "2", "2", "4", "4", "irc,str/4", "irc,str/4", "irc,str/4", "tld,irc,str/4"}},
	{"TO+", [10]string{"-", "-", "-", "-", "str/4", "str/5", "scr/6", "scr/6", "scr/8", "-"}},
	{"TO-", [10]string{"-", "-", "-", "-", "tlf/2", "tlf/3", "tlf/3", "tlf/3", "tlf/3", "-"}},
	{"RCR+", [10]string{"-", "-", "sta/2", "irc,scr,sca/8", "4", "5", "sca/8", "sca,tlu/9", "sca/8", "tld,scr,sca/8"}},
	{"RCR-", [10]string{"-", "-", "sta/2", "irc,scr,scn/6", "4", "5", "scn/6", "scn/7", "scn/6", "tld,scr,scn/6"}},
	{"RCA", [10]string{"-", "-", "sta/2", "sta/3", "4", "5", "irc/7", "scr/6", "irc,tlu/9", "tld,scr/6"}},
	{"RCN", [10]string{"-", "-", "sta/2", "sta/3", "4", "5", "irc,scr/6", "scr/6", "irc,scr/8", "tld,scr/6"}},
	{"RTR", [10]string{"-", "-", "sta/2", "sta/3", "sta/4", "sta/5", "sta/6", "sta/6", "sta/6", "tld,zrc,sta/5"}},
	{"RTA", [10]string{"-", "-", "2", "3", "tlf/2", "tlf/3", "6", "6", "8", "tld,scr/6"}},
	{"RUC", [10]string{"-", "-", "scj/2", "scj/3", "scj/4", "scj/5", "scj/6", "scj/7", "scj/8", "scj/9"}},
	{"RXJ+", [10]string{"-", "-", "2", "3", "4", "5", "6", "6", "8", "9"}},
	{"RXJ-", [10]string{"-", "-", "tlf/2", "tlf/3", "tlf/2", "tlf/3", "tlf/3", "tlf/3", "tlf/3", "tld,irc,str/5"}},
}

func TestRFC1661StateTable(t *testing.T) {
	for _, row := range rfcTable {
		for st, cell := range row.cells {
			h := newHarness()
			h.f.state = State(st)
			h.f.reqID = 33
			h.f.restartCount = 5
			events[row.event](h)

			wantState, wantActs := State(st), ""
			if cell != "-" {
				acts, s, found := strings.Cut(cell, "/")
				if !found {
					acts, s = "", cell
				}
				var n int
				fmt.Sscan(s, &n)
				wantState, wantActs = State(n), acts
			}
			var observable []string
			irc, zrc := false, false
			for _, a := range strings.Split(wantActs, ",") {
				switch a {
				case "":
				case "irc":
					irc = true
				case "zrc":
					zrc = true
				default:
					observable = append(observable, a)
				}
			}
			name := fmt.Sprintf("%s in %v", row.event, State(st))
			if h.f.state != wantState {
				t.Errorf("%s: state %v, want %v", name, h.f.state, wantState)
			}
			if got, want := strings.Join(h.log, ","), strings.Join(observable, ","); got != want {
				t.Errorf("%s: actions %q, want %q", name, got, want)
			}
			if irc {
				want := h.cfg.MaxConfigure
				if strings.Contains(wantActs, "str") {
					want = h.cfg.MaxTerminate
				}
				if strings.Contains(wantActs, "scr") || strings.Contains(wantActs, "str") {
					want--
				}
				if h.f.restartCount != want {
					t.Errorf("%s: restart counter %d, want %d (irc)", name, h.f.restartCount, want)
				}
			}
			if zrc && (h.f.restartCount != 0 || !h.f.timer.Active()) {
				t.Errorf("%s: zrc should zero the counter and run the timer", name)
			}
			if h.f.timer.Active() != wantState.hasRestartTimer() && (strings.Contains(wantActs, "scr") || strings.Contains(wantActs, "str") || zrc || !wantState.hasRestartTimer()) {
				t.Errorf("%s: restart timer active=%v in %v", name, h.f.timer.Active(), wantState)
			}
		}
	}
}

// Max-Configure Configure-Requests, one per Restart interval, then the
// layer finishes with a timeout cause.
func TestConfigureRequestTimeout(t *testing.T) {
	h := newHarness()
	var sentAt []time.Duration
	h.f.Open()
	h.f.Up()
	sentAt = append(sentAt, h.s.Now())
	for i := 0; i < 60 && h.f.State() != Stopped; i++ {
		n := len(h.out.sent)
		next, _ := h.s.Next()
		h.s.Advance(next)
		if len(h.out.sent) > n {
			sentAt = append(sentAt, h.s.Now())
		}
	}
	if len(h.out.sent) != 10 || len(sentAt) != 10 {
		t.Fatalf("sent %d Configure-Requests, want 10", len(h.out.sent))
	}
	for i, at := range sentAt {
		if at != time.Duration(i)*3*time.Second {
			t.Fatalf("request %d at %v", i, at)
		}
	}
	if h.s.Now() != 30*time.Second || h.f.State() != Stopped || len(h.pol.finished) != 1 || h.pol.finished[0] != CauseTimeout {
		t.Fatalf("now %v state %v finished %v", h.s.Now(), h.f.State(), h.pol.finished)
	}
	// Every retransmission carries a new Identifier.
	ids := map[uint8]bool{}
	for _, p := range h.out.sent {
		ids[p.ID] = true
	}
	if len(ids) != 10 {
		t.Fatalf("identifiers reused: %v", ids)
	}
}

func TestNegotiationBothOrders(t *testing.T) {
	// Ack first, then the peer's request.
	h := newHarness()
	h.f.Open()
	h.f.Up()
	req := h.out.sent[0]
	h.input(ConfigureAck, req.ID, req.Data)
	if h.f.State() != AckRcvd {
		t.Fatalf("state %v", h.f.State())
	}
	h.input(ConfigureRequest, 5, AppendOption(nil, 1, []byte{7}))
	if h.f.State() != Opened || h.out.sent[1].Code != ConfigureAck || h.out.sent[1].ID != 5 || h.f.timer.Active() {
		t.Fatalf("state %v sent %v timer %v", h.f.State(), h.out.sent, h.f.timer.Active())
	}
	// Peer's request first.
	h = newHarness()
	h.f.Open()
	h.f.Up()
	h.input(ConfigureRequest, 5, AppendOption(nil, 1, []byte{7}))
	h.input(ConfigureAck, h.out.sent[0].ID, h.out.sent[0].Data)
	if h.f.State() != Opened || strings.Join(h.log, ",") != "tls,scr,sca,tlu" {
		t.Fatalf("state %v log %v", h.f.State(), h.log)
	}
}

func TestAckValidation(t *testing.T) {
	h := newHarness()
	h.f.Open()
	h.f.Up()
	req := h.out.sent[0]
	h.input(ConfigureAck, req.ID+1, req.Data) // stale identifier
	h.input(ConfigureAck, req.ID, AppendOption(nil, 1, []byte{0xab}))
	h.input(ConfigureReject, req.ID, AppendOption(nil, 9, []byte{1})) // not ours
	if h.f.State() != ReqSent || h.pol.rejects != 0 {
		t.Fatalf("invalid replies acted on: %v", h.f.State())
	}
	errs := map[string]int{}
	h.cfg.OnError = func(_ Protocol, what string) { errs[what]++ }
	h.input(ConfigureAck, req.ID, nil)
	h.f.Input([]byte{2, 1, 0, 9})
	if errs["ack-mismatch"] != 1 || errs["malformed"] != 1 {
		t.Fatalf("errors %v", errs)
	}
	// A valid Reject drops the option and re-requests immediately.
	h.input(ConfigureReject, req.ID, req.Data)
	if h.pol.rejects != 1 || len(h.out.sent) != 2 || len(h.out.sent[1].Data) != 0 {
		t.Fatalf("after reject: %v", h.out.sent)
	}
}

func TestMaxFailureTurnsNakIntoReject(t *testing.T) {
	h := newHarness()
	h.f.Open()
	h.f.Up()
	bad := AppendOption(nil, 2, []byte{9})
	for i := 0; i < h.cfg.MaxFailure+1; i++ {
		h.input(ConfigureRequest, uint8(i), bad)
	}
	last := h.out.sent[len(h.out.sent)-1]
	prev := h.out.sent[len(h.out.sent)-2]
	if prev.Code != ConfigureNak || string(prev.Data) != string(AppendOption(nil, 2, []byte{2})) {
		t.Fatalf("Nak %v %x", prev.Code, prev.Data)
	}
	if last.Code != ConfigureReject || string(last.Data) != string(bad) {
		t.Fatalf("after Max-Failure: %v %x", last.Code, last.Data)
	}
}

func TestPeerTerminateFinishesAfterOneRestartPeriod(t *testing.T) {
	h := newHarness()
	h.f.state = Opened
	h.input(TerminateRequest, 9, nil)
	if h.f.State() != Stopping || h.out.sent[0].Code != TerminateAck || h.out.sent[0].ID != 9 {
		t.Fatalf("state %v sent %v", h.f.State(), h.out.sent)
	}
	h.s.Advance(3 * time.Second)
	if h.f.State() != Stopped || len(h.pol.finished) != 1 || h.pol.finished[0] != CausePeerTerminate {
		t.Fatalf("state %v finished %v", h.f.State(), h.pol.finished)
	}
}

func TestCloseSendsMaxTerminateRequests(t *testing.T) {
	h := newHarness()
	h.f.state = Opened
	h.f.Close()
	h.s.Advance(time.Minute)
	n := 0
	for _, p := range h.out.sent {
		if p.Code == TerminateRequest {
			n++
		}
	}
	if n != 2 || h.f.State() != Closed || h.pol.finished[0] != CauseAdminClose {
		t.Fatalf("%d Terminate-Requests, state %v, finished %v", n, h.f.State(), h.pol.finished)
	}
}

func TestOtherCodesGoToThePolicy(t *testing.T) {
	h := newHarness()
	h.f.state = Opened
	h.input(EchoRequest, 1, []byte{0, 0, 0, 0})
	h.input(Code(99), 2, nil)
	if len(h.pol.otherSeen) != 2 || len(h.out.sent) != 1 || h.out.sent[0].Code != CodeReject {
		t.Fatalf("seen %v sent %v", h.pol.otherSeen, h.out.sent)
	}
	if string(h.out.sent[0].Data) != string(AppendPacket(nil, Code(99), 2, nil)) {
		t.Fatalf("Code-Reject carries %x", h.out.sent[0].Data)
	}
}
