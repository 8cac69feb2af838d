package pace

import (
	"testing"
	"time"
)

func TestRateOverTime(t *testing.T) {
	b := New(1000, 10, 0)
	total := 0
	for now := time.Duration(0); now <= time.Second; now += time.Millisecond {
		total += b.Take(now, 1<<30)
	}
	// 10 saved at start, then 1000 over the second.
	if total < 1005 || total > 1011 {
		t.Fatalf("took %d in one second at 1000/s", total)
	}
}

func TestBurstIsBounded(t *testing.T) {
	b := New(100, 5, 0)
	b.Take(0, 100)
	if n := b.Take(10*time.Second, 1000); n != 5 {
		t.Fatalf("after a 10 s stall took %d, want the burst of 5", n)
	}
	if b.Next() <= 0 || b.Next() > 10*time.Millisecond {
		t.Fatalf("next token in %v", b.Next())
	}
	if n := New(0, 0, 0).Take(0, 42); n != 42 {
		t.Fatal("unlimited bucket limited")
	}
}
