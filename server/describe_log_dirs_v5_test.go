package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDescribeLogDirsV5: v5, as kmsg encodes it over a socket, answers the broker's
// one directory with IsCordoned false (as Kafka 4.4 with the default, empty
// cordoned.log.dirs); the key is listed by DescribeConfigs with its default, and
// setting it is refused (as any invalid broker config value), since gokafkad cannot cordon.
func TestDescribeLogDirsV5(t *testing.T) {
	b := startTestBroker(t, nil)
	c := dialRaw(t, b.Addr(), "v5")
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 5
	resp := c.roundTrip(req).(*kmsg.DescribeLogDirsResponse)
	abs, _ := filepath.Abs(b.cfg.logDir())
	if resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
		t.Fatalf("v5: error %d, %d dirs", resp.ErrorCode, len(resp.Dirs))
	}
	if d := resp.Dirs[0]; d.ErrorCode != 0 || d.Dir != abs || d.IsCordoned || d.TotalBytes <= 0 {
		t.Fatalf("v5 dir: %+v, want %s, not cordoned, with its size", d, abs)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dirs, err := adm.DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := dirs[abs]; !ok || d.Err != nil || d.IsCordoned {
		t.Fatalf("kadm: %+v", dirs)
	}

	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On("1", nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, cfg := range rc.Configs {
		if cfg.Key == "cordoned.log.dirs" {
			found = true
			if cfg.MaybeValue() != "" || cfg.Source != kmsg.ConfigSourceDefaultConfig {
				t.Errorf("cordoned.log.dirs described as %+v, want the empty default", cfg)
			}
		}
	}
	if !found {
		t.Error("DescribeConfigs does not list cordoned.log.dirs")
	}
	star := "*"
	alt, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "cordoned.log.dirs", Value: &star}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(alt) != 1 || alt[0].Err == nil || !strings.Contains(alt[0].ErrMessage, "cordoned.log.dirs") {
		t.Fatalf("setting cordoned.log.dirs=*: %+v, want it refused", alt)
	}
}
