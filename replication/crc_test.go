package replication_test

import (
	"encoding/binary"

	"github.com/gokafkad/gokafkad/protocol"
)

func fixLengthAndCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	protocol.Batch(b).UpdateCRC()
	return b
}
