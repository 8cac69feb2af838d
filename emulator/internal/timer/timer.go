// Package timer is the emulator's one clock: a binary heap of timers that a
// single goroutine advances. Tens of thousands of subscribers each have a
// handful of timers (PPP restart timer, discovery back-off, keepalive,
// setup deadline); a goroutine or runtime timer per timer would cost more
// than the protocol work, and one owner thread means the session state needs
// no locks.
//
// Time is a Duration since the scheduler started. The owner moves it forward
// with Advance: in production to the wall clock, in tests to whatever instant
// the test wants, so a test that covers a 30 s retransmission schedule runs
// in microseconds and is deterministic.
package timer

import "time"

// Scheduler holds the pending timers. It is not safe for concurrent use: the
// goroutine that calls Advance owns it, and the timers' callbacks run on it.
type Scheduler struct {
	now  time.Duration
	heap []*Timer
}

// Timer calls its function once when it expires. Reset re-arms it (also from
// inside its own callback); Stop disarms it. A Timer belongs to one Scheduler.
type Timer struct {
	s     *Scheduler
	when  time.Duration
	index int // position in s.heap, -1 when not armed
	fn    func()
}

// New returns an empty scheduler whose clock reads zero.
func New() *Scheduler { return &Scheduler{} }

// Now is the scheduler's current time.
func (s *Scheduler) Now() time.Duration { return s.now }

// Len is the number of armed timers.
func (s *Scheduler) Len() int { return len(s.heap) }

// NewTimer returns a disarmed timer that calls fn when it expires.
func (s *Scheduler) NewTimer(fn func()) *Timer {
	return &Timer{s: s, index: -1, fn: fn}
}

// Next reports when the earliest armed timer expires.
func (s *Scheduler) Next() (time.Duration, bool) {
	if len(s.heap) == 0 {
		return 0, false
	}
	return s.heap[0].when, true
}

// Advance moves the clock to t (never backwards), firing every timer due by
// then in expiry order; while a callback runs, Now reads that timer's expiry
// so that timers it arms are relative to the instant it represents.
func (s *Scheduler) Advance(t time.Duration) {
	for len(s.heap) > 0 && s.heap[0].when <= t {
		tm := s.heap[0]
		s.remove(tm)
		if tm.when > s.now {
			s.now = tm.when
		}
		tm.fn()
	}
	if t > s.now {
		s.now = t
	}
}

// Reset arms the timer to fire d after the scheduler's current time,
// replacing any earlier arming.
func (t *Timer) Reset(d time.Duration) {
	if d < 0 {
		d = 0
	}
	t.ResetAt(t.s.now + d)
}

// ResetAt arms the timer for the absolute scheduler time at.
func (t *Timer) ResetAt(at time.Duration) {
	s := t.s
	t.when = at
	if t.index >= 0 {
		s.fix(t.index)
		return
	}
	t.index = len(s.heap)
	s.heap = append(s.heap, t)
	s.up(t.index)
}

// Stop disarms the timer; it reports whether the timer was armed.
func (t *Timer) Stop() bool {
	if t.index < 0 {
		return false
	}
	t.s.remove(t)
	return true
}

// Active reports whether the timer is armed.
func (t *Timer) Active() bool { return t.index >= 0 }

// When is the expiry of an armed timer.
func (t *Timer) When() time.Duration { return t.when }

func (s *Scheduler) remove(t *Timer) {
	i := t.index
	last := len(s.heap) - 1
	if i != last {
		s.swap(i, last)
	}
	s.heap[last] = nil
	s.heap = s.heap[:last]
	t.index = -1
	if i != last {
		s.fix(i)
	}
}

func (s *Scheduler) fix(i int) {
	if !s.down(i) {
		s.up(i)
	}
}

func (s *Scheduler) less(i, j int) bool { return s.heap[i].when < s.heap[j].when }

func (s *Scheduler) swap(i, j int) {
	s.heap[i], s.heap[j] = s.heap[j], s.heap[i]
	s.heap[i].index = i
	s.heap[j].index = j
}

func (s *Scheduler) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !s.less(j, i) {
			break
		}
		s.swap(i, j)
		j = i
	}
}

func (s *Scheduler) down(i0 int) bool {
	i, n := i0, len(s.heap)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && s.less(r, l) {
			j = r
		}
		if !s.less(j, i) {
			break
		}
		s.swap(i, j)
		i = j
	}
	return i > i0
}
