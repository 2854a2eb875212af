package oauth_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

// clock is an adjustable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type agentHarness struct {
	*harness
	clock *clock
}

func newAgentHarness(t *testing.T) *agentHarness {
	c := &clock{t: time.Now().UTC()}
	h := newHarness(t, func(o *oauth.Options) { o.Now = c.now }, testenv.WithConfig(func(cfg *services.Config) { cfg.Now = c.now }))
	return &agentHarness{harness: h, clock: c}
}

// jsonReq posts JSON with optional cookie and Origin.
func (h *agentHarness) jsonReq(path string, body any, cookie, origin string) (int, map[string]any, http.Header) {
	h.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, h.base+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, resp.Header
}

func (h *agentHarness) enroll(owner *accounts.Owner, name string, scopes []string) string {
	h.t.Helper()
	code, m, _ := h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": name, "scopes": scopes}, h.cookie(owner), "")
	if code != http.StatusCreated {
		h.t.Fatalf("enroll: %d %v", code, m)
	}
	return m["enrollment_token"].(string)
}

func (h *agentHarness) registerService(token, hint string) (int, map[string]any) {
	h.t.Helper()
	code, m, hdr := h.jsonReq(oauth.PathAgentIdentity, map[string]any{"type": "service_auth", "enrollment_token": token, "login_hint": hint}, "", "")
	if code == http.StatusCreated && hdr.Get("Cache-Control") != "no-store" {
		h.t.Fatalf("registration response is cacheable: %q", hdr.Get("Cache-Control"))
	}
	return code, m
}

func (h *agentHarness) poll(claimToken string) (int, map[string]any) {
	h.t.Helper()
	return h.form(oauth.PathToken, url.Values{"grant_type": {oauth.GrantTypeAgentClaim}, "claim_token": {claimToken}, "resource": {h.mcp()}})
}

func (h *agentHarness) exchange(assertion string) (int, map[string]any) {
	h.t.Helper()
	return h.form(oauth.PathToken, url.Values{"grant_type": {oauth.GrantTypeJWTBearer}, "assertion": {assertion}, "resource": {h.mcp()}})
}

// attemptOf returns the secret attempt token inside a verification_uri.
func attemptOf(t *testing.T, uri string) string {
	t.Helper()
	_, tok, ok := strings.Cut(uri, core.LinkClaimPage.PathPrefix())
	if !ok || tok == "" {
		t.Fatalf("verification_uri %q has no attempt token", uri)
	}
	return tok
}

// serviceAgent enrolls and registers a service_auth agent of owner A.
func (h *agentHarness) serviceAgent(scopes []string) (claimToken, attempt, userCode string) {
	h.t.Helper()
	tok := h.enroll(h.env.OwnerA, "Build bot", scopes)
	code, m := h.registerService(tok, h.env.OwnerA.Email)
	if code != http.StatusCreated {
		h.t.Fatalf("register: %d %v", code, m)
	}
	if _, ok := m["identity_assertion"]; ok {
		h.t.Fatal("service_auth returned an assertion before approval")
	}
	cl := m["claim"].(map[string]any)
	if cl["interval"].(float64) != 5 || len(cl["user_code"].(string)) != 6 {
		h.t.Fatalf("claim = %v", cl)
	}
	if strings.Contains(cl["verification_uri"].(string), cl["user_code"].(string)) {
		h.t.Fatal("the user code is in the verification_uri")
	}
	return m["claim_token"].(string), attemptOf(h.t, cl["verification_uri"].(string)), cl["user_code"].(string)
}

func (h *agentHarness) mcpPrincipal(token string) (int, core.Principal) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.mcp(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var p core.Principal
	_ = json.NewDecoder(resp.Body).Decode(&p)
	return resp.StatusCode, p
}

func wantOAuthErr(t *testing.T, what string, code int, m map[string]any, want string) {
	t.Helper()
	if code < 400 || m["error"] != want {
		t.Fatalf("%s: %d %v, want error %s", what, code, m, want)
	}
}

