package storage

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gokafkad/gokafkad/protocol"
)

// checkDirLikeDumpLogSegments reads a closed partition directory independently of the
// implementation and applies the checks Kafka's DumpLogSegments applies with
// --index-sanity-check / --verify-index-only: every batch passes its CRC, segments are
// named by their base offset and follow each other, every offset index entry names the
// last offset of the batch at its position, every time index entry names the last
// offset of a batch whose max timestamp it holds, timestamps increase.
func checkDirLikeDumpLogSegments(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(-1)
	for _, en := range ents {
		name := en.Name()
		if !strings.HasSuffix(name, ".log") {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil || len(strings.TrimSuffix(name, ".log")) != 20 {
			t.Fatalf("bad segment name %q", name)
		}
		if base < next {
			t.Fatalf("segment %d overlaps the previous one (ends at %d)", base, next)
		}
		data, _ := os.ReadFile(filepath.Join(dir, name))
		type info struct {
			pos   int
			maxTs int64
		}
		byLast := map[int64]info{}
		for pos := 0; pos < len(data); {
			n := int(protocol.BatchSize(data[pos:]))
			if n < protocol.BatchHeaderSize || pos+n > len(data) {
				t.Fatalf("%s: torn batch at %d", name, pos)
			}
			b := protocol.Batch(data[pos : pos+n])
			if b.CheckHeader() != nil || b.CheckCRC() != nil || b.BaseOffset() < base {
				t.Fatalf("%s: bad batch at %d", name, pos)
			}
			byLast[b.LastOffset()] = info{pos, b.MaxTimestamp()}
			next = b.LastOffset() + 1
			pos += n
		}
		idx, _ := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(name, ".log")+".index"))
		if len(idx)%8 != 0 {
			t.Fatalf("%s.index length %d", name, len(idx))
		}
		prev := int64(-1)
		for i := 0; i < len(idx); i += 8 {
			off := base + int64(int32(binary.BigEndian.Uint32(idx[i:])))
			pos := int(int32(binary.BigEndian.Uint32(idx[i+4:])))
			if b, ok := byLast[off]; !ok || b.pos != pos || off <= prev {
				t.Fatalf("%s.index entry %d (%d at %d) does not match the log", name, i/8, off, pos)
			}
			prev = off
		}
		tidx, _ := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(name, ".log")+".timeindex"))
		if len(tidx)%12 != 0 {
			t.Fatalf("%s.timeindex length %d", name, len(tidx))
		}
		prevTs := int64(-1)
		for i := 0; i < len(tidx); i += 12 {
			ts := int64(binary.BigEndian.Uint64(tidx[i:]))
			off := base + int64(int32(binary.BigEndian.Uint32(tidx[i+8:])))
			if b, ok := byLast[off]; !ok || b.maxTs != ts || ts <= prevTs {
				t.Fatalf("%s.timeindex entry %d (%d at %d) does not match the log", name, i/12, ts, off)
			}
			prevTs = ts
		}
	}
}

func TestFilesPassDumpLogSegmentsChecks(t *testing.T) {
	cfg := testLogConfig()
	cfg.SegmentBytes = 3000
	cfg.IndexIntervalBytes = 200
	cfg.RetentionMs = -1
	e := newEnv(t, cfg)
	l := e.log()
	now := e.clock.Now().UnixMilli()
	// Timestamps that go back and forth, batches of varying size, a truncation, a
	// reopen, a DeleteRecords, more appends.
	for i := 0; i < 60; i++ {
		ts := now + int64((i*7919)%50)*10
		s := spec(1+i%4, ts)
		s.valueSize = 20 + (i*31)%90
		if _, err := l.AppendAsLeader(makeBatch(t, s), int32(i/20), e.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.TruncateTo(l.LogEndOffset() - 17); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	l = e.m.Log(tp0)
	appendN(t, l, 20, 3, 5, now+1000)
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.MaybeIncrementLogStartOffset(40); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Close(); err != nil {
		t.Fatal(err)
	}
	e.m = nil
	checkDirLikeDumpLogSegments(t, partDir(e))
	// And after a crash and recovery.
	e.open()
	appendN(t, e.m.Log(tp0), 10, 2, 6, now+2000)
	e.crash()
	e.open()
	e.m.Close()
	e.m = nil
	checkDirLikeDumpLogSegments(t, partDir(e))
}
