// Package report is the emulator's output: the JSON report (final, and the
// status file rewritten while it runs) and the one-line status on stderr.
// The JSON keys are an interface the lab's tests read; add keys, never
// rename them.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Report is the whole JSON document.
type Report struct {
	Requested           int               `json:"requested"`
	Established         int               `json:"established"`
	EverEstablished     int               `json:"ever_established"`
	Failed              int               `json:"failed"`
	FailedReasons       map[string]uint64 `json:"failed_reasons"`
	ExpectedRejects     int               `json:"expected_rejects"`
	UnexpectedAccepts   int               `json:"unexpected_accepts"`
	Flaps               uint64            `json:"flaps"`
	FlapReasons         map[string]uint64 `json:"flap_reasons"`
	Reconnects          uint64            `json:"reconnects"`
	ReconnectFailures   map[string]uint64 `json:"reconnect_failures"`
	SetupRateCPS        float64           `json:"setup_rate_cps"`
	SetupTimeMS         Percentiles       `json:"setup_time_ms"`
	EstablishedTimeline [][2]float64      `json:"established_timeline"`
	Ping                Ping              `json:"ping"`
	StreamUp            StreamUp          `json:"stream_up"`
	StreamDown          StreamDown        `json:"stream_down"`
	Echo                Echo              `json:"echo"`
	PADIFloodSent       uint64            `json:"padi_flood_sent"`
	PADIFloodAnswered   uint64            `json:"padi_flood_answered"`
	Control             Control           `json:"control"`
	ProtocolErrors      map[string]uint64 `json:"protocol_errors"`
	Events              map[string]uint64 `json:"events"`
	KernelDrops         uint64            `json:"kernel_drops"`
	Phase               string            `json:"phase"`
	ElapsedS            float64           `json:"elapsed_s"`
	Sessions            []Session         `json:"sessions,omitempty"`
}

// Percentiles of setup times.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

// Ping counts our pings.
type Ping struct {
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	Answered uint64 `json:"answered"` // echo requests from the core side we replied to
}

// StreamUp counts the upstream stream.
type StreamUp struct {
	Sent uint64 `json:"sent"`
}

// StreamDown counts UDP received on session addresses.
type StreamDown struct {
	Received     uint64 `json:"received"`
	Lost         uint64 `json:"lost"`
	Reordered    uint64 `json:"reordered"`
	UDPReceived  uint64 `json:"udp_received"` // all UDP, also without our payload format
	WrongSession uint64 `json:"wrong_session"`
	// Sessions that sent session.SilentAfter stream packets or more and
	// received none: with a reflecting core, black-holed sessions (their
	// loss is not in Lost, which counts gaps between packets received).
	SessionsSilent uint64 `json:"sessions_silent"`
}

// Echo counts LCP keepalives.
type Echo struct {
	RequestsAnswered uint64 `json:"requests_answered"`
	RequestsSent     uint64 `json:"requests_sent"`
	RepliesReceived  uint64 `json:"replies_received"`
}

// Control counts PPPoE discovery and PPP control frames.
type Control struct {
	Tx          uint64 `json:"tx"`
	Rx          uint64 `json:"rx"`
	DroppedRx   uint64 `json:"dropped_rx"`
	DroppedTx   uint64 `json:"dropped_tx"`
	DupTx       uint64 `json:"dup_tx"`
	ReorderedTx uint64 `json:"reordered_tx"`
	DataTx      uint64 `json:"data_tx"`
	DataRx      uint64 `json:"data_rx"`
	TxErrors    uint64 `json:"tx_errors"`
	StaleRx     uint64 `json:"stale_rx"` // session frames for a session we do not (or no longer) have
}

// Session is one subscriber in the report (--report-sessions).
type Session struct {
	Index           int       `json:"index"`
	MAC             string    `json:"mac"`
	Line            [2]uint16 `json:"line"`
	PPPoESessionID  uint16    `json:"pppoe_session_id"`
	State           string    `json:"state"`
	Failure         string    `json:"failure,omitempty"`
	FailureDetail   string    `json:"failure_detail,omitempty"`
	ACName          string    `json:"ac_name,omitempty"`
	IPv4            string    `json:"ipv4"`
	DNS             []string  `json:"dns"`
	IPv6Address     string    `json:"ipv6_address,omitempty"`
	IPv6Prefix      string    `json:"ipv6_prefix"`
	DelegatedPrefix string    `json:"delegated_prefix"`
	Username        string    `json:"username"`
	Auth            string    `json:"auth"`
	Magic           uint32    `json:"magic"`
	PeerMagic       uint32    `json:"peer_magic"`
	SetupMS         float64   `json:"setup_ms"`
	ExpectReject    bool      `json:"expect_reject,omitempty"`
	UDPReceived     uint64    `json:"udp_received,omitempty"`
}

// Percentile returns the p-quantile (0..1) of sorted values by the
// nearest-rank method; 0 for none.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p*float64(len(sorted))+0.999999999) - 1
	if rank < 0 {
		rank = 0
	}
	if rank >= len(sorted) {
		rank = len(sorted) - 1
	}
	return sorted[rank]
}

// Summarise fills p50/p95/max from unsorted values (sorted in place).
func Summarise(v []float64) Percentiles {
	sort.Float64s(v)
	if len(v) == 0 {
		return Percentiles{}
	}
	return Percentiles{P50: Percentile(v, 0.50), P95: Percentile(v, 0.95), Max: v[len(v)-1]}
}

// WriteFile writes the report atomically (a reader polling the file never
// sees half of it): a temporary file in the same directory, then rename.
func WriteFile(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// StatusLine is the one-line progress report; intervalRate is sessions
// established per second over the last interval.
func StatusLine(r *Report, intervalRate float64) string {
	return fmt.Sprintf("[subemu %7.1fs] %-9s established %d/%d failed %d rejected %d  setup %.0f/s (avg %.0f/s)  flaps %d  ping %d/%d  stream tx %d rx %d lost %d silent %d  ctl tx %d rx %d",
		r.ElapsedS, r.Phase, r.Established, r.Requested, r.Failed, r.ExpectedRejects, intervalRate, r.SetupRateCPS,
		r.Flaps, r.Ping.Received, r.Ping.Sent, r.StreamUp.Sent, r.StreamDown.Received, r.StreamDown.Lost, r.StreamDown.SessionsSilent,
		r.Control.Tx, r.Control.Rx)
}