func TestAgentManageNeedsSessionAndSameOrigin(t *testing.T) {
	h := newAgentHarness(t)
	code, m, _ := h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": "x"}, "", "")
	wantOAuthErr(t, "no session", code, m, "login_required")
	code, m, _ = h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": "x"}, h.cookie(h.env.OwnerA), "https://evil.example")
	if code != http.StatusForbidden {
		t.Fatalf("cross-origin enroll: %d %v", code, m)
	}
	tok := h.enroll(h.env.OwnerA, "Bot", nil)
	code, m, _ = h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "list"}, h.cookie(h.env.OwnerA), "")
	if code != 200 || len(m["enrollments"].([]any)) != 1 || strings.Contains(toJSON(m), tok) {
		t.Fatalf("list: %d %v", code, m)
	}
	e := m["enrollments"].([]any)[0].(map[string]any)
	if scopes := e["scopes"].([]any); len(scopes) != 2 {
		t.Fatalf("default scopes = %v", scopes)
	}
	code, m, _ = h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": "x", "scopes": []string{"admin"}}, h.cookie(h.env.OwnerA), "")
	wantOAuthErr(t, "unknown scope", code, m, "invalid_scope")
}

func toJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func TestAgentSixthLiveTokenRefused(t *testing.T) {
	h := newAgentHarness(t)
	for range agents.MaxLiveEnrollments {
		h.enroll(h.env.OwnerA, "Bot", nil)
	}
	code, m, _ := h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": "Bot"}, h.cookie(h.env.OwnerA), "")
	wantOAuthErr(t, "sixth token", code, m, "too_many_enrollments")
	// Another owner is not affected.
	h.enroll(h.env.OwnerB, "Bot", nil)
}

func TestAgentEnrollmentRateLimited(t *testing.T) {
	h := newAgentHarness(t)
	var code int
	var m map[string]any
	for i := 0; i < 20; i++ {
		code, m, _ = h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": "Bot"}, h.cookie(h.env.OwnerA), "")
		if code == http.StatusCreated {
			// Free the slot so that only the rate limit can refuse.
			_, _, _ = h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "revoke", "id": m["id"]}, h.cookie(h.env.OwnerA), "")
			continue
		}
		break
	}
	wantOAuthErr(t, "burst of enrollments", code, m, core.CodeRateLimited)
}

func TestAgentRegisterMissingToken(t *testing.T) {
	h := newAgentHarness(t)
	code, m := h.registerService("", h.env.OwnerA.Email)
	wantOAuthErr(t, "no token", code, m, agents.CodeEnrollmentRequired)
	code, m = h.registerService("fxe_unknown", h.env.OwnerA.Email)
	wantOAuthErr(t, "unknown token", code, m, agents.CodeInvalidEnrollment)
}

func TestAgentTokenReuseAfterSuccess(t *testing.T) {
	h := newAgentHarness(t)
	tok := h.enroll(h.env.OwnerA, "Bot", nil)
	if code, m := h.registerService(tok, h.env.OwnerA.Email); code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, m)
	}
	code, m := h.registerService(tok, h.env.OwnerA.Email)
	wantOAuthErr(t, "reuse", code, m, agents.CodeInvalidEnrollment)
}

func TestAgentFailedRegistrationDoesNotConsume(t *testing.T) {
	h := newAgentHarness(t)
	tok := h.enroll(h.env.OwnerA, "Bot", nil)
	code, m := h.registerService(tok, h.env.OwnerB.Email)
	wantOAuthErr(t, "wrong login_hint", code, m, agents.CodeLoginHintMismatch)
	code, m, _ = h.jsonReq(oauth.PathAgentIdentity, map[string]any{"type": "other", "enrollment_token": tok}, "", "")
	wantOAuthErr(t, "bad type", code, m, "invalid_request")
	if code, m := h.registerService(tok, strings.ToUpper(h.env.OwnerA.Email)); code != http.StatusCreated {
		t.Fatalf("register after failures: %d %v", code, m)
	}
}

func TestAgentEnrollmentExpired(t *testing.T) {
	h := newAgentHarness(t)
	tok := h.enroll(h.env.OwnerA, "Bot", nil)
	h.clock.add(agents.EnrollmentTTL + time.Second)
	code, m := h.registerService(tok, h.env.OwnerA.Email)
	wantOAuthErr(t, "expired token", code, m, agents.CodeInvalidEnrollment)
}

