package mpp

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/machine"
)

// TestBinderCrossSDKVectors: the ids core gets from Binder are the ones
// every SDK of the draft computes.
func TestBinderCrossSDKVectors(t *testing.T) {
	for _, v := range crossSDKVectors {
		t.Run(v.name, func(t *testing.T) {
			c := machine.Challenge{Realm: v.realm, Method: v.method, Intent: v.intent,
				Request: json.RawMessage(v.request), Digest: v.digest, Opaque: v.opaque}
			if v.expires != "" {
				e, err := time.Parse(time.RFC3339, v.expires)
				if err != nil {
					t.Fatal(err)
				}
				c.Expires = e
			}
			id, err := Binder{}.Bind([]byte(v.secret), c)
			if err != nil || id != v.want {
				t.Fatalf("id = %s (%v), want %s", id, err, v.want)
			}
		})
	}
	for name, c := range map[string]machine.Challenge{
		"request no object": {Realm: "r", Method: "stripe", Intent: "charge", Request: json.RawMessage(`[1]`)},
		"method no token":   {Realm: "r", Method: "Stripe", Intent: "charge", Request: json.RawMessage(`{}`)},
		"no realm":          {Method: "stripe", Intent: "charge", Request: json.RawMessage(`{}`)},
	} {
		if id, err := (Binder{}).Bind(secret, c); err == nil {
			t.Errorf("%s: bound to %s", name, id)
		}
	}
	if _, err := (Binder{}).Bind(nil, machine.Challenge{Realm: "r", Method: "stripe", Intent: "charge", Request: json.RawMessage(`{}`)}); err == nil {
		t.Error("bound without a secret")
	}
}

// TestMachineChallengeRoundTrip: core's challenge rendered as a header and
// parsed back is the same challenge, with the same id; an empty opaque
// stays present and a nil one absent.
func TestMachineChallengeRoundTrip(t *testing.T) {
	for name, opaque := range map[string]map[string]string{"request_id": {"request_id": "r-1", "generation": "2"}, "empty": {}, "absent": nil} {
		s := sample()
		c := s.Machine()
		c.Opaque = opaque
		var err error
		if c.ID, err = (Binder{}).Bind(secret, c); err != nil {
			t.Fatal(err)
		}
		w := FromMachine(c)
		h, err := w.Header()
		if err != nil {
			t.Fatal(err)
		}
		chs, err := ParseChallenges([]string{h})
		if err != nil || len(chs) != 1 {
			t.Fatalf("%s: %v", name, err)
		}
		back := chs[0].Machine()
		if back.ID != c.ID || !back.Expires.Equal(c.Expires) || !reflect.DeepEqual(back.Opaque, c.Opaque) || back.Digest != c.Digest {
			t.Fatalf("%s: %+v, offered %+v", name, back, c)
		}
		if id, err := (Binder{}).Bind(secret, back); err != nil || id != c.ID {
			t.Fatalf("%s: parsed back binds to %s (%v)", name, id, err)
		}
	}
}
