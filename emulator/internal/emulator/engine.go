package emulator

import (
	"math/rand"
	"time"

	"p4bng/emulator/internal/ethernet"
	"p4bng/emulator/internal/impair"
	"p4bng/emulator/internal/pace"
	"p4bng/emulator/internal/ppp"
	"p4bng/emulator/internal/pppoe"
	"p4bng/emulator/internal/report"
	"p4bng/emulator/internal/session"
	"p4bng/emulator/internal/timer"
)

// Sender transmits a frame (the link, or a test's fake access concentrator).
type Sender interface {
	Send(frame []byte) error
}

// Phases of a run, as the report names them.
const (
	PhaseSetup    = "setup"    // sessions starting
	PhaseRunning  = "running"  // every session has an outcome; traffic
	PhaseTeardown = "teardown" // Terminate-Requests out, waiting for Acks
	PhaseFinished = "finished"
)

const (
	tick          = time.Millisecond
	reorderFlush  = 50 * time.Millisecond // a held-back frame leaves at the latest after this
	floodHostUniq = 8
)

// Engine is the emulator's core. Not safe for concurrent use: one goroutine
// feeds it frames (HandleFrame) and time (Advance).
type Engine struct {
	cfg     *Config
	sched   *timer.Scheduler
	rnd     *rand.Rand
	scratch *ppp.Scratch
	txbuf   []byte
	out     Sender
	imp     *impair.Impairer

	sessions []*session.Session
	base     uint64

	queue       []int32 // session indices waiting to start, FIFO
	qhead       int
	starter     *pace.Bucket
	outstanding int // sessions in setup

	est        []*session.Session // established now
	pending    int                // first attempts without an outcome yet
	everEst    int
	setupTimes []float64
	firstPADI  time.Duration
	started    bool
	lastEst    time.Duration

	failed            int
	failedReasons     map[string]uint64
	expectedRejects   int
	unexpectedAccepts int
	flaps             uint64
	flapReasons       map[string]uint64
	reconnects        uint64
	reconnectFailures map[string]uint64
	perr              map[string]uint64
	stats             session.Stats
	ctl               report.Control

	timeline      [][2]float64
	lastEver      int
	phase         string
	finalGood     int // non-reject sessions established when teardown began
	finalEst      int
	closing       int
	done          bool
	streamRR      int
	floodPrefix   byte
	floodEnd      time.Duration
	floodSent     uint64
	floodAnswered uint64

	tStart, tStatus, tEnd, tStream, tFlood, tFlush, tTeardown *timer.Timer
	streamBucket, floodBucket                                 *pace.Bucket

	// KernelDrops, when set, reads the socket's drop counter.
	KernelDrops func() uint64
	// OnFinish, when set, is called once the run is over.
	OnFinish func()
}

// New builds the engine and its sessions; nothing is sent before Start.
func New(cfg *Config, out Sender) *Engine {
	e := &Engine{
		cfg: cfg, sched: timer.New(), rnd: rand.New(rand.NewSource(cfg.Seed)), scratch: ppp.NewScratch(),
		txbuf: make([]byte, 0, 10240), out: out, base: cfg.MACBase.Uint64(), phase: PhaseSetup,
		failedReasons: map[string]uint64{}, flapReasons: map[string]uint64{}, reconnectFailures: map[string]uint64{},
		perr: map[string]uint64{},
	}
	for _, r := range session.KnownReasons {
		e.failedReasons[r] = 0
	}
	e.imp = impair.New(cfg.Impair, cfg.Seed^0x5eed, e.transmitControl)
	e.sessions = make([]*session.Session, cfg.Sessions)
	for i := 1; i <= cfg.Sessions; i++ {
		line := cfg.LineOf(i)
		pw := Expand(cfg.Password, i, line)
		if cfg.ExpectReject(i) {
			pw = WrongPassword(pw)
		}
		e.sessions[i-1] = session.New(i, cfg.MACOf(i), line, Expand(cfg.Username, i, line), pw, cfg.ExpectReject(i), &cfg.Session, e)
	}
	e.floodPrefix = 0xfe // locally administered, unicast; never our base
	if cfg.MACBase[0] == e.floodPrefix {
		e.floodPrefix = 0xfa
	}
	s := e.sched
	e.tStart = s.NewTimer(e.startSome)
	e.tStatus = s.NewTimer(e.status)
	e.tEnd = s.NewTimer(e.Stop)
	e.tStream = s.NewTimer(e.streamTick)
	e.tFlood = s.NewTimer(e.floodTick)
	e.tFlush = s.NewTimer(e.imp.Flush)
	e.tTeardown = s.NewTimer(e.forceClose)
	return e
}