func TestAgentEnrollmentRevoked(t *testing.T) {
	h := newAgentHarness(t)
	code, m, _ := h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": "Bot"}, h.cookie(h.env.OwnerA), "")
	if code != http.StatusCreated {
		t.Fatal(code, m)
	}
	tok := m["enrollment_token"].(string)
	code, r, _ := h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "revoke", "id": m["id"]}, h.cookie(h.env.OwnerB), "")
	if code != http.StatusNotFound {
		t.Fatalf("other owner's revoke: %d %v", code, r)
	}
	if code, r, _ := h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "revoke", "id": m["id"]}, h.cookie(h.env.OwnerA), ""); code != 200 {
		t.Fatalf("revoke: %d %v", code, r)
	}
	code, m = h.registerService(tok, h.env.OwnerA.Email)
	wantOAuthErr(t, "revoked token", code, m, agents.CodeInvalidEnrollment)
}

func TestAgentClaimPendingAndSlowDown(t *testing.T) {
	h := newAgentHarness(t)
	ct, _, _ := h.serviceAgent(nil)
	code, m := h.poll(ct)
	wantOAuthErr(t, "first poll", code, m, "authorization_pending")
	h.clock.add(time.Second)
	code, m = h.poll(ct)
	wantOAuthErr(t, "fast poll", code, m, "slow_down")
	if m["interval"].(float64) != 10 {
		t.Fatalf("interval after slow_down = %v", m["interval"])
	}
	h.clock.add(6 * time.Second) // under the grown interval
	code, m = h.poll(ct)
	wantOAuthErr(t, "still fast", code, m, "slow_down")
	if m["interval"].(float64) != 15 {
		t.Fatalf("interval after second slow_down = %v", m["interval"])
	}
	h.clock.add(16 * time.Second)
	code, m = h.poll(ct)
	wantOAuthErr(t, "poll at the interval", code, m, "authorization_pending")
}

func TestAgentClaimApproveWithNarrowing(t *testing.T) {
	h := newAgentHarness(t)
	ct, attempt, userCode := h.serviceAgent([]string{"fax:read", "credits:read", "fax:draft"})
	ctx := context.Background()
	v, err := h.env.Svc.Agents.ClaimForOwner(ctx, h.env.OwnerA.ID, attempt)
	if err != nil || v.Registration.Name != "Build bot" || len(v.Scopes) != 3 {
		t.Fatalf("claim view = %+v, %v", v, err)
	}
	// The approval is in the inbox.
	pend, err := h.env.Svc.Approvals.ListPending(ctx, h.env.OwnerA.ID)
	if err != nil || len(pend) != 1 || pend[0].Kind != approvals.KindAgentClaim {
		t.Fatalf("inbox = %+v, %v", pend, err)
	}
	if err := h.env.Svc.Agents.DecideClaim(ctx, h.env.OwnerA.ID, attempt, userCode, true, []string{"fax:read"}); err != nil {
		t.Fatal(err)
	}
	code, m := h.poll(ct)
	if code != 200 || m["scope"] != "fax:read" || m["token_type"] != "Bearer" || m["identity_assertion"] == nil || m["assertion_expires"] == nil || m["refresh_token"] != nil {
		t.Fatalf("token response: %d %v", code, m)
	}
	if e := m["expires_in"].(float64); e <= 0 || e > 3600 {
		t.Fatalf("expires_in = %v", e)
	}
	code, p := h.mcpPrincipal(m["access_token"].(string))
	if code != 200 || p.Kind != core.PrincipalAgent || p.OwnerID != h.env.OwnerA.ID || len(p.Scopes) != 1 || p.Scopes[0] != core.ScopeFaxRead {
		t.Fatalf("MCP principal: %d %+v", code, p)
	}
	// The claim is redeemed once.
	code, m = h.poll(ct)
	wantOAuthErr(t, "second redemption", code, m, "invalid_grant")
	// The inbox item was decided.
	if pend, _ := h.env.Svc.Approvals.ListPending(ctx, h.env.OwnerA.ID); len(pend) != 0 {
		t.Fatalf("inbox after approval = %+v", pend)
	}
}

