package oauth

import (
	"context"
	"maps"

	"github.com/ory/fosite/token/jwt"
)

// fositeSigner signs and checks fosite's JWTs (id_tokens) with the current
// RS256 key. It is the one place where a key of ours crosses into fosite:
// our keys are go-jose v4 JSONWebKeys, fosite v0.49.0 is built on go-jose
// v3 and recognizes only its own JSONWebKey type, so it is handed the raw
// *rsa.PrivateKey and the key id is put in the header ("kid") as go-jose
// would from a JSONWebKey. No other go-jose value is passed to fosite.
type fositeSigner struct{ keys *keyring }

var _ jwt.Signer = (*fositeSigner)(nil)

// raw is fosite's own signer over one key, looked up once per call, so the
// kid in the header and the signature always come from the same key.
func raw(key any) *jwt.DefaultSigner {
	return &jwt.DefaultSigner{GetPrivateKey: func(context.Context) (any, error) { return key, nil }}
}

func (f *fositeSigner) current(ctx context.Context) (*jwt.DefaultSigner, string, error) {
	key, err := f.keys.signingKey(ctx, tokenRS256)
	if err != nil {
		return nil, "", err
	}
	return raw(key.Key), key.KeyID, nil
}

func (f *fositeSigner) Generate(ctx context.Context, claims jwt.MapClaims, header jwt.Mapper) (string, string, error) {
	s, kid, err := f.current(ctx)
	if err != nil {
		return "", "", err
	}
	extra := map[string]any{}
	if header != nil {
		maps.Copy(extra, header.ToMap())
	}
	extra["kid"] = kid
	return s.Generate(ctx, claims, &jwt.Headers{Extra: extra})
}

func (f *fositeSigner) Validate(ctx context.Context, token string) (string, error) {
	s, _, err := f.current(ctx)
	if err != nil {
		return "", err
	}
	return s.Validate(ctx, token)
}

func (f *fositeSigner) Decode(ctx context.Context, token string) (*jwt.Token, error) {
	s, _, err := f.current(ctx)
	if err != nil {
		return nil, err
	}
	return s.Decode(ctx, token)
}

func (f *fositeSigner) GetSignature(ctx context.Context, token string) (string, error) {
	return raw(nil).GetSignature(ctx, token)
}

func (f *fositeSigner) Hash(ctx context.Context, in []byte) ([]byte, error) {
	return raw(nil).Hash(ctx, in)
}

func (f *fositeSigner) GetSigningMethodLength(ctx context.Context) int {
	return raw(nil).GetSigningMethodLength(ctx)
}
