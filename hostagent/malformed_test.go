package hostagent_test

import (
	"net/http"
	"testing"

	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/hostagent"
)

// TestMalformedIdentifiersRefusedBeforeLookup: a forged JWT whose iss or
// sub carries a NUL (or is not shaped like one of our ids) used to reach
// the host/agent lookup before its signature was checked, and PostgreSQL
// refused the NUL (SQLSTATE 22021): a 500. It is 401 invalid_jwt on every
// database (FAXHUB_TESTENV_POSTGRES runs this on PostgreSQL).
func TestMalformedIdentifiersRefusedBeforeLookup(t *testing.T) {
	e := newEnv(t)
	w := e.owner("malformed@example.com")
	h := w.createHost()
	a := w.activeAgent(h, "get_credits")
	forger := newKey(t)
	status := func(jwt string) reply {
		return call(t, nil, http.MethodGet, e.api+hostagent.PathStatus+"?agent_id="+a.id, nil, bearer(jwt))
	}
	execute := func(jwt string) reply {
		return call(t, nil, http.MethodPost, e.api+hostagent.PathExecute, map[string]any{"capability": "get_credits"}, bearer(jwt))
	}
	hostClaims := func(iss string) map[string]any { return h.claims(map[string]any{"iss": iss}) }
	agentClaims := func(iss, sub string) map[string]any {
		c := h.claims(map[string]any{"iss": iss})
		c["sub"] = sub
		return c
	}
	for _, c := range []struct {
		name string
		do   func() reply
	}{
		{"host JWT, NUL in iss", func() reply { return status(forger.jwt(t, "host+jwt", hostClaims("hst_\x00x"))) }},
		{"host JWT, NUL in a thumbprint-length iss", func() reply {
			return status(forger.jwt(t, "host+jwt", hostClaims("\x00"+h.key.tp[1:])))
		}},
		{"host JWT, control character in iss", func() reply { return status(forger.jwt(t, "host+jwt", hostClaims("hst_a\nb"))) }},
		{"host JWT, iss of another shape", func() reply { return status(forger.jwt(t, "host+jwt", hostClaims("own_someone"))) }},
		{"agent JWT, NUL in iss", func() reply { return execute(forger.jwt(t, "agent+jwt", agentClaims("hst_\x00", a.id))) }},
		{"agent JWT, NUL in sub", func() reply { return execute(forger.jwt(t, "agent+jwt", agentClaims(h.id, "dag_\x00x"))) }},
		{"agent JWT, NUL in both", func() reply { return execute(forger.jwt(t, "agent+jwt", agentClaims("\x00", "\x00"))) }},
		{"agent JWT, sub not an agent id", func() reply { return execute(forger.jwt(t, "agent+jwt", agentClaims(h.id, h.id))) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, c.name, c.do(), http.StatusUnauthorized, hosts.CodeInvalidJWT)
		})
	}
	// The real host and agent still pass.
	if r := status(h.jwt(nil)); r.status != http.StatusOK {
		t.Fatalf("the real host: %d %s", r.status, r.raw)
	}
	if r := a.execute("get_credits", nil); r.status != http.StatusOK {
		t.Fatalf("the real agent: %d %s", r.status, r.raw)
	}
}
