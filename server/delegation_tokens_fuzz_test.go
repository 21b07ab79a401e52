package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzDelegationTokenRequests decodes arbitrary bodies as each delegation-token
// request (38-41) at each version served, seeded with defaults and a forwarded
// request carrying requesterTag, and runs what the broker and the controller
// listener read from them: the requester tag, the owner, the error answers, the
// forwarded copy's encoding. Nothing may panic.
func FuzzDelegationTokenRequests(f *testing.F) {
	for key := int16(38); key <= 41; key++ {
		a := brokerAPIs.get(key)
		for v := a.min; v <= a.max; v++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			f.Add(key, v, req.AppendTo(nil))
			if t := tokenTags(req); t != nil && req.IsFlexible() {
				t.Set(requesterTag, []byte("User:alice"))
				f.Add(key, v, req.AppendTo(nil))
			}
		}
	}
	f.Fuzz(func(t *testing.T, key, v int16, body []byte) {
		a := brokerAPIs.get(key)
		if key < 38 || key > 41 || a == nil || v < a.min || v > a.max {
			return
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(v)
		if err := req.ReadFrom(body); err != nil {
			return
		}
		requester, _ := forwardedRequester(req)
		if r, ok := req.(*kmsg.CreateDelegationTokenRequest); ok {
			_ = tokenOwner(r, requester)
		}
		if resp := tokenError(req, requester, 1); resp != nil {
			_ = resp.AppendTo(nil)
		}
		if tags := tokenTags(req); tags != nil {
			tags.Set(requesterTag, []byte(requester))
			_ = req.AppendTo(nil)
		}
	})
}
