package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// controlPlane measures, on a running three-broker cluster, how long a created topic
// takes to have a leader in every broker's metadata, and how long after a SIGKILL of the
// partition's leader another broker reports a new leader (the controller fences a
// broker after broker.session.timeout.ms, 9 s by default in both). It kills a broker:
// run it last.
func controlPlane(c *cluster) (usable, election time.Duration, err error) {
	var per []*kgo.Client
	for _, s := range c.seeds {
		cl, err := kgo.NewClient(c.clientOptsFor([]string{s})...)
		if err != nil {
			return 0, 0, err
		}
		defer cl.Close()
		per = append(per, cl)
	}
	leaderOn := func(cl *kgo.Client, topic string) int32 {
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := cl.SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			return -1
		}
		resp := r.(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
			return -1
		}
		return resp.Topics[0].Partitions[0].Leader
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := kadm.NewClient(per[0]).CreateTopic(ctx, 1, 3, nil, "bench-usable"); err != nil {
		return 0, 0, err
	}
	for _, cl := range per {
		for leaderOn(cl, "bench-usable") < 0 {
			if ctx.Err() != nil {
				return 0, 0, ctx.Err()
			}
			time.Sleep(time.Millisecond)
		}
	}
	usable = time.Since(start)

	old := leaderOn(per[0], "bench-usable")
	if old < 1 || int(old) > len(c.brokers) {
		return usable, 0, fmt.Errorf("no leader for bench-usable")
	}
	c.brokers[old-1].kill()
	killed := time.Now()
	other := per[int(old)%len(per)] // a broker that stays up
	for {
		if l := leaderOn(other, "bench-usable"); l >= 1 && l != old {
			return usable, time.Since(killed), nil
		}
		if ctx.Err() != nil {
			return usable, 0, ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
}
