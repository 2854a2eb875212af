package oauth_test

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/oauth"
)

// anonymousAssertion registers an anonymous agent of owner A and returns
// its identity assertion and the assertion's kid.
func (h *agentHarness) anonymousAssertion() (string, string) {
	h.t.Helper()
	tok := h.enroll(h.env.OwnerA, "Anon bot", nil)
	code, m, _ := h.jsonReq(oauth.PathAgentIdentity, map[string]any{"type": "anonymous", "enrollment_token": tok}, "", "")
	if code != http.StatusCreated {
		h.t.Fatalf("anonymous registration: %d %v", code, m)
	}
	raw := m["identity_assertion"].(string)
	obj, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		h.t.Fatal(err)
	}
	return raw, obj.Signatures[0].Header.KeyID
}

func (h *agentHarness) jwks() jose.JSONWebKeySet {
	h.t.Helper()
	var set jose.JSONWebKeySet
	h.getJSON(h.base+oauth.PathJWKS, &set)
	return set
}

// TestKeyRotationOverlap: a rotation's new key is published at once, on
// every replica, and signs only from SignsFrom (keyPrepublish on), the old
// key signing until then; an assertion signed before it still verifies
// (on this replica and on one whose key cache predates the rotation), and
// the old key stays in the JWKS for the 31-day overlap, then leaves it.
// Before, the new key signed at once, while other replicas published a
// JWKS without it for up to a minute and verifiers kept theirs for five.
func TestKeyRotationOverlap(t *testing.T) {
	h := newAgentHarness(t)
	ctx := context.Background()
	// A second replica on the same database, its keys loaded now.
	srv2, err := oauth.New(h.env.Svc, h.env.DB, oauth.Options{BaseURL: h.base, APIURL: h.base, MCPOAuth: true, Now: h.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := h.env.Serve(routed(srv2, h.env, h.base))
	exchangeAt := func(base, assertion string) (int, map[string]any) {
		return h.post2(base, url.Values{"grant_type": {oauth.GrantTypeJWTBearer}, "assertion": {assertion}, "resource": {h.mcp()}})
	}
	jwksAt := func(base string) (set jose.JSONWebKeySet) {
		h.at(base, func() { set = h.jwks() })
		return set
	}

	before, oldKid := h.anonymousAssertion()
	if code, m := exchangeAt(ts2.URL, before); code != http.StatusOK {
		t.Fatalf("exchange on replica 2 before rotation: %d %v", code, m)
	}
	rotated, err := h.srv.RotateSigningKeys(ctx)
	if err != nil || len(rotated) != 3 || rotated[0].Alg != oauth.AlgEdDSA || rotated[0].KeyID == oldKid {
		t.Fatalf("rotate: %+v %v", rotated, err)
	}
	newKid, signsFrom := rotated[0].KeyID, rotated[0].SignsFrom
	if d := signsFrom.Sub(h.clock.now()); d < 6*time.Minute {
		t.Fatalf("the new key signs %v after the rotation, want it published first for longer than the JWKS's max-age and the replicas' key cache", d)
	}

	// Published at once, not yet signing.
	if set := h.jwks(); len(set.Key(oldKid)) != 1 || len(set.Key(newKid)) != 1 {
		t.Fatalf("JWKS after rotation lacks the old or the new key: %v", set.Keys)
	}
	if _, kid := h.anonymousAssertion(); kid != oldKid {
		t.Fatalf("assertion signed right after the rotation with %s, want the old key %s until %v", kid, oldKid, signsFrom)
	}
	h.clock.add(signsFrom.Sub(h.clock.now()) - time.Second)
	if _, kid := h.anonymousAssertion(); kid != oldKid {
		t.Fatalf("assertion signed a second before the new key's time with %s, want the old key", kid)
	}
	// Every replica publishes the new key before it signs anywhere.
	for name, base := range map[string]string{"replica 1": h.base, "replica 2": ts2.URL} {
		if set := jwksAt(base); len(set.Key(newKid)) != 1 {
			t.Fatalf("%s: the new key is not published a second before it signs: %v", name, set.Keys)
		}
	}
	h.clock.add(time.Second)

	if code, m := h.exchange(before); code != http.StatusOK {
		t.Fatalf("assertion signed before the rotation: %d %v", code, m)
	}
	after, kid := h.anonymousAssertion()
	if kid != newKid {
		t.Fatalf("new assertion signed with %s, want the new key %s", kid, newKid)
	}
	for name, base := range map[string]string{"replica 1": h.base, "replica 2": ts2.URL} {
		if code, m := exchangeAt(base, after); code != http.StatusOK {
			t.Fatalf("%s: new assertion: %d %v", name, code, m)
		}
	}

	// The overlap: still published 30 days after it stopped signing, gone
	// after 31.
	h.clock.add(30 * 24 * time.Hour)
	if set := h.jwks(); len(set.Key(oldKid)) != 1 {
		t.Fatal("the old key left the JWKS before the overlap ended")
	}
	h.clock.add(24*time.Hour + time.Minute)
	if set := h.jwks(); len(set.Key(oldKid)) != 0 || len(set.Key(newKid)) != 1 {
		t.Fatalf("after 31 days: JWKS %v, want the new key only", set.Keys)
	}
}

// TestRotationsWithinPrepublish: a second rotation before the first's key
// signs hands over in turn: the first key signs until the first
// rotation's time, the second's key until the second's, then the third.
func TestRotationsWithinPrepublish(t *testing.T) {
	h := newAgentHarness(t)
	ctx := t.Context()
	_, k1 := h.anonymousAssertion()
	first, err := h.srv.RotateSigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.clock.add(time.Minute)
	second, err := h.srv.RotateSigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k2, k3 := first[0].KeyID, second[0].KeyID
	for _, step := range []struct {
		at   time.Time
		want string
	}{
		{h.clock.now(), k1},
		{first[0].SignsFrom.Add(-time.Second), k1},
		{first[0].SignsFrom, k2},
		{second[0].SignsFrom.Add(-time.Second), k2},
		{second[0].SignsFrom, k3},
	} {
		h.clock.add(step.at.Sub(h.clock.now()))
		if _, kid := h.anonymousAssertion(); kid != step.want {
			t.Fatalf("at %v: signed with %s, want %s (keys %s, %s, %s)", step.at, kid, step.want, k1, k2, k3)
		}
	}
	if set := h.jwks(); len(set.Key(k1)) != 1 || len(set.Key(k2)) != 1 || len(set.Key(k3)) != 1 {
		t.Fatalf("JWKS lacks a key of the two rotations: %v", set.Keys)
	}
}

// at runs fn with the harness's requests going to base (another replica).
func (h *agentHarness) at(base string, fn func()) {
	saved := h.base
	h.base = base
	defer func() { h.base = saved }()
	fn()
}

// post2 posts a form to another origin (a second replica).
func (h *agentHarness) post2(base string, v url.Values) (code int, m map[string]any) {
	h.t.Helper()
	h.at(base, func() { code, m = h.form(oauth.PathToken, v) })
	return code, m
}

// startingAtOnce holds each replica's first read of the token keys until
// every replica has read them, so that all find a database without keys
// and all try to create the first ones: the start of replicas launched at
// once, made certain.
type startingAtOnce struct {
	authstate.OAuthStore
	shared *barrier
	read   bool
}

type barrier struct {
	mu      sync.Mutex
	pending int
	all     chan struct{} // closed when every replica has read
}

func (s *startingAtOnce) ListOAuthKeys(ctx context.Context, purpose authstate.KeyPurpose, retiredAfter time.Time) ([]authstate.OAuthKey, error) {
	keys, err := s.OAuthStore.ListOAuthKeys(ctx, purpose, retiredAfter)
	if err != nil || s.read || purpose != authstate.KeyPurposeToken {
		return keys, err
	}
	s.read = true
	s.shared.mu.Lock()
	if s.shared.pending--; s.shared.pending == 0 {
		close(s.shared.all)
	}
	s.shared.mu.Unlock()
	select {
	case <-s.shared.all:
	case <-time.After(10 * time.Second):
		return nil, errors.New("the other replicas never read the keys")
	}
	return keys, nil
}

// TestFirstKeysOfReplicasStartingAtOnce: replicas started at once on a
// database without signing keys all start, and all publish and sign with
// the same keys: one per role, the database refusing every first key but
// one (CreateOAuthKey). Before, each kept the first key it made, and a
// replica whose cache predated another's key published a JWKS without it
// for up to a minute: an id_token of one of three `faxhub serve` failed
// against the JWKS of another (oauth-replicas, jose).
func TestFirstKeysOfReplicasStartingAtOnce(t *testing.T) {
	const replicas = 3
	h := newAgentHarness(t)
	ctx := t.Context()
	// The harness's own server made keys: this database starts without.
	if _, err := h.env.DB.SQL().ExecContext(ctx, "DELETE FROM oauth_keys"); err != nil {
		t.Fatal(err)
	}
	shared := &barrier{pending: replicas, all: make(chan struct{})}
	errs := make([]error, replicas)
	servers := make([]*oauth.Server, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			servers[i], errs[i] = oauth.New(h.env.Svc, &startingAtOnce{OAuthStore: h.env.DB, shared: shared},
				oauth.Options{BaseURL: h.base, APIURL: h.base, MCPOAuth: true, Now: h.clock.now})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d did not start: %v", i, err)
		}
	}

	// One key per role in the database, the one every replica publishes.
	want := map[string]bool{}
	var active string // the token EdDSA key: what signs identity assertions
	for _, purpose := range []authstate.KeyPurpose{authstate.KeyPurposeToken, authstate.KeyPurposeReceipt} {
		keys, err := h.env.DB.ListOAuthKeys(ctx, purpose, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			want[k.ID] = true
			if purpose == authstate.KeyPurposeToken && k.Alg == oauth.AlgEdDSA {
				active = k.ID
			}
		}
	}
	if len(want) != 3 {
		t.Fatalf("%d keys stored by %d replicas starting at once, want one per role (3)", len(want), replicas)
	}
	for i, srv := range servers {
		h.at(h.env.Serve(routed(srv, h.env, h.base)).URL, func() {
			got := map[string]bool{}
			for _, k := range h.jwks().Keys {
				got[k.KeyID] = true
			}
			if !maps.Equal(got, want) {
				t.Errorf("replica %d publishes %v, want the stored keys %v", i, got, want)
			}
			if _, kid := h.anonymousAssertion(); kid != active {
				t.Errorf("replica %d signs with %s, want the one active key %s", i, kid, active)
			}
		})
	}
}
