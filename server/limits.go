package server

// limits is the broker's state for the bounds of issue 11: recovered panics, and
// (below) connection quotas, the request memory budget and in-flight requests.
type limits struct {
	panics panicCounter
}
