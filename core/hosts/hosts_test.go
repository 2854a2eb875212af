package hosts_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestParsePublicJWK(t *testing.T) {
	// RFC 8037 Appendix A.2/A.3: the key and its RFC 7638 thumbprint.
	const x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	k, err := hosts.ParsePublicJWK(json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"k1","use":"sig","alg":"EdDSA","extra":[1]}`))
	if err != nil {
		t.Fatal(err)
	}
	if k.Thumbprint != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" || k.JSON != `{"crv":"Ed25519","kty":"OKP","x":"`+x+`"}` || len(k.Key) != 32 {
		t.Fatalf("parsed = %+v", k)
	}
	for _, tc := range []struct{ name, jwk string }{
		{"empty", ``},
		{"null", `null`},
		{"not an object", `"key"`},
		{"array", `[]`},
		{"private part", `{"kty":"OKP","crv":"Ed25519","x":"` + x + `","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}`},
		{"RSA", `{"kty":"RSA","n":"abc","e":"AQAB"}`},
		{"EC", `{"kty":"EC","crv":"P-256","x":"` + x + `","y":"` + x + `"}`},
		{"X25519", `{"kty":"OKP","crv":"X25519","x":"` + x + `"}`},
		{"kty not a string", `{"kty":1,"crv":"Ed25519","x":"` + x + `"}`},
		{"no x", `{"kty":"OKP","crv":"Ed25519"}`},
		{"short x", `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg"}`},
		{"padded x", `{"kty":"OKP","crv":"Ed25519","x":"` + x + `="}`},
		{"std base64 x", `{"kty":"OKP","crv":"Ed25519","x":"` + strings.ReplaceAll(x, "_", "/") + `"}`},
		{"wrong alg", `{"kty":"OKP","crv":"Ed25519","x":"` + x + `","alg":"HS256"}`},
		{"too large", `{"kty":"OKP","crv":"Ed25519","x":"` + x + `","pad":"` + strings.Repeat("a", 3000) + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hosts.ParsePublicJWK(json.RawMessage(tc.jwk))
			testenv.WantCode(t, err, hosts.CodeInvalidPublicKey)
		})
	}
}

func TestCreateHostRules(t *testing.T) {
	e, _ := testenv.Clocked(t)
	owner := e.OwnerA.ID
	h := newHost(t, e, hosts.CapGetCredits)
	v := register(t, e, h, hosts.CapValidateFax)
	agentKey := json.RawMessage(v.Agent.PublicKey)
	for _, tc := range []struct {
		name string
		r    hosts.CreateRequest
		code string
	}{
		{"no name", hosts.CreateRequest{Name: "  "}, core.CodeInvalidRequest},
		{"long name", hosts.CreateRequest{Name: strings.Repeat("x", 101)}, core.CodeInvalidRequest},
		{"unknown capability", hosts.CreateRequest{Name: "x", DefaultCapabilities: []hosts.Capability{"delete_everything"}}, hosts.CodeUnknownCapability},
		{"bad key", hosts.CreateRequest{Name: "x", PublicKey: json.RawMessage(`{"kty":"RSA"}`)}, hosts.CodeInvalidPublicKey},
		{"another host's key", hosts.CreateRequest{Name: "x", PublicKey: json.RawMessage(*h.PublicKey)}, hosts.CodeHostKeyInUse},
		{"an agent's key", hosts.CreateRequest{Name: "x", PublicKey: agentKey}, hosts.CodeHostKeyInUse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Svc.Hosts.Create(ctx, owner, tc.r)
			testenv.WantCode(t, err, tc.code)
		})
	}
	// Defaults are deduplicated in documentation order; with a key the host
	// is active at once.
	hc, err := e.Svc.Hosts.Create(ctx, owner, hosts.CreateRequest{Name: " Box ", PublicKey: newJWK(t),
		DefaultCapabilities: []hosts.Capability{hosts.CapGetCredits, hosts.CapValidateFax, hosts.CapGetCredits}})
	if err != nil || hc.EnrollmentToken != "" || hc.Host.Status != hosts.Active || hc.Host.Name != "Box" ||
		!slices.Equal(hc.Host.DefaultCapabilities, []hosts.Capability{hosts.CapValidateFax, hosts.CapGetCredits}) {
		t.Fatalf("create = %+v, %v", hc, err)
	}
	// The limiter is shared with every replica: a burst, then 429.
	var last error
	for range 12 {
		if _, last = e.Svc.Hosts.Create(ctx, e.OwnerB.ID, hosts.CreateRequest{Name: "x"}); last != nil {
			break
		}
	}
	testenv.WantCode(t, last, core.CodeRateLimited)
}

