package timer

import (
	"math/rand"
	"sort"
	"testing"
	"time"
)

func TestTimersFireInExpiryOrder(t *testing.T) {
	s := New()
	var fired []int
	r := rand.New(rand.NewSource(1))
	var want []int
	when := map[int]time.Duration{}
	for i := 0; i < 200; i++ {
		i := i
		d := time.Duration(r.Intn(1000)) * time.Millisecond
		when[i] = d
		s.NewTimer(func() { fired = append(fired, i) }).Reset(d)
		want = append(want, i)
	}
	sort.SliceStable(want, func(a, b int) bool { return when[want[a]] < when[want[b]] })
	s.Advance(2 * time.Second)
	if len(fired) != len(want) {
		t.Fatalf("fired %d timers, want %d", len(fired), len(want))
	}
	for k := range fired {
		if when[fired[k]] != when[want[k]] {
			t.Fatalf("timer %d fired at position %d out of order", fired[k], k)
		}
	}
	if s.Len() != 0 || s.Now() != 2*time.Second {
		t.Fatalf("len %d now %v", s.Len(), s.Now())
	}
}

func TestStopResetAndRearmFromCallback(t *testing.T) {
	s := New()
	n := 0
	var tm *Timer
	tm = s.NewTimer(func() {
		n++
		if n < 3 {
			tm.Reset(time.Second) // periodic: relative to this expiry
		}
	})
	tm.Reset(time.Second)
	other := s.NewTimer(func() { t.Fatal("stopped timer fired") })
	other.Reset(500 * time.Millisecond)
	if !other.Stop() || other.Stop() || other.Active() {
		t.Fatal("Stop should report armed once")
	}
	s.Advance(10 * time.Second)
	if n != 3 {
		t.Fatalf("periodic timer fired %d times, want 3", n)
	}
	// Reset of an armed timer moves it instead of adding a second arming.
	hits := 0
	x := s.NewTimer(func() { hits++ })
	x.Reset(time.Second)
	x.Reset(3 * time.Second)
	s.Advance(s.Now() + 2*time.Second)
	if hits != 0 || !x.Active() {
		t.Fatal("re-armed timer fired at its old expiry")
	}
	s.Advance(s.Now() + 2*time.Second)
	if hits != 1 || s.Len() != 0 {
		t.Fatalf("hits %d len %d", hits, s.Len())
	}
}

func TestNowDuringCallbackIsTheExpiry(t *testing.T) {
	s := New()
	var seen time.Duration
	s.NewTimer(func() { seen = s.Now() }).Reset(1500 * time.Millisecond)
	s.Advance(5 * time.Second)
	if seen != 1500*time.Millisecond {
		t.Fatalf("Now in callback = %v", seen)
	}
	if next, ok := s.Next(); ok {
		t.Fatalf("unexpected pending timer at %v", next)
	}
}
