package oauth

import (
	"context"
	"encoding/json"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/oauth/receipts"
)

var _ faxes.ReceiptSigner = (*Server)(nil)

// SignReceipt implements faxes.ReceiptSigner: a compact JWS, header {alg:
// EdDSA, kid, typ: fax-receipt+jwt}, over r as JSON, signed with the
// active receipt key. Receipt keys are a role of their own in the keyring:
// their retired keys stay in the JWKS for good, so a receipt verifies for
// as long as faxhub publishes its JWKS, and faxhub never accepts one of
// its tokens signed with a receipt key.
//
// An empty iss becomes the issuer (the one in the authorization server
// metadata); another is refused, as is a receipt that receipts.Check
// refuses. An empty iat becomes now and an empty jti a new id.
func (s *Server) SignReceipt(ctx context.Context, r faxes.Receipt) (string, error) {
	if r.Issuer == "" {
		r.Issuer = s.issuer
	}
	if r.Issuer != s.issuer {
		return "", fmt.Errorf("sign receipt of %s: iss %q is not this server's issuer %q", r.Subject, r.Issuer, s.issuer)
	}
	if r.IssuedAt == 0 {
		r.IssuedAt = s.now().Unix()
	}
	if r.ID == "" {
		r.ID = core.NewID(core.PrefixJWTID)
	}
	if err := receipts.Check(r); err != nil {
		return "", fmt.Errorf("sign receipt of %s: %w", r.Subject, err)
	}
	key, err := s.keys.signingKey(ctx, receiptEdDSA)
	if err != nil {
		return "", fmt.Errorf("sign receipt of %s: %w", r.Subject, err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key},
		(&jose.SignerOptions{}).WithType(faxes.ReceiptType).WithHeader("kid", key.KeyID))
	if err != nil {
		return "", fmt.Errorf("receipt signer: %w", err)
	}
	payload, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode receipt of %s: %w", r.Subject, err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign receipt of %s: %w", r.Subject, err)
	}
	return obj.CompactSerialize()
}
