package oauth

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
)

// AssertionType is the JWT typ of an identity assertion (spec:
// oauth-id-jag+jwt). Assertions are EdDSA, iss = aud = the issuer, keys at
// {issuer}/jwks.
const AssertionType = "oauth-id-jag+jwt"

type assertionClaims struct {
	Iss      string `json:"iss"`
	Aud      string `json:"aud"`
	Sub      string `json:"sub"`
	ClientID string `json:"client_id"`
	JTI      string `json:"jti"`
	IAT      int64  `json:"iat"`
	Exp      int64  `json:"exp"`
}

// issueAssertion signs a new identity assertion for reg and makes it the
// registration's current one: earlier assertions of reg stop being
// exchangeable.
func (s *Server) issueAssertion(ctx context.Context, reg *agents.Registration) (string, time.Time, error) {
	now := s.now()
	exp := now.Add(agents.AssertionTTL)
	cl := assertionClaims{Iss: s.issuer, Aud: s.issuer, Sub: reg.ID, ClientID: reg.ID, JTI: core.NewID(core.PrefixJWTID), IAT: now.Unix(), Exp: exp.Unix()}
	jws, err := s.SignJWT(ctx, AssertionType, cl)
	if err != nil {
		return "", time.Time{}, err
	}
	if err := s.svc.Agents.RecordAssertion(ctx, reg.ID, cl.JTI); err != nil {
		return "", time.Time{}, err
	}
	return jws, exp, nil
}

var _ core.Signer = (*Server)(nil)

// SignJWT implements core.Signer with the current EdDSA key.
func (s *Server) SignJWT(ctx context.Context, typ string, claims any) (string, error) {
	key, err := s.keys.signingKey(ctx, tokenEdDSA)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)).WithHeader("kid", key.KeyID))
	if err != nil {
		return "", fmt.Errorf("jwt signer: %w", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encode jwt claims: %w", err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign jwt: %w", err)
	}
	return obj.CompactSerialize()
}

// JWKSURL implements core.Signer.
func (s *Server) JWKSURL() string { return s.issuer + "/jwks" }

// verifiedAssertion is an assertion whose signature and claims checked out;
// core decides whether it is still current.
type verifiedAssertion struct{ registrationID, jti string }

// verifyAssertion checks the signature, type and claims of an identity
// assertion this server issued. External assertions are refused.
func (s *Server) verifyAssertion(ctx context.Context, assertion string) (verifiedAssertion, error) {
	foreign := core.Errorf(core.KindInvalid, agents.CodeInvalidGrant, "identity assertions of other issuers are not accepted")
	if assertion == "" {
		return verifiedAssertion{}, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "assertion is required")
	}
	obj, err := jose.ParseSignedCompact(assertion, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(obj.Signatures) != 1 {
		return verifiedAssertion{}, agents.ErrAssertion
	}
	h := obj.Signatures[0].Header
	if h.Algorithm != string(jose.EdDSA) || h.ExtraHeaders["typ"] != AssertionType {
		return verifiedAssertion{}, agents.ErrAssertion
	}
	set, err := s.keys.tokenKeys(ctx)
	if err != nil {
		return verifiedAssertion{}, err
	}
	keys := set.Key(h.KeyID)
	if len(keys) == 0 {
		// A key another replica created in the last minute.
		if set, err = s.keys.reloadForUnknownKid(ctx); err != nil {
			return verifiedAssertion{}, err
		}
		if keys = set.Key(h.KeyID); len(keys) == 0 {
			return verifiedAssertion{}, foreign
		}
	}
	pub, ok := keys[0].Key.(ed25519.PublicKey)
	if !ok {
		return verifiedAssertion{}, agents.ErrAssertion
	}
	payload, err := obj.Verify(pub)
	if err != nil {
		return verifiedAssertion{}, agents.ErrAssertion
	}
	var cl assertionClaims
	if err := json.Unmarshal(payload, &cl); err != nil {
		return verifiedAssertion{}, agents.ErrAssertion
	}
	if cl.Iss != s.issuer || cl.Aud != s.issuer {
		return verifiedAssertion{}, foreign
	}
	if s.now().Unix() >= cl.Exp {
		return verifiedAssertion{}, core.Errorf(core.KindInvalid, agents.CodeInvalidGrant, "the identity assertion expired; register again")
	}
	return verifiedAssertion{registrationID: cl.Sub, jti: cl.JTI}, nil
}
