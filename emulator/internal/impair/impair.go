// Package impair makes the emulator a bad line on purpose, for robustness
// tests of the BNG: it drops received and transmitted control frames,
// duplicates and reorders transmitted ones. Data frames are never touched, so loss
// counters keep measuring the BNG, not us. Decisions come from their own
// seeded generator: the same --seed gives the same impairments.
package impair

import "math/rand"

// Config holds percentages (0-100).
type Config struct {
	DropRx    float64
	DropTx    float64
	DupTx     float64
	ReorderTx float64
}

// Active reports whether any impairment is configured.
func (c Config) Active() bool { return c.DropRx > 0 || c.DropTx > 0 || c.DupTx > 0 || c.ReorderTx > 0 }

// Stats counts what was done.
type Stats struct {
	DroppedRx   uint64
	DroppedTx   uint64
	DupTx       uint64
	ReorderedTx uint64
}

// Impairer applies a Config on the control-frame path.
type Impairer struct {
	cfg   Config
	rnd   *rand.Rand
	send  func([]byte)
	held  []byte
	hold  bool
	Stats Stats
}

// New returns an impairer that passes frames on to send.
func New(cfg Config, seed int64, send func([]byte)) *Impairer {
	return &Impairer{cfg: cfg, rnd: rand.New(rand.NewSource(seed)), send: send, held: make([]byte, 0, 2048)}
}

func (im *Impairer) roll(pct float64) bool { return pct > 0 && im.rnd.Float64()*100 < pct }

// DropRx decides whether a received control frame is dropped.
func (im *Impairer) DropRx() bool {
	if im.roll(im.cfg.DropRx) {
		im.Stats.DroppedRx++
		return true
	}
	return false
}

// Send transmits a control frame, perhaps twice, perhaps after the next
// one. The frame is copied when held back.
func (im *Impairer) Send(frame []byte) {
	if im.roll(im.cfg.DropTx) {
		im.Stats.DroppedTx++ // lost on the way to the BNG
		return
	}
	if !im.hold && im.roll(im.cfg.ReorderTx) {
		im.held = append(im.held[:0], frame...)
		im.hold = true
		im.Stats.ReorderedTx++
		return
	}
	im.send(frame)
	if im.roll(im.cfg.DupTx) {
		im.Stats.DupTx++
		im.send(frame)
	}
	im.Flush()
}

// Holding reports a frame waiting for the next one.
func (im *Impairer) Holding() bool { return im.hold }

// Flush sends the held-back frame now (the caller runs a short timer so a
// held frame is late, not lost, when no other frame follows).
func (im *Impairer) Flush() {
	if im.hold {
		im.hold = false
		im.send(im.held)
	}
}
