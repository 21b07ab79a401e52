package protocol

import "testing"

// FuzzControlRecord feeds arbitrary bytes to the control record decoders, seeded with
// both markers. Decoding must never panic, and a marker built by EndTxnMarker must
// read back its type and coordinator epoch.
func FuzzControlRecord(f *testing.F) {
	f.Add(EndTxnMarker(7, 3, 11, true, 1000))
	f.Add(EndTxnMarker(7, 3, -1, false, 1000))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Batch(b).ControlType()
		_, _ = Batch(b).MarkerCoordinatorEpoch()
	})
}

func TestMarkerCoordinatorEpoch(t *testing.T) {
	for _, commit := range []bool{false, true} {
		b := Batch(EndTxnMarker(7, 3, 11, commit, 1000))
		typ, err := b.ControlType()
		want := ControlTypeAbort
		if commit {
			want = ControlTypeCommit
		}
		if err != nil || typ != want {
			t.Fatalf("ControlType = %d, %v; want %d", typ, err, want)
		}
		if e, err := b.MarkerCoordinatorEpoch(); err != nil || e != 11 {
			t.Fatalf("MarkerCoordinatorEpoch = %d, %v; want 11", e, err)
		}
	}
}
