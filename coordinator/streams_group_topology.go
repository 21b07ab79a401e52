package coordinator

// A streams group's topology against the cluster's topics, as Kafka's
// streams.topics.InternalTopicManager.configureTopics: how many tasks each
// subtopology has (the most partitions among its source topics), how many partitions
// each repartition and changelog topic must have, and what is wrong — source topics
// missing, topics not copartitioned, internal topics missing (which the broker then
// creates) or with the wrong partition count. A group whose topology is not ready
// gets no tasks, and its members are told why in the heartbeat's Status list.

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams heartbeat status codes (StreamsGroupHeartbeatResponse's Status).
const (
	streamsStatusStaleTopology                int8 = 0
	streamsStatusMissingSourceTopics          int8 = 1
	streamsStatusIncorrectlyPartitionedTopics int8 = 2
	streamsStatusMissingInternalTopics        int8 = 3
	streamsStatusShutdownApplication          int8 = 4
)

// StreamsInternalTopic is a repartition or changelog topic the broker must create.
type StreamsInternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // 0: the broker default
	Configs           map[string]string
}

// InternalTopicCreator is optionally implemented by Metadata: it creates a streams
// group's missing internal topics, asynchronously (the coordinator must not wait on
// the controller under its shard lock).
type InternalTopicCreator interface {
	CreateInternalTopics(group string, topics []StreamsInternalTopic)
}

// configuredTopology is a topology resolved against the topics.
type configuredTopology struct {
	// Tasks is each subtopology's task count; nil unless Ready.
	Tasks map[string]int32
	// Ready: every topic exists, rightly partitioned.
	Ready  bool
	Status []kmsg.StreamsGroupHeartbeatResponseStatus
	// Create are the internal topics that are missing.
	Create []StreamsInternalTopic
	// Hash identifies the topics' metadata (names, ids, partition counts) it was
	// computed from; a change bumps the group epoch.
	Hash int64
	// partitions are the partition counts of every topic the topology names.
	partitions map[string]int32
}

func status(code int8, detail string) kmsg.StreamsGroupHeartbeatResponseStatus {
	s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	s.StatusCode, s.StatusDetail = code, detail
	return s
}

