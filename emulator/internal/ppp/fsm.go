package ppp

import (
	"time"

	"p4bng/emulator/internal/timer"
)

// State is a state of the option negotiation automaton (RFC 1661 4.2).
type State uint8

// The ten states, numbered as in the RFC's state table.
const (
	Initial State = iota
	Starting
	Closed
	Stopped
	Closing
	Stopping
	ReqSent
	AckRcvd
	AckSent
	Opened
)

func (s State) String() string {
	return [...]string{"Initial", "Starting", "Closed", "Stopped", "Closing", "Stopping",
		"Req-Sent", "Ack-Rcvd", "Ack-Sent", "Opened"}[s]
}

// hasRestartTimer lists the states in which the Restart timer runs.
func (s State) hasRestartTimer() bool {
	return s == Closing || s == Stopping || s == ReqSent || s == AckRcvd || s == AckSent
}

// Cause says why a layer finished (This-Layer-Finished), so the session can
// tell a negotiation timeout from a peer's Terminate-Request.
type Cause uint8

// Causes.
const (
	CauseNone          Cause = iota
	CauseAdminClose          // we closed it (Close event)
	CauseTimeout             // Max-Configure Configure-Requests went unanswered
	CausePeerTerminate       // the peer sent Terminate-Request
	CauseRejected            // the peer rejected something we cannot do without (RXJ-)
)

func (c Cause) String() string {
	return [...]string{"none", "closed", "timeout", "peer-terminate", "rejected"}[c]
}

// Verdict is an option policy's answer to one option of the peer's
// Configure-Request.
type Verdict uint8

// Verdicts.
const (
	Ack Verdict = iota
	Nak
	Reject
)

// Handler is what a control protocol plugs into the automaton: its option
// policy and the This-Layer-* actions.
type Handler interface {
	// AppendRequest appends the options of our next Configure-Request. It
	// must be deterministic between changes made by NakReceived and
	// RejectReceived: the automaton recomputes it to check a Configure-Ack.
	AppendRequest(b []byte) []byte
	// BeginRequest precedes the CheckOption calls for one peer request.
	BeginRequest()
	// CheckOption judges one option of the peer's Configure-Request. For a
	// Nak it appends the option with the value it would accept to nak.
	CheckOption(o Option, nak []byte) (Verdict, []byte)
	// NakReceived adjusts our request from a valid Configure-Nak.
	NakReceived(opts []byte)
	// RejectReceived drops the rejected options from our future requests.
	RejectReceived(opts []byte)
	// ReceiveOther gets codes beyond 1-7 (LCP's Echo, Protocol-Reject...);
	// false makes the automaton send a Code-Reject.
	ReceiveOther(f *FSM, p Packet) bool

	Up(f *FSM)       // This-Layer-Up
	Down(f *FSM)     // This-Layer-Down
	Started(f *FSM)  // This-Layer-Started
	Finished(f *FSM) // This-Layer-Finished
}

// Output sends a control packet (code, id, length, data) of protocol p.
type Output interface {
	SendControl(p Protocol, pkt []byte)
}

// Config holds the automaton's counters and timer (RFC 1661 4.6) and a hook
// for protocol errors of the peer (counted by the caller, never fatal).
type Config struct {
	Restart      time.Duration // Restart timer, 3 s by default
	MaxTerminate int           // Terminate-Requests sent before giving up, 2
	MaxConfigure int           // Configure-Requests sent before giving up, 10
	MaxFailure   int           // Configure-Naks sent before Naks become Rejects, 5
	OnError      func(p Protocol, what string)
}

// DefaultConfig returns the RFC's suggested values.
func DefaultConfig() Config {
	return Config{Restart: 3 * time.Second, MaxTerminate: 2, MaxConfigure: 10, MaxFailure: 5}
}

// Scratch holds the buffers the automata build packets in. One Scratch is
// shared by every automaton driven by one goroutine.
type Scratch struct {
	pkt, cmp, nak, nakOrig, rej, aux []byte
}

// Aux is a spare empty buffer for packets built outside the automata (PAP,
// CHAP, IP); the automata never use it.
func (s *Scratch) Aux() []byte { return s.aux[:0] }

// NewScratch allocates the buffers once.
func NewScratch() *Scratch {
	const n = 1600
	return &Scratch{pkt: make([]byte, 0, n), cmp: make([]byte, 0, n), nak: make([]byte, 0, n),
		nakOrig: make([]byte, 0, n), rej: make([]byte, 0, n), aux: make([]byte, 0, 10000)}
}

