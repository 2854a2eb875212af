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
	forcedAt time.Time                    // last reload forced by an unknown kid
	active   map[keyRole]*jose.JSONWebKey // role → newest private key
	public   jose.JSONWebKeySet           // every published key, all purposes
	tokens   jose.JSONWebKeySet           // the published token keys: what faxhub's own tokens may be verified with
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

// create generates, seals and stores a key of role and, when retire is set
// (a rotation), retires the others of that role (they stay published for
// keyPublishWindow, receipt keys for good). It returns the new key's kid.
func (k *keyring) create(ctx context.Context, role keyRole, retire bool) (string, error) {
	alg := role.alg
	var priv crypto.Signer
	var err error
	switch alg {
	case AlgEdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case AlgRS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		return "", fmt.Errorf("unknown signing algorithm %q", alg)
	}
	if err != nil {
		return "", fmt.Errorf("generate %s key: %w", alg, err)
	}
	pub := jose.JSONWebKey{Key: priv.Public(), Algorithm: alg, Use: "sig"}
	tp, err := pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("thumbprint: %w", err)
	}
	pub.KeyID = base64.RawURLEncoding.EncodeToString(tp)
	pubJSON, err := json.Marshal(pub)
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", fmt.Errorf("encode private key: %w", err)
	}
	sealed, err := k.seal(ctx, role, pub.KeyID, der)
	if err != nil {
		return "", fmt.Errorf("seal private key: %w", err)
	}
	now := k.now().UTC().Truncate(time.Microsecond)
	if err := k.store.CreateOAuthKey(ctx, &authstate.OAuthKey{ID: pub.KeyID, Purpose: role.purpose, Alg: alg, PublicJWK: pubJSON, Sealed: sealed, CreatedAt: now}); err != nil {
		return "", fmt.Errorf("store %s %s key: %w", role.purpose, alg, err)
	}
	if retire {
		if err := k.store.RetireOAuthKeys(ctx, role.purpose, alg, pub.KeyID, now); err != nil {
			return "", fmt.Errorf("retire older %s %s keys: %w", role.purpose, alg, err)
		}
	}
	k.mu.Lock()
	k.loadedAt = time.Time{}
	k.mu.Unlock()
	return pub.KeyID, nil
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
		active := map[keyRole]*jose.JSONWebKey{}
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
			// Keys are newest first: the first unretired key of a role
			// signs. Two replicas creating a first key at once leave two
			// active ones; the newer wins everywhere.
			role := keyRole{row.Purpose, row.Alg}
			if row.RetiredAt != nil || active[role] != nil {
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
			active[role] = &jose.JSONWebKey{Key: priv, KeyID: row.ID, Algorithm: row.Alg, Use: "sig"}
		}
		var missing bool
		for _, role := range keyRoles {
			if active[role] == nil {
				missing = true
				// A first key retires nothing: replicas starting at once
				// each create one, and retiring the others' would retire
				// them all (each keeps only its own).
				if _, err := k.create(ctx, role, false); err != nil {
					return err
				}
			}
		}
		if missing {
			continue
		}
		k.mu.Lock()
		k.active, k.public, k.tokens, k.loadedAt = active, set, tokens, k.now()
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
	key := k.active[role]
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
	Purpose authstate.KeyPurpose
	Alg     string
	KeyID   string
}

// RotateSigningKeys creates a new key of each role (token EdDSA, token
// RS256, receipt EdDSA) and returns them. The old ones stop signing at once
// on this replica (within keyCacheTTL, a minute, on others). Old token keys
// stay in the JWKS, and accepted for verification, for keyPublishWindow
// (31 days: longer than the longest lifetime of what they signed, a 30-day
// identity assertion); old receipt keys stay in the JWKS for good, since
// the receipts they signed never expire. `faxhub admin keys rotate` runs it.
func (s *Server) RotateSigningKeys(ctx context.Context) ([]SigningKey, error) {
	var out []SigningKey
	for _, role := range keyRoles {
		kid, err := s.keys.create(ctx, role, true)
		if err != nil {
			return out, fmt.Errorf("rotate signing keys: %w", err)
		}
		out = append(out, SigningKey{Purpose: role.purpose, Alg: role.alg, KeyID: kid})
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
