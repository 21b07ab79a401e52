package server

// quotaRate is Kafka's Rate over a windowed sum (org.apache.kafka.common.metrics.stats
// Rate and SampledStat), the measure its ClientQuotaManager compares with a quota:
// samples+1 samples of one window each, a sample idle for samples × window
// forgotten, the rate being the sum of the samples over the time since the oldest one
// began — counted as at least samples-1 whole windows, so a client's first burst is
// not measured over a few milliseconds. Pure: time (ms) is passed in; not safe for
// concurrent use (quotaSensor locks it).
type quotaRate struct {
	samples []quotaSample
	current int
}

type quotaSample struct {
	start, lastEvent int64 // ms
	value            float64
}

// quotaWindow is quota.window.num and quota.window.size.seconds, in ms.
type quotaWindow struct {
	samples  int
	windowMs int64
}

func (r *quotaRate) currentSample(now int64) *quotaSample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, quotaSample{start: now, lastEvent: now})
	}
	return &r.samples[r.current]
}

// record adds v at now (SampledStat.record).
func (r *quotaRate) record(w quotaWindow, v float64, now int64) {
	s := r.currentSample(now)
	if now-s.start >= w.windowMs {
		r.current = (r.current + 1) % (w.samples + 1)
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, quotaSample{start: now, lastEvent: now})
		} else {
			r.samples[r.current] = quotaSample{start: now, lastEvent: now}
		}
		s = &r.samples[r.current]
	}
	s.value += v
	s.lastEvent = now
}

// purge forgets samples without events within the monitored window.
func (r *quotaRate) purge(w quotaWindow, now int64) {
	expire := int64(w.samples) * w.windowMs
	for i := range r.samples {
		if now-r.samples[i].lastEvent >= expire {
			r.samples[i] = quotaSample{start: now, lastEvent: now}
		}
	}
}

// windowSize is Rate.windowSize: the ms the rate is measured over.
func (r *quotaRate) windowSize(w quotaWindow, now int64) int64 {
	r.purge(w, now)
	r.currentSample(now)
	oldest := r.samples[0].start
	for _, s := range r.samples[1:] {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full, least := elapsed/w.windowMs, int64(w.samples-1); full < least {
		elapsed += (least - full) * w.windowMs
	}
	return max(elapsed, 1)
}

// measure is the rate per second at now, and the window it was measured over.
func (r *quotaRate) measure(w quotaWindow, now int64) (rate float64, windowMs int64) {
	windowMs = r.windowSize(w, now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	return sum / (float64(windowMs) / 1000), windowMs
}

// throttleMs is QuotaUtils.throttleTime: how long the client must be quiet for the
// rate to come back to bound; 0 within it.
func (r *quotaRate) throttleMs(w quotaWindow, bound float64, now int64) int64 {
	rate, windowMs := r.measure(w, now)
	if rate <= bound {
		return 0
	}
	return int64((rate-bound)/bound*float64(windowMs) + 0.5)
}
