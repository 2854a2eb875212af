package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

// Replicas A, B and C, by index.
const (
	repA = iota
	repB
	repC
)

// replicaSet is several `faxhub serve` processes on one PostgreSQL schema,
// all configured with one public base URL. Each replica has its own HTTP
// client that dials it whatever the URL's host, so a test names the
// replica of every step while URLs (upload links, OAuth endpoints, the
// Host and Origin the server checks) stay the public ones, as behind a
// load balancer.
type replicaSet struct {
	t       *testing.T
	bin     string
	base    string // the public URL every replica was given
	dsn     string
	data    string
	addrs   []string
	clients []*http.Client
	db      *sql.DB
}

// TestReplicas runs every journey across three replicas on one PostgreSQL
// database, each step on a named replica: state a replica kept in its own
// memory (a session, a code, a rate limit, an idempotency record, a poll
// interval) shows up as a step refused or repeated on another.
func TestReplicas(t *testing.T) {
	pg := os.Getenv(testenv.EnvPostgres)
	switch {
	case pg == "" && os.Getenv(storetest.EnvPostgresURL) != "":
		// make check's SQLite pass: the PostgreSQL pass runs it.
		t.Skipf("replicas share one PostgreSQL database: runs with %s (make check's PostgreSQL pass)", testenv.EnvPostgres)
	case pg == "":
		require.Missing(t, "PostgreSQL", "set "+testenv.EnvPostgres+"=postgres://…: replicas share one PostgreSQL database")
	}
	rs := startReplicas(t, pg, 3)

	for _, tc := range []struct {
		name string
		run  func(*replicaSet, *testing.T)
	}{
		{"Migrations", (*replicaSet).testMigrations},
		{"REST", (*replicaSet).testREST},
		{"Idempotency", (*replicaSet).testIdempotency},
		{"RateLimit", (*replicaSet).testRateLimit},
		{"OAuth", (*replicaSet).testOAuth},
		{"Agents", (*replicaSet).testAgents},
		{"MCP", (*replicaSet).testMCP},
		{"A2A", (*replicaSet).testA2A},
		{"Deliveries", (*replicaSet).testDeliveries},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(rs.in(t), t) })
	}
}

// in is the set with its helpers failing t, the running subtest.
func (rs *replicaSet) in(t *testing.T) *replicaSet {
	c := *rs
	c.t = t
	return &c
}

// startReplicas builds the binary and starts n serves at the same moment
// on a fresh schema, so their migrations race.
func startReplicas(t *testing.T, pg string, n int) *replicaSet {
	t.Helper()
	rs := &replicaSet{
		t:    t,
		bin:  buildBinary(t, ".", "faxhub"),
		base: "http://localhost:" + strings.Split(freeAddr(t), ":")[1],
		dsn:  testenvSchema(t, pg),
		data: t.TempDir(),
	}
	db, err := sql.Open("pgx", rs.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rs.db = db

	blobs := "file://" + filepath.ToSlash(filepath.Join(rs.data, "blobs"))
	type proc struct {
		cmd  *exec.Cmd
		log  *syncBuffer
		done chan struct{}
	}
	procs := make([]*proc, n)
	for i := range n {
		addr := freeAddr(t)
		p := &proc{log: &syncBuffer{}, done: make(chan struct{})}
		p.cmd = exec.Command(rs.bin, "serve", "--addr", addr, "--base-url", rs.base, "--database", rs.dsn,
			"--data", filepath.Join(rs.data, fmt.Sprintf("replica-%c", 'A'+i)), "--blobs", blobs,
			"--trusted-proxies", "127.0.0.1/32", "--agent-mode", "test", "--sim-timescale", "0.02", "--log-level", "warn")
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
		procs[i] = p
		rs.addrs = append(rs.addrs, addr)
		rs.clients = append(rs.clients, dialing(addr))
	}
	for i, p := range procs {
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = p.cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			_ = p.cmd.Process.Kill()
			<-p.done
			if t.Failed() {
				t.Logf("replica %c log:\n%s", 'A'+i, tail(p.log.String(), 3000))
			}
		})
	}
	deadline := time.Now().Add(60 * time.Second)
	for i, p := range procs {
		for {
			resp, err := rs.clients[i].Get(rs.base + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-p.done:
				t.Fatalf("replica %c exited before it was ready:\n%s", 'A'+i, tail(p.log.String(), 3000))
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %c not ready within a minute:\n%s", 'A'+i, tail(p.log.String(), 3000))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return rs
}

// dialing is a client that sends every request to addr.
func dialing(addr string) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
		},
		// Redirects are steps too: the test follows them on a replica it names.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func name(i int) string { return string(rune('A' + i)) }

// admin runs `faxhub admin …` on the shared schema and returns its output.
func (rs *replicaSet) admin(args ...string) string {
	rs.t.Helper()
	args = append(args, "--database", rs.dsn, "--data", filepath.Join(rs.data, "admin"), "--base-url", rs.base, "--log-level", "error")
	out, err := exec.Command(rs.bin, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		rs.t.Fatalf("faxhub %s: %v", strings.Join(args[:3], " "), err)
	}
	return strings.TrimSpace(string(out))
}

// owner is a fresh owner with a test-mode API key and test credits.
type owner struct {
	id, email, key, cookie string
}

func (rs *replicaSet) newOwner(t *testing.T, usd string) owner {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	email := "replicas-" + hex.EncodeToString(b) + "@example.com"
	o := owner{email: email}
	o.id = rs.admin("admin", "owner", "create", "--email", email, "--name", "Replica Owner")
	o.key = rs.admin("admin", "apikey", "create", "--owner", email, "--mode", "test")
	rs.admin("admin", "credits", "grant", "--owner", email, "--mode", "test", "--usd", usd, "--reason", "replicas test")
	o.cookie = rs.admin("admin", "session", "create", "--owner", email)
	return o
}

// answer is one HTTP answer, its body parsed as JSON when it is.
type answer struct {
	code int
	hdr  http.Header
	raw  []byte
	json map[string]any
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.code, tail(string(a.raw), 600)) }

