package storage

// Crash stops the log manager as a killed process stops: the background work
// (retention, flushes, checkpoints, the cleaner, delayed segment deletions) ends and
// every file is closed, but nothing more is written — no fsync, no index trim, no
// checkpoint, no clean-shutdown marker. Bytes already written stay, as the page cache
// keeps them after SIGKILL, so the next OpenLogManager on the dir recovers exactly as
// it would after the process was killed. The dir lock is released, so a new manager
// can open the dir in the same process. It is for in-process test clusters
// (kafkatest's Kill); the logs must no longer be in use (the broker stopped serving).
func (m *LogManager) Crash() {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return
	}
	m.mu.closed = true
	m.mu.Unlock()
	m.creations.Wait()
	m.stopMoves()
	close(m.stop)
	<-m.done
	<-m.cleanerDone
	for _, l := range m.Logs() {
		l.crash()
	}
	m.deleter.abandon()
	for _, ld := range m.dirs {
		ld.lockFile.Close()
	}
}

// crash marks the log closed and closes its files without flushing them.
func (l *Log) crash() {
	l.flushes.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return
	}
	l.mu.closed = true
	for _, s := range l.mu.segments {
		s.closeFiles()
	}
}

// abandon cancels every pending deletion that has not started (a killed process runs
// none; the next open removes the ".deleted" leftovers) and waits for those running.
func (d *deleter) abandon() {
	d.mu.Lock()
	ps := make([]*pendingDelete, 0, len(d.mu.pending))
	for p := range d.mu.pending {
		ps = append(ps, p)
	}
	d.mu.Unlock()
	for _, p := range ps {
		if p.timer.Stop() {
			p.once.Do(func() {
				d.mu.Lock()
				delete(d.mu.pending, p)
				d.mu.Unlock()
				d.wg.Done()
			})
		}
	}
	d.wg.Wait()
}
