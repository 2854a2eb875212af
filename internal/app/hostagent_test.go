package app_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/hostagent"
)

// TestHostAgentTwoReplicas runs two app.Open instances on one PostgreSQL
// schema: a host JWT's jti used on A is refused on B; an agent registered
// on A is approved on B and reads active on A.
func TestHostAgentTwoReplicas(t *testing.T) {
	const base = "http://faxhub.test"
	apps, srvs := replicas(t, 2, base, nil)
	ctx := t.Context()
	owner, err := apps[0].Svc.Accounts.CreateOwner(ctx, "hosts@example.com", "Hosts", true)
	if err != nil {
		t.Fatal(err)
	}
	newKey := func() (ed25519.PrivateKey, json.RawMessage) {
		pub, priv, _ := ed25519.GenerateKey(rand.Reader)
		return priv, json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`)
	}
	hostPriv, hostJWK := newKey()
	created, err := apps[0].Svc.Hosts.Create(ctx, owner.ID, hosts.CreateRequest{Name: "Laptop", PublicKey: hostJWK})
	if err != nil {
		t.Fatal(err)
	}
	aud := apps[0].Svc.Config().APIURL
	sign := func(extra map[string]any) string {
		now := time.Now()
		c := map[string]any{"iss": created.Host.ID, "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": core.RandomString(16)}
		for k, v := range extra {
			c[k] = v
		}
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: hostPriv}, (&jose.SignerOptions{}).WithType("host+jwt"))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := json.Marshal(c)
		jws, _ := s.Sign(p)
		out, _ := jws.CompactSerialize()
		return out
	}
	do := func(i int, method, path string, body any, jwt string) (int, map[string]any) {
		t.Helper()
		var rd *bytes.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		} else {
			rd = bytes.NewReader(nil)
		}
		req, _ := http.NewRequest(method, srvs[i].URL+path, rd)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+jwt)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}

	// A jti used on A is refused on B.
	jwt := sign(nil)
	if code, m := do(0, http.MethodGet, hostagent.PathStatus+"?agent_id=dag_none", nil, jwt); code != http.StatusNotFound {
		t.Fatalf("first use on A: %d %v", code, m)
	}
	if code, m := do(1, http.MethodGet, hostagent.PathStatus+"?agent_id=dag_none", nil, jwt); code != http.StatusUnauthorized || m["error"] != hosts.CodeInvalidJWT {
		t.Fatalf("replay on B: %d %v", code, m)
	}

	// Register on A, approve on B, status on A.
	_, agentJWK := newKey()
	var agentKey map[string]any
	_ = json.Unmarshal(agentJWK, &agentKey)
	code, reg := do(0, http.MethodPost, hostagent.PathRegister, map[string]any{"name": "Bot", "mode": "delegated", "capabilities": []string{"get_credits"}}, sign(map[string]any{"agent_public_key": agentKey}))
	if code != http.StatusOK || reg["status"] != "pending" {
		t.Fatalf("register on A: %d %v", code, reg)
	}
	agentID := reg["agent_id"].(string)
	userCode := reg["approval"].(map[string]any)["user_code"].(string)
	if _, err := apps[1].Svc.Hosts.DecideDevice(ctx, owner.ID, agentID, userCode, true, []hosts.Capability{hosts.CapGetCredits}); err != nil {
		t.Fatalf("approve on B: %v", err)
	}
	if code, st := do(0, http.MethodGet, hostagent.PathStatus+"?agent_id="+agentID, nil, sign(nil)); code != http.StatusOK || st["status"] != "active" {
		t.Fatalf("status on A: %d %v", code, st)
	}
}
