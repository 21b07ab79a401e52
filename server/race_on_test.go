//go:build race

package server

// raceEnabled: the race detector multiplies memory, so RSS bounds are not checked.
const raceEnabled = true
