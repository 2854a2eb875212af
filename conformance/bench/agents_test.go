//go:build bench

package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/store"
	"github.com/faxhub/faxhub/core/web"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/oauth"
)

const (
	agentClients  = 16
	agentDuration = 5 * time.Second
)

// benchAgentExchange measures jwt-bearer identity-assertion exchanges per
// second at /api/auth/oauth2/token on SQLite, against a baseline handler
// in the same run that verifies the same EdDSA JWT with the published key
// and inserts one token row.
func benchAgentExchange(t *testing.T, rep *report) {
	ctx := t.Context()
	site := serveApp(t, true)
	a, base := site.App, site.Base

	assertion := approvedAssertion(t, a, base)
	client := newClient(agentClients)
	form := url.Values{"grant_type": {oauth.GrantTypeJWTBearer}, "assertion": {assertion}, "resource": {base + "/mcp"}}.Encode()
	fx, err := hammer(ctx, agentClients, time.Second, agentDuration, func(rctx context.Context, c int) error {
		req, _ := http.NewRequestWithContext(rctx, http.MethodPost, base+oauth.PathToken, strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		var out map[string]any
		if err := call(client, req, &out); err != nil {
			return err
		}
		if out["access_token"] == nil {
			return fmt.Errorf("no access_token in %v", out)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("faxhub exchange: %v", err)
	}

	bl := newAssertionBaseline(t, base)
	bsrv := httptest.NewServer(bl)
	defer bsrv.Close()
	blr, err := hammer(ctx, agentClients, time.Second, agentDuration, func(rctx context.Context, c int) error {
		req, _ := http.NewRequestWithContext(rctx, http.MethodPost, bsrv.URL+"/token", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return call(client, req, nil)
	})
	if err != nil {
		t.Fatalf("baseline exchange: %v", err)
	}
	rep.add(fmt.Sprintf("agents   jwt-bearer exchange at /oauth2/token, SQLite, %d clients, %s", agentClients, agentDuration), "exch/s",
		fx.perSecond(), blr.perSecond(), ratioAtLeast(0.5), 0,
		"agents: faxhub parses the form, verifies the EdDSA identity assertion (typ, iss, aud, exp, jti current), checks the registration, "+
			"issues an opaque access token and stores its hash. Baseline: verify the same JWT with the published key and insert one token row.")
}

// approvedAssertion enrolls, registers a service_auth agent, approves its
// claim as the owner and returns the identity assertion from the poll.
func approvedAssertion(t *testing.T, a *app.App, base string) string {
	ctx := t.Context()
	o, err := a.Svc.Accounts.CreateOwner(ctx, "agents-bench@example.com", "Bench", true)
	if err != nil {
		t.Fatal(err)
	}
	secret, _, err := a.Svc.Accounts.CreateSession(ctx, o.ID, "bench")
	if err != nil {
		t.Fatal(err)
	}
	post := func(path string, body any, cookie string) map[string]any {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if cookie != "" {
			req.Header.Set("Cookie", cookie)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s: %d %v", path, resp.StatusCode, m)
		}
		return m
	}
	enr := post(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": "bench agent", "scopes": []string{"fax:read", "credits:read"}},
		web.SessionCookieName+"="+secret)
	reg := post(oauth.PathAgentIdentity, map[string]any{"type": "service_auth", "enrollment_token": enr["enrollment_token"], "login_hint": o.Email}, "")
	claim, _ := reg["claim"].(map[string]any)
	uri, _ := claim["verification_uri"].(string)
	_, attempt, ok := strings.Cut(uri, core.LinkClaimPage.PathPrefix())
	if !ok {
		t.Fatalf("registration: %v", reg)
	}
	if err := a.Svc.Agents.DecideClaim(ctx, o.ID, attempt, claim["user_code"].(string), true, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := http.PostForm(base+oauth.PathToken, url.Values{"grant_type": {oauth.GrantTypeAgentClaim},
		"claim_token": {reg["claim_token"].(string)}, "resource": {base + "/mcp"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	as, _ := tok["identity_assertion"].(string)
	if as == "" {
		t.Fatalf("claim poll: %d %v", resp.StatusCode, tok)
	}
	return as
}

// assertionBaseline verifies the EdDSA JWT with the issuer's published key
// and inserts one row per request into a SQLite file opened like the store.
type assertionBaseline struct {
	db   *store.DB
	keys jose.JSONWebKeySet
	iss  string
}

func newAssertionBaseline(t *testing.T, base string) *assertionBaseline {
	ctx := t.Context()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "baseline.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.SQL().ExecContext(ctx, `CREATE TABLE bench_tokens (hash TEXT PRIMARY KEY, subject TEXT NOT NULL, expires_at TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	b := &assertionBaseline{db: db, iss: base + oauth.IssuerPath}
	resp, err := http.Get(base + oauth.PathJWKS)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&b.keys); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *assertionBaseline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, err := jwt.ParseSigned(r.PostFormValue("assertion"), []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(tok.Headers) == 0 {
		http.Error(w, "bad assertion", http.StatusBadRequest)
		return
	}
	keys := b.keys.Key(tok.Headers[0].KeyID)
	if len(keys) == 0 {
		http.Error(w, "unknown key", http.StatusBadRequest)
		return
	}
	var claims jwt.Claims
	if err := tok.Claims(keys[0].Key, &claims); err != nil {
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	if err := claims.Validate(jwt.Expected{Issuer: b.iss, AnyAudience: jwt.Audience{b.iss}, Time: time.Now()}); err != nil {
		http.Error(w, "invalid claims", http.StatusBadRequest)
		return
	}
	secret := core.RandomString(32)
	sum := sha256.Sum256([]byte(secret))
	if _, err := b.db.SQL().ExecContext(r.Context(), `INSERT INTO bench_tokens (hash, subject, expires_at) VALUES (?, ?, ?)`,
		hex.EncodeToString(sum[:]), claims.Subject, time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, secret)
}