// do sends one request to replica i. body is JSON (any), url.Values (a
// form) or []byte (sent as is).
func (rs *replicaSet) do(i int, method, target string, body any, hdr ...string) answer {
	rs.t.Helper()
	if !strings.HasPrefix(target, "http") {
		target = rs.base + target
	}
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case url.Values:
		rd, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			rs.t.Fatal(err)
		}
		rd, ctype = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		rs.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	for k := 0; k+1 < len(hdr); k += 2 {
		req.Header.Set(hdr[k], hdr[k+1])
	}
	resp, err := rs.clients[i].Do(req)
	if err != nil { // an answer with code 0: callers may run in other goroutines
		return answer{raw: []byte(fmt.Sprintf("%s %s on replica %s: %v", method, target, name(i), err))}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	a := answer{code: resp.StatusCode, hdr: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &a.json)
	return a
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// sameOrigin are the headers a browser sends with the console's forms.
func (rs *replicaSet) sameOrigin(cookie string) []string {
	return []string{"Cookie", cookie, "Origin", rs.base, "Sec-Fetch-Site", "same-origin"}
}

// upload stores a one-page PDF for o: the upload capability on replica
// i, the PUT on the next one.
func (rs *replicaSet) upload(i int, o owner) string {
	rs.t.Helper()
	up := rs.do(i, "POST", "/api/v1/uploads", nil, bearer(o.key)...)
	if up.code != 200 {
		rs.t.Fatalf("upload capability on %s: %v", name(i), up)
	}
	put := rs.do((i+1)%len(rs.addrs), "PUT", up.json["uploadUrl"].(string), testenv.MinimalPDF(1))
	if put.code != 200 {
		rs.t.Fatalf("PUT on %s: %v", name((i+1)%len(rs.addrs)), put)
	}
	return put.json["document"].(map[string]any)["id"].(string)
}

func (rs *replicaSet) send(i int, o owner, doc, key string) answer {
	rs.t.Helper()
	return rs.do(i, "POST", "/api/v1/faxes", map[string]any{"to": "+12125550100", "documentId": doc},
		append(bearer(o.key), "Idempotency-Key", key)...)
}

// count runs a count(*) query on the shared schema.
func (rs *replicaSet) count(q string, args ...any) int {
	rs.t.Helper()
	var n int
	if err := rs.db.QueryRow(q, args...).Scan(&n); err != nil {
		rs.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// testMigrations: the three serves migrated one schema at once; every
// migration is recorded applied exactly once, up to the newest.
func (rs *replicaSet) testMigrations(t *testing.T) {
	files, err := filepath.Glob("../../core/store/migrations/postgres/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v %v", files, err)
	}
	var newest int64
	if _, err := fmt.Sscanf(filepath.Base(files[len(files)-1]), "%d_", &newest); err != nil {
		t.Fatal(err)
	}
	var maxV int64
	var applied, distinct int
	err = rs.db.QueryRow(`SELECT max(version_id), count(*), count(DISTINCT version_id) FROM goose_db_version WHERE is_applied AND version_id > 0`).
		Scan(&maxV, &applied, &distinct)
	if err != nil {
		t.Fatal(err)
	}
	if maxV != newest || applied != len(files) || distinct != len(files) {
		t.Fatalf("goose_db_version: newest %d, %d applied rows, %d versions; want %d and %d migrations once each", maxV, applied, distinct, newest, len(files))
	}
}

// testREST: upload and send on A, status on B, cancel on C; every replica
// then tells the same final story.
func (rs *replicaSet) testREST(t *testing.T) {
	o := rs.newOwner(t, "20")
	doc := rs.upload(repA, o)
	sent := rs.send(repA, o, doc, "rest-1")
	if sent.code != 200 {
		t.Fatalf("send on A: %v", sent)
	}
	id := sent.json["id"].(string)
	got := rs.do(repB, "GET", "/api/v1/faxes/"+id, nil, bearer(o.key)...)
	if got.code != 200 || got.json["id"] != id {
		t.Fatalf("status on B: %v", got)
	}
	cancel := rs.do(repC, "POST", "/api/v1/faxes/"+id+"/cancel", nil, bearer(o.key)...)
	var final string
	switch {
	case cancel.code == 200:
		final = "canceled"
		if cancel.json["status"] != final {
			t.Fatalf("cancel on C answered %v", cancel)
		}
	case cancel.code == http.StatusConflict && cancel.hdr.Get("Content-Type") == "application/problem+json":
		// Too late: the simulator had the call already; it ends delivered.
		final = "delivered"
	default:
		t.Fatalf("cancel on C: %v", cancel)
	}
	t.Logf("cancel on C answered %d: the fax ends %s", cancel.code, final)
	for i := range rs.addrs {
		rs.waitFor(t, fmt.Sprintf("fax %s %s on %s", id, final, name(i)), func() bool {
			return rs.do(i, "GET", "/api/v1/faxes/"+id, nil, bearer(o.key)...).json["status"] == final
		})
	}
	settled := "release"
	if final == "delivered" {
		settled = "capture"
	}
	if n := rs.count(`SELECT count(*) FROM ledger_entries WHERE fax_id = $1 AND kind = $2`, id, settled); n != 1 {
		t.Fatalf("fax %s ended %s with %d %s entries, want 1", id, final, n, settled)
	}
}

// testIdempotency: one key replayed on another replica is the same fax;
// the same key sent to A, B and C at once is one fax and one hold.
func (rs *replicaSet) testIdempotency(t *testing.T) {
	o := rs.newOwner(t, "20")
	doc := rs.upload(repB, o)
	first := rs.send(repA, o, doc, "idem-replay")
	again := rs.send(repB, o, doc, "idem-replay")
	if first.code != 200 || again.code != 200 || again.json["id"] != first.json["id"] || again.hdr.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay on B of A's send: first %v, again %v (Idempotent-Replayed %q)", first, again, again.hdr.Get("Idempotent-Replayed"))
	}

	var wg sync.WaitGroup
	answers := make([]answer, len(rs.addrs))
	for i := range rs.addrs {
		wg.Go(func() { answers[i] = rs.send(i, o, doc, "idem-race") })
	}
	wg.Wait()
	ids := map[any]bool{}
	for i, a := range answers {
		switch a.code {
		case 200:
			ids[a.json["id"]] = true
		case http.StatusConflict: // another replica holds the key right now
			if a.hdr.Get("Content-Type") != "application/problem+json" {
				t.Errorf("409 on %s is not problem+json: %v", name(i), a)
			}
		default:
			t.Errorf("concurrent send on %s: %v", name(i), a)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("one key sent to A, B and C at once gave faxes %v", ids)
	}
	if n := rs.count(`SELECT count(*) FROM faxes WHERE owner_id = $1`, o.id); n != 2 {
		t.Fatalf("the owner has %d faxes, want 2 (one per key)", n)
	}
	if n := rs.count(`SELECT count(*) FROM ledger_entries WHERE owner_id = $1 AND kind = 'hold'`, o.id); n != 2 {
		t.Fatalf("the owner has %d holds, want 2 (one per key)", n)
	}
}

// testRateLimit: the send limit (a burst of 20, one more per 100 ms) is
// one limit for all replicas. 60 sends spread over A, B and C at once:
// a limiter per replica would let all 60 through (20 each).
func (rs *replicaSet) testRateLimit(t *testing.T) {
	const (
		sends    = 60
		burst    = 20
		interval = 100 * time.Millisecond
	)
	o := rs.newOwner(t, "100")
	doc := rs.upload(repC, o)
	var wg sync.WaitGroup
	answers := make([]answer, sends)
	start := time.Now()
	for k := range sends {
		wg.Go(func() { answers[k] = rs.send(k%len(rs.addrs), o, doc, fmt.Sprintf("rate-%d", k)) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	accepted, limited := 0, 0
	for k, a := range answers {
		switch a.code {
		case 200:
			accepted++
		case http.StatusTooManyRequests:
			limited++
			if a.hdr.Get("Content-Type") != "application/problem+json" || a.json["code"] != "rate_limited" || a.hdr.Get("Retry-After") == "" {
				t.Errorf("429 on %s is not a rate_limited problem with Retry-After: %v %v", name(k%len(rs.addrs)), a.hdr, a)
			}
		default:
			t.Errorf("send %d on %s: %v", k, name(k%len(rs.addrs)), a)
		}
	}
	most := burst + int(elapsed/interval) + 1
	t.Logf("%d sends over 3 replicas in %s: %d accepted, %d limited (at most %d may pass)", sends, elapsed.Round(time.Millisecond), accepted, limited, most)
	if accepted > most {
		t.Fatalf("%d sends accepted in %s; one shared limit allows at most %d", accepted, elapsed, most)
	}
	if limited == 0 {
		t.Fatalf("no send was limited (%d in %s)", sends, elapsed)
	}
}

// oauthClient is a public client registered by dynamic registration, and
// the authorization server's endpoints.
type oauthClient struct {
	conf     oauth2.Config
	revoke   string
	redirect string
}

func (rs *replicaSet) register(t *testing.T, i int, redirect string) *oauthClient {
	t.Helper()
	meta := rs.do(i, "GET", "/.well-known/oauth-authorization-server/api/auth", nil)
	if meta.code != 200 {
		t.Fatalf("discovery on %s: %v", name(i), meta)
	}
	reg := rs.do(i, "POST", meta.json["registration_endpoint"].(string), map[string]any{
		"client_name": "Replicas test", "redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
	})
	if reg.code != 201 {
		t.Fatalf("registration on %s: %v", name(i), reg)
	}
	return &oauthClient{
		conf: oauth2.Config{
			ClientID: reg.json["client_id"].(string), RedirectURL: redirect,
			Endpoint: oauth2.Endpoint{
				AuthURL: meta.json["authorization_endpoint"].(string), TokenURL: meta.json["token_endpoint"].(string),
				AuthStyle: oauth2.AuthStyleInParams,
			},
		},
		revoke:   meta.json["revocation_endpoint"].(string),
		redirect: redirect,
	}
}

var (
	hiddenRe  = regexp.MustCompile(`name="(csrf|binding|return)" value="([^"]*)"`)
	checkedRe = regexp.MustCompile(`name="scope" value="([^"]+)" checked`)
)

// authorize runs the authorization request with PKCE for resource: the
// authorize redirect and the resume on replica a, the consent page and
// its form on replica b. It returns the code and the PKCE verifier.
func (rs *replicaSet) authorize(t *testing.T, c *oauthClient, o owner, resource string, scopes []string, a, b int) (code, verifier string) {
	t.Helper()
	conf := c.conf
	conf.Scopes = scopes
	verifier = oauth2.GenerateVerifier()
	state := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	r := rs.do(a, "GET", authURL, nil, "Cookie", o.cookie)
	if r.code != http.StatusSeeOther {
		t.Fatalf("authorize on %s: %v", name(a), r)
	}
	consentURL := rs.abs(r.hdr.Get("Location"))
	page := rs.do(b, "GET", consentURL, nil, "Cookie", o.cookie)
	if page.code != 200 {
		t.Fatalf("consent page on %s: %v", name(b), page)
	}
	form := url.Values{"decision": {"approve"}}
	for _, m := range hiddenRe.FindAllStringSubmatch(string(page.raw), -1) {
		form.Set(m[1], unescapeHTML(m[2]))
	}
	for _, m := range checkedRe.FindAllStringSubmatch(string(page.raw), -1) {
		form.Add("scope", m[1])
	}
	u, _ := url.Parse(consentURL)
	post := rs.do(b, "POST", rs.base+u.Path, form, rs.sameOrigin(o.cookie)...)
	if post.code != http.StatusSeeOther {
		t.Fatalf("consent post on %s: %v", name(b), post)
	}
	resume := rs.do(a, "GET", rs.abs(post.hdr.Get("Location")), nil, "Cookie", o.cookie)
	if resume.code != http.StatusSeeOther {
		t.Fatalf("resume on %s: %v", name(a), resume)
	}
	cb, err := url.Parse(resume.hdr.Get("Location"))
	if err != nil || cb.Query().Get("state") != state || cb.Query().Get("code") == "" {
		t.Fatalf("resume redirects to %q", resume.hdr.Get("Location"))
	}
	return cb.Query().Get("code"), verifier
}

func (rs *replicaSet) abs(loc string) string {
	u, err := url.Parse(rs.base)
	if err != nil {
		rs.t.Fatal(err)
	}
	ref, err := u.Parse(loc)
	if err != nil {
		rs.t.Fatalf("location %q: %v", loc, err)
	}
	return ref.String()
}

func unescapeHTML(s string) string {
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&#34;", `"`).Replace(s)
}

// on is a context whose oauth2 calls go to replica i.
func (rs *replicaSet) on(i int) context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, rs.clients[i])
}

// exchange redeems code on replica i.
func (rs *replicaSet) exchange(i int, c *oauthClient, code, verifier, resource string) (*oauth2.Token, error) {
	return c.conf.Exchange(rs.on(i), code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
}

// oauthToken is an access token for resource by the whole flow, its steps
// spread over the replicas.
func (rs *replicaSet) oauthToken(t *testing.T, c *oauthClient, o owner, resource string, scopes ...string) string {
	t.Helper()
	code, verifier := rs.authorize(t, c, o, resource, scopes, repC, repA)
	tok, err := rs.exchange(repB, c, code, verifier, resource)
	if err != nil {
		t.Fatalf("token on B: %v", err)
	}
	return tok.AccessToken
}

func grantError(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return fmt.Sprint(err)
}

// mcpInitialize answers the MCP initialize of token on replica i.
func (rs *replicaSet) mcpInitialize(i int, token string) answer {
	return rs.do(i, "POST", "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "replicas", "version": "0"}}},
		"Authorization", "Bearer "+token, "Accept", "application/json, text/event-stream")
}

// testOAuth: authorize on A, consent on B, token on C, refresh on A,
// revoke on B, then the revoked authorization refused on C; a code
// redeemed on A is refused on B.
func (rs *replicaSet) testOAuth(t *testing.T) {
	o := rs.newOwner(t, "1")
	c := rs.register(t, repA, "http://127.0.0.1:53690/callback")
	mcp := rs.base + "/mcp"
	scopes := []string{"fax:read", "credits:read", "offline_access"}

	code, verifier := rs.authorize(t, c, o, mcp, scopes, repA, repB)
	tok, err := rs.exchange(repC, c, code, verifier, mcp)
	if err != nil || tok.AccessToken == "" || tok.RefreshToken == "" {
		t.Fatalf("token on C: %v %+v", err, tok)
	}
	if a := rs.mcpInitialize(repA, tok.AccessToken); a.code != 200 {
		t.Fatalf("/mcp on A with C's token: %v", a)
	}
	stale := *tok
	stale.Expiry = time.Now().Add(-time.Minute)
	fresh, err := c.conf.TokenSource(rs.on(repA), &stale).Token()
	if err != nil || fresh.AccessToken == tok.AccessToken || fresh.RefreshToken == tok.RefreshToken {
		t.Fatalf("refresh on A: %v (rotated: %v)", err, fresh != nil && fresh.RefreshToken != tok.RefreshToken)
	}
	rev := rs.do(repB, "POST", c.revoke, url.Values{"token": {fresh.AccessToken}, "token_type_hint": {"access_token"}, "client_id": {c.conf.ClientID}})
	if rev.code != 200 {
		t.Fatalf("revoke on B: %v", rev)
	}
	if a := rs.mcpInitialize(repC, fresh.AccessToken); a.code != http.StatusUnauthorized {
		t.Fatalf("/mcp on C with the revoked token: %v", a)
	}
	stale = *fresh
	stale.Expiry = time.Now().Add(-time.Minute)
	if _, err := c.conf.TokenSource(rs.on(repC), &stale).Token(); grantError(err) != "invalid_grant" {
		t.Fatalf("refresh on C of the revoked authorization: %v", err)
	}

	// A code is single use across replicas.
	code, verifier = rs.authorize(t, c, o, mcp, []string{"fax:read"}, repB, repC)
	if _, err := rs.exchange(repA, c, code, verifier, mcp); err != nil {
		t.Fatalf("code on A: %v", err)
	}
	if _, err := rs.exchange(repB, c, code, verifier, mcp); grantError(err) != "invalid_grant" {
		t.Fatalf("the same code again on B: %v, want invalid_grant", err)
	}
}

// testAgents: enroll and register on A; polls on B and C share the poll
// interval; approval on B; the token polled on C; the claim redeemed once.
func (rs *replicaSet) testAgents(t *testing.T) {
	o := rs.newOwner(t, "1")
	token := rs.base + "/api/auth/oauth2/token"
	poll := func(i int, claim string) answer {
		return rs.do(i, "POST", token, url.Values{"grant_type": {"urn:faxhub:agent-auth:grant-type:claim"}, "claim_token": {claim}, "resource": {rs.base + "/mcp"}})
	}
	register := func(i int, agent string) (claimToken string, claim map[string]any) {
		t.Helper()
		en := rs.do(i, "POST", "/api/auth/agent/identity/manage", map[string]any{"action": "enroll", "name": agent, "scopes": []string{"fax:read", "credits:read"}},
			rs.sameOrigin(o.cookie)...)
		if en.code != 201 {
			t.Fatalf("enroll on %s: %v", name(i), en)
		}
		reg := rs.do(i, "POST", "/api/auth/agent/identity", map[string]any{"type": "service_auth", "enrollment_token": en.json["enrollment_token"], "login_hint": o.email})
		if reg.code != 201 {
			t.Fatalf("register on %s: %v", name(i), reg)
		}
		return reg.json["claim_token"].(string), reg.json["claim"].(map[string]any)
	}

	// The poll interval is one for all replicas: a poll on C right after
	// one on B is too fast.
	pending, _ := register(repA, "Replica pacing bot")
	if p := poll(repB, pending); p.json["error"] != "authorization_pending" {
		t.Fatalf("first poll on B: %v", p)
	}
	if p := poll(repC, pending); p.json["error"] != "slow_down" {
		t.Fatalf("immediate second poll on C: %v, want slow_down", p)
	}

	claimToken, claim := register(repA, "Replica bot")
	verify := claim["verification_uri"].(string)
	page := rs.do(repB, "GET", verify, nil, "Cookie", o.cookie)
	if page.code != 200 {
		t.Fatalf("claim page on B: %v", page)
	}
	action := regexp.MustCompile(`<form class="card" method="post" action="([^"]*)"`).FindStringSubmatch(string(page.raw))
	csrf := hiddenRe.FindStringSubmatch(string(page.raw))
	if action == nil || csrf == nil || csrf[1] != "csrf" {
		t.Fatalf("claim page on B has no form: %s", tail(string(page.raw), 800))
	}
	form := url.Values{"csrf": {unescapeHTML(csrf[2])}, "user_code": {claim["user_code"].(string)}, "decision": {"approve"}}
	for _, m := range checkedRe.FindAllStringSubmatch(string(page.raw), -1) {
		form.Add("scope", m[1])
	}
	vu, _ := url.Parse(verify)
	target, _ := vu.Parse(unescapeHTML(action[1]))
	done := rs.do(repB, "POST", target.String(), form, rs.sameOrigin(o.cookie)...)
	if done.code != 200 || !strings.Contains(string(done.raw), "Agent approved") {
		t.Fatalf("claim approval on B: %v", done)
	}
	got := poll(repC, claimToken)
	at, _ := got.json["access_token"].(string)
	if got.code != 200 || !strings.HasPrefix(at, "fxa_") {
		t.Fatalf("poll on C after approval on B: %v", got)
	}
	if again := poll(repA, claimToken); again.json["error"] != "invalid_grant" {
		t.Fatalf("the claim redeemed on C, polled again on A: %v, want invalid_grant", again)
	}
	if a := rs.mcpInitialize(repB, at); a.code != 200 {
		t.Fatalf("/mcp on B with the agent's token: %v", a)
	}
}

// testMCP: tools/call round-robin over A, B and C with one token (the MCP
// endpoint is stateless).
func (rs *replicaSet) testMCP(t *testing.T) {
	o := rs.newOwner(t, "7")
	c := rs.register(t, repB, "http://127.0.0.1:53691/callback")
	token := rs.oauthToken(t, c, o, rs.base+"/mcp", "fax:read", "credits:read")
	if a := rs.mcpInitialize(repA, token); a.code != 200 {
		t.Fatalf("initialize on A: %v", a)
	}
	calls := []string{"get_credits", "list_faxes", "get_credits", "list_faxes", "get_credits", "list_faxes"}
	for k, tool := range calls {
		i := k % len(rs.addrs)
		a := rs.do(i, "POST", "/mcp", map[string]any{"jsonrpc": "2.0", "id": k + 2, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": map[string]any{}}},
			"Authorization", "Bearer "+token, "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-06-18")
		res, _ := a.json["result"].(map[string]any)
		if a.code != 200 || res == nil || res["isError"] == true {
			t.Fatalf("tools/call %s on %s: %v", tool, name(i), a)
		}
		if sc, _ := res["structuredContent"].(map[string]any); tool == "get_credits" && sc["balance"] != "7.00" {
			t.Fatalf("get_credits on %s does not show the 7 USD granted: %v", name(i), a)
		}
	}
}

// testA2A: a fax task created on A, read on B, canceled on C, read
// canceled on A; another followed by a stream on B (SubscribeToTask) while
// it is paid on C (the card on A) and delivered by whichever replica's
// worker takes it.
func (rs *replicaSet) testA2A(t *testing.T) {
	o := rs.newOwner(t, "5")
	c := rs.register(t, repC, "http://127.0.0.1:53692/callback")
	token := rs.oauthToken(t, c, o, rs.base+"/a2a", "fax:draft", "fax:read", "credits:read")
	rpc := func(i int, method string, params map[string]any) map[string]any {
		t.Helper()
		a := rs.do(i, "POST", "/a2a", map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
			"Authorization", "Bearer "+token, "A2A-Version", "1.0")
		res, _ := a.json["result"].(map[string]any)
		if a.code != 200 || res == nil {
			t.Fatalf("%s on %s: %v", method, name(i), a)
		}
		return res
	}
	message := func(skill string, args map[string]any) map[string]any {
		return map[string]any{"message": map[string]any{"messageId": oauth2.GenerateVerifier(), "role": "ROLE_USER",
			"parts": []any{map[string]any{"data": map[string]any{"skill": skill, "arguments": args}}}}}
	}
	up := rpc(repC, "SendMessage", message("create_upload", map[string]any{"contentType": "application/pdf", "fileName": "replicas.pdf"}))
	data := firstData(up)
	uploadURL, _ := data["uploadUrl"].(string)
	if uploadURL == "" {
		t.Fatalf("create_upload on C: %v", up)
	}
	if put := rs.do(repB, "PUT", uploadURL, testenv.MinimalPDF(1), "Content-Type", "application/pdf"); put.code != 200 {
		t.Fatalf("PUT on B: %v", put)
	}
	created := rpc(repA, "SendMessage", message("create_fax", map[string]any{"to": "+12125550100", "uploadToken": data["uploadToken"]}))
	task, _ := created["task"].(map[string]any)
	if task == nil || taskState(task) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("create_fax on A: %v", created)
	}
	id := task["id"].(string)
	if got := rpc(repB, "GetTask", map[string]any{"id": id}); got["id"] != id || taskState(got) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("GetTask on B: %v", got)
	}
	if canceled := rpc(repC, "CancelTask", map[string]any{"id": id}); taskState(canceled) != "TASK_STATE_CANCELED" {
		t.Fatalf("CancelTask on C: %v", canceled)
	}
	if got := rpc(repA, "GetTask", map[string]any{"id": id}); taskState(got) != "TASK_STATE_CANCELED" {
		t.Fatalf("GetTask on A after the cancel on C: %v", got)
	}

	created = rpc(repA, "SendMessage", message("create_fax", map[string]any{"to": "+12125550100", "uploadToken": data["uploadToken"]}))
	task, _ = created["task"].(map[string]any)
	if task == nil {
		t.Fatalf("create_fax on A: %v", created)
	}
	events, first := rs.stream(repB, token, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": map[string]any{"id": task["id"]}})
	select {
	case <-first:
	case <-time.After(20 * time.Second):
		t.Fatal("no first event from the stream on B")
	}
	rs.payDraft(repC, repA, o, taskArtifact(task, "fax-draft")["checkoutUrl"].(string))
	var got streamed
	select {
	case got = <-events:
	case <-time.After(60 * time.Second):
		t.Fatal("the stream on B did not end")
	}
	n := len(got.results)
	if got.err != nil || n < 3 {
		t.Fatalf("stream on B: %v %v", got.err, got.results)
	}
	if st, _ := got.results[0]["task"].(map[string]any); taskState(st) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("the stream's first event: %v", got.results[0])
	}
	art, _ := got.results[n-2]["artifactUpdate"].(map[string]any)
	last, _ := got.results[n-1]["statusUpdate"].(map[string]any)
	if a, _ := art["artifact"].(map[string]any); a["name"] != "fax" || taskState(last) != "TASK_STATE_COMPLETED" {
		t.Fatalf("the stream's end: %v", got.results[n-2:])
	}
}

// streamed is what a stream carried: the JSON-RPC result of each event,
// and how it ended (nil: the server ended it).
type streamed struct {
	results []map[string]any
	err     error
}

// stream posts a streaming JSON-RPC request to /a2a on replica i and reads
// its server-sent events in a goroutine: first is closed at the first
// event, the whole stream arrives on the channel when it ends.
func (rs *replicaSet) stream(i int, token string, body map[string]any) (<-chan streamed, <-chan struct{}) {
	out, first := make(chan streamed, 1), make(chan struct{})
	b, err := json.Marshal(body)
	if err != nil {
		rs.t.Fatal(err)
	}
	go func() {
		var s streamed
		defer func() { out <- s }()
		req, _ := http.NewRequest(http.MethodPost, rs.base+"/a2a", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("A2A-Version", "1.0")
		resp, err := rs.clients[i].Do(req)
		if err != nil {
			s.err = err
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil || m["result"] == nil {
				s.err = fmt.Errorf("event %s: %v", line, err)
				return
			}
			s.results = append(s.results, m["result"].(map[string]any))
			if len(s.results) == 1 {
				close(first)
			}
		}
		s.err = sc.Err()
	}()
	return out, first
}

// payDraft pays a draft as its owner: the console's draft page and its
// "pay" form on replica i, the test card on replica j.
func (rs *replicaSet) payDraft(i, j int, o owner, checkoutURL string) {
	rs.t.Helper()
	page := rs.do(i, "GET", checkoutURL, nil, "Cookie", o.cookie)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(page.raw))
	action := regexp.MustCompile(`action="(/console/drafts/[^"]+/pay[^"]*)"`).FindStringSubmatch(string(page.raw))
	if page.code != 200 || csrf == nil || action == nil {
		rs.t.Fatalf("draft page on %s: %d", name(i), page.code)
	}
	r := rs.do(i, "POST", strings.ReplaceAll(action[1], "&amp;", "&"), url.Values{"csrf": {csrf[1]}}, rs.sameOrigin(o.cookie)...)
	loc := r.hdr.Get("Location")
	if r.code != http.StatusSeeOther || !strings.Contains(loc, "/checkout/test/") {
		rs.t.Fatalf("pay on %s: %d %q", name(i), r.code, loc)
	}
	r = rs.do(j, "POST", rs.abs(loc), url.Values{"card_number": {"4242 4242 4242 4242"}, "expiry": {"12/40"}, "cvc": {"123"}}, rs.sameOrigin(o.cookie)...)
	if r.code != http.StatusSeeOther {
		rs.t.Fatalf("test card on %s: %d %s", name(j), r.code, r.raw)
	}
}

// taskArtifact is the data of a task's artifact named name (JSON).
func taskArtifact(task map[string]any, name string) map[string]any {
	arts, _ := task["artifacts"].([]any)
	for _, a := range arts {
		if m, _ := a.(map[string]any); m["name"] == name {
			parts, _ := m["parts"].([]any)
			if len(parts) > 0 {
				d, _ := parts[0].(map[string]any)["data"].(map[string]any)
				return d
			}
		}
	}
	return nil
}

func taskState(task map[string]any) string {
	st, _ := task["status"].(map[string]any)
	s, _ := st["state"].(string)
	return s
}

// firstData is the first data part of a SendMessage result (a message).
func firstData(res map[string]any) map[string]any {
	msg, _ := res["message"].(map[string]any)
	parts, _ := msg["parts"].([]any)
	for _, p := range parts {
		if d, ok := p.(map[string]any)["data"].(map[string]any); ok {
			return d
		}
	}
	return nil
}

// testDeliveries: 60 faxes sent round-robin; every one is delivered by
// whichever replica's worker took it, with exactly one provider attempt
// and one capture, and every owner's books balance.
func (rs *replicaSet) testDeliveries(t *testing.T) {
	const owners, each = 4, 15 // within each owner's send burst
	var ids []string
	var all []owner
	k := 0
	for range owners {
		o := rs.newOwner(t, "100")
		all = append(all, o)
		doc := rs.upload(k%len(rs.addrs), o)
		for n := range each {
			a := rs.send(k%len(rs.addrs), o, doc, fmt.Sprintf("delivery-%d", n))
			if a.code != 200 {
				t.Fatalf("send %d on %s: %v", k, name(k%len(rs.addrs)), a)
			}
			ids = append(ids, a.json["id"].(string))
			k++
		}
	}
	rs.waitFor(t, "every fax delivered", func() bool {
		return rs.count(`SELECT count(*) FROM faxes WHERE id = ANY($1) AND status = 'delivered'`, ids) == len(ids)
	})
	if n := rs.count(`SELECT count(*) FROM faxes WHERE id = ANY($1) AND attempts <> 1`, ids); n != 0 {
		t.Errorf("%d faxes were tried more than once", n)
	}
	if n := rs.count(`SELECT count(*) FROM (SELECT fax_id FROM attempts WHERE fax_id = ANY($1) GROUP BY fax_id HAVING count(*) = 1) x`, ids); n != len(ids) {
		t.Errorf("%d of %d faxes have exactly one provider attempt", n, len(ids))
	}
	if n := rs.count(`SELECT count(*) FROM ledger_entries WHERE fax_id = ANY($1) AND kind = 'capture'`, ids); n != len(ids) {
		t.Errorf("%d captures for %d delivered faxes", n, len(ids))
	}
	if n := rs.count(`SELECT count(*) FROM ledger_entries WHERE fax_id = ANY($1) AND kind = 'release'`, ids); n != 0 {
		t.Errorf("%d holds of delivered faxes released", n)
	}
	// Which replica's worker took the jobs: River records the client.
	rows, err := rs.db.Query(`SELECT attempted_by[array_upper(attempted_by, 1)], count(*) FROM river_job WHERE state = 'completed' AND attempted_by IS NOT NULL GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	workers := map[string]int{}
	for rows.Next() {
		var w string
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			t.Fatal(err)
		}
		workers[w] = n
	}
	rows.Close()
	t.Logf("completed jobs (of every subtest) per replica's River client: %v", workers)
	if len(workers) < 2 {
		t.Errorf("every job ran on one replica (%v): the others' workers took none", workers)
	}
	for n, o := range all {
		i := n % len(rs.addrs)
		sum, balance, held := ledgerOf(t, func(path string) (int, map[string]any) {
			a := rs.do(i, "GET", path, nil, bearer(o.key)...)
			return a.code, a.json
		})
		if held.Sign() != 0 || sum.Cmp(balance) != 0 {
			t.Errorf("owner %d on %s: balance %s, ledger sum %s, held %s", n, name(i), balance.FloatString(6), sum.FloatString(6), held.FloatString(6))
		}
	}
}

// waitFor polls cond until it holds, failing after 60 s.
func (rs *replicaSet) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