// FSM is one instance of the RFC 1661 option negotiation automaton.
type FSM struct {
	proto        Protocol
	cfg          *Config
	h            Handler
	out          Output
	sc           *Scratch
	timer        *timer.Timer
	state        State
	restartCount int
	failures     int   // Naks sent in a row, for Max-Failure
	reqID        uint8 // Identifier of our outstanding Configure-Request
	nextID       uint8
	cause        Cause
}

// NewFSM builds an automaton in the Initial state.
func NewFSM(proto Protocol, cfg *Config, h Handler, out Output, sched *timer.Scheduler, sc *Scratch, firstID uint8) *FSM {
	f := &FSM{proto: proto, cfg: cfg, h: h, out: out, sc: sc, nextID: firstID}
	f.timer = sched.NewTimer(f.timeout)
	return f
}

// State is the current state.
func (f *FSM) State() State { return f.state }

// Protocol is the protocol this automaton negotiates.
func (f *FSM) Protocol() Protocol { return f.proto }

// Cause is why the layer last went down or finished.
func (f *FSM) Cause() Cause { return f.cause }

// Reset returns the automaton to Initial without sending anything (the
// lower layer is gone, e.g. after a PADT).
func (f *FSM) Reset() {
	f.timer.Stop()
	f.state = Initial
	f.failures = 0
	f.cause = CauseNone
}

// NewID returns a fresh Identifier for packets this protocol originates
// outside the automaton (LCP Echo-Request).
func (f *FSM) NewID() uint8 {
	f.nextID++
	return f.nextID
}

func (f *FSM) setState(s State) {
	f.state = s
	if !s.hasRestartTimer() {
		f.timer.Stop()
	}
}

func (f *FSM) protoError(what string) {
	if f.cfg.OnError != nil {
		f.cfg.OnError(f.proto, what)
	}
}

// Up is the lower layer coming up.
func (f *FSM) Up() {
	switch f.state {
	case Initial:
		f.setState(Closed)
	case Starting:
		f.irc(false)
		f.setState(ReqSent)
		f.scr()
	}
}

// Down is the lower layer going down.
func (f *FSM) Down() {
	switch f.state {
	case Closed, Closing:
		f.setState(Initial)
	case Stopped:
		f.setState(Starting)
		f.h.Started(f)
	case Stopping, ReqSent, AckRcvd, AckSent:
		f.setState(Starting)
	case Opened:
		f.setState(Starting)
		f.h.Down(f)
	}
}

// Open is the administrative Open.
func (f *FSM) Open() {
	switch f.state {
	case Initial:
		f.setState(Starting)
		f.h.Started(f)
	case Closed:
		f.irc(false)
		f.setState(ReqSent)
		f.scr()
	case Closing:
		f.setState(Stopping)
	}
}

// Close is the administrative Close: terminate the link politely.
func (f *FSM) Close() {
	f.cause = CauseAdminClose
	switch f.state {
	case Starting:
		f.setState(Initial)
		f.h.Finished(f)
	case Stopped:
		f.setState(Closed)
	case Stopping:
		f.setState(Closing)
	case ReqSent, AckRcvd, AckSent:
		f.irc(true)
		f.setState(Closing)
		f.str()
	case Opened:
		f.setState(Closing)
		f.h.Down(f)
		f.irc(true)
		f.str()
	}
}

// PeerRejected is RXJ from outside the automaton: the peer's LCP
// Protocol-Reject of this protocol (always catastrophic for an NCP).
func (f *FSM) PeerRejected() { f.rxj(false) }

func (f *FSM) timeout() {
	if f.restartCount > 0 { // TO+
		switch f.state {
		case Closing, Stopping:
			f.str()
		case ReqSent, AckRcvd:
			f.setState(ReqSent)
			f.scr()
		case AckSent:
			f.scr()
		}
		return
	}
	switch f.state { // TO-
	case Closing:
		f.setState(Closed)
		f.h.Finished(f)
	case Stopping:
		f.setState(Stopped)
		f.h.Finished(f)
	case ReqSent, AckRcvd, AckSent:
		f.cause = CauseTimeout
		f.setState(Stopped)
		f.h.Finished(f)
	}
}

