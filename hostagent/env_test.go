package hostagent_test

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/hostagent"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/consoletest"
)

// clock is the injected service clock (core.Config.Now).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a whole faxhub (internal/app's production wiring) on a loopback
// listener named localhost (passkeys need a host name), on SQLite or, with
// FAXHUB_TESTENV_POSTGRES, on PostgreSQL. Its API origin is the same
// listener under 127.0.0.1.
type env struct {
	t     *testing.T
	a     *app.App
	site  *consoletest.Site
	base  string
	api   string
	clock *clock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := &clock{t: time.Now().UTC().Truncate(time.Second)}
	site := consoletest.Start(t, func(base, loopback string) app.Options {
		return app.Options{BaseURL: base, APIURL: loopback, DataDir: t.TempDir(), Database: consoletest.Database(t),
			Dev: true, SimTimeScale: 0, InsertOnly: true,
			Core:   func(c *services.Config) { c.Now = clk.Now },
			Logger: consoletest.Logger(t)}
	})
	return &env{t: t, a: site.App, site: site, base: site.Base, api: site.App.Svc.Config().APIURL, clock: clk}
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r reply) str(k string) string { s, _ := r.body[k].(string); return s }

// decoded is r with its JSON body decoded.
func decoded(r consoletest.Reply) reply {
	var m map[string]any
	_ = json.Unmarshal([]byte(r.Body), &m)
	return reply{status: r.Status, header: r.Header, body: m, raw: r.Body}
}

// call sends a request (body JSON-encoded unless it is a string).
func call(t *testing.T, c *http.Client, method, target string, body any, h http.Header) reply {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return reply{status: res.StatusCode, header: res.Header, body: m, raw: string(raw)}
}

func bearer(jwt string) http.Header { return http.Header{"Authorization": {"Bearer " + jwt}} }

// key is an Ed25519 key pair as a host or agent holds it.
type key struct {
	priv ed25519.PrivateKey
	jwk  map[string]any
	tp   string
}

func newKey(t *testing.T) key {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tp, _ := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	return key{priv: priv, tp: base64.RawURLEncoding.EncodeToString(tp),
		jwk: map[string]any{"kty": "OKP", "crv": "Ed25519", "x": base64.RawURLEncoding.EncodeToString(pub)}}
}

// jwt signs claims as typ with k (EdDSA).
func (k key) jwt(t *testing.T, typ string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: k.priv}, (&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := json.Marshal(claims)
	jws, err := s.Sign(p)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := jws.CompactSerialize()
	return out
}

// owner is an account with a console session, signed in at both origins
// (the console's endpoints answer on the API origin too).
type owner struct {
	*consoletest.Owner
	e *env
}

func (e *env) owner(email string) *owner {
	e.t.Helper()
	return &owner{Owner: e.site.Owner(e.t, email, e.api), e: e}
}

// post is a same-origin owner request to the base origin, its answer
// decoded as the host and agent endpoints' are.
func (w *owner) post(path string, body any, csrf string) reply {
	w.e.t.Helper()
	return decoded(w.PostJSON(w.e.t, path, body, csrf))
}

// host is a provisioned host with its key.
type host struct {
	e   *env
	id  string
	key key
}

// createHost provisions a host with its key through the owner's session.
func (w *owner) createHost(defaults ...string) *host {
	t := w.e.t
	t.Helper()
	k := newKey(t)
	if defaults == nil {
		defaults = []string{}
	}
	r := w.post(hostagent.PathHostCreate, map[string]any{"name": "Laptop agent runtime", "public_key": k.jwk, "default_capabilities": defaults}, "")
	if r.status != http.StatusCreated || r.str("hostId") == "" {
		t.Fatalf("host create: %d %s", r.status, r.raw)
	}
	return &host{e: w.e, id: r.str("hostId"), key: k}
}

// claims are fresh host JWT claims (iat now, exp +60 s, a new jti).
func (h *host) claims(extra map[string]any) map[string]any {
	now := h.e.clock.Now()
	c := map[string]any{"iss": h.id, "aud": h.e.api, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": core.RandomString(16)}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

func (h *host) jwt(extra map[string]any) string {
	return h.key.jwt(h.e.t, "host+jwt", h.claims(extra))
}

// register registers an agent with a new key; it returns the key and the
// answer.
func (h *host) register(caps []string, force bool) (key, reply) {
	k := newKey(h.e.t)
	r := call(h.e.t, nil, http.MethodPost, h.e.api+hostagent.PathRegister,
		map[string]any{"name": "Fax helper", "mode": "delegated", "capabilities": caps, "preferred_method": "device_authorization", "force_approval": force},
		bearer(h.jwt(map[string]any{"agent_public_key": k.jwk})))
	return k, r
}

// agent is a registered agent with its key.
type agent struct {
	h   *host
	id  string
	key key
}

func (a *agent) jwt(extra map[string]any) string {
	now := a.h.e.clock.Now()
	c := map[string]any{"iss": a.h.id, "sub": a.id, "aud": a.h.e.api, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(), "jti": core.RandomString(16)}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return a.key.jwt(a.h.e.t, "agent+jwt", c)
}

func (a *agent) execute(capability string, args any) reply {
	body := map[string]any{"capability": capability}
	if args != nil {
		body["arguments"] = args
	}
	return call(a.h.e.t, nil, http.MethodPost, a.h.e.api+hostagent.PathExecute, body, bearer(a.jwt(nil)))
}

// approval reads the device approval object of a register/device answer.
func approvalOf(t *testing.T, r reply) (userCode, complete string) {
	t.Helper()
	ap, _ := r.body["approval"].(map[string]any)
	if ap == nil {
		t.Fatalf("no approval object: %s", r.raw)
	}
	userCode, _ = ap["user_code"].(string)
	complete, _ = ap["verification_uri_complete"].(string)
	return
}

// activeAgent registers an agent for caps and has the owner approve all of
// them on the device page (core, as the console does).
func (w *owner) activeAgent(h *host, caps ...string) *agent {
	t := w.e.t
	t.Helper()
	k, r := h.register(caps, false)
	if r.status != http.StatusOK || r.str("status") != "pending" {
		t.Fatalf("register: %d %s", r.status, r.raw)
	}
	code, _ := approvalOf(t, r)
	var granted []hosts.Capability
	for _, c := range caps {
		granted = append(granted, hosts.Capability(c))
	}
	if _, err := w.e.a.Svc.Hosts.DecideDevice(t.Context(), w.Account.ID, r.str("agent_id"), code, true, granted); err != nil {
		t.Fatalf("approve device: %v", err)
	}
	return &agent{h: h, id: r.str("agent_id"), key: k}
}

func wantError(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	if r.status != status || r.str("error") != code {
		t.Fatalf("%s: got %d %s, want %d %s", what, r.status, r.raw, status, code)
	}
	if r.str("message") == "" {
		t.Fatalf("%s: no message: %s", what, r.raw)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%s: Cache-Control %q", what, r.header.Get("Cache-Control"))
	}
	if code == hosts.CodeInvalidJWT && !strings.Contains(r.header.Get("WWW-Authenticate"), `AgentAuth discovery="`) {
		t.Fatalf("%s: WWW-Authenticate %q", what, r.header.Get("WWW-Authenticate"))
	}
}

func jsonDecode(res *http.Response, v any) error {
	defer res.Body.Close()
	return json.NewDecoder(res.Body).Decode(v)
}
