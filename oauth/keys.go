package oauth

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/seal"
	jose "github.com/go-jose/go-jose/v4"
)

// Signing algorithms: EdDSA for identity assertions (agent registration),
// RS256 for OpenID Connect id_tokens (what every OIDC client verifies).
const (
	AlgEdDSA = "EdDSA"
	AlgRS256 = "RS256"
)

// keyPublishWindow is how long a retired token key stays in the JWKS:
// longer than anything it signed lives (id_tokens an hour, identity
// assertions up to 30 days). Retired receipt keys stay for good: a receipt
// does not expire, and whoever holds one may verify it years later.
const keyPublishWindow = 31 * 24 * time.Hour

// keyRole is one signing key role: what it signs and with which algorithm.
// Each role has one active key at a time.
type keyRole struct {
	purpose authstate.KeyPurpose
	alg     string
}

var (
	tokenEdDSA   = keyRole{authstate.KeyPurposeToken, AlgEdDSA}   // identity assertions
	tokenRS256   = keyRole{authstate.KeyPurposeToken, AlgRS256}   // id_tokens
	receiptEdDSA = keyRole{authstate.KeyPurposeReceipt, AlgEdDSA} // delivery receipts
)

// keyRoles is every role, in the order keys are created and rotated.
var keyRoles = [...]keyRole{tokenEdDSA, tokenRS256, receiptEdDSA}

// aad is the authenticated data a role's sealed keys carry: kid and alg,
// and for purposes other than token (whose keys predate purposes) the
// purpose, so that a sealed key cannot be moved to another row or role.
func (r keyRole) aad(kid string) []byte {
	if r.purpose == authstate.KeyPurposeToken {
		return []byte(kid + "\x00" + r.alg)
	}
	return []byte(kid + "\x00" + r.alg + "\x00" + string(r.purpose))
}

// keyCacheTTL bounds how long a replica signs with a key another replica
// has rotated away.
const keyCacheTTL = time.Minute

// keyReloadInterval spaces the reloads an unknown kid forces.
const keyReloadInterval = 5 * time.Second

// jwksMaxAge is how long a verifier may keep the JWKS it fetched, and the
// metadata documents (writePublic's Cache-Control).
const jwksMaxAge = 5 * time.Minute

// keyPrepublish is how long a rotation's new key is published before it
// signs: long enough for every replica's key cache to hold it, with a
// minute to spare for clocks that disagree, and for every verifier's
// cached JWKS to have expired. Until then the key it replaces keeps
// signing (its retirement is set that far ahead), so nothing is ever
// signed with a key some replica does not publish, or some verifier has
// not had the chance to fetch.
const keyPrepublish = 2*keyCacheTTL + jwksMaxAge

// sealInfo separates the sealing key from any other use of the secret.
const sealInfo = "faxhub oauth signing keys v1"

// keyring holds the signing keys, loaded from the store and cached
// briefly so that a rotation on any replica reaches all of them.
type keyring struct {
	store  authstate.OAuthStore
	secret func(ctx context.Context) ([]byte, error)
	now    func() time.Time

	mu       sync.Mutex
	loadedAt time.Time
	forcedAt time.Time             // last reload forced by an unknown kid
	live     map[keyRole][]liveKey // role → its keys not retired when loaded
	public   jose.JSONWebKeySet    // every published key, all purposes
	tokens   jose.JSONWebKeySet    // the published token keys: what faxhub's own tokens may be verified with
}

// liveKey is a private key that was not retired when the keys were loaded:
// the role's active key, or one a rotation retires at retiredAt (ahead).
type liveKey struct {
	jwk       *jose.JSONWebKey
	retiredAt *time.Time
}

// signer returns the key that signs at now. A rotation retires the key it
// replaces keyPrepublish ahead, so that key signs until its successor has
// been published that long: of the keys not yet retired, the one that
// retires first signs, and the active key (retired never) once none is
// left. Two rotations within keyPrepublish hand over in turn. Retirement
// times, not creation times, order them: they come from one replica's
// clock per rotation, where creation times of first keys and rotations
// may come from replicas whose clocks disagree.
func signer(keys []liveKey, now time.Time) *jose.JSONWebKey {
	var best *liveKey
	for i := range keys {
		k := &keys[i]
		switch {
		case k.retiredAt != nil && !k.retiredAt.After(now):
			// retired since the keys were loaded
		case best == nil, best.retiredAt == nil, k.retiredAt != nil && k.retiredAt.Before(*best.retiredAt):
			best = k
		}
	}
	if best == nil {
		return nil
	}
	return best.jwk
}

