package controller

import (
	"errors"

	"github.com/gokafkad/gokafkad/storage"
)

var (
	errBadTopicID = errors.New("controller: bad topic id")
	// ErrStore is a failure to persist the metadata log; it is sticky.
	ErrStore = errors.New("controller: metadata log write failed")
	// ErrNotController is returned by writes on a controller that is not the active
	// one (not the Raft leader, or a leader still replaying its log): Kafka's
	// NOT_CONTROLLER.
	ErrNotController = errors.New("controller: not the active controller")
	// ErrBadRaftMessage is a Raft message not meant for this quorum member.
	ErrBadRaftMessage = errors.New("controller: bad raft message")
	// ErrClosed is returned by writes once the controller is closing.
	ErrClosed = errors.New("controller: closed")
)

// MetadataDirName is the metadata log's directory under the first log dir, as Kafka's.
const MetadataDirName = storage.MetadataLogDirName