func TestAgentClaimWideningRefused(t *testing.T) {
	h := newAgentHarness(t)
	_, attempt, userCode := h.serviceAgent(nil)
	err := h.env.Svc.Agents.DecideClaim(context.Background(), h.env.OwnerA.ID, attempt, userCode, true, []string{"fax:send"})
	if core.ErrorCode(err) != agents.CodeClaimScopeWiden {
		t.Fatalf("widening: %v", err)
	}
}

func TestAgentClaimWrongCodeAndAccount(t *testing.T) {
	h := newAgentHarness(t)
	_, attempt, userCode := h.serviceAgent(nil)
	ctx := context.Background()
	if _, err := h.env.Svc.Agents.ClaimForOwner(ctx, h.env.OwnerB.ID, attempt); core.ErrorCode(err) != agents.CodeClaimWrongOwner {
		t.Fatalf("wrong account: %v", err)
	}
	if err := h.env.Svc.Agents.DecideClaim(ctx, h.env.OwnerB.ID, attempt, userCode, true, nil); core.ErrorCode(err) != agents.CodeClaimWrongOwner {
		t.Fatalf("wrong account decides: %v", err)
	}
	wrong := "000000"
	if userCode == wrong {
		wrong = "111111"
	}
	for i := 1; i < agents.ClaimMaxTries; i++ {
		if err := h.env.Svc.Agents.DecideClaim(ctx, h.env.OwnerA.ID, attempt, wrong, true, nil); core.ErrorCode(err) != agents.CodeClaimWrongCode {
			t.Fatalf("wrong code %d: %v", i, err)
		}
	}
	if err := h.env.Svc.Agents.DecideClaim(ctx, h.env.OwnerA.ID, attempt, wrong, true, nil); core.ErrorCode(err) != agents.CodeClaimTooManyTries {
		t.Fatalf("last wrong code: %v", err)
	}
	if err := h.env.Svc.Agents.DecideClaim(ctx, h.env.OwnerA.ID, attempt, userCode, true, nil); core.ErrorCode(err) != agents.CodeClaimTooManyTries {
		t.Fatalf("right code after the limit: %v", err)
	}
}

func TestAgentClaimDecline(t *testing.T) {
	h := newAgentHarness(t)
	ct, attempt, _ := h.serviceAgent(nil)
	if err := h.env.Svc.Agents.DecideClaim(context.Background(), h.env.OwnerA.ID, attempt, "", false, nil); err != nil {
		t.Fatal(err)
	}
	code, m := h.poll(ct)
	wantOAuthErr(t, "after decline", code, m, "access_denied")
	if _, err := h.env.Svc.Agents.ClaimForOwner(context.Background(), h.env.OwnerA.ID, attempt); core.ErrorCode(err) != agents.CodeClaimLinkInvalid {
		t.Fatalf("link after decline: %v", err)
	}
}

func TestAgentClaimExpiry(t *testing.T) {
	h := newAgentHarness(t)
	ct, attempt, userCode := h.serviceAgent(nil)
	h.clock.add(agents.ClaimTTL + time.Second)
	if err := h.env.Svc.Agents.DecideClaim(context.Background(), h.env.OwnerA.ID, attempt, userCode, true, nil); core.ErrorCode(err) != agents.CodeClaimExpired {
		t.Fatalf("approve expired: %v", err)
	}
	code, m := h.poll(ct)
	wantOAuthErr(t, "expired", code, m, "expired_token")
	code, m, _ = h.jsonReq(oauth.PathAgentClaim, map[string]any{"claim_token": ct, "email": h.env.OwnerA.Email}, "", "")
	wantOAuthErr(t, "claim after expiry", code, m, "expired_token")
}

