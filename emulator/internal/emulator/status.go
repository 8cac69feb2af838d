package emulator

import (
	"fmt"

	"p4bng/emulator/internal/report"
	"p4bng/emulator/internal/session"
)

// status runs every --status-interval: a timeline point, the stderr line,
// the status file.
func (e *Engine) status() {
	now := e.sched.Now()
	e.timeline = append(e.timeline, [2]float64{now.Seconds(), float64(e.everEst)})
	rate := float64(e.everEst-e.lastEver) / e.cfg.StatusInterval.Seconds()
	e.lastEver = e.everEst
	if e.cfg.Log != nil || e.cfg.StatusFile != "" {
		r := e.Report(e.cfg.ReportSessions && e.cfg.StatusFile != "")
		if e.cfg.Log != nil {
			fmt.Fprintln(e.cfg.Log, report.StatusLine(r, rate))
		}
		if e.cfg.StatusFile != "" {
			if err := report.WriteFile(e.cfg.StatusFile, r); err != nil && e.cfg.Log != nil {
				fmt.Fprintf(e.cfg.Log, "subemu: status file: %v\n", err)
			}
		}
	}
	e.tStatus.Reset(e.cfg.StatusInterval)
}

func copyCounts(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Report is the current state as the JSON report; withSessions adds the
// per-session list.
func (e *Engine) Report(withSessions bool) *report.Report {
	st := &e.stats
	established := len(e.est)
	if e.phase == PhaseTeardown || e.phase == PhaseFinished {
		established = e.finalEst // what was up when the run ended, not what is left mid-teardown
	}
	r := &report.Report{
		Requested:         e.cfg.Sessions,
		Established:       established,
		EverEstablished:   e.everEst,
		Failed:            e.failed,
		FailedReasons:     copyCounts(e.failedReasons),
		ExpectedRejects:   e.expectedRejects,
		UnexpectedAccepts: e.unexpectedAccepts,
		Flaps:             e.flaps,
		FlapReasons:       copyCounts(e.flapReasons),
		Reconnects:        e.reconnects,
		ReconnectFailures: copyCounts(e.reconnectFailures),
		SetupTimeMS:       report.Summarise(append([]float64(nil), e.setupTimes...)),
		Ping:              report.Ping{Sent: st.PingSent, Received: st.PingReceived, Answered: st.ICMPEchoAnswered},
		StreamUp:          report.StreamUp{Sent: st.StreamUpSent},
		Echo: report.Echo{RequestsAnswered: st.EchoRequestsAnswered, RequestsSent: st.EchoRequestsSent,
			RepliesReceived: st.EchoRepliesReceived},
		PADIFloodSent:     e.floodSent,
		PADIFloodAnswered: e.floodAnswered,
		Control:           e.ctl,
		ProtocolErrors:    copyCounts(e.perr),
		Events: map[string]uint64{
			"discovery_retransmissions":     st.DiscoveryRetransmissions,
			"discovery_restarts":            st.DiscoveryRestarts,
			"pap_retransmissions":           st.PAPRetransmissions,
			"chap_response_retransmissions": st.CHAPResponseRetransmitted,
			"implicit_auth_success":         st.ImplicitAuthSuccess,
			"ncp_renegotiations":            st.NCPRenegotiations,
			"oversize_skipped":              st.OversizeSkipped,
			"ipv4_reassembled":              st.IPv4Reassembled,
			"ipv4_reassembly_expired":       st.IPv4ReassemblyExpired,
			"ipv4_fragments_sent":           st.IPv4FragmentsSent,
		},
		Phase:    e.phase,
		ElapsedS: e.sched.Now().Seconds(),
	}
	r.Control.DroppedRx = e.imp.Stats.DroppedRx
	r.Control.DroppedTx = e.imp.Stats.DroppedTx
	r.Control.DupTx = e.imp.Stats.DupTx
	r.Control.ReorderedTx = e.imp.Stats.ReorderedTx
	r.EstablishedTimeline = append([][2]float64{}, e.timeline...)
	if e.everEst > 0 && e.lastEst > e.firstPADI {
		r.SetupRateCPS = float64(e.everEst) / (e.lastEst - e.firstPADI).Seconds()
	}
	if e.KernelDrops != nil {
		r.KernelDrops = e.KernelDrops()
	}
	r.StreamDown.UDPReceived = st.UDPReceived
	r.StreamDown.WrongSession = st.StreamDownWrongSession
	for _, s := range e.sessions {
		r.StreamDown.Received += s.StreamDown.Received
		r.StreamDown.Lost += s.StreamDown.Lost()
		r.StreamDown.Reordered += s.StreamDown.Reordered
		if s.StreamSilent() {
			r.StreamDown.SessionsSilent++
		}
	}
	if withSessions {
		r.Sessions = make([]report.Session, 0, len(e.sessions))
		for _, s := range e.sessions {
			r.Sessions = append(r.Sessions, sessionReport(s))
		}
	}
	return r
}

func sessionReport(s *session.Session) report.Session {
	sv, cv := s.Line.VIDs()
	if s.Line.N == 1 {
		cv = 0
	}
	ours, peer := s.Magic()
	out := report.Session{
		Index: s.Index, MAC: s.MAC.String(), Line: [2]uint16{sv, cv}, PPPoESessionID: s.LastSID,
		State: s.Phase().String(), Failure: s.Failure, FailureDetail: s.FailDetail, ACName: s.ACName(),
		DNS: []string{}, Username: s.Username, Auth: s.AuthMethod().String(), Magic: ours, PeerMagic: peer,
		ExpectReject: s.ExpectReject, UDPReceived: s.UDPReceived,
	}
	if s.EverUp {
		out.SetupMS = float64(s.SetupTime.Microseconds()) / 1000
	}
	if a := s.Address(); a.IsValid() && !a.IsUnspecified() {
		out.IPv4 = a.String()
	}
	for _, d := range s.DNS() {
		out.DNS = append(out.DNS, d.String())
	}
	if p := s.IPv6Prefix(); p.IsValid() {
		out.IPv6Prefix = p.String()
	}
	if a := s.SLAACAddress(); a.IsValid() {
		out.IPv6Address = a.String()
	}
	if p := s.DelegatedPrefix(); p.IsValid() {
		out.DelegatedPrefix = p.String()
	}
	return out
}

// WriteReport writes the final report (--report), with sessions when asked.
func (e *Engine) WriteReport() error {
	r := e.Report(e.cfg.ReportSessions)
	if e.cfg.ReportFile != "" {
		if err := report.WriteFile(e.cfg.ReportFile, r); err != nil {
			return err
		}
	}
	if e.cfg.StatusFile != "" {
		return report.WriteFile(e.cfg.StatusFile, r)
	}
	return nil
}

// FinalStatus is the last stderr line.
func (e *Engine) FinalStatus() string {
	return report.StatusLine(e.Report(false), 0)
}
