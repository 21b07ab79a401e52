# gokafkad — see README.md.
GO      ?= go
PKGS    := ./...
FUZZTIME ?= 10s

.PHONY: run build test test-short vet fuzz soak bench compat chaos chaos-short clean

## run: start a single-node broker on 127.0.0.1:9092 with data in ./data
run: build
	./bin/gokafkad $(ARGS)

## build: build bin/gokafkad
build:
	$(GO) build -o bin/gokafkad ./cmd/gokafkad

## test: vet (gofmt and go vet), then every test with the race detector
test: vet
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## test-short: the tests without the race detector (quicker, for iterating)
test-short:
	$(GO) test -count=1 $(PKGS)

vet:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "not gofmt-clean (run gofmt -w):"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)

## fuzz: a short run of every fuzz target. Go's fuzzing coordinator can fail a target
## with a bare "context deadline exceeded" at the end of -fuzztime (a race of its own,
## no input written); such a run is said and the target run once more, and only a
## second failure, or any failure with an input written, fails.
fuzz:
	@set -e; out=$$(mktemp); trap 'rm -f $$out' EXIT; \
	for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; \
	    if ! $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg >$$out 2>&1; then \
	      cat $$out; \
	      if grep -q 'context deadline exceeded' $$out && ! grep -q 'Failing input written' $$out; then \
	        echo "== $$f: the fuzzing coordinator's deadline race (no input written); once more"; \
	        $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	      else exit 1; fi; \
	    else cat $$out; fi; \
	  done; \
	done

## soak: honest producers and consumers beside clients that send garbage, for 10 minutes
## (SOAKTIME=...); nothing acknowledged lost, the broker's memory flat
SOAKTIME ?= 10m
soak:
	GOKAFKAD_SOAK=$(SOAKTIME) $(GO) test -count=1 -v -timeout 60m -run '^TestSoak$$' ./integration

## bench: gokafkad and Apache Kafka side by side (throughput, latency, start-up, memory, TLS,
## compression, partitions, producer connections, record sizes; each figure the median of
## -rounds); writes BENCHMARKS.md, bench/results/ (raw.txt and the plots) and the README's
## bench block (needs Java 17+ and Maven for Kafka's jars; BENCHARGS=-kafka=false measures
## gokafkad alone, and BENCHARGS='-only tls,compression' some of the scenarios, writing nothing)
bench: build
	cd bench && $(GO) run . -bin ../bin/gokafkad $(if $(filter -kafka=false -only%,$(BENCHARGS)),,-out ../BENCHMARKS.md -readme ../README.md) $(BENCHARGS)

## compat: Kafka's CLI tools and stock clients against gokafkad and a reference Apache
## Kafka, side by side; writes COMPATIBILITY.md (needs Java 17+, Maven, kcat, node, python3)
compat:
	cd compat && $(GO) run . -repo .. -out ../COMPATIBILITY.md -readme ../README.md $(COMPATARGS)

## chaos: the fault campaign — real processes, one fault kind per run (kill -9, SIGSTOP,
## network partitions and controller splits in network namespaces and full disks on
## tmpfs and wall-clock steps when run as root, torn segment tails), Jepsen's Kafka
## checks afterwards; writes RELIABILITY.md (CHAOSARGS=-runs=20 for the full campaign,
## -faults=REGEXP, -replay=fault:seed, -merge=REPORT to keep an earlier report's rows)
chaos: build
	$(GO) run ./chaos -bin bin/gokafkad -out RELIABILITY.md $(CHAOSARGS)

## chaos-short: two fault kinds (kill-leader and, as root, isolate-broker, else
## pause-leader-long), two runs each, under ~3 minutes, writing nothing (CI runs it)
chaos-short: build
	$(GO) run ./chaos -bin bin/gokafkad -short $(CHAOSARGS)

clean:
	rm -rf bin
