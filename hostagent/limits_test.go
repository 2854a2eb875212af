package hostagent_test

import (
	"net/http"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/hostagent"
)

// Register/device code are limited per host, execute per agent: 429
// rate_limited with Retry-After once the burst is spent.
func TestRateLimits(t *testing.T) {
	e := newEnv(t)
	w := e.owner("limits@example.com")
	h := w.createHost()
	ag := w.activeAgent(h, "get_credits") // one registration of the burst
	var r reply
	for range e.a.Svc.Kernel.Rate(core.LimitHostRegister).Burst {
		r = call(t, nil, http.MethodPost, e.api+hostagent.PathDeviceCode, map[string]any{"agent_id": "dag_nothing"}, bearer(h.jwt(nil)))
	}
	wantError(t, "register burst", r, 429, "rate_limited")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	for range e.a.Svc.Kernel.Rate(core.LimitAgentExecute).Burst {
		if r = ag.execute("get_credits", nil); r.status != 200 {
			t.Fatalf("within the burst: %d %s", r.status, r.raw)
		}
	}
	wantError(t, "execute burst", ag.execute("get_credits", nil), 429, "rate_limited")
}

// Malformed bodies and tokens are client errors, never a 500.
func TestMalformedRequests(t *testing.T) {
	e := newEnv(t)
	w := e.owner("malformed@example.com")
	h := w.createHost()
	ag := w.activeAgent(h, "get_credits")
	for _, body := range []string{"", "[]", "{", `{"capability":1}`, `{"capability":"get_credits","arguments":[]}`, `{"capability":"get_credits","capability":"get_credits"}`, `{"capability":"get_credits"} x`} {
		r := call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, body, bearer(ag.jwt(nil)))
		if r.status != 400 || r.str("error") == "" {
			t.Errorf("body %q: %d %s", body, r.status, r.raw)
		}
	}
	for _, tok := range []string{"Bearer", "Bearer x.y", "Basic abc", "Bearer eyJhbGciOiJFZERTQSJ9.e30.AAAA", "Bearer ..."} {
		r := call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, `{"capability":"get_credits"}`, http.Header{"Authorization": {tok}})
		if r.status != 401 || r.str("error") != "invalid_jwt" {
			t.Errorf("authorization %q: %d %s", tok, r.status, r.raw)
		}
	}
	r := call(t, nil, http.MethodGet, e.api+hostagent.PathCapabilityStat, nil, bearer(ag.jwt(nil)))
	wantError(t, "status without id", r, 400, "invalid_request")
	r = call(t, nil, http.MethodGet, e.api+hostagent.PathCapabilityStat+"?id=dsn_nothing", nil, bearer(ag.jwt(nil)))
	if r.status != 404 {
		t.Fatalf("unknown send: %d %s", r.status, r.raw)
	}
}