// Sessions exposes the sessions (tests, report).
func (e *Engine) Sessions() []*session.Session { return e.sessions }

// Now is the engine's clock.
func (e *Engine) Now() time.Duration { return e.sched.Now() }

// Next is when the engine next needs Advance.
func (e *Engine) Next() (time.Duration, bool) { return e.sched.Next() }

// Advance moves the clock, running what is due.
func (e *Engine) Advance(now time.Duration) { e.sched.Advance(now) }

// Done reports the end of the run.
func (e *Engine) Done() bool { return e.done }

// Phase is the run's phase.
func (e *Engine) Phase() string { return e.phase }

// Start queues every session and starts the clocks.
func (e *Engine) Start() {
	now := e.sched.Now()
	e.queue = make([]int32, 0, e.cfg.Sessions)
	for i := 1; i <= e.cfg.Sessions; i++ {
		e.queue = append(e.queue, int32(i))
	}
	e.pending = e.cfg.Sessions
	e.starter = pace.New(e.cfg.Rate, e.cfg.Rate*0.02, now)
	e.tStart.Reset(0)
	e.tStatus.Reset(e.cfg.StatusInterval)
	if e.cfg.FloodPPS > 0 && e.cfg.FloodDuration > 0 {
		e.floodBucket = pace.New(e.cfg.FloodPPS, e.cfg.FloodPPS*0.02, now)
		e.floodEnd = now + e.cfg.FloodDuration
		e.tFlood.Reset(0)
	}
}

// ---- session starts ----

func (e *Engine) startSome() {
	if e.phase == PhaseTeardown || e.phase == PhaseFinished {
		return
	}
	now := e.sched.Now()
	for e.qhead < len(e.queue) {
		free := e.cfg.MaxOutstanding - e.outstanding
		if free <= 0 {
			return // a session reaching an outcome kicks us again
		}
		want := len(e.queue) - e.qhead
		if want > free {
			want = free
		}
		n := e.starter.Take(now, want)
		if n == 0 {
			wait := e.starter.Next()
			if wait < tick {
				wait = tick
			}
			e.tStart.Reset(wait)
			return
		}
		for ; n > 0; n-- {
			s := e.sessions[e.queue[e.qhead]-1]
			e.qhead++
			if !e.started {
				e.started, e.firstPADI = true, now
			}
			e.outstanding++
			s.Start()
		}
	}
	e.queue, e.qhead = e.queue[:0], 0
}

func (e *Engine) kick() {
	if e.qhead < len(e.queue) && !e.tStart.Active() {
		e.tStart.Reset(0)
	}
}

// ---- session.Env ----

// Sched implements session.Env.
func (e *Engine) Sched() *timer.Scheduler { return e.sched }

// Rand implements session.Env.
func (e *Engine) Rand() *rand.Rand { return e.rnd }

// Scratch implements session.Env.
func (e *Engine) Scratch() *ppp.Scratch { return e.scratch }

// TxBuf implements session.Env.
func (e *Engine) TxBuf() []byte { return e.txbuf[:0] }

// Stats implements session.Env.
func (e *Engine) Stats() *session.Stats { return &e.stats }