// seal encrypts a PKCS#8 private key; kid, alg and purpose are
// authenticated data (keyRole.aad), so a sealed key cannot be moved to
// another row.
func (k *keyring) seal(ctx context.Context, role keyRole, kid string, der []byte) ([]byte, error) {
	secret, err := k.secret(ctx)
	if err != nil {
		return nil, err
	}
	return seal.Seal(secret, sealInfo, role.aad(kid), der)
}

func (k *keyring) open(ctx context.Context, role keyRole, kid string, sealed []byte) ([]byte, error) {
	secret, err := k.secret(ctx)
	if err != nil {
		return nil, err
	}
	return seal.Open(secret, sealInfo, role.aad(kid), sealed)
}

// create generates, seals and stores a key of role: the role's first key
// (core.ErrExists when it has an active key, another replica's first key
// having won), which signs at once, or, when rotate is set, a rotation's,
// which signs from keyPrepublish on, when the key it replaces retires
// (published for keyPublishWindow after, receipt keys for good). It
// returns the new key's row.
func (k *keyring) create(ctx context.Context, role keyRole, rotate bool) (*authstate.OAuthKey, error) {
	alg := role.alg
	var priv crypto.Signer
	var err error
	switch alg {
	case AlgEdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case AlgRS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return nil, fmt.Errorf("unknown signing algorithm %q", alg)
	}
	if err != nil {
		return nil, fmt.Errorf("generate %s key: %w", alg, err)
	}
	pub := jose.JSONWebKey{Key: priv.Public(), Algorithm: alg, Use: "sig"}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("thumbprint: %w", err)
	}
	pub.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	pubJSON, err := json.Marshal(pub)
	if err != nil {
		return nil, fmt.Errorf("encode public key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("encode private key: %w", err)
	}
	sealed, err := k.seal(ctx, role, pub.KeyID, der)
	if err != nil {
		return nil, fmt.Errorf("seal private key: %w", err)
	}
	row := &authstate.OAuthKey{ID: pub.KeyID, Purpose: role.purpose, Alg: alg, PublicJWK: pubJSON, Sealed: sealed, CreatedAt: k.now().UTC().Truncate(time.Microsecond)}
	if rotate {
		err = k.store.RotateOAuthKey(ctx, row, row.CreatedAt.Add(keyPrepublish))
	} else {
		err = k.store.CreateOAuthKey(ctx, row)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s %s key: %w", role.purpose, alg, err)
	}
	k.mu.Lock()
	k.loadedAt = time.Time{}
	k.mu.Unlock()
	return row, nil
}

// load refreshes the cache when it is older than keyCacheTTL, creating
// the first key of an algorithm that has none.
func (k *keyring) load(ctx context.Context) error {
	k.mu.Lock()
	fresh := !k.loadedAt.IsZero() && k.now().Sub(k.loadedAt) < keyCacheTTL
	k.mu.Unlock()
	if fresh {
		return nil
	}
	for range 2 {
		tokenKeys, err := k.store.ListOAuthKeys(ctx, authstate.KeyPurposeToken, k.now().Add(-keyPublishWindow))
		if err != nil {
			return err
		}
		// Every receipt key ever made: the zero time retires none out.
		receiptKeys, err := k.store.ListOAuthKeys(ctx, authstate.KeyPurposeReceipt, time.Time{})
		if err != nil {
			return err
		}
		now := k.now()
		live := map[keyRole][]liveKey{}
		var set, tokens jose.JSONWebKeySet
		for _, row := range append(tokenKeys, receiptKeys...) {
			var pub jose.JSONWebKey
			if err := json.Unmarshal(row.PublicJWK, &pub); err != nil {
				return fmt.Errorf("decode public key %s: %w", row.ID, err)
			}
			set.Keys = append(set.Keys, pub)
			if row.Purpose == authstate.KeyPurposeToken {
				tokens.Keys = append(tokens.Keys, pub)
			}
			// A role has one active key (the database holds it so:
			// CreateOAuthKey) and, after a rotation, for keyPrepublish,
			// the key it replaces.
			role := keyRole{row.Purpose, row.Alg}
			if row.RetiredAt != nil && !row.RetiredAt.After(now) {
				continue
			}
			der, err := k.open(ctx, role, row.ID, row.Sealed)
			if err != nil {
				return fmt.Errorf("open private key %s: %w", row.ID, err)
			}
			priv, err := x509.ParsePKCS8PrivateKey(der)
			if err != nil {
				return fmt.Errorf("parse private key %s: %w", row.ID, err)
			}
			live[role] = append(live[role], liveKey{&jose.JSONWebKey{Key: priv, KeyID: row.ID, Algorithm: row.Alg, Use: "sig"}, row.RetiredAt})
		}
		var missing bool
		for _, role := range keyRoles {
			if len(live[role]) == 0 {
				missing = true
				// Of replicas starting at once on a database without
				// keys, one creates the role's first key; the others find
				// theirs refused (ErrExists) and read the winner's on the
				// next pass, so all sign with and publish the same key.
				if _, err := k.create(ctx, role, false); err != nil && !errors.Is(err, core.ErrExists) {
					return err
				}
			}
		}
		if missing {
			continue
		}
		k.mu.Lock()
		k.live, k.public, k.tokens, k.loadedAt = live, set, tokens, now
		k.mu.Unlock()
		return nil
	}
	return errors.New("signing keys: no active key after creating one")
}

