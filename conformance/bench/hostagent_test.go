//go:build bench

package bench

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/internal/app"
)

const (
	hostAgentClients  = 16
	hostAgentDuration = 5 * time.Second
	pathExecute       = "/api/auth/capability/execute"
)

// benchHostAgentExecute measures POST /api/auth/capability/execute
// get_credits per second, each request with a fresh agent JWT (EdDSA, new
// jti) signed by the client, over real HTTP on SQLite. The baseline, in the
// same run, verifies the same kind of JWT with the agent's key (go-jose),
// checks its claims and inserts one jti row into the same database. Both
// sides pay the client's signing.
func benchHostAgentExecute(t *testing.T, rep *report) {
	ctx := t.Context()
	site := serveApp(t, false)
	a, base := site.App, site.Base

	pool := activeAgents(t, a, base)
	client := newClient(hostAgentClients)
	body := []byte(`{"capability":"get_credits","arguments":{}}`)
	fx, err := hammer(ctx, hostAgentClients, time.Second, hostAgentDuration, func(rctx context.Context, c int) error {
		tok, err := pool.pick().jwt(base)
		if err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(rctx, http.MethodPost, base+pathExecute, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		var out struct {
			Data map[string]any `json:"data"`
		}
		if err := call(client, req, &out); err != nil {
			return err
		}
		if _, ok := out.Data["balance"]; !ok {
			return fmt.Errorf("get_credits: no balance in %v", out)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("faxhub execute: %v", err)
	}

	bl := newJTIBaseline(t, a, base, pool)
	bsrv := httptest.NewServer(bl)
	defer bsrv.Close()
	blr, err := hammer(ctx, hostAgentClients, time.Second, hostAgentDuration, func(rctx context.Context, c int) error {
		tok, err := pool.pick().jwt(base)
		if err != nil {
			return err
		}
		req, _ := http.NewRequestWithContext(rctx, http.MethodPost, bsrv.URL+"/execute", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		return call(client, req, nil)
	})
	if err != nil {
		t.Fatalf("baseline execute: %v", err)
	}
	rep.add(fmt.Sprintf("hostagent capability/execute get_credits, fresh agent JWT, SQLite, %d clients, %s", hostAgentClients, hostAgentDuration), "req/s",
		fx.perSecond(), blr.perSecond(), ratioAtLeast(0.5), 0,
		fmt.Sprintf("hostagent: faxhub verifies the agent+jwt (typ, alg, iss host, sub agent, aud, iat/exp, signature), records its jti in the shared replay store, "+
			"checks host and agent status and the grant, and reads the balance. Baseline: verify the same EdDSA JWT with the agent's key and insert one jti row "+
			"into the same SQLite database. Both sides sign a fresh JWT per request in the client, spread over %d agents of %d hosts "+
			"(hostagent allows an agent 120 calls, then 2 a second).", len(pool.agents), hostAgentHosts))
}

// delegatedAgent is an active agent of a host: what the client needs to
// sign its agent JWTs.
type delegatedAgent struct {
	hostID, agentID string
	key             ed25519.PrivateKey
	signer          jose.Signer
}

func (d *delegatedAgent) jwt(aud string) (string, error) {
	now := time.Now()
	return jwt.Signed(d.signer).Claims(jwt.Claims{
		Issuer: d.hostID, Subject: d.agentID, Audience: jwt.Audience{aud}, ID: core.RandomString(16),
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(30 * time.Second)),
	}).Serialize()
}

// agentPool hands the load's requests to its agents in turn. hostagent
// bounds capability calls per agent (a burst of 120, then 2 a second), so
// one agent cannot carry a throughput run; enough agents keep every
// request under its agent's limit while the limiter stays in the path.
type agentPool struct {
	agents []*delegatedAgent
	next   atomic.Uint64
}

func (p *agentPool) pick() *delegatedAgent {
	return p.agents[p.next.Add(1)%uint64(len(p.agents))]
}

func newSigner(t *testing.T, key ed25519.PrivateKey, typ string) jose.Signer {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: key},
		(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func publicJWK(t *testing.T, key ed25519.PrivateKey) json.RawMessage {
	b, err := json.Marshal(jose.JSONWebKey{Key: key.Public()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostAgentHosts × hosts.MaxAgentsPerHost agents carry the load (see
// agentPool): 4 × 100 agents allow about 53,000 calls in the 6 s of a run.
const hostAgentHosts = 4

// activeAgents provisions hostAgentHosts hosts for one owner (through
// core) with hosts.MaxAgentsPerHost active agents each: the first agent is
// registered over HTTP with a host JWT signed by go-jose (the adapter's
// path), the rest through core (registration is rate limited per host);
// every device code is approved as the owner with get_credits granted.
func activeAgents(t *testing.T, a *app.App, base string) *agentPool {
	ctx := t.Context()
	o, err := a.Svc.Accounts.CreateOwner(ctx, "hostagent-bench@example.com", "Bench", true)
	if err != nil {
		t.Fatal(err)
	}
	pool := &agentPool{}
	for h := range hostAgentHosts {
		_, hostKey, _ := ed25519.GenerateKey(rand.Reader)
		hc, err := a.Svc.Hosts.Create(ctx, o.ID, hosts.CreateRequest{Name: fmt.Sprintf("bench host %d", h), PublicKey: publicJWK(t, hostKey)})
		if err != nil {
			t.Fatalf("create host: %v", err)
		}
		host, err := a.Svc.Hosts.HostForJWT(ctx, hc.Host.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i := range hosts.MaxAgentsPerHost {
			_, agentKey, _ := ed25519.GenerateKey(rand.Reader)
			var id string
			var approval *hosts.DeviceApproval
			if i == 0 {
				id, approval = registerOverHTTP(t, base, hc.Host.ID, hostKey, agentKey)
			} else {
				jwk, err := hosts.ParsePublicJWK(publicJWK(t, agentKey))
				if err != nil {
					t.Fatal(err)
				}
				v, err := a.Svc.Hosts.RegisterAgent(ctx, host, hosts.AgentRequest{Name: fmt.Sprintf("bench agent %d", i),
					Mode: "delegated", PreferredMethod: "device_authorization", Capabilities: []hosts.Capability{hosts.CapGetCredits}, AgentKey: jwk})
				if err != nil {
					t.Fatalf("register agent %d: %v", i, err)
				}
				id, approval = v.Agent.ID, v.Approval
			}
			if approval == nil {
				t.Fatalf("agent %s: pending without a device code", id)
			}
			if _, err := a.Svc.Hosts.DecideDevice(ctx, o.ID, id, approval.UserCode, true, []hosts.Capability{hosts.CapGetCredits}); err != nil {
				t.Fatalf("approve device: %v", err)
			}
			pool.agents = append(pool.agents, &delegatedAgent{hostID: hc.Host.ID, agentID: id, key: agentKey, signer: newSigner(t, agentKey, "agent+jwt")})
		}
	}
	return pool
}

// registerOverHTTP registers one agent at /api/auth/agent/register with a
// host JWT carrying agent_public_key, and returns its id and device code.
func registerOverHTTP(t *testing.T, base, hostID string, hostKey, agentKey ed25519.PrivateKey) (string, *hosts.DeviceApproval) {
	now := time.Now()
	claims := struct {
		jwt.Claims
		AgentKey json.RawMessage `json:"agent_public_key"`
	}{jwt.Claims{Issuer: hostID, Audience: jwt.Audience{base}, ID: core.RandomString(16),
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(30 * time.Second))}, publicJWK(t, agentKey)}
	hostJWT, err := jwt.Signed(newSigner(t, hostKey, "host+jwt")).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	reqBody, _ := json.Marshal(map[string]any{"name": "bench agent 0", "mode": "delegated", "capabilities": []string{"get_credits"},
		"preferred_method": "device_authorization", "force_approval": false})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/api/auth/agent/register", bytes.NewReader(reqBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+hostJWT)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reg struct {
		AgentID  string                `json:"agent_id"`
		Approval *hosts.DeviceApproval `json:"approval"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || resp.StatusCode != http.StatusOK || reg.AgentID == "" {
		t.Fatalf("register: %d %v %+v", resp.StatusCode, err, reg)
	}
	return reg.AgentID, reg.Approval
}

// jtiBaseline verifies an agent JWT with its agent's public key (found
// by sub in a map, as faxhub finds the agent) and inserts its jti into a
// table of the same database faxhub uses.
type jtiBaseline struct {
	a    *app.App
	keys map[string]*delegatedAgent
	aud  string
}

func newJTIBaseline(t *testing.T, a *app.App, base string, pool *agentPool) *jtiBaseline {
	if _, err := a.DB.SQL().ExecContext(t.Context(),
		`CREATE TABLE bench_jtis (issuer TEXT NOT NULL, jti TEXT NOT NULL, expires_at TEXT NOT NULL, PRIMARY KEY (issuer, jti))`); err != nil {
		t.Fatal(err)
	}
	b := &jtiBaseline{a: a, keys: make(map[string]*delegatedAgent, len(pool.agents)), aud: base}
	for _, ag := range pool.agents {
		b.keys[ag.agentID] = ag
	}
	return b
}

func (b *jtiBaseline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		http.Error(w, "no bearer", http.StatusUnauthorized)
		return
	}
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil || len(tok.Headers) != 1 || tok.Headers[0].ExtraHeaders[jose.HeaderType] != "agent+jwt" {
		http.Error(w, "bad jwt", http.StatusUnauthorized)
		return
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		http.Error(w, "bad claims", http.StatusUnauthorized)
		return
	}
	ag := b.keys[unverified.Subject]
	if ag == nil {
		http.Error(w, "unknown agent", http.StatusUnauthorized)
		return
	}
	var claims jwt.Claims
	if err := tok.Claims(ag.key.Public(), &claims); err != nil {
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if err := claims.ValidateWithLeeway(jwt.Expected{Issuer: ag.hostID, Subject: ag.agentID, AnyAudience: jwt.Audience{b.aud}, Time: time.Now()}, 30*time.Second); err != nil || claims.ID == "" {
		http.Error(w, "invalid claims", http.StatusUnauthorized)
		return
	}
	if _, err := b.a.DB.SQL().ExecContext(r.Context(), `INSERT INTO bench_jtis (issuer, jti, expires_at) VALUES (?, ?, ?)`,
		claims.Issuer, claims.ID, claims.Expiry.Time().Add(30*time.Second).UTC().Format(time.RFC3339)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"data":{"balance":"0.00"}}`)
}