// ProtocolError implements session.Env.
func (e *Engine) ProtocolError(what string) { e.perr[what]++ }

// SendControl implements session.Env: control frames go through the
// impairments.
func (e *Engine) SendControl(frame []byte) {
	e.imp.Send(frame)
	if e.imp.Holding() && !e.tFlush.Active() {
		e.tFlush.Reset(reorderFlush)
	}
}

func (e *Engine) transmitControl(frame []byte) {
	e.ctl.Tx++
	if e.out.Send(frame) != nil {
		e.ctl.TxErrors++
	}
}

// SendData implements session.Env.
func (e *Engine) SendData(frame []byte) {
	e.ctl.DataTx++
	if e.out.Send(frame) != nil {
		e.ctl.TxErrors++
	}
}

// Established implements session.Env.
func (e *Engine) Established(s *session.Session) {
	e.outstanding--
	now := e.sched.Now()
	if s.Reconnecting() {
		e.reconnects++
	} else {
		e.pending--
		e.everEst++
		e.setupTimes = append(e.setupTimes, float64(s.SetupTime)/float64(time.Millisecond))
		e.lastEst = now
	}
	if s.ExpectReject {
		e.unexpectedAccepts++
	}
	s.EstSlot = len(e.est)
	e.est = append(e.est, s)
	e.kick()
	e.checkSetupDone()
}

func (e *Engine) removeEstablished(s *session.Session) {
	i := s.EstSlot
	if i < 0 || i >= len(e.est) || e.est[i] != s {
		return
	}
	last := len(e.est) - 1
	e.est[i] = e.est[last]
	e.est[i].EstSlot = i
	e.est[last] = nil
	e.est = e.est[:last]
	s.EstSlot = -1
}

// Failed implements session.Env.
func (e *Engine) Failed(s *session.Session, reason string) {
	e.outstanding--
	switch {
	case s.Reconnecting():
		e.reconnectFailures[reason]++
	case s.ExpectReject && reason == session.ReasonAuthRejected:
		e.pending--
		e.expectedRejects++
	default:
		e.pending--
		e.failed++
		e.failedReasons[reason]++
	}
	e.kick()
	e.checkSetupDone()
}

// Lost implements session.Env.
func (e *Engine) Lost(s *session.Session, reason string) {
	e.removeEstablished(s)
	e.flaps++
	e.flapReasons[reason]++
}

// Closed implements session.Env.
func (e *Engine) Closed(s *session.Session) {
	e.removeEstablished(s)
	if e.closing > 0 {
		e.closing--
		if e.closing == 0 && e.phase == PhaseTeardown {
			e.finish()
		}
	}
}

// ReadyToReconnect implements session.Env.
func (e *Engine) ReadyToReconnect(s *session.Session) {
	if e.phase == PhaseTeardown || e.phase == PhaseFinished {
		return
	}
	e.queue = append(e.queue, int32(s.Index))
	e.kick()
}

func (e *Engine) checkSetupDone() {
	if e.phase != PhaseSetup || e.pending > 0 {
		return
	}
	e.phase = PhaseRunning
	if e.cfg.StreamPPS > 0 {
		e.streamBucket = pace.New(e.cfg.StreamPPS, e.cfg.StreamPPS*0.02, e.sched.Now())
		e.tStream.Reset(0)
	}
	if !e.cfg.Hold {
		e.tEnd.Reset(e.cfg.Duration)
	}
}

// ---- receive path ----

func sameLine(a, b ethernet.Tags) bool {
	if a.N != b.N {
		return false
	}
	for i := 0; i < a.N; i++ {
		if a.Tag[i].TPID != b.Tag[i].TPID || a.Tag[i].VID() != b.Tag[i].VID() {
			return false
		}
	}
	return true
}

