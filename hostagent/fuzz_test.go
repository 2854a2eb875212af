package hostagent

import (
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
)

// FuzzVerifier: any token is accepted or refused with a client error,
// never a panic or an internal error.
func FuzzVerifier(f *testing.F) {
	now := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	hk := newTestKey(f)
	f.Add(sign(f, hk.priv, "EdDSA", typHostJWT, map[string]any{"iss": "hst_1", "aud": testAPI, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": "a"}, nil))
	f.Add(unsigned(typHostJWT, map[string]any{"iss": "hst_1"}))
	// A NUL in iss or sub (the fake's lookups fail on it as PostgreSQL
	// does, SQLSTATE 22021), signed and unsigned: refused before any lookup.
	claims := func(iss, sub string) map[string]any {
		return map[string]any{"iss": iss, "sub": sub, "aud": testAPI, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": "a"}
	}
	f.Add(sign(f, hk.priv, "EdDSA", typHostJWT, claims("hst_\x00", ""), nil))
	f.Add(sign(f, hk.priv, "EdDSA", typAgentJWT, claims("hst_1", "dag_\x00"), nil))
	f.Add(sign(f, hk.priv, "EdDSA", typAgentJWT, claims("\x00", "\x00"), nil))
	f.Add(unsigned(typAgentJWT, claims("hst_1\x00", "dag_1")))
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, raw string) {
		d := &fakeDeps{now: now, jtis: map[string]bool{}, hosts: map[string]*hosts.Host{"hst_1": {ID: "hst_1", PublicKey: &hk.jwk, Thumbprint: &hk.tp, Status: hosts.Active}}}
		v := newVerifier(d, testAPI)
		for _, check := range []func() error{
			func() error { _, err := v.Host(t.Context(), raw, ""); return err },
			func() error { _, err := v.Agent(t.Context(), raw, ""); return err },
		} {
			if err := check(); err != nil && core.ErrorKind(err) == core.KindInternal {
				t.Fatalf("internal error for %q: %v", raw, err)
			}
		}
	})
}
