package partlog

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestFieldsOnEveryEvent: each event carries the topic and partition, as a derived
// zerolog logger's would, and a disabled level or a zero Logger logs nothing.
func TestFieldsOnEveryEvent(t *testing.T) {
	var buf strings.Builder
	base := zerolog.New(&buf).Level(zerolog.InfoLevel)
	l := New(&base, "orders", 7)
	l.Info().Int64("leo", 3).Msg("became leader")
	l.Debug().Msg("hidden")
	lg := l.Logger()
	lg.Warn().Msg("from a derived logger")
	Logger{}.Error().Msg("nowhere")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	for _, line := range lines {
		if !strings.Contains(line, `"topic":"orders"`) || !strings.Contains(line, `"partition":7`) {
			t.Errorf("line without the partition's fields: %s", line)
		}
	}
	if !strings.Contains(lines[0], `"leo":3`) || !strings.Contains(lines[0], `"message":"became leader"`) {
		t.Errorf("first line: %s", lines[0])
	}
}

// TestNoAllocationPerLogger: making one costs no heap (the point of the package).
func TestNoAllocationPerLogger(t *testing.T) {
	base := zerolog.Nop()
	topic := "orders"
	var sink Logger
	if n := testing.AllocsPerRun(100, func() { sink = New(&base, topic, 1) }); n != 0 {
		t.Fatalf("%v allocations per Logger, want 0", n)
	}
	_ = sink
}
