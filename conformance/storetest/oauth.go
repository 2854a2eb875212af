package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/services"
)

// oauthStore returns s as a authstate.OAuthStore: faxhub's one store
// implements both ports.
func oauthStore(t *testing.T, s services.Store) authstate.OAuthStore {
	t.Helper()
	o, ok := s.(authstate.OAuthStore)
	if !ok {
		t.Fatalf("%T does not implement authstate.OAuthStore", s)
	}
	return o
}

func newOAuthClient(t *testing.T, s authstate.OAuthStore) *authstate.OAuthClient {
	t.Helper()
	c := &authstate.OAuthClient{
		ID: core.NewID(core.PrefixOAuthClient), Kind: authstate.OAuthClientDynamic, Name: "Chat app", URI: "https://chat.example",
		RedirectURIs: []string{"https://chat.example/cb", "http://127.0.0.1:8123/cb?x=1"}, GrantTypes: []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"}, Scope: "fax:read openid", Metadata: json.RawMessage(`{"client_name":"Chat app"}`),
		CreatedAt: at(0), UpdatedAt: at(0),
	}
	must(t, s.CreateOAuthClient(t.Context(), c))
	return c
}

func testOAuthClients(t *testing.T, st services.Store) {
	ctx, s := t.Context(), oauthStore(t, st)
	c := newOAuthClient(t, s)
	got, err := s.GetOAuthClient(ctx, c.ID)
	must(t, err)
	jsonEqual(t, "metadata", got.Metadata, c.Metadata)
	got.Metadata = c.Metadata
	wantEqual(t, "GetOAuthClient", got, c)
	wantErr(t, "CreateOAuthClient of a taken id", s.CreateOAuthClient(ctx, c), core.ErrExists)
	_, err = s.GetOAuthClient(ctx, "oac_missing")
	wantErr(t, "GetOAuthClient of a missing id", err, core.ErrNoRows)

	// A metadata document is inserted, then replaced when fetched again.
	doc := &authstate.OAuthClient{
		ID: "https://app.example/oauth/client.json", Kind: authstate.OAuthClientMetadataDocument, Name: "Doc app",
		RedirectURIs: []string{"https://app.example/cb"}, GrantTypes: []string{"authorization_code"}, ResponseTypes: []string{"code"},
		CreatedAt: at(1), UpdatedAt: at(1),
	}
	must(t, s.PutOAuthClient(ctx, doc))
	again := *doc
	again.Name, again.RedirectURIs, again.UpdatedAt, again.CreatedAt = "Doc app 2", []string{"https://app.example/cb2"}, at(60), at(60)
	must(t, s.PutOAuthClient(ctx, &again))
	got, err = s.GetOAuthClient(ctx, doc.ID)
	must(t, err)
	want := again
	want.CreatedAt = doc.CreatedAt
	wantEqual(t, "client after PutOAuthClient", got, &want)
}

func newGrant(t *testing.T, s authstate.OAuthStore, o *accounts.Owner, c *authstate.OAuthClient, resource string) *authstate.OAuthGrant {
	t.Helper()
	g := &authstate.OAuthGrant{
		ID: core.NewID(core.PrefixOAuthGrant), OwnerID: o.ID, ClientID: c.ID, Scopes: []string{"fax:read", "offline_access"},
		Resource: resource, CreatedAt: at(2), UpdatedAt: at(2),
	}
	must(t, s.CreateOAuthGrant(t.Context(), g))
	g.ClientName, g.ClientURI = c.Name, c.URI
	return g
}

func newToken(t *testing.T, s authstate.OAuthStore, kind authstate.OAuthTokenKind, requestID string, g *authstate.OAuthGrant) *authstate.OAuthToken {
	t.Helper()
	tok := &authstate.OAuthToken{
		Kind: kind, Signature: core.HashSecret(core.RandomString(16)), RequestID: requestID, GrantID: g.ID, ClientID: g.ClientID,
		OwnerID: g.OwnerID, Active: true, Request: []byte(`{"id":"` + requestID + `"}`), CreatedAt: at(3), ExpiresAt: at(3603),
	}
	must(t, s.CreateOAuthToken(t.Context(), tok))
	return tok
}