func TestEnrollHost(t *testing.T) {
	e, clk := testenv.Clocked(t)
	create := func() *hosts.Created {
		t.Helper()
		hc, err := e.Svc.Hosts.Create(ctx, e.OwnerA.ID, hosts.CreateRequest{Name: "Server"})
		if err != nil {
			t.Fatal(err)
		}
		if hc.Host.Status != hosts.PendingEnrollment || !strings.HasPrefix(hc.EnrollmentToken, core.SecretHostEnrollment) {
			t.Fatalf("create = %+v", hc)
		}
		return hc
	}
	hc := create()
	// Until enrolled the host cannot sign anything.
	_, err := e.Svc.Hosts.HostForJWT(ctx, hc.Host.ID)
	testenv.WantCode(t, err, hosts.CodeInvalidJWT)
	// A bad key, or a key in use, does not consume the token.
	_, err = e.Svc.Hosts.Enroll(ctx, hc.EnrollmentToken, json.RawMessage(`{"kty":"OKP"}`), "")
	testenv.WantCode(t, err, hosts.CodeInvalidPublicKey)
	taken := newHost(t, e)
	_, err = e.Svc.Hosts.Enroll(ctx, hc.EnrollmentToken, json.RawMessage(*taken.PublicKey), "")
	testenv.WantCode(t, err, hosts.CodeHostKeyInUse)
	key := newJWK(t)
	h, err := e.Svc.Hosts.Enroll(ctx, hc.EnrollmentToken, key, " Renamed ")
	if err != nil || h.ID != hc.Host.ID || h.Status != hosts.Active || h.Name != "Renamed" {
		t.Fatalf("enroll = %+v, %v", h, err)
	}
	// The thumbprint names the host as well as its id.
	if got, err := e.Svc.Hosts.HostForJWT(ctx, parseJWK(t, key).Thumbprint); err != nil || got.ID != h.ID {
		t.Fatalf("by thumbprint = %+v, %v", got, err)
	}
	// Used, unknown, expired, revoked: one refusal.
	_, err = e.Svc.Hosts.Enroll(ctx, hc.EnrollmentToken, newJWK(t), "")
	testenv.WantCode(t, err, agents.CodeInvalidEnrollment)
	_, err = e.Svc.Hosts.Enroll(ctx, core.SecretHostEnrollment+"nope", newJWK(t), "")
	testenv.WantCode(t, err, agents.CodeInvalidEnrollment)
	expired := create()
	revoked := create()
	if err := e.Svc.Hosts.Revoke(ctx, e.OwnerA.ID, revoked.Host.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Hosts.Enroll(ctx, revoked.EnrollmentToken, newJWK(t), "")
	testenv.WantCode(t, err, agents.CodeInvalidEnrollment)
	clk.Advance(hosts.EnrollmentTTL)
	_, err = e.Svc.Hosts.Enroll(ctx, expired.EnrollmentToken, newJWK(t), "")
	testenv.WantCode(t, err, agents.CodeInvalidEnrollment)
}

func TestHostsListRevokeAndJWTIDs(t *testing.T) {
	e, clk := testenv.Clocked(t)
	h := newHost(t, e)
	v := register(t, e, h, hosts.CapGetCredits)
	_, err := e.Svc.Hosts.HostForJWT(ctx, "hst_unknown")
	testenv.WantCode(t, err, hosts.CodeInvalidJWT)
	_, err = e.Svc.Hosts.HostForJWT(ctx, "")
	testenv.WantCode(t, err, hosts.CodeInvalidJWT)
	list, err := e.Svc.Hosts.List(ctx, e.OwnerA.ID)
	if err != nil || len(list) != 1 || len(list[0].Agents) != 1 || list[0].Agents[0].ID != v.Agent.ID {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if other, _ := e.Svc.Hosts.List(ctx, e.OwnerB.ID); len(other) != 0 {
		t.Fatal("owner B lists owner A's hosts")
	}
	// Another owner cannot revoke it; revoking twice is fine.
	testenv.WantCode(t, e.Svc.Hosts.Revoke(ctx, e.OwnerB.ID, h.ID), hosts.CodeHostNotFound)
	if err := e.Svc.Hosts.Revoke(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Hosts.Revoke(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Hosts.DelegatedAgentForJWT(ctx, &list[0].Host, v.Agent.ID)
	testenv.WantCode(t, err, hosts.CodeAgentRevoked)
	list, _ = e.Svc.Hosts.List(ctx, e.OwnerA.ID)
	if list[0].Host.Status != hosts.Revoked || list[0].Agents[0].Status != hosts.AgentRevoked {
		t.Fatalf("after revoke: %+v", list[0])
	}

	// jti: once per issuer while remembered.
	exp := clk.Now().Add(hosts.JWTMaxLifetime + hosts.JWTSkew)
	for _, tc := range []struct {
		name, iss, jti string
		code           string
	}{
		{"fresh", "hst_a", "j1", ""},
		{"replayed", "hst_a", "j1", hosts.CodeJWTReplayed},
		{"other issuer", "hst_b", "j1", ""},
		{"empty jti", "hst_a", "", hosts.CodeInvalidJWT},
		{"long jti", "hst_a", strings.Repeat("j", 256), hosts.CodeInvalidJWT},
		{"longest jti", "hst_a", strings.Repeat("j", 255), ""},
	} {
		err := e.Svc.Hosts.AcceptJWT(ctx, hosts.JWTUse{Host: &hosts.Host{ID: tc.iss}, JTI: tc.jti, Expires: exp})
		if tc.code == "" && err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		} else if tc.code != "" {
			testenv.WantCode(t, err, tc.code)
		}
	}
	clk.Advance(hosts.JWTMaxLifetime + hosts.JWTSkew + time.Second)
	if err := e.Svc.Hosts.AcceptJWT(ctx, hosts.JWTUse{Host: &hosts.Host{ID: "hst_a"}, JTI: "j1", Expires: clk.Now().Add(time.Minute)}); err != nil {
		t.Fatalf("a forgotten jti: %v", err)
	}
}

// Accepting a verified JWT records its jti, charges the caller's limit and
// brings last use up to date in one commit; a refused limit spends no jti;
// looking a host or agent up (before any signature is checked) writes
// nothing.
func TestAcceptJWT(t *testing.T) {
	e, clk := testenv.Clocked(t, testenv.WithConfig(func(c *services.Config) {
		c.SetLimit(core.LimitAgentExecute, core.Rate{Interval: time.Hour, Burst: 1})
	}))
	h := newHost(t, e)
	a := approveAgent(t, e, h, hosts.CapGetCredits)
	lastUsed := func() (*time.Time, *time.Time) {
		t.Helper()
		list, err := e.Svc.Hosts.List(ctx, e.OwnerA.ID)
		if err != nil || len(list) != 1 || len(list[0].Agents) != 1 {
			t.Fatalf("hosts: %+v %v", list, err)
		}
		return list[0].Host.LastUsedAt, list[0].Agents[0].LastUsedAt
	}
	// Lookups alone leave no trace.
	if _, err := e.Svc.Hosts.HostForJWT(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Hosts.DelegatedAgentForJWT(ctx, h, a.ID); err != nil {
		t.Fatal(err)
	}
	if hu, au := lastUsed(); hu != nil || au != nil {
		t.Fatalf("a lookup touched last use: host %v agent %v", hu, au)
	}
	exp := clk.Now().Add(time.Minute)
	limit := core.LimitAgentExecute
	if err := e.Svc.Hosts.AcceptJWT(ctx, hosts.JWTUse{Host: h, Agent: a, JTI: "j1", Expires: exp, Limit: limit}); err != nil {
		t.Fatal(err)
	}
	if hu, au := lastUsed(); hu == nil || au == nil || !hu.Equal(clk.Now()) || !au.Equal(clk.Now()) {
		t.Fatalf("last use after an accepted JWT: host %v agent %v, want %v", hu, au, clk.Now())
	}
	// Over the limit: refused, and its jti stays unused.
	err := e.Svc.Hosts.AcceptJWT(ctx, hosts.JWTUse{Host: h, Agent: a, JTI: "j2", Expires: exp, Limit: limit})
	if core.ErrorKind(err) != core.KindRateLimited {
		t.Fatalf("over the limit: %v", err)
	}
	if err := e.Svc.Hosts.AcceptJWT(ctx, hosts.JWTUse{Host: h, Agent: a, JTI: "j2", Expires: exp}); err != nil {
		t.Fatalf("a jti refused by the limiter was spent: %v", err)
	}
	testenv.WantCode(t, e.Svc.Hosts.AcceptJWT(ctx, hosts.JWTUse{Host: h, JTI: "j2", Expires: exp}), hosts.CodeJWTReplayed)
}

// AgentForJWT reads the agent and its host from the claims in one query and
// refuses exactly as HostForJWT and DelegatedAgentForJWT do.
func TestAgentForJWT(t *testing.T) {
	e, _ := testenv.Clocked(t)
	h, other := newHost(t, e), newHost(t, e)
	a := approveAgent(t, e, h, hosts.CapGetCredits)
	pending := register(t, e, h, hosts.CapGetCredits).Agent
	for _, tc := range []struct {
		name, iss, sub, code string
	}{
		{"host id", h.ID, a.ID, ""},
		{"host key thumbprint", *h.Thumbprint, a.ID, ""},
		{"another host's id", other.ID, a.ID, hosts.CodeInvalidJWT},
		{"another host's thumbprint", *other.Thumbprint, a.ID, hosts.CodeInvalidJWT},
		{"unknown agent", h.ID, "dag_nope", hosts.CodeInvalidJWT},
		{"not an agent id", h.ID, h.ID, hosts.CodeInvalidJWT},
		{"empty iss", "", a.ID, hosts.CodeInvalidJWT},
		{"pending agent", h.ID, pending.ID, hosts.CodeAgentPending},
	} {
		gh, ga, err := e.Svc.Hosts.AgentForJWT(ctx, tc.iss, tc.sub)
		if tc.code == "" {
			if err != nil || gh.ID != h.ID || ga.ID != a.ID {
				t.Fatalf("%s: %v %v %v", tc.name, gh, ga, err)
			}
			continue
		}
		testenv.WantCode(t, err, tc.code)
	}
	if err := e.Svc.Hosts.Revoke(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.Svc.Hosts.AgentForJWT(ctx, h.ID, a.ID)
	testenv.WantCode(t, err, hosts.CodeHostRevoked)
}