// irc initialises the restart counter for configuration or termination.
func (f *FSM) irc(terminate bool) {
	if terminate {
		f.restartCount = f.cfg.MaxTerminate
	} else {
		f.restartCount = f.cfg.MaxConfigure
		f.failures = 0
	}
}

// zrc zeroes the restart counter but runs the timer once more, so the
// Terminate-Ack has time to leave before the layer finishes.
func (f *FSM) zrc() {
	f.restartCount = 0
	f.timer.Reset(f.cfg.Restart)
}

// SendPacket sends a packet of this protocol outside the negotiation (LCP
// Echo-Request, Echo-Reply, Protocol-Reject).
func (f *FSM) SendPacket(code Code, id uint8, data []byte) { f.send(code, id, data) }

func (f *FSM) send(code Code, id uint8, data []byte) {
	b := AppendPacket(f.sc.pkt[:0], code, id, data)
	f.out.SendControl(f.proto, b)
}

// scr sends a Configure-Request with a new Identifier.
func (f *FSM) scr() {
	f.nextID++
	f.reqID = f.nextID
	b, off := AppendPacketHeader(f.sc.pkt[:0], ConfigureRequest, f.reqID)
	b = f.h.AppendRequest(b)
	SetPacketLength(b, off)
	f.out.SendControl(f.proto, b)
	f.restartCount--
	f.timer.Reset(f.cfg.Restart)
}

func (f *FSM) str() {
	f.nextID++
	f.send(TerminateRequest, f.nextID, nil)
	f.restartCount--
	f.timer.Reset(f.cfg.Restart)
}

func (f *FSM) sta(id uint8) { f.send(TerminateAck, id, nil) }

func (f *FSM) scj(raw []byte) {
	const maxRejected = 1400 // fits any MRU a PPPoE peer may have
	if len(raw) > maxRejected {
		raw = raw[:maxRejected]
	}
	f.nextID++
	f.send(CodeReject, f.nextID, raw)
}

// Input processes one received control packet of this protocol.
func (f *FSM) Input(raw []byte) {
	p, err := ParsePacket(raw)
	if err != nil {
		f.protoError("malformed")
		return
	}
	if f.state == Initial || f.state == Starting {
		return // the lower layer is not up: cannot happen, silently discard
	}
	switch p.Code {
	case ConfigureRequest:
		f.rcr(p)
	case ConfigureAck:
		f.rca(p)
	case ConfigureNak, ConfigureReject:
		f.rcn(p)
	case TerminateRequest:
		f.rtr(p.ID)
	case TerminateAck:
		f.rta()
	case CodeReject:
		if len(p.Data) < PacketHeaderLen {
			f.protoError("malformed-code-reject")
			return
		}
		// Rejecting a code of the automaton itself makes negotiation
		// impossible (RXJ-); anything else (Echo...) is survivable (RXJ+).
		rejected := Code(p.Data[0])
		f.rxj(rejected > CodeReject || rejected == 0)
	default:
		if !f.h.ReceiveOther(f, p) {
			f.scj(raw[:PacketHeaderLen+len(p.Data)])
		}
	}
}

func (f *FSM) rcr(p Packet) {
	if ValidateOptions(p.Data) != nil {
		f.protoError("malformed-options")
		return
	}
	switch f.state {
	case Closed, Stopped:
		if f.state == Closed {
			f.sta(p.ID)
			return
		}
	case Closing, Stopping:
		return
	}
	// Judge every option; the reply is a Reject if anything is rejected,
	// else a Nak if anything is naked, else an Ack of the whole list.
	f.h.BeginRequest()
	nak, nakOrig, rej := f.sc.nak[:0], f.sc.nakOrig[:0], f.sc.rej[:0]
	for opts := p.Data; len(opts) > 0; {
		var o Option
		o, opts = NextOption(opts)
		var v Verdict
		v, nak = f.h.CheckOption(o, nak)
		switch v {
		case Nak:
			nakOrig = append(nakOrig, o.Raw...)
		case Reject:
			rej = append(rej, o.Raw...)
		}
	}
	replyCode, reply := ConfigureAck, p.Data
	if len(rej) > 0 {
		replyCode, reply = ConfigureReject, rej
	} else if len(nakOrig) > 0 {
		f.failures++
		if f.failures > f.cfg.MaxFailure { // RFC 1661 4.6 Max-Failure
			replyCode, reply = ConfigureReject, nakOrig
		} else {
			replyCode, reply = ConfigureNak, nak
		}
	}
	good := replyCode == ConfigureAck
	if good {
		f.failures = 0
	}
	f.sc.nak, f.sc.nakOrig, f.sc.rej = nak, nakOrig, rej // keep grown buffers

	switch f.state {
	case Stopped:
		f.irc(false)
		if good {
			f.setState(AckSent)
		} else {
			f.setState(ReqSent)
		}
		f.scr()
	case ReqSent:
		if good {
			f.setState(AckSent)
		}
	case AckRcvd:
		if good {
			f.setState(Opened)
			f.send(replyCode, p.ID, reply)
			f.h.Up(f)
			return
		}
	case AckSent:
		if !good {
			f.setState(ReqSent)
		}
	case Opened:
		if good {
			f.setState(AckSent)
		} else {
			f.setState(ReqSent)
		}
		f.h.Down(f)
		// The reply may live in scratch buffers that Down's callees do not
		// touch (they never build configure replies), so it is still intact.
		f.scr()
	}
	f.send(replyCode, p.ID, reply)
}