func testOAuthGrants(t *testing.T, st services.Store) {
	ctx, s := t.Context(), oauthStore(t, st)
	a, b := newOwner(t, st), newOwner(t, st)
	c := newOAuthClient(t, s)
	const mcp = "https://faxhub.example/mcp"
	g := newGrant(t, s, a, c, mcp)
	got, err := s.GetOAuthGrant(ctx, g.ID)
	must(t, err)
	wantEqual(t, "GetOAuthGrant", got, g)

	dup := *g
	dup.ID = core.NewID(core.PrefixOAuthGrant)
	wantErr(t, "second live grant for owner, client and resource", s.CreateOAuthGrant(ctx, &dup), core.ErrExists)
	newGrant(t, s, a, c, "https://faxhub.example/a2a")
	gb := newGrant(t, s, b, c, mcp)

	got, err = s.FindOAuthGrant(ctx, a.ID, c.ID, mcp)
	must(t, err)
	wantEqual(t, "FindOAuthGrant", got.ID, g.ID)
	_, err = s.FindOAuthGrant(ctx, a.ID, "oac_other", mcp)
	wantErr(t, "FindOAuthGrant of another client", err, core.ErrNoRows)

	must(t, s.UpdateOAuthGrantScopes(ctx, g.ID, []string{"fax:read"}, at(10)))
	must(t, s.TouchOAuthGrant(ctx, g.ID, at(11)))
	got, err = s.GetOAuthGrant(ctx, g.ID)
	must(t, err)
	wantEqual(t, "scopes after update", got.Scopes, []string{"fax:read"})
	wantEqual(t, "updated_at", got.UpdatedAt, at(10))
	wantEqual(t, "last_used_at", got.LastUsedAt, ptr(at(11)))

	list, err := s.ListOAuthGrants(ctx, a.ID)
	must(t, err)
	if len(list) != 2 || list[0].ClientName != c.Name {
		t.Fatalf("ListOAuthGrants(a) = %s, want two grants of %q", dump(list), c.Name)
	}

	access := newToken(t, s, authstate.OAuthAccessToken, "req-1", g)
	refresh := newToken(t, s, authstate.OAuthRefreshToken, "req-1", g)
	other := newToken(t, s, authstate.OAuthAccessToken, "req-b", gb)

	// An access token and its grant (with the client's name) in one read;
	// a refresh token is not an access token.
	gotTok, gotGrant, err := s.GetOAuthAccessToken(ctx, access.Signature)
	must(t, err)
	wantEqual(t, "GetOAuthAccessToken token", gotTok, access)
	wantGrant, err := s.GetOAuthGrant(ctx, g.ID)
	must(t, err)
	wantEqual(t, "GetOAuthAccessToken grant", gotGrant, wantGrant)
	_, _, err = s.GetOAuthAccessToken(ctx, refresh.Signature)
	wantErr(t, "GetOAuthAccessToken of a refresh token", err, core.ErrNoRows)

	// After each change to the grant or its client, the joined read says
	// what the plain reads say: a store that keeps it (SQLite,
	// core/store/rowcache.go) must have learnt of the change.
	joined := func(step string) {
		t.Helper()
		gotTok, gotGrant, err := s.GetOAuthAccessToken(ctx, access.Signature)
		must(t, err)
		wantEqual(t, "GetOAuthAccessToken token after "+step, gotTok, access)
		wantGrant, err := s.GetOAuthGrant(ctx, g.ID)
		must(t, err)
		wantEqual(t, "GetOAuthAccessToken grant after "+step, gotGrant, wantGrant)
	}
	must(t, s.UpdateOAuthGrantScopes(ctx, g.ID, []string{"fax:read", "fax:send"}, at(12)))
	joined("a change of scopes")
	must(t, s.TouchOAuthGrant(ctx, g.ID, at(13)))
	joined("a use")
	renamed := *c
	renamed.Name, renamed.UpdatedAt = "Renamed client", at(14)
	must(t, s.PutOAuthClient(ctx, &renamed))
	joined("the client's new name")

	// Owner B cannot revoke A's grant.
	wantErr(t, "RevokeOAuthGrant by another owner", s.RevokeOAuthGrant(ctx, b.ID, g.ID, at(20)), core.ErrNoRows)
	must(t, s.RevokeOAuthGrant(ctx, a.ID, g.ID, at(20)))
	wantErr(t, "RevokeOAuthGrant twice", s.RevokeOAuthGrant(ctx, a.ID, g.ID, at(21)), core.ErrNoRows)
	for _, tok := range []*authstate.OAuthToken{access, refresh} {
		_, err = s.GetOAuthToken(ctx, tok.Kind, tok.Signature)
		wantErr(t, "token of a revoked grant", err, core.ErrNoRows)
	}
	_, _, err = s.GetOAuthAccessToken(ctx, access.Signature)
	wantErr(t, "GetOAuthAccessToken of a revoked grant", err, core.ErrNoRows)
	_, err = s.GetOAuthToken(ctx, other.Kind, other.Signature)
	must(t, err)
	got, err = s.GetOAuthGrant(ctx, g.ID)
	must(t, err)
	wantEqual(t, "revoked_at", got.RevokedAt, ptr(at(20)))
	wantErr(t, "UpdateOAuthGrantScopes of a revoked grant", s.UpdateOAuthGrantScopes(ctx, g.ID, nil, at(22)), core.ErrNoRows)
	_, err = s.FindOAuthGrant(ctx, a.ID, c.ID, mcp)
	wantErr(t, "FindOAuthGrant after revocation", err, core.ErrNoRows)
	list, err = s.ListOAuthGrants(ctx, a.ID)
	must(t, err)
	wantEqual(t, "live grants after revocation", len(list), 1)

	// A new consent after revocation creates a new grant.
	newGrant(t, s, a, c, mcp)
}

