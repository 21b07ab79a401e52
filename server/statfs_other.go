//go:build !linux

package server

// diskSpace is unknown (-1) off Linux.
func diskSpace(string) (total, usable int64) { return -1, -1 }