// byMAC finds the session whose MAC is dst.
func (e *Engine) byMAC(dst ethernet.MAC) *session.Session {
	i := dst.Uint64() - e.base
	if i < 1 || i > uint64(len(e.sessions)) {
		return nil
	}
	return e.sessions[i-1]
}

// HandleFrame processes one received frame (tags included).
func (e *Engine) HandleFrame(frame []byte) {
	var f ethernet.Frame
	if ethernet.Parse(frame, &f) != nil {
		return
	}
	if f.Type != ethernet.TypePPPoEDiscovery && f.Type != ethernet.TypePPPoESession {
		return
	}
	h, err := pppoe.Parse(f.Payload)
	if err != nil {
		e.perr["pppoe_malformed"]++
		return
	}
	control := f.Type == ethernet.TypePPPoEDiscovery
	if !control && len(h.Payload) >= 2 {
		control = ppp.Protocol(uint16(h.Payload[0])<<8 | uint16(h.Payload[1])).IsControl()
	}
	if control {
		if h.Code == pppoe.CodePADI || h.Code == pppoe.CodePADR {
			return // another client's (or our flood's) request
		}
		e.ctl.Rx++
		if e.imp.DropRx() {
			return
		}
	} else {
		e.ctl.DataRx++
	}
	if f.Type == ethernet.TypePPPoEDiscovery {
		e.discovery(&f, h)
		return
	}
	s := e.byMAC(f.Dst)
	if s == nil {
		return
	}
	if s.SessionID() == 0 || h.SessionID != s.SessionID() || f.Src != s.ACMAC() || h.Code != pppoe.CodeSession {
		// In flight when we ended the session (or before the PADS): not
		// the BNG's fault by itself, so not a protocol error.
		e.ctl.StaleRx++
		return
	}
	if !sameLine(f.Tags, s.Line) {
		e.perr["wrong_vlan"]++
		return
	}
	s.HandleSession(h.Payload)
}

func (e *Engine) discovery(f *ethernet.Frame, h pppoe.Header) {
	if e.floodBucket != nil && f.Dst[0] == e.floodPrefix && h.Code == pppoe.CodePADO {
		e.floodAnswered++
		return
	}
	var d pppoe.Discovery
	if err := pppoe.ParseDiscovery(h.Payload, &d); err != nil {
		e.perr["discovery_malformed"]++
		return
	}
	var s *session.Session
	switch h.Code {
	case pppoe.CodePADO, pppoe.CodePADS:
		// Host-Uniq is our demultiplexer during discovery (RFC 2516 5.1:
		// the AC must echo it); the destination MAC must agree.
		if idx, _, ok := session.DecodeHostUniq(d.HostUniq); ok && d.HasHostUniq {
			if idx < 1 || int(idx) > len(e.sessions) {
				e.perr["discovery_unknown_host_uniq"]++
				return
			}
			s = e.sessions[idx-1]
			if s.MAC != f.Dst {
				e.perr["discovery_wrong_destination"]++
				return
			}
		} else {
			e.perr["discovery_without_host_uniq"]++
			if s = e.byMAC(f.Dst); s == nil {
				return
			}
		}
	case pppoe.CodePADT:
		if s = e.byMAC(f.Dst); s == nil {
			return
		}
	default:
		e.perr["discovery_unknown_code"]++
		return
	}
	if !sameLine(f.Tags, s.Line) {
		e.perr["wrong_vlan"]++
		return
	}
	s.HandleDiscovery(f.Src, h, &d)
}

// ---- traffic ----

func (e *Engine) streamTick() {
	n := e.streamBucket.Take(e.sched.Now(), 1<<20)
	for ; n > 0 && len(e.est) > 0; n-- {
		e.streamRR++
		if e.streamRR >= len(e.est) {
			e.streamRR = 0
		}
		e.est[e.streamRR].SendStream(e.cfg.StreamTarget, e.cfg.StreamSize)
	}
	if e.phase == PhaseRunning {
		e.tStream.Reset(tick)
	}
}