func testOAuthTokens(t *testing.T, st services.Store) {
	ctx, s := t.Context(), oauthStore(t, st)
	o := newOwner(t, st)
	g := newGrant(t, s, o, newOAuthClient(t, s), "https://faxhub.example/mcp")

	code := newToken(t, s, authstate.OAuthAuthorizeCode, "req-1", g)
	got, err := s.GetOAuthToken(ctx, code.Kind, code.Signature)
	must(t, err)
	wantEqual(t, "GetOAuthToken", got, code)
	wantErr(t, "CreateOAuthToken twice", s.CreateOAuthToken(ctx, code), core.ErrExists)
	_, err = s.GetOAuthToken(ctx, authstate.OAuthAccessToken, code.Signature)
	wantErr(t, "GetOAuthToken of another kind", err, core.ErrNoRows)

	must(t, s.DeactivateOAuthToken(ctx, code.Kind, code.Signature))
	wantErr(t, "DeactivateOAuthToken twice", s.DeactivateOAuthToken(ctx, code.Kind, code.Signature), core.ErrConflict)
	wantErr(t, "DeactivateOAuthToken of a missing one", s.DeactivateOAuthToken(ctx, code.Kind, "missing"), core.ErrNoRows)
	got, err = s.GetOAuthToken(ctx, code.Kind, code.Signature)
	must(t, err)
	wantEqual(t, "active after deactivation", got.Active, false)

	// Revoking a request deletes its access tokens and deactivates its
	// refresh tokens; other requests are untouched.
	a1 := newToken(t, s, authstate.OAuthAccessToken, "req-1", g)
	a2 := newToken(t, s, authstate.OAuthAccessToken, "req-1", g)
	r1 := newToken(t, s, authstate.OAuthRefreshToken, "req-1", g)
	keep := newToken(t, s, authstate.OAuthAccessToken, "req-2", g)
	// Each access token is read (joined with its grant) before it goes: a
	// store that keeps the joined read (SQLite) must learn of it.
	accessRead := func(tok *authstate.OAuthToken) error {
		_, _, err := s.GetOAuthAccessToken(ctx, tok.Signature)
		return err
	}
	for _, tok := range []*authstate.OAuthToken{a1, a2, keep} {
		must(t, accessRead(tok))
	}
	must(t, s.RevokeOAuthRequest(ctx, "req-1"))
	must(t, s.RevokeOAuthRequest(ctx, "req-1"))
	for _, tok := range []*authstate.OAuthToken{a1, a2} {
		_, err = s.GetOAuthToken(ctx, tok.Kind, tok.Signature)
		wantErr(t, "access token of a revoked request", err, core.ErrNoRows)
		wantErr(t, "GetOAuthAccessToken of a revoked request", accessRead(tok), core.ErrNoRows)
	}
	got, err = s.GetOAuthToken(ctx, r1.Kind, r1.Signature)
	must(t, err)
	wantEqual(t, "refresh token of a revoked request is active", got.Active, false)
	_, err = s.GetOAuthToken(ctx, keep.Kind, keep.Signature)
	must(t, err)

	// Rotation: the used refresh token goes inactive and the request's
	// access tokens go; a second rotation with the same token conflicts.
	a3 := newToken(t, s, authstate.OAuthAccessToken, "req-3", g)
	r3 := newToken(t, s, authstate.OAuthRefreshToken, "req-3", g)
	must(t, accessRead(a3))
	must(t, s.RotateOAuthRefresh(ctx, "req-3", r3.Signature))
	_, err = s.GetOAuthToken(ctx, a3.Kind, a3.Signature)
	wantErr(t, "access token after rotation", err, core.ErrNoRows)
	wantErr(t, "GetOAuthAccessToken after rotation", accessRead(a3), core.ErrNoRows)
	wantErr(t, "RotateOAuthRefresh twice", s.RotateOAuthRefresh(ctx, "req-3", r3.Signature), core.ErrConflict)
	wantErr(t, "RotateOAuthRefresh of another request", s.RotateOAuthRefresh(ctx, "req-2", r3.Signature), core.ErrNoRows)

	must(t, accessRead(keep))
	must(t, s.DeleteOAuthToken(ctx, keep.Kind, keep.Signature))
	wantErr(t, "GetOAuthAccessToken of a deleted token", accessRead(keep), core.ErrNoRows)
	must(t, s.DeleteOAuthToken(ctx, keep.Kind, keep.Signature))
	_, err = s.GetOAuthToken(ctx, keep.Kind, keep.Signature)
	wantErr(t, "deleted token", err, core.ErrNoRows)

	// Expiry sweep.
	old := &authstate.OAuthToken{Kind: authstate.OAuthPKCE, Signature: "old", RequestID: "req-4", ClientID: g.ClientID, Active: true,
		Request: []byte("{}"), CreatedAt: at(0), ExpiresAt: at(5)}
	must(t, s.CreateOAuthToken(ctx, old))
	oldAccess := &authstate.OAuthToken{Kind: authstate.OAuthAccessToken, Signature: "old-access", RequestID: "req-5", GrantID: g.ID,
		ClientID: g.ClientID, OwnerID: o.ID, Active: true, Request: []byte("{}"), CreatedAt: at(0), ExpiresAt: at(5)}
	must(t, s.CreateOAuthToken(ctx, oldAccess))
	must(t, accessRead(oldAccess))
	n, err := s.DeleteExpiredOAuth(ctx, at(100))
	must(t, err)
	if n < 1 {
		t.Fatalf("DeleteExpiredOAuth removed %d rows, want at least 1", n)
	}
	_, err = s.GetOAuthToken(ctx, old.Kind, old.Signature)
	wantErr(t, "expired token", err, core.ErrNoRows)
	wantErr(t, "GetOAuthAccessToken of an expired token swept", accessRead(oldAccess), core.ErrNoRows)
	_, err = s.GetOAuthToken(ctx, r3.Kind, r3.Signature)
	must(t, err)
}

