package protocol

// UnregisterController (API key 94, v0, flexible; KIP-1312), which kmsg does not
// have yet: the request and response as Kafka 4.4's UnregisterControllerRequest.json
// and UnregisterControllerResponse.json lay them out, so the server decodes and
// answers key 94 like any kmsg request, and a franz-go client can send it with
// kgo.Client.Request. RequestForKey is kmsg.RequestForKey with these added.

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UnregisterControllerKey is UnregisterController's API key.
const UnregisterControllerKey = 94

// RequestForKey returns a new request for key, or nil for one this server cannot
// decode: kmsg's, and UnregisterController.
func RequestForKey(key int16) kmsg.Request {
	if key == UnregisterControllerKey {
		return new(UnregisterControllerRequest)
	}
	return kmsg.RequestForKey(key)
}

// NameForKey is kmsg.NameForKey, and UnregisterController.
func NameForKey(key int16) string {
	if key == UnregisterControllerKey {
		return "UnregisterController"
	}
	return kmsg.NameForKey(key)
}

// UnregisterControllerRequest asks the active controller to remove the registration
// of ControllerID (Admin.unregisterController, kafka-cluster unregister-controller).
type UnregisterControllerRequest struct {
	Version      int16
	ControllerID int32
}

func (*UnregisterControllerRequest) Key() int16                 { return UnregisterControllerKey }
func (*UnregisterControllerRequest) MaxVersion() int16          { return 0 }
func (v *UnregisterControllerRequest) SetVersion(version int16) { v.Version = version }
func (v *UnregisterControllerRequest) GetVersion() int16        { return v.Version }
func (*UnregisterControllerRequest) IsFlexible() bool           { return true }
func (*UnregisterControllerRequest) IsAdminRequest()            {}
func (v *UnregisterControllerRequest) ResponseKind() kmsg.Response {
	return &UnregisterControllerResponse{Version: v.Version}
}

// AppendTo appends the request body (no tagged fields of its own).
func (v *UnregisterControllerRequest) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, v.ControllerID)
	return kbin.AppendUvarint(dst, 0)
}

// ReadFrom decodes the body; unknown tagged fields are skipped.
func (v *UnregisterControllerRequest) ReadFrom(src []byte) error {
	b := kbin.Reader{Src: src}
	v.ControllerID = b.Int32()
	skipReaderTags(&b)
	return b.Complete()
}

// UnregisterControllerResponse is the answer: 0, or CONTROLLER_ID_NOT_REGISTERED,
// INVALID_REQUEST (the active controller's own id), NOT_CONTROLLER,
// CLUSTER_AUTHORIZATION_FAILED, with Kafka's message.
type UnregisterControllerResponse struct {
	Version        int16
	ThrottleMillis int32
	ErrorCode      int16
	ErrorMessage   *string
}

func (*UnregisterControllerResponse) Key() int16                 { return UnregisterControllerKey }
func (*UnregisterControllerResponse) MaxVersion() int16          { return 0 }
func (v *UnregisterControllerResponse) SetVersion(version int16) { v.Version = version }
func (v *UnregisterControllerResponse) GetVersion() int16        { return v.Version }
func (*UnregisterControllerResponse) IsFlexible() bool           { return true }
func (v *UnregisterControllerResponse) Throttle() (int32, bool)  { return v.ThrottleMillis, true }
func (v *UnregisterControllerResponse) SetThrottle(ms int32)     { v.ThrottleMillis = ms }
func (v *UnregisterControllerResponse) RequestKind() kmsg.Request {
	return &UnregisterControllerRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *UnregisterControllerResponse) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, v.ThrottleMillis)
	dst = kbin.AppendInt16(dst, v.ErrorCode)
	dst = kbin.AppendCompactNullableString(dst, v.ErrorMessage)
	return kbin.AppendUvarint(dst, 0)
}

// ReadFrom decodes the body; unknown tagged fields are skipped.
func (v *UnregisterControllerResponse) ReadFrom(src []byte) error {
	b := kbin.Reader{Src: src}
	v.ThrottleMillis = b.Int32()
	v.ErrorCode = b.Int16()
	v.ErrorMessage = b.CompactNullableString()
	skipReaderTags(&b)
	return b.Complete()
}

// skipReaderTags skips a tagged-field section; the reader fails on a size past its end.
func skipReaderTags(b *kbin.Reader) {
	for n := b.Uvarint(); n > 0 && b.Ok(); n-- {
		b.Uvarint() // tag
		b.Span(int(b.Uvarint()))
	}
}