func TestAgentNewAttemptInvalidatesOldLink(t *testing.T) {
	h := newAgentHarness(t)
	ct, attempt, _ := h.serviceAgent(nil)
	code, m, _ := h.jsonReq(oauth.PathAgentClaim, map[string]any{"claim_token": ct, "email": h.env.OwnerB.Email}, "", "")
	wantOAuthErr(t, "wrong email", code, m, agents.CodeEmailMismatch)
	code, m, hdr := h.jsonReq(oauth.PathAgentClaim, map[string]any{"claim_token": ct, "email": h.env.OwnerA.Email}, "", "")
	if code != 200 || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("claim: %d %v", code, m)
	}
	att := m["claim_attempt"].(map[string]any)
	newAttempt := attemptOf(t, att["verification_uri"].(string))
	ctx := context.Background()
	if _, err := h.env.Svc.Agents.ClaimForOwner(ctx, h.env.OwnerA.ID, attempt); core.ErrorCode(err) != agents.CodeClaimLinkInvalid {
		t.Fatalf("old link: %v", err)
	}
	if err := h.env.Svc.Agents.DecideClaim(ctx, h.env.OwnerA.ID, newAttempt, att["user_code"].(string), true, nil); err != nil {
		t.Fatal(err)
	}
	if code, m := h.poll(ct); code != 200 {
		t.Fatalf("poll: %d %v", code, m)
	}
}

func TestAgentAnonymousEmptyScope(t *testing.T) {
	h := newAgentHarness(t)
	tok := h.enroll(h.env.OwnerA, "Anon bot", nil)
	code, m, _ := h.jsonReq(oauth.PathAgentIdentity, map[string]any{"type": "anonymous", "enrollment_token": tok}, "", "")
	if code != http.StatusCreated || m["identity_assertion"] == nil || m["claim_token"] == nil {
		t.Fatalf("anonymous: %d %v", code, m)
	}
	pre := m["identity_assertion"].(string)
	ct := m["claim_token"].(string)
	code, x := h.exchange(pre)
	if code != 200 || x["scope"] != "" {
		t.Fatalf("pre-claim exchange: %d %v", code, x)
	}
	code, p := h.mcpPrincipal(x["access_token"].(string))
	if code != 200 || p.OwnerID != "" || len(p.Scopes) != 0 {
		t.Fatalf("pre-claim principal: %d %+v", code, p)
	}
	if err := core.Authorize(p, core.OpGetCredits); err == nil {
		t.Fatal("pre-claim token has account access")
	}
	preToken := x["access_token"].(string)
	// Claim and approve: the pre-claim token and assertion stop working.
	code, m, _ = h.jsonReq(oauth.PathAgentClaim, map[string]any{"claim_token": ct, "email": h.env.OwnerA.Email}, "", "")
	if code != 200 {
		t.Fatalf("claim: %d %v", code, m)
	}
	att := m["claim_attempt"].(map[string]any)
	if err := h.env.Svc.Agents.DecideClaim(context.Background(), h.env.OwnerA.ID, attemptOf(t, att["verification_uri"].(string)), att["user_code"].(string), true, nil); err != nil {
		t.Fatal(err)
	}
	code, m = h.poll(ct)
	if code != 200 || m["scope"] != "credits:read fax:read" {
		t.Fatalf("poll: %d %v", code, m)
	}
	if code, _ := h.mcpPrincipal(preToken); code != 401 {
		t.Fatalf("pre-claim token after approval: %d", code)
	}
	code, x = h.exchange(pre)
	wantOAuthErr(t, "pre-claim assertion after approval", code, x, "invalid_grant")
	if code, x := h.exchange(m["identity_assertion"].(string)); code != 200 || x["scope"] != "credits:read fax:read" {
		t.Fatalf("exchange: %d %v", code, x)
	}
}

// approved runs a service_auth agent through approval and returns the
// token response.
func (h *agentHarness) approved() map[string]any {
	h.t.Helper()
	ct, attempt, userCode := h.serviceAgent(nil)
	if err := h.env.Svc.Agents.DecideClaim(context.Background(), h.env.OwnerA.ID, attempt, userCode, true, nil); err != nil {
		h.t.Fatal(err)
	}
	code, m := h.poll(ct)
	if code != 200 {
		h.t.Fatalf("poll: %d %v", code, m)
	}
	return m
}