// testOAuthRotateConcurrent races refreshes with one refresh token: exactly
// one rotation succeeds.
func testOAuthRotateConcurrent(t *testing.T, st services.Store) {
	ctx, s := t.Context(), oauthStore(t, st)
	g := newGrant(t, s, newOwner(t, st), newOAuthClient(t, s), "https://faxhub.example/mcp")
	r := newToken(t, s, authstate.OAuthRefreshToken, "req-1", g)
	errs := race(concurrency, func(int) error { return s.RotateOAuthRefresh(ctx, "req-1", r.Signature) })
	ok, conflicts := countErrs(t, "RotateOAuthRefresh", errs, core.ErrConflict)
	if ok != 1 || conflicts != concurrency-1 {
		t.Fatalf("RotateOAuthRefresh: %d succeeded, %d conflicted; want 1 and %d", ok, conflicts, concurrency-1)
	}
}

func testOAuthConsents(t *testing.T, st services.Store) {
	ctx, s := t.Context(), oauthStore(t, st)
	a, b := newOwner(t, st), newOwner(t, st)
	ap := &approvals.Approval{
		ID: core.NewID(core.PrefixApproval), OwnerID: a.ID, Mode: core.ModeTest, Kind: approvals.KindOAuthConsent, BindingHash: "h",
		Status: approvals.Pending, CreatedAt: at(0), ExpiresAt: at(600),
	}
	must(t, st.CreateApproval(ctx, ap))
	c := &authstate.OAuthConsent{ApprovalID: ap.ID, OwnerID: a.ID, ClientID: "oac_x", Query: "client_id=oac_x&state=abc%20def",
		CreatedAt: at(0), ExpiresAt: at(600)}
	must(t, s.CreateOAuthConsent(ctx, c))
	wantErr(t, "CreateOAuthConsent twice", s.CreateOAuthConsent(ctx, c), core.ErrExists)
	got, err := s.GetOAuthConsent(ctx, a.ID, ap.ID)
	must(t, err)
	wantEqual(t, "GetOAuthConsent", got, c)
	_, err = s.GetOAuthConsent(ctx, b.ID, ap.ID)
	wantErr(t, "GetOAuthConsent by another owner", err, core.ErrNoRows)
	wantErr(t, "DeleteOAuthConsent by another owner", s.DeleteOAuthConsent(ctx, b.ID, ap.ID), core.ErrNoRows)
	must(t, s.DeleteOAuthConsent(ctx, a.ID, ap.ID))
	wantErr(t, "DeleteOAuthConsent twice", s.DeleteOAuthConsent(ctx, a.ID, ap.ID), core.ErrNoRows)
}

