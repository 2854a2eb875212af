package oauth

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/ory/fosite"
)

// A cached request reads exactly as one decoded from its row, and what a
// caller changes in its copy never reaches the cache.
func TestDecodedRequestsCopy(t *testing.T) {
	sess := newSession()
	sess.OwnerID, sess.GrantID, sess.Subject = "own_1", "grt_1", "own_1"
	sess.SetExpiresAt(fosite.AccessToken, time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC))
	sess.Claims.Extra = map[string]any{"k": "v"}
	sess.Claims.Audience = []string{"https://fax.example/mcp"}
	sb, err := json.Marshal(sess)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(storedRequest{ID: "req_1", ClientID: "cli_1", GrantedScope: []string{"fax:read"},
		GrantedAudience: []string{"https://fax.example/mcp"}, Form: map[string][]string{"scope": {"fax:read"}}, Session: sb})
	if err != nil {
		t.Fatal(err)
	}
	decode := func() (storedRequest, *session) {
		var sr storedRequest
		s := newSession()
		if err := json.Unmarshal(raw, &sr); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(sr.Session, s); err != nil {
			t.Fatal(err)
		}
		sr.Session = nil
		return sr, s
	}
	d := newDecodedRequests()
	if _, _, ok := d.get("k1", raw); ok {
		t.Fatal("hit on an empty cache")
	}
	sr, s := decode()
	d.add("k1", raw, sr, s)
	s.Claims.Extra["k"], s.ExpiresAt[fosite.AccessToken], sr.GrantedScope[0] = "changed", time.Time{}, "changed"

	for range 2 {
		got, gs, ok := d.get("k1", raw)
		if !ok {
			t.Fatal("miss after add")
		}
		wantSR, wantS := decode()
		if !reflect.DeepEqual(got, wantSR) || !reflect.DeepEqual(gs, wantS) {
			t.Fatalf("cached = %+v %+v\nwant %+v %+v", got, gs.DefaultSession, wantSR, wantS.DefaultSession)
		}
		gs.Claims.Extra["k"], gs.ExpiresAt[fosite.AccessToken], got.GrantedScope[0], got.Form["scope"] = "x", time.Time{}, "x", nil
		gs.Claims.Audience[0] = "x"
	}
	// Other bytes under the same key are not this entry.
	if _, _, ok := d.get("k1", append([]byte(" "), raw...)); ok {
		t.Fatal("hit for other request bytes")
	}
}