func TestAgentAssertionShape(t *testing.T) {
	h := newAgentHarness(t)
	m := h.approved()
	raw := m["identity_assertion"].(string)
	obj, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	hd := obj.Signatures[0].Header
	if hd.Algorithm != "EdDSA" || hd.ExtraHeaders["typ"] != "oauth-id-jag+jwt" || hd.KeyID == "" {
		t.Fatalf("header = %+v", hd)
	}
	var set jose.JSONWebKeySet
	h.getJSON(h.base+oauth.PathJWKS, &set)
	keys := set.Key(hd.KeyID)
	if len(keys) != 1 {
		t.Fatalf("kid %s not in the JWKS", hd.KeyID)
	}
	payload, err := obj.Verify(keys[0].Key.(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	var cl map[string]any
	_ = json.Unmarshal(payload, &cl)
	if cl["iss"] != h.srv.Issuer() || cl["aud"] != h.srv.Issuer() || cl["sub"] == "" || cl["jti"] == "" || cl["client_id"] == "" {
		t.Fatalf("claims = %v", cl)
	}
	if exp, iat := cl["exp"].(float64), cl["iat"].(float64); exp-iat != float64(30*24*3600) {
		t.Fatalf("lifetime = %v", exp-iat)
	}
}

func TestAgentExternalAssertionRefused(t *testing.T) {
	h := newAgentHarness(t)
	_, priv, _ := ed25519.GenerateKey(nil)
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: jose.JSONWebKey{Key: priv, KeyID: "ext"}},
		(&jose.SignerOptions{}).WithType("oauth-id-jag+jwt"))
	obj, _ := signer.Sign([]byte(`{"iss":"https://idp.example","aud":"` + h.srv.Issuer() + `","sub":"x","jti":"j","exp":9999999999}`))
	raw, _ := obj.CompactSerialize()
	code, m := h.exchange(raw)
	wantOAuthErr(t, "external assertion", code, m, "invalid_grant")
	code, m = h.exchange("not-a-jwt")
	wantOAuthErr(t, "garbage", code, m, "invalid_grant")
}

func TestAgentReexchangeAfterTokenRevoke(t *testing.T) {
	h := newAgentHarness(t)
	m := h.approved()
	tok := m["access_token"].(string)
	for range 2 { // idempotent
		code, r := h.form(oauth.PathRevoke, url.Values{"token": {tok}, "token_type_hint": {"access_token"}})
		if code != 200 {
			t.Fatalf("revoke: %d %v", code, r)
		}
	}
	if code, _ := h.mcpPrincipal(tok); code != 401 {
		t.Fatalf("revoked token: %d", code)
	}
	code, x := h.exchange(m["identity_assertion"].(string))
	if code != 200 || x["refresh_token"] != nil || x["scope"] != "credits:read fax:read" {
		t.Fatalf("re-exchange: %d %v", code, x)
	}
	if code, _ := h.mcpPrincipal(x["access_token"].(string)); code != 200 {
		t.Fatalf("fresh token: %d", code)
	}
	// Access tokens expire after an hour; the assertion refreshes them for 30 days.
	h.clock.add(time.Hour + time.Second)
	if code, _ := h.mcpPrincipal(x["access_token"].(string)); code != 401 {
		t.Fatalf("token after an hour: %d", code)
	}
	h.clock.add(29 * 24 * time.Hour)
	if code, x := h.exchange(m["identity_assertion"].(string)); code != 200 {
		t.Fatalf("exchange on day 29: %d %v", code, x)
	}
	h.clock.add(24 * time.Hour)
	code, x = h.exchange(m["identity_assertion"].(string))
	wantOAuthErr(t, "exchange after 30 days", code, x, "invalid_grant")
}

func TestAgentRegistrationRevokeStopsBoth(t *testing.T) {
	h := newAgentHarness(t)
	m := h.approved()
	assertion, tok := m["identity_assertion"].(string), m["access_token"].(string)
	code, r, _ := h.jsonReq(oauth.PathAgentRevoke, map[string]any{"identity_assertion": assertion}, "", "")
	if code != 200 {
		t.Fatalf("revoke registration: %d %v", code, r)
	}
	if code, _ := h.mcpPrincipal(tok); code != 401 {
		t.Fatalf("token after registration revoke: %d", code)
	}
	code, x := h.exchange(assertion)
	wantOAuthErr(t, "exchange after registration revoke", code, x, "invalid_grant")
}