func (e *Engine) floodTick() {
	now := e.sched.Now()
	if now >= e.floodEnd || e.phase == PhaseTeardown || e.phase == PhaseFinished {
		return
	}
	n := e.floodBucket.Take(now, 1<<20)
	for ; n > 0; n-- {
		var mac ethernet.MAC
		v := e.rnd.Uint64()
		mac = ethernet.MACFromUint64(v)
		mac[0] = e.floodPrefix
		line := ethernet.Untagged()
		if len(e.cfg.Lines) > 0 {
			line = e.cfg.Lines[int(e.floodSent)%len(e.cfg.Lines)]
		}
		b := ethernet.AppendHeader(e.txbuf[:0], ethernet.Broadcast, mac, line, ethernet.TypePPPoEDiscovery)
		b, off := pppoe.AppendHeader(b, pppoe.CodePADI, 0)
		b = pppoe.AppendTag(b, pppoe.TagServiceName, []byte(e.cfg.Session.ServiceName))
		var hu [floodHostUniq]byte
		for i := range hu {
			hu[i] = byte(v >> (8 * i))
		}
		b = pppoe.AppendTag(b, pppoe.TagHostUniq, hu[:])
		pppoe.SetLength(b, off)
		if e.out.Send(ethernet.Pad(b)) != nil {
			e.ctl.TxErrors++
		}
		e.floodSent++
	}
	e.tFlood.Reset(tick)
}

// ---- end of the run ----

// Stop begins the teardown (end of --duration, or a signal). A second Stop
// during the teardown gives up waiting.
func (e *Engine) Stop() {
	switch e.phase {
	case PhaseFinished:
		return
	case PhaseTeardown:
		e.forceClose()
		return
	}
	for _, s := range e.est {
		if !s.ExpectReject {
			e.finalGood++
		}
	}
	e.finalEst = len(e.est)
	e.phase = PhaseTeardown
	e.tStart.Stop()
	e.tStream.Stop()
	e.tFlood.Stop()
	e.tEnd.Stop()
	if e.cfg.NoTeardown {
		e.finish()
		return
	}
	e.closing = 0
	for _, s := range e.sessions {
		if s.Phase() != session.Done {
			e.closing++
		}
	}
	if e.closing == 0 {
		e.finish()
		return
	}
	e.tTeardown.Reset(e.cfg.TeardownWait)
	for _, s := range e.sessions {
		if s.Phase() != session.Done {
			s.Teardown()
		}
	}
}

// Abort ends the run at once, without teardown (the link failed).
func (e *Engine) Abort() {
	if e.phase != PhaseTeardown && e.phase != PhaseFinished {
		e.finalEst = len(e.est)
	}
	e.finish()
}

func (e *Engine) forceClose() {
	for _, s := range e.sessions {
		if s.Phase() != session.Done {
			s.ForceClose()
		}
	}
	e.finish()
}

func (e *Engine) finish() {
	if e.done {
		return
	}
	e.imp.Flush()
	e.phase = PhaseFinished
	e.done = true
	e.tStatus.Stop()
	e.tTeardown.Stop()
	e.tFlush.Stop()
	e.timeline = append(e.timeline, [2]float64{e.sched.Now().Seconds(), float64(e.everEst)})
	if e.OnFinish != nil {
		e.OnFinish()
	}
}

// ExitCode is 0 when every session outside the wrong-password class was
// established when the run ended (and none flapped, unless reconnecting
// is allowed), and no wrong password was accepted; 1 otherwise.
func (e *Engine) ExitCode() int {
	want := 0
	for i := 1; i <= e.cfg.Sessions; i++ {
		if !e.cfg.ExpectReject(i) {
			want++
		}
	}
	if e.finalGood == want && e.unexpectedAccepts == 0 && (e.cfg.Session.Reconnect || e.flaps == 0) &&
		(!e.cfg.Strict || len(e.perr) == 0) {
		return 0
	}
	return 1
}
