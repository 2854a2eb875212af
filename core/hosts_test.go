package core_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestParsePublicJWK(t *testing.T) {
	// RFC 8037 Appendix A.2/A.3: the key and its RFC 7638 thumbprint.
	const x = "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
	k, err := core.ParsePublicJWK(json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"` + x + `","kid":"k1","use":"sig","alg":"EdDSA","extra":[1]}`))
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
			_, err := core.ParsePublicJWK(json.RawMessage(tc.jwk))
			testenv.WantCode(t, err, core.CodeInvalidPublicKey)
		})
	}
}

func TestCreateHostRules(t *testing.T) {
	e, _ := testenv.Clocked(t)
	owner := e.OwnerA.ID
	h := newHost(t, e, core.CapGetCredits)
	v := register(t, e, h, core.CapValidateFax)
	agentKey := json.RawMessage(v.Agent.PublicKey)
	for _, tc := range []struct {
		name string
		r    core.HostCreateRequest
		code string
	}{
		{"no name", core.HostCreateRequest{Name: "  "}, core.CodeInvalidRequest},
		{"long name", core.HostCreateRequest{Name: strings.Repeat("x", 101)}, core.CodeInvalidRequest},
		{"unknown capability", core.HostCreateRequest{Name: "x", DefaultCapabilities: []core.Capability{"delete_everything"}}, core.CodeUnknownCapability},
		{"bad key", core.HostCreateRequest{Name: "x", PublicKey: json.RawMessage(`{"kty":"RSA"}`)}, core.CodeInvalidPublicKey},
		{"another host's key", core.HostCreateRequest{Name: "x", PublicKey: json.RawMessage(*h.PublicKey)}, core.CodeHostKeyInUse},
		{"an agent's key", core.HostCreateRequest{Name: "x", PublicKey: agentKey}, core.CodeHostKeyInUse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.Svc.Core.CreateHost(ctx, owner, tc.r)
			testenv.WantCode(t, err, tc.code)
		})
	}
	// Defaults are deduplicated in documentation order; with a key the host
	// is active at once.
	hc, err := e.Svc.Core.CreateHost(ctx, owner, core.HostCreateRequest{Name: " Box ", PublicKey: newJWK(t),
		DefaultCapabilities: []core.Capability{core.CapGetCredits, core.CapValidateFax, core.CapGetCredits}})
	if err != nil || hc.EnrollmentToken != "" || hc.Host.Status != core.HostActive || hc.Host.Name != "Box" ||
		!slices.Equal(hc.Host.DefaultCapabilities, []core.Capability{core.CapValidateFax, core.CapGetCredits}) {
		t.Fatalf("create = %+v, %v", hc, err)
	}
	// The limiter is shared with every replica: a burst, then 429.
	var last error
	for range 12 {
		if _, last = e.Svc.Core.CreateHost(ctx, e.OwnerB.ID, core.HostCreateRequest{Name: "x"}); last != nil {
			break
		}
	}
	testenv.WantCode(t, last, core.CodeRateLimited)
}

func TestEnrollHost(t *testing.T) {
	e, clk := testenv.Clocked(t)
	create := func() *core.HostCreated {
		t.Helper()
		hc, err := e.Svc.Core.CreateHost(ctx, e.OwnerA.ID, core.HostCreateRequest{Name: "Server"})
		if err != nil {
			t.Fatal(err)
		}
		if hc.Host.Status != core.HostPendingEnrollment || !strings.HasPrefix(hc.EnrollmentToken, core.SecretHostEnrollment) {
			t.Fatalf("create = %+v", hc)
		}
		return hc
	}
	hc := create()
	// Until enrolled the host cannot sign anything.
	_, err := e.Svc.Core.HostForJWT(ctx, hc.Host.ID)
	testenv.WantCode(t, err, core.CodeInvalidJWT)
	// A bad key, or a key in use, does not consume the token.
	_, err = e.Svc.Core.EnrollHost(ctx, hc.EnrollmentToken, json.RawMessage(`{"kty":"OKP"}`), "")
	testenv.WantCode(t, err, core.CodeInvalidPublicKey)
	taken := newHost(t, e)
	_, err = e.Svc.Core.EnrollHost(ctx, hc.EnrollmentToken, json.RawMessage(*taken.PublicKey), "")
	testenv.WantCode(t, err, core.CodeHostKeyInUse)
	key := newJWK(t)
	h, err := e.Svc.Core.EnrollHost(ctx, hc.EnrollmentToken, key, " Renamed ")
	if err != nil || h.ID != hc.Host.ID || h.Status != core.HostActive || h.Name != "Renamed" {
		t.Fatalf("enroll = %+v, %v", h, err)
	}
	// The thumbprint names the host as well as its id.
	if got, err := e.Svc.Core.HostForJWT(ctx, parseJWK(t, key).Thumbprint); err != nil || got.ID != h.ID {
		t.Fatalf("by thumbprint = %+v, %v", got, err)
	}
	// Used, unknown, expired, revoked: one refusal.
	_, err = e.Svc.Core.EnrollHost(ctx, hc.EnrollmentToken, newJWK(t), "")
	testenv.WantCode(t, err, core.CodeInvalidEnrollment)
	_, err = e.Svc.Core.EnrollHost(ctx, core.SecretHostEnrollment+"nope", newJWK(t), "")
	testenv.WantCode(t, err, core.CodeInvalidEnrollment)
	expired := create()
	revoked := create()
	if err := e.Svc.Core.RevokeHost(ctx, e.OwnerA.ID, revoked.Host.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Core.EnrollHost(ctx, revoked.EnrollmentToken, newJWK(t), "")
	testenv.WantCode(t, err, core.CodeInvalidEnrollment)
	clk.Advance(core.HostEnrollmentTTL)
	_, err = e.Svc.Core.EnrollHost(ctx, expired.EnrollmentToken, newJWK(t), "")
	testenv.WantCode(t, err, core.CodeInvalidEnrollment)
}

func TestHostsListRevokeAndJWTIDs(t *testing.T) {
	e, clk := testenv.Clocked(t)
	h := newHost(t, e)
	v := register(t, e, h, core.CapGetCredits)
	_, err := e.Svc.Core.HostForJWT(ctx, "hst_unknown")
	testenv.WantCode(t, err, core.CodeInvalidJWT)
	_, err = e.Svc.Core.HostForJWT(ctx, "")
	testenv.WantCode(t, err, core.CodeInvalidJWT)
	list, err := e.Svc.Core.ListHosts(ctx, e.OwnerA.ID)
	if err != nil || len(list) != 1 || len(list[0].Agents) != 1 || list[0].Agents[0].ID != v.Agent.ID {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if other, _ := e.Svc.Core.ListHosts(ctx, e.OwnerB.ID); len(other) != 0 {
		t.Fatal("owner B lists owner A's hosts")
	}
	// Another owner cannot revoke it; revoking twice is fine.
	testenv.WantCode(t, e.Svc.Core.RevokeHost(ctx, e.OwnerB.ID, h.ID), core.CodeHostNotFound)
	if err := e.Svc.Core.RevokeHost(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Svc.Core.RevokeHost(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Core.DelegatedAgentForJWT(ctx, &list[0].Host, v.Agent.ID)
	testenv.WantCode(t, err, core.CodeAgentRevoked)
	list, _ = e.Svc.Core.ListHosts(ctx, e.OwnerA.ID)
	if list[0].Host.Status != core.HostRevoked || list[0].Agents[0].Status != core.DelegatedRevoked {
		t.Fatalf("after revoke: %+v", list[0])
	}

	// jti: once per issuer while remembered.
	exp := clk.Now().Add(core.DelegatedJWTMaxLifetime + core.DelegatedJWTSkew)
	for _, tc := range []struct {
		name, iss, jti string
		code           string
	}{
		{"fresh", "hst_a", "j1", ""},
		{"replayed", "hst_a", "j1", core.CodeJWTReplayed},
		{"other issuer", "hst_b", "j1", ""},
		{"empty jti", "hst_a", "", core.CodeInvalidJWT},
		{"long jti", "hst_a", strings.Repeat("j", 256), core.CodeInvalidJWT},
		{"longest jti", "hst_a", strings.Repeat("j", 255), ""},
	} {
		err := e.Svc.Core.AcceptDelegatedJWT(ctx, core.JWTUse{Host: &core.Host{ID: tc.iss}, JTI: tc.jti, Expires: exp})
		if tc.code == "" && err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		} else if tc.code != "" {
			testenv.WantCode(t, err, tc.code)
		}
	}
	clk.Advance(core.DelegatedJWTMaxLifetime + core.DelegatedJWTSkew + time.Second)
	if err := e.Svc.Core.AcceptDelegatedJWT(ctx, core.JWTUse{Host: &core.Host{ID: "hst_a"}, JTI: "j1", Expires: clk.Now().Add(time.Minute)}); err != nil {
		t.Fatalf("a forgotten jti: %v", err)
	}
}

// Accepting a verified JWT records its jti, charges the caller's limit and
// brings last use up to date in one commit; a refused limit spends no jti;
// looking a host or agent up (before any signature is checked) writes
// nothing.
func TestAcceptDelegatedJWT(t *testing.T) {
	e, clk := testenv.Clocked(t)
	h := newHost(t, e)
	a := approveAgent(t, e, h, core.CapGetCredits)
	lastUsed := func() (*time.Time, *time.Time) {
		t.Helper()
		list, err := e.Svc.Core.ListHosts(ctx, e.OwnerA.ID)
		if err != nil || len(list) != 1 || len(list[0].Agents) != 1 {
			t.Fatalf("hosts: %+v %v", list, err)
		}
		return list[0].Host.LastUsedAt, list[0].Agents[0].LastUsedAt
	}
	// Lookups alone leave no trace.
	if _, err := e.Svc.Core.HostForJWT(ctx, h.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Svc.Core.DelegatedAgentForJWT(ctx, h, a.ID); err != nil {
		t.Fatal(err)
	}
	if hu, au := lastUsed(); hu != nil || au != nil {
		t.Fatalf("a lookup touched last use: host %v agent %v", hu, au)
	}
	exp := clk.Now().Add(time.Minute)
	limit := &core.RateLimit{Key: "test:" + a.ID, Interval: time.Hour, Burst: 1}
	if err := e.Svc.Core.AcceptDelegatedJWT(ctx, core.JWTUse{Host: h, Agent: a, JTI: "j1", Expires: exp, Limit: limit}); err != nil {
		t.Fatal(err)
	}
	if hu, au := lastUsed(); hu == nil || au == nil || !hu.Equal(clk.Now()) || !au.Equal(clk.Now()) {
		t.Fatalf("last use after an accepted JWT: host %v agent %v, want %v", hu, au, clk.Now())
	}
	// Over the limit: refused, and its jti stays unused.
	err := e.Svc.Core.AcceptDelegatedJWT(ctx, core.JWTUse{Host: h, Agent: a, JTI: "j2", Expires: exp, Limit: limit})
	if core.ErrorKind(err) != core.KindRateLimited {
		t.Fatalf("over the limit: %v", err)
	}
	if err := e.Svc.Core.AcceptDelegatedJWT(ctx, core.JWTUse{Host: h, Agent: a, JTI: "j2", Expires: exp}); err != nil {
		t.Fatalf("a jti refused by the limiter was spent: %v", err)
	}
	testenv.WantCode(t, e.Svc.Core.AcceptDelegatedJWT(ctx, core.JWTUse{Host: h, JTI: "j2", Expires: exp}), core.CodeJWTReplayed)
}

// AgentForJWT reads the agent and its host from the claims in one query and
// refuses exactly as HostForJWT and DelegatedAgentForJWT do.
func TestAgentForJWT(t *testing.T) {
	e, _ := testenv.Clocked(t)
	h, other := newHost(t, e), newHost(t, e)
	a := approveAgent(t, e, h, core.CapGetCredits)
	pending := register(t, e, h, core.CapGetCredits).Agent
	for _, tc := range []struct {
		name, iss, sub, code string
	}{
		{"host id", h.ID, a.ID, ""},
		{"host key thumbprint", *h.Thumbprint, a.ID, ""},
		{"another host's id", other.ID, a.ID, core.CodeInvalidJWT},
		{"another host's thumbprint", *other.Thumbprint, a.ID, core.CodeInvalidJWT},
		{"unknown agent", h.ID, "dag_nope", core.CodeInvalidJWT},
		{"not an agent id", h.ID, h.ID, core.CodeInvalidJWT},
		{"empty iss", "", a.ID, core.CodeInvalidJWT},
		{"pending agent", h.ID, pending.ID, core.CodeAgentPending},
	} {
		gh, ga, err := e.Svc.Core.AgentForJWT(ctx, tc.iss, tc.sub)
		if tc.code == "" {
			if err != nil || gh.ID != h.ID || ga.ID != a.ID {
				t.Fatalf("%s: %v %v %v", tc.name, gh, ga, err)
			}
			continue
		}
		testenv.WantCode(t, err, tc.code)
	}
	if err := e.Svc.Core.RevokeHost(ctx, e.OwnerA.ID, h.ID); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.Svc.Core.AgentForJWT(ctx, h.ID, a.ID)
	testenv.WantCode(t, err, core.CodeHostRevoked)
}
