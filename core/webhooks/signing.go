package webhooks

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/seal"
)

// Standard Webhooks' headers and prefixes.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	// SecretPrefix starts a v1 secret, PublicKeyPrefix the v1a public key.
	SecretPrefix    = core.SecretWebhook
	PublicKeyPrefix = core.PublicWebhookKey
)

// secretBytes is a v1 secret's length: 32 random bytes, as HMAC-SHA256's
// block-sized keys go (the spec allows 24 to 64).
const secretBytes = 32

// Server secrets and seal purposes: the v1 secrets and the v1a key are
// sealed at rest, each under its own derived key.
const (
	sealSecret     = "webhook-secrets"
	purposeV1      = "webhook v1 secret"
	purposeV1a     = "webhook v1a key"
	signingKeyID   = "v1a-1"
	signingKeySeed = ed25519.SeedSize
)

// newSecret returns a fresh v1 secret: its key bytes and its whsec_ text.
func newSecret() ([]byte, string) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return b, SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// seal seals plain for purpose, bound to the row id (a sealed value moved
// to another row does not open).
func (s *Service) seal(ctx context.Context, purpose, id string, plain []byte) ([]byte, error) {
	secret, err := s.d.Kernel.Secret(ctx, sealSecret)
	if err != nil {
		return nil, err
	}
	return seal.Seal(secret, purpose, []byte(id), plain)
}

func (s *Service) open(ctx context.Context, purpose, id string, sealed []byte) ([]byte, error) {
	secret, err := s.d.Kernel.Secret(ctx, sealSecret)
	if err != nil {
		return nil, err
	}
	plain, err := seal.Open(secret, purpose, []byte(id), sealed)
	if err != nil {
		return nil, fmt.Errorf("open sealed %s of %s: %w", purpose, id, err)
	}
	return plain, nil
}

// content is what Standard Webhooks signs: {id}.{timestamp}.{body}.
func content(msgID string, ts int64, body []byte) []byte {
	b := make([]byte, 0, len(msgID)+len(body)+24)
	b = append(b, msgID...)
	b = append(b, '.')
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, '.')
	return append(b, body...)
}

// signV1 is a v1 signature: HMAC-SHA256 under key, base64.
func signV1(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// signer holds faxhub's v1a key.
type signer struct {
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func (k *signer) sign(msg []byte) string {
	return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(k.priv, msg))
}

// PublicKey is faxhub's v1a public key as receivers configure it.
type PublicKey struct {
	// Scheme is v1a; Algorithm Ed25519.
	Scheme    Scheme `json:"scheme"`
	Algorithm string `json:"algorithm"`
	// Key is whpk_ and the base64 of the 32-byte public key (the form
	// Standard Webhooks libraries take).
	Key string `json:"publicKey"`
	// JWK is the same key as an RFC 8037 JSON Web Key.
	JWK map[string]string `json:"jwk"`
}

// SigningKey returns faxhub's v1a public key (unauthenticated: it is
// public, and receivers fetch it to verify).
func (s *Service) SigningKey(ctx context.Context) (*PublicKey, error) {
	k, err := s.signingKey(ctx)
	if err != nil {
		return nil, err
	}
	return &PublicKey{
		Scheme: SchemeV1a, Algorithm: "Ed25519", Key: PublicKeyPrefix + base64.StdEncoding.EncodeToString(k.pub),
		JWK: map[string]string{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(k.pub), "use": "sig", "kid": signingKeyID},
	}, nil
}

// signingKey reads (or, on first use anywhere, creates) the v1a key,
// sealed in the database so every replica signs with the same one.
func (s *Service) signingKey(ctx context.Context) (*signer, error) {
	s.keyMu.Lock()
	defer s.keyMu.Unlock()
	if s.key != nil {
		return s.key, nil
	}
	k, err := s.d.Store.GetWebhookSigningKey(ctx, signingKeyID)
	if errors.Is(err, core.ErrNoRows) {
		if err := s.createSigningKey(ctx); err != nil {
			return nil, fmt.Errorf("webhook signing key: %w", err)
		}
		// Whoever inserted first, every replica uses the stored key.
		k, err = s.d.Store.GetWebhookSigningKey(ctx, signingKeyID)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook signing key: %w", err)
	}
	seed, err := s.open(ctx, purposeV1a, k.ID, k.Sealed)
	if err != nil {
		return nil, err
	}
	if len(seed) != signingKeySeed {
		return nil, fmt.Errorf("webhook signing key: sealed seed of %d bytes", len(seed))
	}
	priv := ed25519.NewKeyFromSeed(seed)
	s.key = &signer{priv: priv, pub: priv.Public().(ed25519.PublicKey)}
	return s.key, nil
}

// createSigningKey stores a new v1a key unless another replica stored
// one first.
func (s *Service) createSigningKey(ctx context.Context) error {
	seed := make([]byte, signingKeySeed)
	if _, err := rand.Read(seed); err != nil {
		return err
	}
	sealed, err := s.seal(ctx, purposeV1a, signingKeyID, seed)
	if err != nil {
		return err
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	err = s.d.Store.InsertWebhookSigningKey(ctx, &SigningKey{ID: signingKeyID, PublicKey: pub, Sealed: sealed, CreatedAt: s.now()})
	if errors.Is(err, core.ErrExists) {
		return nil
	}
	return err
}

// signatures is the webhook-signature header of msg for e at now: v1
// under the current secret (and the previous one during a rotation's
// overlap), v1a under faxhub's key, as e asks.
func (s *Service) signatures(ctx context.Context, e *Endpoint, msg []byte, now time.Time) (string, error) {
	var out []string
	if e.Signs(SchemeV1) {
		key, err := s.open(ctx, purposeV1, e.ID, e.Secret)
		if err != nil {
			return "", err
		}
		out = append(out, signV1(key, msg))
		if len(e.PreviousSecret) > 0 && e.PreviousSecretUntil != nil && now.Before(*e.PreviousSecretUntil) {
			prev, err := s.open(ctx, purposeV1, e.ID, e.PreviousSecret)
			if err != nil {
				return "", err
			}
			out = append(out, signV1(prev, msg))
		}
	}
	if e.Signs(SchemeV1a) {
		k, err := s.signingKey(ctx)
		if err != nil {
			return "", err
		}
		out = append(out, k.sign(msg))
	}
	if len(out) == 0 {
		return "", fmt.Errorf("endpoint %s signs with no scheme", e.ID)
	}
	return strings.Join(out, " "), nil
}
