package hostagent

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
)

// The verifier's rules, one table row each, against a fake of core's
// lookups (the endpoint tests run the same rules through the real app).

type testKey struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
	jwk  string // canonical public JWK
	tp   string // RFC 7638 thumbprint
}

func newTestKey(t testing.TB) testKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x := base64.RawURLEncoding.EncodeToString(pub)
	k := jose.JSONWebKey{Key: pub}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{priv: priv, pub: pub, jwk: `{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`, tp: base64.RawURLEncoding.EncodeToString(tp)}
}

// sign signs claims with key as a JWS of typ, adding extra headers.
func sign(t testing.TB, key any, alg jose.SignatureAlgorithm, typ string, claims map[string]any, headers map[jose.HeaderKey]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType(jose.ContentType(typ))
	for k, v := range headers {
		opts = opts.WithHeader(k, v)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// unsigned is an alg none JWT.
func unsigned(typ string, claims map[string]any) string {
	h, _ := json.Marshal(map[string]any{"alg": "none", "typ": typ})
	p, _ := json.Marshal(claims)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(p) + "."
}

type fakeDeps struct {
	now    time.Time
	hosts  map[string]*hosts.Host
	agents map[string]*hosts.Agent
	jtis   map[string]bool
}

func (f *fakeDeps) Now() time.Time { return f.now }

// pgText fails like PostgreSQL does for a NUL or invalid UTF-8 in a text
// parameter (SQLSTATE 22021): the fake's lookups are as strict as the
// real store's, so the verifier must refuse such claims before any.
func pgText(ss ...string) error {
	for _, s := range ss {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("look up %q: ERROR: invalid byte sequence for encoding \"UTF8\": 0x00 (SQLSTATE 22021)", s)
		}
	}
	return nil
}

func (f *fakeDeps) HostForJWT(_ context.Context, iss string) (*hosts.Host, error) {
	if err := pgText(iss); err != nil {
		return nil, err
	}
	for _, h := range f.hosts {
		if h.ID == iss || (h.Thumbprint != nil && *h.Thumbprint == iss) {
			switch h.Status {
			case hosts.Revoked:
				return nil, core.Errorf(core.KindForbidden, hosts.CodeHostRevoked, "revoked")
			case hosts.PendingEnrollment:
				return nil, core.Errorf(core.KindUnauthenticated, hosts.CodeInvalidJWT, "unknown host")
			}
			return h, nil
		}
	}
	return nil, core.Errorf(core.KindUnauthenticated, hosts.CodeInvalidJWT, "unknown host")
}

func (f *fakeDeps) AgentForJWT(ctx context.Context, iss, sub string) (*hosts.Host, *hosts.Agent, error) {
	if err := pgText(iss, sub); err != nil {
		return nil, nil, err
	}
	h, err := f.HostForJWT(ctx, iss)
	if err != nil {
		return nil, nil, err
	}
	a, err := f.agentOf(h, sub)
	return h, a, err
}

func (f *fakeDeps) agentOf(h *hosts.Host, id string) (*hosts.Agent, error) {
	a, ok := f.agents[id]
	if !ok || a.HostID != h.ID {
		return nil, core.Errorf(core.KindUnauthenticated, hosts.CodeInvalidJWT, "unknown agent")
	}
	if a.Status == hosts.AgentRevoked {
		return nil, core.Errorf(core.KindForbidden, hosts.CodeAgentRevoked, "revoked")
	}
	if a.Status == hosts.AgentPending {
		return nil, core.Errorf(core.KindForbidden, hosts.CodeAgentPending, "pending")
	}
	return a, nil
}

func (f *fakeDeps) AcceptJWT(_ context.Context, u hosts.JWTUse) error {
	key := u.Host.ID + "\x00" + u.JTI
	if f.jtis[key] {
		return core.Errorf(core.KindUnauthenticated, hosts.CodeJWTReplayed, "replayed")
	}
	f.jtis[key] = true
	return nil
}

const testAPI = "https://api.fax.test"

func TestVerifier(t *testing.T) {
	now := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	hk, ak, other := newTestKey(t), newTestKey(t), newTestKey(t)
	pk := newTestKey(t)
	newDeps := func() *fakeDeps {
		hjwk, htp := hk.jwk, hk.tp
		pjwk, ptp := pk.jwk, pk.tp
		return &fakeDeps{now: now, jtis: map[string]bool{},
			hosts: map[string]*hosts.Host{
				"hst_1":       {ID: "hst_1", PublicKey: &hjwk, Thumbprint: &htp, Status: hosts.Active},
				"hst_revoked": {ID: "hst_revoked", PublicKey: &pjwk, Thumbprint: &ptp, Status: hosts.Revoked},
				"hst_pending": {ID: "hst_pending", Status: hosts.PendingEnrollment},
			},
			agents: map[string]*hosts.Agent{
				"dag_1":       {ID: "dag_1", HostID: "hst_1", PublicKey: ak.jwk, Thumbprint: ak.tp, Status: hosts.AgentActive},
				"dag_revoked": {ID: "dag_revoked", HostID: "hst_1", PublicKey: ak.jwk, Thumbprint: ak.tp, Status: hosts.AgentRevoked},
				"dag_pending": {ID: "dag_pending", HostID: "hst_1", PublicKey: ak.jwk, Thumbprint: ak.tp, Status: hosts.AgentPending},
			}}
	}
	hostClaims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "hst_1", "aud": testAPI, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": core.RandomString(12)}
		if mod != nil {
			mod(c)
		}
		return c
	}
	agentClaims := func(mod func(map[string]any)) map[string]any {
		c := map[string]any{"iss": "hst_1", "sub": "dag_1", "aud": testAPI, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": core.RandomString(12)}
		if mod != nil {
			mod(c)
		}
		return c
	}
	hostJWT := func(mod func(map[string]any)) string {
		return sign(t, hk.priv, jose.EdDSA, typHostJWT, hostClaims(mod), nil)
	}
	agentJWT := func(mod func(map[string]any)) string {
		return sign(t, ak.priv, jose.EdDSA, typAgentJWT, agentClaims(mod), nil)
	}
	set := func(k string, v any) func(map[string]any) { return func(c map[string]any) { c[k] = v } }
	del := func(k string) func(map[string]any) { return func(c map[string]any) { delete(c, k) } }
	var pubJWK map[string]any
	_ = json.Unmarshal([]byte(hk.jwk), &pubJWK)
	var otherJWK map[string]any
	_ = json.Unmarshal([]byte(other.jwk), &otherJWK)

	type row struct {
		name  string
		agent bool
		jwt   func(d *fakeDeps) string
		code  string // "" = accepted
		msg   string
	}
	rows := []row{
		{name: "host ok", jwt: func(*fakeDeps) string { return hostJWT(nil) }},
		{name: "host ok iss thumbprint", jwt: func(*fakeDeps) string { return hostJWT(set("iss", hk.tp)) }},
		{name: "host ok aud array", jwt: func(*fakeDeps) string { return hostJWT(set("aud", []string{"https://other", testAPI})) }},
		{name: "host ok kid thumbprint", jwt: func(*fakeDeps) string {
			return sign(t, hk.priv, jose.EdDSA, typHostJWT, hostClaims(nil), map[jose.HeaderKey]any{"kid": hk.tp})
		}},
		{name: "host ok host_public_key same", jwt: func(*fakeDeps) string { return hostJWT(set("host_public_key", pubJWK)) }},
		{name: "wrong typ", code: hosts.CodeInvalidJWT, msg: "typ", jwt: func(*fakeDeps) string {
			return sign(t, hk.priv, jose.EdDSA, "JWT", hostClaims(nil), nil)
		}},
		{name: "agent typ on host endpoint", code: hosts.CodeInvalidJWT, msg: "typ", jwt: func(*fakeDeps) string {
			return sign(t, hk.priv, jose.EdDSA, typAgentJWT, hostClaims(nil), nil)
		}},
		{name: "alg none", code: hosts.CodeInvalidJWT, msg: "EdDSA", jwt: func(*fakeDeps) string { return unsigned(typHostJWT, hostClaims(nil)) }},
		{name: "HS256 with the public key as secret", code: hosts.CodeInvalidJWT, msg: "EdDSA", jwt: func(*fakeDeps) string {
			return sign(t, []byte(hk.pub), jose.HS256, typHostJWT, hostClaims(nil), nil)
		}},
		{name: "HS256 with the JWK text as secret", code: hosts.CodeInvalidJWT, msg: "EdDSA", jwt: func(*fakeDeps) string {
			return sign(t, []byte(hk.jwk), jose.HS256, typHostJWT, hostClaims(nil), nil)
		}},
		{name: "garbage", code: hosts.CodeInvalidJWT, jwt: func(*fakeDeps) string { return "not.a.jwt" }},
		{name: "empty", code: hosts.CodeInvalidJWT, jwt: func(*fakeDeps) string { return "" }},
		{name: "too large", code: hosts.CodeInvalidJWT, msg: "larger", jwt: func(*fakeDeps) string { return hostJWT(set("pad", strings.Repeat("x", 9000))) }},
		{name: "wrong aud", code: hosts.CodeInvalidJWT, msg: "aud", jwt: func(*fakeDeps) string { return hostJWT(set("aud", "https://evil.test")) }},
		{name: "no aud", code: hosts.CodeInvalidJWT, msg: "aud", jwt: func(*fakeDeps) string { return hostJWT(del("aud")) }},
		{name: "aud execute URL refused on host JWT", code: hosts.CodeInvalidJWT, msg: "aud", jwt: func(*fakeDeps) string { return hostJWT(set("aud", testAPI+PathExecute)) }},
		{name: "exp-iat 61s", code: hosts.CodeInvalidJWT, msg: "lives", jwt: func(*fakeDeps) string { return hostJWT(set("exp", now.Add(61*time.Second).Unix())) }},
		{name: "exp-iat 60s ok", jwt: func(*fakeDeps) string { return hostJWT(set("exp", now.Add(60*time.Second).Unix())) }},
		{name: "expired", code: hosts.CodeInvalidJWT, msg: "expired", jwt: func(*fakeDeps) string {
			return hostJWT(func(c map[string]any) {
				c["iat"] = now.Add(-91 * time.Second).Unix()
				c["exp"] = now.Add(-31 * time.Second).Unix()
			})
		}},
		{name: "expired within skew ok", jwt: func(*fakeDeps) string {
			return hostJWT(func(c map[string]any) {
				c["iat"] = now.Add(-time.Minute).Unix()
				c["exp"] = now.Add(-29 * time.Second).Unix()
			})
		}},
		{name: "future iat", code: hosts.CodeInvalidJWT, msg: "future", jwt: func(*fakeDeps) string {
			return hostJWT(func(c map[string]any) {
				c["iat"] = now.Add(31 * time.Second).Unix()
				c["exp"] = now.Add(80 * time.Second).Unix()
			})
		}},
		{name: "exp before iat", code: hosts.CodeInvalidJWT, msg: "after", jwt: func(*fakeDeps) string { return hostJWT(set("exp", now.Add(-time.Second).Unix())) }},
		{name: "no exp", code: hosts.CodeInvalidJWT, msg: "exp", jwt: func(*fakeDeps) string { return hostJWT(del("exp")) }},
		{name: "no iat", code: hosts.CodeInvalidJWT, msg: "iat", jwt: func(*fakeDeps) string { return hostJWT(del("iat")) }},
		{name: "no jti", code: hosts.CodeInvalidJWT, msg: "jti", jwt: func(*fakeDeps) string { return hostJWT(del("jti")) }},
		{name: "reused jti host", code: hosts.CodeInvalidJWT, msg: "jti", jwt: func(d *fakeDeps) string {
			d.jtis["hst_1\x00seen"] = true
			return hostJWT(set("jti", "seen"))
		}},
		{name: "unknown host", code: hosts.CodeInvalidJWT, jwt: func(*fakeDeps) string { return hostJWT(set("iss", "hst_nobody")) }},
		{name: "NUL in iss", code: hosts.CodeInvalidJWT, msg: "iss", jwt: func(*fakeDeps) string { return hostJWT(set("iss", "hst_1\x00")) }},
		{name: "iss neither id nor thumbprint", code: hosts.CodeInvalidJWT, msg: "iss", jwt: func(*fakeDeps) string { return hostJWT(set("iss", "own_1")) }},
		{name: "agent NUL in iss", agent: true, code: hosts.CodeInvalidJWT, msg: "iss", jwt: func(*fakeDeps) string { return agentJWT(set("iss", "\x00")) }},
		{name: "agent NUL in sub", agent: true, code: hosts.CodeInvalidJWT, msg: "sub", jwt: func(*fakeDeps) string { return agentJWT(set("sub", "dag_1\x00")) }},
		{name: "agent control character in sub", agent: true, code: hosts.CodeInvalidJWT, msg: "sub", jwt: func(*fakeDeps) string { return agentJWT(set("sub", "dag_\n1")) }},
		{name: "pending-enrollment host", code: hosts.CodeInvalidJWT, jwt: func(*fakeDeps) string { return hostJWT(set("iss", "hst_pending")) }},
		{name: "revoked host", code: hosts.CodeHostRevoked, jwt: func(*fakeDeps) string {
			return sign(t, pk.priv, jose.EdDSA, typHostJWT, hostClaims(set("iss", "hst_revoked")), nil)
		}},
		{name: "kid mismatch", code: hosts.CodeInvalidJWT, msg: "kid", jwt: func(*fakeDeps) string {
			return sign(t, hk.priv, jose.EdDSA, typHostJWT, hostClaims(nil), map[jose.HeaderKey]any{"kid": other.tp})
		}},
		{name: "signed by another key", code: hosts.CodeInvalidJWT, msg: "signature", jwt: func(*fakeDeps) string {
			return sign(t, other.priv, jose.EdDSA, typHostJWT, hostClaims(nil), nil)
		}},
		{name: "host_public_key mismatch", code: hosts.CodeInvalidJWT, msg: "host_public_key", jwt: func(*fakeDeps) string { return hostJWT(set("host_public_key", otherJWK)) }},
		{name: "agent_public_key is the host key", code: hosts.CodeHostKeyInUse, jwt: func(*fakeDeps) string { return hostJWT(set("agent_public_key", pubJWK)) }},

		{name: "agent ok", agent: true, jwt: func(*fakeDeps) string { return agentJWT(nil) }},
		{name: "agent ok iss thumbprint", agent: true, jwt: func(*fakeDeps) string { return agentJWT(set("iss", hk.tp)) }},
		{name: "agent ok aud execute", agent: true, jwt: func(*fakeDeps) string { return agentJWT(set("aud", testAPI+PathExecute)) }},
		{name: "agent wrong typ", agent: true, code: hosts.CodeInvalidJWT, msg: "typ", jwt: func(*fakeDeps) string {
			return sign(t, ak.priv, jose.EdDSA, typHostJWT, agentClaims(nil), nil)
		}},
		{name: "agent JWT signed by the host key", agent: true, code: hosts.CodeInvalidJWT, msg: "signature", jwt: func(*fakeDeps) string {
			return sign(t, hk.priv, jose.EdDSA, typAgentJWT, agentClaims(nil), nil)
		}},
		{name: "agent wrong sub", agent: true, code: hosts.CodeInvalidJWT, jwt: func(*fakeDeps) string { return agentJWT(set("sub", "dag_other")) }},
		{name: "agent no sub", agent: true, code: hosts.CodeInvalidJWT, msg: "sub", jwt: func(*fakeDeps) string { return agentJWT(del("sub")) }},
		{name: "agent revoked", agent: true, code: hosts.CodeAgentRevoked, jwt: func(*fakeDeps) string { return agentJWT(set("sub", "dag_revoked")) }},
		{name: "agent pending", agent: true, code: hosts.CodeAgentPending, jwt: func(*fakeDeps) string { return agentJWT(set("sub", "dag_pending")) }},
		{name: "agent of a revoked host", agent: true, code: hosts.CodeHostRevoked, jwt: func(*fakeDeps) string { return agentJWT(set("iss", "hst_revoked")) }},
		{name: "agent reused jti", agent: true, code: hosts.CodeInvalidJWT, msg: "jti", jwt: func(d *fakeDeps) string {
			d.jtis["hst_1\x00seen"] = true
			return agentJWT(set("jti", "seen"))
		}},
		{name: "agent wrong aud", agent: true, code: hosts.CodeInvalidJWT, msg: "aud", jwt: func(*fakeDeps) string { return agentJWT(set("aud", "https://localhost")) }},
		{name: "agent exp-iat 61s", agent: true, code: hosts.CodeInvalidJWT, msg: "lives", jwt: func(*fakeDeps) string { return agentJWT(set("exp", now.Add(61*time.Second).Unix())) }},
		{name: "agent expired", agent: true, code: hosts.CodeInvalidJWT, msg: "expired", jwt: func(*fakeDeps) string {
			return agentJWT(func(c map[string]any) {
				c["iat"] = now.Add(-2 * time.Minute).Unix()
				c["exp"] = now.Add(-time.Minute).Unix()
			})
		}},
		{name: "agent alg none", agent: true, code: hosts.CodeInvalidJWT, jwt: func(*fakeDeps) string { return unsigned(typAgentJWT, agentClaims(nil)) }},
		{name: "agent kid mismatch", agent: true, code: hosts.CodeInvalidJWT, msg: "kid", jwt: func(*fakeDeps) string {
			return sign(t, ak.priv, jose.EdDSA, typAgentJWT, agentClaims(nil), map[jose.HeaderKey]any{"kid": hk.tp})
		}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			d := newDeps()
			v := newVerifier(d, testAPI)
			raw := r.jwt(d)
			var err error
			if r.agent {
				_, err = v.Agent(t.Context(), raw, "")
			} else {
				_, err = v.Host(t.Context(), raw, "")
			}
			if r.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e := core.AsError(err)
			if err == nil || e.Code != r.code {
				t.Fatalf("got %v, want %s", err, r.code)
			}
			if e.Kind == core.KindInternal {
				t.Fatalf("internal error for a client's JWT: %v", err)
			}
			if r.msg != "" && !strings.Contains(e.Message, r.msg) {
				t.Fatalf("message %q lacks %q", e.Message, r.msg)
			}
		})
	}
}