// ourRequest rebuilds the options of our outstanding Configure-Request.
func (f *FSM) ourRequest() []byte {
	b := f.h.AppendRequest(f.sc.cmp[:0])
	f.sc.cmp = b
	return b
}

func (f *FSM) rca(p Packet) {
	if p.ID != f.reqID {
		f.protoError("stale-id")
		return
	}
	if string(p.Data) != string(f.ourRequest()) {
		// RFC 1661 5.2: the options must be exactly those we sent.
		f.protoError("ack-mismatch")
		return
	}
	switch f.state {
	case Closed, Stopped:
		f.sta(p.ID)
	case ReqSent:
		f.irc(false)
		f.setState(AckRcvd)
	case AckRcvd:
		f.setState(ReqSent)
		f.scr()
	case AckSent:
		f.irc(false)
		f.setState(Opened)
		f.h.Up(f)
	case Opened:
		f.setState(ReqSent)
		f.h.Down(f)
		f.scr()
	}
}

func (f *FSM) rcn(p Packet) {
	if p.ID != f.reqID {
		f.protoError("stale-id")
		return
	}
	if ValidateOptions(p.Data) != nil {
		f.protoError("malformed-options")
		return
	}
	if p.Code == ConfigureReject {
		// A Reject may only list options we sent, unmodified (RFC 1661 5.4).
		ours := f.ourRequest()
		for opts := p.Data; len(opts) > 0; {
			var o Option
			o, opts = NextOption(opts)
			if !ContainsOption(ours, o.Raw) {
				f.protoError("reject-mismatch")
				return
			}
		}
	}
	switch f.state {
	case Closed, Stopped:
		f.sta(p.ID)
		return
	case Closing, Stopping:
		return
	}
	if p.Code == ConfigureNak {
		f.h.NakReceived(p.Data)
	} else {
		f.h.RejectReceived(p.Data)
	}
	switch f.state {
	case ReqSent:
		f.irc(false)
		f.scr()
	case AckRcvd:
		f.setState(ReqSent)
		f.scr()
	case AckSent:
		f.irc(false)
		f.scr()
	case Opened:
		f.setState(ReqSent)
		f.h.Down(f)
		f.scr()
	}
}

func (f *FSM) rtr(id uint8) {
	switch f.state {
	case ReqSent, AckRcvd, AckSent:
		f.setState(ReqSent)
	case Opened:
		f.cause = CausePeerTerminate
		f.setState(Stopping)
		f.h.Down(f)
		f.zrc()
	}
	f.sta(id)
}

func (f *FSM) rta() {
	switch f.state {
	case Closing:
		f.setState(Closed)
		f.h.Finished(f)
	case Stopping:
		f.setState(Stopped)
		f.h.Finished(f)
	case AckRcvd:
		f.setState(ReqSent)
	case Opened:
		f.setState(ReqSent)
		f.h.Down(f)
		f.scr()
	}
}

func (f *FSM) rxj(acceptable bool) {
	if acceptable {
		if f.state == AckRcvd {
			f.setState(ReqSent)
		}
		return
	}
	f.cause = CauseRejected
	switch f.state {
	case Closed, Closing:
		f.setState(Closed)
		f.h.Finished(f)
	case Stopped, Stopping, ReqSent, AckRcvd, AckSent:
		f.setState(Stopped)
		f.h.Finished(f)
	case Opened:
		f.setState(Stopping)
		f.h.Down(f)
		f.irc(true)
		f.str()
	}
}
