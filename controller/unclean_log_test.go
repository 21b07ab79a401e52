package controller

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestUncleanElectionWarningsBounded: an election from the ELR is clean and logs no
// warning; unclean elections of many partitions log the first maxUncleanWarnings one
// by one and the rest in a single line with their count.
func TestUncleanElectionWarningsBounded(t *testing.T) {
	var buf bytes.Buffer
	c := &Controller{log: zerolog.New(&buf)}
	const n = 25
	topic := &TopicImage{Name: "t", ID: TopicID{1}}
	var recs []Record
	for i := range n + 1 {
		p := PartitionImage{Replicas: []int32{1, 2, 3}, ISR: []int32{}, Leader: -1}
		leader := int32(2)
		if i == n {
			p.ELR = []int32{2} // the last one: elected from its ELR
		}
		topic.Partitions = append(topic.Partitions, p)
		recs = append(recs, Record{PartitionChange: &PartitionChangeRecord{TopicID: topic.ID, Partition: int32(i), Leader: &leader}})
	}
	img := &MetadataImage{Topics: map[string]*TopicImage{"t": topic}, TopicsByID: map[TopicID]*TopicImage{topic.ID: topic}}
	c.logUncleanElections(img, recs)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != maxUncleanWarnings+1 {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), maxUncleanWarnings+1, buf.String())
	}
	if !strings.Contains(lines[len(lines)-1], `"partitions":15`) {
		t.Errorf("summary line %q, want the 15 partitions not logged one by one", lines[len(lines)-1])
	}
	if strings.Contains(buf.String(), `"partition":25`) {
		t.Errorf("the ELR election was logged as unclean:\n%s", buf.String())
	}
}