// A refused signature does not record the jti: a forger cannot use up the
// jtis of a real host.
func TestVerifierForgedJWTDoesNotBurnJTI(t *testing.T) {
	now := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	hk, forger := newTestKey(t), newTestKey(t)
	d := &fakeDeps{now: now, jtis: map[string]bool{}, hosts: map[string]*hosts.Host{"hst_1": {ID: "hst_1", PublicKey: &hk.jwk, Thumbprint: &hk.tp, Status: hosts.Active}}}
	v := newVerifier(d, testAPI)
	c := map[string]any{"iss": "hst_1", "aud": testAPI, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": "j1"}
	if _, err := v.Host(t.Context(), sign(t, forger.priv, jose.EdDSA, typHostJWT, c, nil), ""); err == nil {
		t.Fatal("forged JWT accepted")
	}
	if _, err := v.Host(t.Context(), sign(t, hk.priv, jose.EdDSA, typHostJWT, c, nil), ""); err != nil {
		t.Fatalf("real JWT with the same jti refused: %v", err)
	}
}

// TestParseJTIBound: the adapter bounds a jti where core does, at 255
// bytes, and says so (issue 26: the adapter let 256 through, docs said
// 256, core refused it).
func TestParseJTIBound(t *testing.T) {
	k := newTestKey(t)
	now := time.Now()
	for _, tc := range []struct {
		n  int
		ok bool
	}{{255, true}, {256, false}} {
		raw := sign(t, k.priv, jose.EdDSA, typHostJWT, map[string]any{
			"iss": "hst_1", "aud": "x", "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": strings.Repeat("j", tc.n),
		}, nil)
		_, _, err := parse(raw, typHostJWT)
		if (err == nil) != tc.ok {
			t.Fatalf("jti of %d bytes: err = %v", tc.n, err)
		}
		if err != nil && !strings.Contains(err.Error(), "at most 255 bytes") {
			t.Fatalf("jti of %d bytes: %v", tc.n, err)
		}
	}
}