// signingKey returns the private JWK that signs for role.
func (k *keyring) signingKey(ctx context.Context, role keyRole) (*jose.JSONWebKey, error) {
	if err := k.load(ctx); err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	key := signer(k.live[role], k.now())
	if key == nil {
		return nil, fmt.Errorf("no %s %s signing key", role.purpose, role.alg)
	}
	return key, nil
}

// jwks returns the published public keys, of every purpose.
func (k *keyring) jwks(ctx context.Context) (jose.JSONWebKeySet, error) {
	if err := k.load(ctx); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("signing keys: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.public, nil
}

// tokenKeys returns the published token keys: faxhub verifies its own
// tokens with these only, never with a receipt key.
func (k *keyring) tokenKeys(ctx context.Context) (jose.JSONWebKeySet, error) {
	if err := k.load(ctx); err != nil {
		return jose.JSONWebKeySet{}, fmt.Errorf("signing keys: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.tokens, nil
}

// SigningKey names one signing key.
type SigningKey struct {
	Purpose   authstate.KeyPurpose
	Alg       string
	KeyID     string
	SignsFrom time.Time // published at once, signing from then (keyPrepublish on)
}

// RotateSigningKeys creates a new key of each role (token EdDSA, token
// RS256, receipt EdDSA) and returns them. Each is published at once and
// signs from keyPrepublish (seven minutes) on, on every replica, the old
// one signing until then: by that time every replica publishes the new
// key and every verifier's cached JWKS has expired. Old token keys
// stay in the JWKS, and accepted for verification, for keyPublishWindow
// (31 days: longer than the longest lifetime of what they signed, a 30-day
// identity assertion); old receipt keys stay in the JWKS for good, since
// the receipts they signed never expire. `faxhub admin keys rotate` runs it.
func (s *Server) RotateSigningKeys(ctx context.Context) ([]SigningKey, error) {
	var out []SigningKey
	for _, role := range keyRoles {
		row, err := s.keys.create(ctx, role, true)
		if err != nil {
			return out, fmt.Errorf("rotate signing keys: %w", err)
		}
		out = append(out, SigningKey{Purpose: role.purpose, Alg: role.alg, KeyID: row.ID, SignsFrom: row.CreatedAt.Add(keyPrepublish)})
	}
	return out, nil
}

// reloadForUnknownKid refreshes the cached keys when a token names a kid
// the cache does not know: another replica may have rotated in the last
// keyCacheTTL. At most once per keyReloadInterval, so that made-up kids
// cannot turn every request into a key read. It returns the token keys,
// the ones faxhub's own tokens are verified with.
func (k *keyring) reloadForUnknownKid(ctx context.Context) (jose.JSONWebKeySet, error) {
	k.mu.Lock()
	if k.now().Sub(k.forcedAt) < keyReloadInterval {
		set := k.tokens
		k.mu.Unlock()
		return set, nil
	}
	k.forcedAt, k.loadedAt = k.now(), time.Time{}
	k.mu.Unlock()
	return k.tokenKeys(ctx)
}

// JWKS returns the published public keys of every purpose, as served at
// PathJWKS: what verifies identity assertions, id_tokens and receipts.
func (s *Server) JWKS(ctx context.Context) (jose.JSONWebKeySet, error) {
	return s.keys.jwks(ctx)
}
