package oauth_test

import (
	"context"
	"errors"
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

// TestKeyRotationOverlap: after a rotation new assertions carry the new
// kid, an assertion signed before it still verifies (on this replica and on
// one whose key cache predates the rotation), and the old key stays in the
// JWKS for the 31-day overlap, then leaves it. Before, the other replica
// refused the new assertion as foreign (invalid_grant) for up to a minute.
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

	before, oldKid := h.anonymousAssertion()
	if code, m := exchangeAt(ts2.URL, before); code != http.StatusOK {
		t.Fatalf("exchange on replica 2 before rotation: %d %v", code, m)
	}
	rotated, err := h.srv.RotateSigningKeys(ctx)
	if err != nil || len(rotated) != 3 || rotated[0].Alg != oauth.AlgEdDSA || rotated[0].KeyID == oldKid {
		t.Fatalf("rotate: %+v %v", rotated, err)
	}
	newKid := rotated[0].KeyID

	if code, m := h.exchange(before); code != http.StatusOK {
		t.Fatalf("assertion signed before the rotation: %d %v", code, m)
	}
	after, kid := h.anonymousAssertion()
	if kid != newKid {
		t.Fatalf("new assertion signed with %s, want the new key %s", kid, newKid)
	}
	for name, base := range map[string]string{"replica 1": h.base, "replica 2 (stale cache)": ts2.URL} {
		if code, m := exchangeAt(base, after); code != http.StatusOK {
			t.Fatalf("%s: new assertion: %d %v", name, code, m)
		}
	}
	set := h.jwks()
	if len(set.Key(oldKid)) != 1 || len(set.Key(newKid)) != 1 {
		t.Fatalf("JWKS after rotation lacks the old or the new key: %v", set.Keys)
	}

	// The overlap: still published after 30 days, gone after 31.
	h.clock.add(30 * 24 * time.Hour)
	if set := h.jwks(); len(set.Key(oldKid)) != 1 {
		t.Fatal("the old key left the JWKS before the overlap ended")
	}
	h.clock.add(24*time.Hour + time.Minute)
	if set := h.jwks(); len(set.Key(oldKid)) != 0 || len(set.Key(newKid)) != 1 {
		t.Fatalf("after 31 days: JWKS %v, want the new key only", set.Keys)
	}
}

// post2 posts a form to another origin (a second replica).
func (h *agentHarness) post2(base string, v url.Values) (int, map[string]any) {
	h.t.Helper()
	saved := h.base
	h.base = base
	defer func() { h.base = saved }()
	return h.form(oauth.PathToken, v)
}

// firstKeyStore shows oauth.New the keys created through it only (a
// database without keys yet, shared by the replicas of one test) and
// holds each replica's first key creation until every replica has made
// one: the start of replicas launched at once, made certain.
type firstKeyStore struct {
	authstate.OAuthStore
	shared *firstKeys
	waited bool
}

type firstKeys struct {
	mu      sync.Mutex
	ids     map[string]bool
	pending int
	all     chan struct{} // closed when every replica created its first key
}

func (s *firstKeyStore) CreateOAuthKey(ctx context.Context, k *authstate.OAuthKey) error {
	if err := s.OAuthStore.CreateOAuthKey(ctx, k); err != nil {
		return err
	}
	s.shared.mu.Lock()
	s.shared.ids[k.ID] = true
	first := !s.waited
	s.waited = true
	if first {
		if s.shared.pending--; s.shared.pending == 0 {
			close(s.shared.all)
		}
	}
	s.shared.mu.Unlock()
	if first {
		select {
		case <-s.shared.all:
		case <-time.After(10 * time.Second):
			return errors.New("the other replicas never created their first key")
		}
	}
	return nil
}

func (s *firstKeyStore) ListOAuthKeys(ctx context.Context, purpose authstate.KeyPurpose, retiredAfter time.Time) ([]authstate.OAuthKey, error) {
	keys, err := s.OAuthStore.ListOAuthKeys(ctx, purpose, retiredAfter)
	if err != nil {
		return nil, err
	}
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	var mine []authstate.OAuthKey
	for _, k := range keys {
		if s.shared.ids[k.ID] {
			mine = append(mine, k)
		}
	}
	return mine, nil
}

// TestFirstKeysOfReplicasStartingAtOnce: replicas started at once on a
// database without signing keys each create the first ones, and every
// one starts. Before, each retired the others' new key, so all were
// retired and a replica failed to start ("no active key after creating
// one"), seen with three `faxhub serve` on one fresh PostgreSQL schema.
func TestFirstKeysOfReplicasStartingAtOnce(t *testing.T) {
	const replicas = 3
	h := newAgentHarness(t)
	shared := &firstKeys{ids: map[string]bool{}, pending: replicas, all: make(chan struct{})}
	errs := make([]error, replicas)
	servers := make([]*oauth.Server, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			servers[i], errs[i] = oauth.New(h.env.Svc, &firstKeyStore{OAuthStore: h.env.DB, shared: shared},
				oauth.Options{BaseURL: h.base, APIURL: h.base, MCPOAuth: true, Now: h.clock.now})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d did not start: %v", i, err)
		}
	}
	shared.mu.Lock()
	created := len(shared.ids)
	shared.mu.Unlock()
	if created < replicas {
		t.Fatalf("%d keys created by %d replicas starting at once: the race did not happen", created, replicas)
	}
}
