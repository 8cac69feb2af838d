package traffic

import "testing"

func TestPayloadRoundTrip(t *testing.T) {
	b := AppendPayload(nil, 40000, 1<<40, 123, 64)
	if len(b) != 64 {
		t.Fatalf("len %d", len(b))
	}
	s, q, ok := ParsePayload(b)
	if !ok || s != 40000 || q != 1<<40 {
		t.Fatalf("%d %d %v", s, q, ok)
	}
	if _, _, ok := ParsePayload(b[:HeaderLen-1]); ok {
		t.Fatal("short payload accepted")
	}
	if _, _, ok := ParsePayload([]byte("SUBEMX" + string(b[6:]))); ok {
		t.Fatal("bad magic accepted")
	}
}

func TestLossAndReordering(t *testing.T) {
	var tr SeqTracker
	for _, s := range []uint64{10, 11, 13, 12, 16, 17} { // 14, 15 lost; 12 late
		tr.Observe(s)
	}
	if tr.Received != 6 || tr.Reordered != 1 || tr.Lost() != 2 {
		t.Fatalf("received %d reordered %d lost %d", tr.Received, tr.Reordered, tr.Lost())
	}
	var empty SeqTracker
	if empty.Lost() != 0 {
		t.Fatal("loss without packets")
	}
}
