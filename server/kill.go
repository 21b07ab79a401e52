package server

// Kill stops the node as SIGKILL stops a process, for in-process test clusters
// (kafkatest): no controlled shutdown (the controller learns of the loss only when the
// broker's session times out, broker.session.timeout.ms), every listener and
// connection is closed at once, and the logs are abandoned without a flush,
// checkpoint or clean-shutdown marker (storage.LogManager.Crash), so the next Start on
// the same log dir runs recovery as after a crash. The controller's metadata log is
// closed (its records are synced as they are written). Kill after Close, or Close
// after Kill, does nothing; a Kill while Close runs may still skip the clean log close.
// Requests already being handled may finish, as if the kill came a moment later; their
// answers are not sent (the connections are closed).
func (b *Broker) Kill() {
	b.killed.Store(true)
	b.Close()
}
