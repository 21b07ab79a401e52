package storage

import "sync/atomic"

// move is a replica being moved to another log dir of this broker.
type move struct {
	dest *logDir
	// copied is the bytes of the future log so far.
	copied atomic.Int64
}

func (m *LogManager) resumeMoves(futures map[TopicPartition]*logDir) {}
func (m *LogManager) cancelMove(tp TopicPartition)                    {}
func (m *LogManager) stopMoves()                                      {}
