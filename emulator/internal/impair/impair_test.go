package impair

import "testing"

func TestReorderSendsHeldFrameAfterTheNext(t *testing.T) {
	var out []byte
	im := New(Config{ReorderTx: 100}, 1, func(f []byte) { out = append(out, f[0]) })
	im.Send([]byte{1})
	if len(out) != 0 || !im.Holding() {
		t.Fatal("first frame not held")
	}
	im.Send([]byte{2}) // only one frame is held at a time
	if string(out) != "\x02\x01" || im.Holding() {
		t.Fatalf("order %v", out)
	}
	im.Send([]byte{3})
	im.Flush()
	if string(out) != "\x02\x01\x03" || im.Stats.ReorderedTx != 2 {
		t.Fatalf("after flush %v stats %+v", out, im.Stats)
	}
}

func TestDupAndDropRates(t *testing.T) {
	n := 0
	im := New(Config{DupTx: 10, DropRx: 30}, 42, func([]byte) { n++ })
	drops := 0
	for i := 0; i < 10000; i++ {
		im.Send([]byte{0})
		if im.DropRx() {
			drops++
		}
	}
	if n < 10800 || n > 11200 || drops < 2800 || drops > 3200 {
		t.Fatalf("sent %d (10%% dup of 10000), dropped %d (30%%)", n, drops)
	}
	if New(Config{}, 1, nil).DropRx() {
		t.Fatal("dropped with no impairment")
	}
}

func TestDropTxLosesFramesBeforeTheWire(t *testing.T) {
	var sent int
	im := New(Config{DropTx: 100}, 1, func([]byte) { sent++ })
	for i := 0; i < 10; i++ {
		im.Send([]byte{1})
	}
	if sent != 0 || im.Stats.DroppedTx != 10 {
		t.Fatalf("sent %d dropped %d, want 0 and 10", sent, im.Stats.DroppedTx)
	}
}