// configure resolves t against md.
func configure(t *streamsTopology, md Metadata) *configuredTopology {
	ct := &configuredTopology{partitions: map[string]int32{}}
	if t == nil {
		return ct
	}
	// The hash covers every topic the topology names, as they are now.
	var names []string
	for _, s := range t.Subtopologies {
		names = append(names, s.SourceTopics...)
		for _, r := range s.RepartitionSourceTopics {
			names = append(names, r.Name)
		}
		for _, c := range s.StateChangelogTopics {
			names = append(names, c.Name)
		}
	}
	sort.Strings(names)
	names = slices.Compact(names)
	h := fnv.New64a()
	for _, n := range names {
		np := md.NumPartitions(n)
		id := md.TopicID(n)
		fmt.Fprintf(h, "%s/%x/%d;", n, id, np)
	}
	ct.Hash = int64(h.Sum64())

	// 1. Source topics must exist.
	var missing []string
	for _, s := range t.Subtopologies {
		for _, n := range s.SourceTopics {
			if np := md.NumPartitions(n); np < 0 {
				missing = append(missing, n)
			} else {
				ct.partitions[n] = np
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		missing = slices.Compact(missing)
		ct.Status = append(ct.Status, status(streamsStatusMissingSourceTopics,
			fmt.Sprintf("Source topics %s are missing.", strings.Join(missing, ", "))))
		return ct
	}

	// 2. Repartition topics: explicit counts, else the task count of the subtopology
	// writing them, to a fixed point (Kafka's RepartitionTopics).
	repart := map[string]int32{}
	for _, s := range t.Subtopologies {
		for _, r := range s.RepartitionSourceTopics {
			if r.Partitions > 0 {
				repart[r.Name] = r.Partitions
			} else if _, ok := repart[r.Name]; !ok {
				repart[r.Name] = 0
			}
		}
	}
	tasksOf := func(s streamsSubtopology) int32 {
		var n int32
		for _, src := range s.SourceTopics {
			n = max(n, ct.partitions[src])
		}
		for _, r := range s.RepartitionSourceTopics {
			n = max(n, repart[r.Name])
		}
		return n
	}
	for changed := true; changed; {
		changed = false
		for _, s := range t.Subtopologies {
			n := tasksOf(s)
			if n == 0 {
				continue
			}
			for _, sink := range s.RepartitionSinkTopics {
				if cur, ok := repart[sink]; ok && cur < n && !explicitRepartition(t, sink) {
					repart[sink] = n
					changed = true
				}
			}
		}
	}
	// 3. Copartition groups: their source topics must have equal counts; their
	// repartition topics without an explicit count take that count.
	var notCopartitioned []string
	for _, s := range t.Subtopologies {
		for _, g := range s.CopartitionGroups {
			var src []string
			for _, i := range g.SourceTopics {
				if int(i) >= 0 && int(i) < len(s.SourceTopics) {
					src = append(src, s.SourceTopics[i])
				}
			}
			var want int32 = -1
			bad := false
			for _, n := range src {
				if want >= 0 && ct.partitions[n] != want {
					bad = true
				}
				want = max(want, ct.partitions[n])
			}
			if bad {
				notCopartitioned = append(notCopartitioned, src...)
				continue
			}
			for _, i := range g.RepartitionSourceTopics {
				if int(i) < 0 || int(i) >= len(s.RepartitionSourceTopics) {
					continue
				}
				r := s.RepartitionSourceTopics[i]
				if r.Partitions > 0 {
					if want >= 0 && r.Partitions != want {
						notCopartitioned = append(notCopartitioned, r.Name)
					}
					continue
				}
				if want < 0 {
					want = repart[r.Name]
				}
				repart[r.Name] = want
			}
		}
	}
	if len(notCopartitioned) > 0 {
		sort.Strings(notCopartitioned)
		ct.Status = append(ct.Status, status(streamsStatusIncorrectlyPartitionedTopics,
			fmt.Sprintf("Following topics are not copartitioned: [%s]", strings.Join(slices.Compact(notCopartitioned), ", "))))
		return ct
	}
	for name, n := range repart {
		if n <= 0 {
			ct.Status = append(ct.Status, status(streamsStatusIncorrectlyPartitionedTopics,
				"Failed to compute the number of partitions of repartition topic "+name+"."))
			return ct
		}
	}

	// 4. Tasks, changelog counts, and the internal topics as they must be.
	tasks := map[string]int32{}
	var wrong []string
	need := map[string]StreamsInternalTopic{}
	for _, s := range t.Subtopologies {
		tasks[s.ID] = tasksOf(s)
		for _, r := range s.RepartitionSourceTopics {
			need[r.Name] = internalTopic(r, repart[r.Name])
		}
		for _, c := range s.StateChangelogTopics {
			need[c.Name] = internalTopic(c, tasks[s.ID])
		}
	}
	var absent []string
	for _, name := range sortedKeys(need) {
		it := need[name]
		np := md.NumPartitions(name)
		switch {
		case np < 0:
			absent = append(absent, name)
			ct.Create = append(ct.Create, it)
		case np != it.Partitions:
			wrong = append(wrong, name)
		default:
			ct.partitions[name] = np
		}
	}
	if len(wrong) > 0 {
		ct.Status = append(ct.Status, status(streamsStatusIncorrectlyPartitionedTopics,
			fmt.Sprintf("Internal topics %s have the wrong number of partitions.", strings.Join(wrong, ", "))))
	}
	if len(absent) > 0 {
		ct.Status = append(ct.Status, status(streamsStatusMissingInternalTopics,
			fmt.Sprintf("Internal topics are missing: [%s]", strings.Join(absent, ", "))))
	}
	if len(ct.Status) == 0 {
		ct.Ready, ct.Tasks = true, tasks
	}
	return ct
}

func explicitRepartition(t *streamsTopology, name string) bool {
	for _, s := range t.Subtopologies {
		for _, r := range s.RepartitionSourceTopics {
			if r.Name == name && r.Partitions > 0 {
				return true
			}
		}
	}
	return false
}

func internalTopic(ti streamsTopicInfo, partitions int32) StreamsInternalTopic {
	it := StreamsInternalTopic{Name: ti.Name, Partitions: partitions, ReplicationFactor: ti.ReplicationFactor, Configs: map[string]string{}}
	for _, kv := range ti.Configs {
		it.Configs[kv.Key] = kv.Value
	}
	return it
}

// topologyFromRequest converts a heartbeat's topology.
func topologyFromRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) *streamsTopology {
	out := &streamsTopology{Epoch: t.Epoch}
	info := func(in []kmsg.TopicInfo) []streamsTopicInfo {
		var o []streamsTopicInfo
		for _, ti := range in {
			x := streamsTopicInfo{Name: ti.Topic, Partitions: ti.NumPartitions, ReplicationFactor: ti.ReplicationFactor}
			for _, c := range ti.Configs {
				x.Configs = append(x.Configs, keyValue{c.Key, c.Value})
			}
			o = append(o, x)
		}
		return o
	}
	for _, s := range t.Subtopologies {
		st := streamsSubtopology{
			ID: s.SubtopologyID, SourceTopics: append([]string{}, s.SourceTopics...),
			SourceTopicRegex:        append([]string{}, s.SourceTopicRegex...),
			StateChangelogTopics:    info(s.StateChangelogTopics),
			RepartitionSinkTopics:   append([]string{}, s.RepartitionSinkTopics...),
			RepartitionSourceTopics: info(s.RepartitionSourceTopics),
		}
		for _, g := range s.CopartitionGroups {
			st.CopartitionGroups = append(st.CopartitionGroups, streamsCopartitionGroup{
				SourceTopics: append([]int16{}, g.SourceTopics...), SourceTopicRegex: append([]int16{}, g.SourceTopicRegex...),
				RepartitionSourceTopics: append([]int16{}, g.RepartitionSourceTopics...)})
		}
		out.Subtopologies = append(out.Subtopologies, st)
	}
	return out
}

// equal compares two topologies as their records would (a topology record
// round-trips to an equal one).
func (t *streamsTopology) equal(o *streamsTopology) bool {
	if t == nil || o == nil {
		return t == o
	}
	a := sgRecord{Type: sgTopologyType, Topology: t}.encode().Value
	b := sgRecord{Type: sgTopologyType, Topology: o}.encode().Value
	return string(a) == string(b)
}

// sourcePartitions lists, for a task (subtopology, partition), the topic partitions
// it reads: its source and repartition source topics that have that partition, as
// Kafka's EndpointToPartitionsManager.
func (ct *configuredTopology) sourcePartitions(t *streamsTopology, subtopology string, p int32) []topicPartitionName {
	var out []topicPartitionName
	for _, s := range t.Subtopologies {
		if s.ID != subtopology {
			continue
		}
		for _, n := range s.SourceTopics {
			if p < ct.partitions[n] {
				out = append(out, topicPartitionName{n, p})
			}
		}
		for _, r := range s.RepartitionSourceTopics {
			if p < ct.partitions[r.Name] {
				out = append(out, topicPartitionName{r.Name, p})
			}
		}
	}
	return out
}

type topicPartitionName struct {
	topic     string
	partition int32
}