func testOAuthKeys(t *testing.T, st services.Store) {
	ctx, s := t.Context(), oauthStore(t, st)
	key := func(id string, purpose authstate.KeyPurpose, alg string, sec int) *authstate.OAuthKey {
		return &authstate.OAuthKey{ID: id, Purpose: purpose, Alg: alg, PublicJWK: []byte(`{"kid":"` + id + `"}`), Sealed: []byte{0, 1, 2, 0xff}, CreatedAt: at(sec)}
	}
	mk := func(id string, purpose authstate.KeyPurpose, alg string, sec int) *authstate.OAuthKey {
		k := key(id, purpose, alg, sec)
		must(t, s.CreateOAuthKey(ctx, k))
		return k
	}
	rotate := func(id string, purpose authstate.KeyPurpose, alg string, sec int) *authstate.OAuthKey {
		k := key(id, purpose, alg, sec)
		must(t, s.RotateOAuthKey(ctx, k, k.CreatedAt))
		return k
	}
	token, receipt := authstate.KeyPurposeToken, authstate.KeyPurposeReceipt
	e1 := mk("e1", token, "EdDSA", 0)
	r1 := mk("r1", token, "RS256", 1)
	wantErr(t, "CreateOAuthKey twice", s.CreateOAuthKey(ctx, e1), core.ErrExists)
	// One active key per role: a second first key is refused, as another
	// replica's would be.
	wantErr(t, "CreateOAuthKey of a role with an active key", s.CreateOAuthKey(ctx, key("e1b", token, "EdDSA", 0)), core.ErrExists)
	x1 := mk("x1", receipt, "EdDSA", 1)
	e2 := rotate("e2", token, "EdDSA", 3)

	keys, err := s.ListOAuthKeys(ctx, token, at(0))
	must(t, err)
	e1.RetiredAt = ptr(at(3))
	wantEqual(t, "keys published", keys, []authstate.OAuthKey{*e2, *r1, *e1})
	keys, err = s.ListOAuthKeys(ctx, token, at(3))
	must(t, err)
	wantEqual(t, "keys after the retired key's window", keys, []authstate.OAuthKey{*e2, *r1})

	// Rotating the token keys left the receipt key of the same alg alone.
	keys, err = s.ListOAuthKeys(ctx, receipt, at(3))
	must(t, err)
	wantEqual(t, "receipt keys", keys, []authstate.OAuthKey{*x1})
	x2 := rotate("x2", receipt, "EdDSA", 5)
	keys, err = s.ListOAuthKeys(ctx, receipt, time.Time{})
	must(t, err)
	x1.RetiredAt = ptr(at(5))
	wantEqual(t, "every receipt key", keys, []authstate.OAuthKey{*x2, *x1})
	keys, err = s.ListOAuthKeys(ctx, token, time.Time{})
	must(t, err)
	wantEqual(t, "token keys untouched by a receipt rotation", keys, []authstate.OAuthKey{*e2, *r1, *e1})
	wantErr(t, "RotateOAuthKey to a kid that exists", s.RotateOAuthKey(ctx, key("e1", token, "EdDSA", 6), at(6)), core.ErrExists)
	keys, err = s.ListOAuthKeys(ctx, token, at(3))
	must(t, err)
	wantEqual(t, "a refused rotation retired nothing", keys, []authstate.OAuthKey{*e2, *r1})

	// Replicas starting at once on a database without keys: of the first
	// keys of a role made at once, one is stored; then rotations at once
	// leave one active key. (receipt RS256 is a role faxhub does not use,
	// free here.)
	const racers = 8
	race := func(what string, store func(context.Context, *authstate.OAuthKey) error, sec int) int {
		t.Helper()
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range racers {
			wg.Go(func() { errs[i] = store(ctx, key(fmt.Sprintf("%s-%d", what, i), receipt, "RS256", sec)) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				wantErr(t, what+" at once", err, core.ErrExists)
			}
		}
		keys, err := s.ListOAuthKeys(ctx, receipt, at(sec))
		must(t, err)
		active := 0
		for _, k := range keys {
			if k.Alg == "RS256" && k.RetiredAt == nil {
				active++
			}
		}
		if active != 1 {
			t.Fatalf("%s at once: %d active keys of the role, want 1 (%d stored)", what, active, won)
		}
		return won
	}
	if won := race("first", s.CreateOAuthKey, 7); won != 1 {
		t.Fatalf("%d first keys of one role stored by %d replicas at once, want 1", won, racers)
	}
	rotateAt := func(ctx context.Context, k *authstate.OAuthKey) error { return s.RotateOAuthKey(ctx, k, k.CreatedAt) }
	if won := race("rotated", rotateAt, 8); won < 1 {
		t.Fatal("no rotation of the ones made at once was stored")
	}
}