func TestAgentOwnerRevokesRegistration(t *testing.T) {
	h := newAgentHarness(t)
	m := h.approved()
	regs, err := h.env.Svc.Agents.ListRegistrations(context.Background(), h.env.OwnerA.ID)
	if err != nil || len(regs) != 1 || !regs[0].Claimed || regs[0].LastUsedAt == nil {
		t.Fatalf("registrations = %+v, %v", regs, err)
	}
	code, r, _ := h.jsonReq(oauth.PathAgentManage, map[string]any{"action": "revoke", "kind": "registration", "id": regs[0].ID}, h.cookie(h.env.OwnerA), "")
	if code != 200 {
		t.Fatalf("owner revoke: %d %v", code, r)
	}
	if code, _ := h.mcpPrincipal(m["access_token"].(string)); code != 401 {
		t.Fatalf("token after owner revoke: %d", code)
	}
	code, x := h.exchange(m["identity_assertion"].(string))
	wantOAuthErr(t, "exchange after owner revoke", code, x, "invalid_grant")
}

// TestAgentTwoReplicas runs two servers on one PostgreSQL schema: polling
// state (slow_down) and the live-token limit are shared.
func TestAgentTwoReplicas(t *testing.T) {
	base := os.Getenv(testenv.EnvPostgres)
	if base == "" {
		base = os.Getenv(storetest.EnvPostgresURL)
	}
	if base == "" {
		t.Skip("set " + testenv.EnvPostgres + " or " + storetest.EnvPostgresURL + " to run on PostgreSQL")
	}
	t.Setenv(testenv.EnvPostgres, base)
	c := &clock{t: time.Now().UTC()}
	h1 := &agentHarness{harness: newHarness(t, func(o *oauth.Options) { o.Now = c.now }), clock: c}
	// The second replica shares h1's database.
	srv2, err := oauth.New(h1.env.Svc, h1.env.DB, oauth.Options{BaseURL: h1.base, APIURL: h1.base, MCPOAuth: true, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := h1.env.Serve(routed(srv2, h1.env, h1.base))
	h2 := &agentHarness{harness: &harness{t: t, env: h1.env, srv: srv2, base: ts2.URL, noRedirect: h1.noRedirect}, clock: c}
	for i := range agents.MaxLiveEnrollments {
		if i%2 == 0 {
			h1.enroll(h1.env.OwnerA, "Bot", nil)
		} else {
			h2.enroll(h1.env.OwnerA, "Bot", nil)
		}
	}
	code, m, _ := h2.jsonReq(oauth.PathAgentManage, map[string]any{"action": "enroll", "name": "Bot"}, h2.cookie(h1.env.OwnerA), "")
	wantOAuthErr(t, "sixth token on the other replica", code, m, "too_many_enrollments")
	// Shared claim polling state.
	code, m, _ = h1.jsonReq(oauth.PathAgentManage, map[string]any{"action": "list"}, h1.cookie(h1.env.OwnerA), "")
	if code != 200 {
		t.Fatal(code, m)
	}
	_, _, _ = h1.jsonReq(oauth.PathAgentManage, map[string]any{"action": "revoke", "id": m["enrollments"].([]any)[0].(map[string]any)["id"]}, h1.cookie(h1.env.OwnerA), "")
	ct, _, _ := h1.serviceAgent(nil)
	code, m = h1.poll(ct)
	wantOAuthErr(t, "first poll on replica 1", code, m, "authorization_pending")
	c.add(time.Second)
	code, m = h2.form(oauth.PathToken, url.Values{"grant_type": {oauth.GrantTypeAgentClaim}, "claim_token": {ct}, "resource": {h1.mcp()}})
	wantOAuthErr(t, "fast poll on replica 2", code, m, "slow_down")
	if m["interval"].(float64) != 10 {
		t.Fatalf("interval = %v", m["interval"])
	}
}
