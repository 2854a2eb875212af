//go:build bench

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/oauth2"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/internal/app"
	"github.com/faxhub/faxhub/internal/consoletest"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/oauth"
)

const (
	// soakDuration is the soak's length in make bench; FAXHUB_SOAK=<duration>
	// shortens (or lengthens) it for a local run.
	soakDuration = 10 * time.Minute
	envSoak      = "FAXHUB_SOAK"
	soakClients  = 8
	// soakTick paces each client: one operation per tick, 100 a second in
	// all. A cycle of soakCycle operations holds one send (three requests:
	// upload, PUT, POST; every fourth send is replayed with its
	// Idempotency-Key), nine status polls, eight MCP tools/call and one
	// refresh-token grant: 5 sends a second in all, half of one owner's
	// send rate (10/s) and of its test-mode upload rate (10/s).
	soakTick  = 80 * time.Millisecond
	soakCycle = 20
	// soakSamples is how many samples a run of up to 10 minutes is cut
	// into (one a minute for 10 minutes; a longer run samples every
	// minute); soakWarm is how many of them are warm-up, left out
	// of the growth figures (connection pools, caches and the Go heap
	// reach their working size in the first minutes).
	soakSamples = 10
	soakWarm    = 2
	// soakSlopeOver is how many of the last samples the RSS trend is
	// fitted over.
	soakSlopeOver = 8

	soakRSSGrowthMB = 20 // RSS growth after warm-up, MB
	soakRSSTrendMB  = 10 // fitted RSS rise over the last soakSlopeOver samples, MB
	soakFDGrowth    = 5  // open files after warm-up
	soakDrain       = 2 * time.Minute
	// soakGoroutineGrowth bounds the growth of go_goroutines' floor after
	// warm-up: idle keep-alive connections and River's producers move it
	// by a few.
	soakGoroutineGrowth = 20
)

// soakLength is soakDuration, or FAXHUB_SOAK when set.
func soakLength(t *testing.T) time.Duration {
	v := os.Getenv(envSoak)
	if v == "" {
		return soakDuration
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 10*time.Second || d > 24*time.Hour {
		t.Fatalf("%s=%q: want a duration from 10s to 24h, such as 1m", envSoak, v)
	}
	return d
}

// soakClient is one simulated user: an API key's sends and polls and a
// chat app's MCP calls and token refreshes.
type soakClient struct {
	tok     atomic.Pointer[oauth2.Token] // the latest grant (refreshes rotate it)
	session *mcp.ClientSession
	faxes   []string // this client's recent fax ids, newest last
	sends   int
}

// recent is one of the client's last 16 faxes, chosen by i.
func (c *soakClient) recent(i int) string {
	return c.faxes[len(c.faxes)-1-i%min(len(c.faxes), 16)]
}

// soakSample is one row of the per-minute table.
type soakSample struct {
	at       time.Duration
	requests int64
	errors   int64
	proc     procSample
}

// benchSoak runs mixed traffic against a `faxhub serve` process (SQLite,
// simulated provider at zero delay, its delivery workers on) for
// soakLength and samples the process from /proc: RSS, open files and
// threads. It fails on any request error or fax not delivered.
func benchSoak(t *testing.T, rep *report) {
	ctx := t.Context()
	d := soakLength(t)
	every := min(time.Minute, d/soakSamples) // a short local run still gets soakSamples
	n := int(d / every)

	bin := buildFaxhub(t)
	dir := filepath.Join(t.TempDir(), "data")
	metricsAddr := freeAddr(t)
	srv := startServe(t, bin, "--data", dir, "--sim-timescale", "0", "--agent-mode", "test", "--log-level", "warn",
		"--metrics-addr", metricsAddr)
	base := srv.base
	// Goroutines come from the process's own metrics listener.
	sampleProc := func() (procSample, error) {
		p, err := readProc(ctx, srv.pid())
		if err != nil {
			return p, err
		}
		p.goroutines, err = scrapeGauge(ctx, "http://"+metricsAddr+"/metrics", "go_goroutines")
		return p, err
	}
	key, chat, clients := soakSetup(t, dir, base)

	httpc := newClient(soakClients * 2)
	defer httpc.CloseIdleConnections()
	for _, c := range clients {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: tokenRT{c, httpc.Transport}},
			DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("MCP connect: %v", err)
		}
		defer cs.Close()
		c.session = cs
	}
	pdf := testenv.MinimalPDF(1)
	ops := soakOps{ctx: ctx, http: httpc, base: base, key: key, pdf: pdf, chat: chat}

	var requests, errs atomic.Int64
	var logged atomic.Int32
	fail := func(err error) {
		errs.Add(1)
		if logged.Add(1) <= 20 {
			t.Logf("soak error: %v", err)
		}
	}

	first, err := sampleProc()
	if err != nil {
		t.Fatal(err)
	}
	samples := []soakSample{{proc: first}}
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }() // no client logs after a t.Fatal
	start := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			tick := time.NewTicker(soakTick)
			defer tick.Stop()
			for n := i; ; n++ { // clients start at different points of the cycle
				if err := ops.step(c, n%soakCycle, &requests); err != nil && lctx.Err() == nil {
					fail(err)
				}
				select {
				case <-lctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}
	sample := time.NewTicker(every)
	var last soakSample
	for range n {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-sample.C:
		}
		if err := srv.alive(); err != nil {
			stop()
			t.Fatalf("%v\n%s", err, srv.tail())
		}
		p, err := sampleProc()
		if err != nil {
			t.Fatal(err)
		}
		s := soakSample{at: time.Since(start), requests: requests.Load(), errors: errs.Load(), proc: p}
		samples = append(samples, s)
		t.Logf("soak %s: %d requests, %d errors, RSS %.1f MB (anonymous %.1f MB), %d open files, %d threads, %d goroutines",
			s.at.Round(time.Second), s.requests-last.requests, s.errors-last.errors, float64(p.rssKB)/1024, float64(p.anonKB)/1024, p.fds, p.threads, p.goroutines)
		last = s
	}
	sample.Stop()
	stop()
	wg.Wait()
	elapsed := time.Since(start)

	// Every fax sent must have been delivered by the workers.
	var sent []string
	for _, c := range clients {
		sent = append(sent, c.faxes...)
	}
	undelivered, err := ops.awaitDelivered(ctx, sent, soakDrain)
	if err != nil {
		t.Error(err)
	}

	t.Log("\n" + soakTable(samples))
	total, nerr := requests.Load(), errs.Load()
	mb := func(s soakSample) float64 { return float64(s.proc.rssKB) / 1024 }
	warm, end := samples[soakWarm], samples[len(samples)-1]
	growth := mb(end) - mb(warm)
	window := samples[len(samples)-soakSlopeOver:]
	slope := rssSlope(window)
	rise := slope * (window[len(window)-1].at - window[0].at).Minutes()
	fdGrowth := float64(end.proc.fds - warm.proc.fds)
	sends := 0
	for _, c := range clients {
		sends += c.sends
	}
	name := fmt.Sprintf("soak     %s mixed traffic, %d clients, faxhub serve, SQLite", d, soakClients)
	rep.add(name+": requests", "req/s", float64(total)/elapsed.Seconds(), nan, noTarget(), 0,
		fmt.Sprintf("soak: %d clients against an exec'd `faxhub serve` (SQLite, simulated provider at 0 delay, its delivery workers on), "+
			"each one operation per %s in a cycle of 1 send (POST /api/v1/uploads, PUT, POST /api/v1/faxes with an Idempotency-Key; "+
			"every fourth replayed), 9 GET /api/v1/faxes/{id}, 8 MCP tools/call (get_credits, get_fax_status) with an OAuth token and "+
			"1 refresh_token grant at /oauth2/token (each client its own rotating grant): %d requests, %d faxes sent (the database "+
			"grows by them; each checked delivered at the end), %d errors. /proc sampled every %s; growth from the end of sample %d "+
			"(warm-up) to the last; trend = least-squares slope of the last %d RSS samples. Goroutines are read from the process's "+
			"metrics listener (--metrics-addr, go_goroutines) at each sample.",
			soakClients, soakTick, total, sends, nerr, every, soakWarm, soakSlopeOver),
	)
	rep.add(name+": RSS at the end", "MB", mb(end), nan, noTarget(), 1, "")
	rep.add(fmt.Sprintf("%s: RSS growth, sample %d to end", name, soakWarm), "MB", growth, nan, atMost(soakRSSGrowthMB, "MB"), 1,
		fmt.Sprintf("soak RSS growth target %d MB: the Go heap settles between GCs at up to twice its live size (GOGC=100), "+
			"~10–20 MB here, and SQLite's page caches grow with the database; a leak of %.1f KB per request would pass it in this "+
			"run (%d requests).", soakRSSGrowthMB, float64(soakRSSGrowthMB<<10)/float64(max(total, 1)), total))
	rep.add(fmt.Sprintf("%s: RSS trend over the last %d samples", name, soakSlopeOver), "MB", rise, nan, atMost(soakRSSTrendMB, "MB"), 1,
		fmt.Sprintf("soak RSS trend: the least-squares line through the last %d RSS samples, as its rise from the first of them to the last "+
			"(%.2f MB per minute of soak); RSS is flat when it rises ≤ %d MB (GC cycles move single samples by a few MB, the fit averages them out).",
			soakSlopeOver, slope, soakRSSTrendMB))
	anon := func(s soakSample) float64 { return float64(s.proc.anonKB) / 1024 }
	rep.add(fmt.Sprintf("%s: anonymous RSS growth, sample %d to end", name, soakWarm), "MB", anon(end)-anon(warm), nan, noTarget(), 1,
		"soak anonymous RSS: RssAnon, the heap and stacks; VmRSS also counts file pages, most of them the binary's code and data "+
			"paged in as code paths first run (bounded by the binary's size), and SQLite's shared-memory index.")
	rep.add(fmt.Sprintf("%s: open files growth, sample %d to end", name, soakWarm), "fds", fdGrowth, nan, atMost(soakFDGrowth, "fds"), 0, "")
	rep.add(name+": threads at the end", "threads", float64(end.proc.threads), nan, noTarget(), 0, "")
	floor := func(ss []soakSample) int {
		m := ss[0].proc.goroutines
		for _, s := range ss {
			m = min(m, s.proc.goroutines)
		}
		return m
	}
	rep.add(fmt.Sprintf("%s: goroutines floor growth, samples %d–%d to the last 3", name, soakWarm, soakWarm+2), "goroutines",
		float64(floor(samples[len(samples)-3:])-floor(samples[soakWarm:soakWarm+3])), nan, atMost(soakGoroutineGrowth, "goroutines"), 0,
		fmt.Sprintf("soak goroutines: go_goroutines from the metrics listener; each sample also counts the requests in flight "+
			"(tens), so the fewest of three samples after warm-up is compared with the fewest of the last three. A request or job "+
			"that left a goroutine behind would raise it by hundreds here (%d requests).", total))
	rep.add(name+": errors and undelivered faxes", "errors", float64(nerr+int64(undelivered)), nan, atMost(0, "errors"), 0, "")
	if nerr > 0 {
		t.Errorf("soak: %d of %d requests failed (the first are logged above)", nerr, total)
	}
}

// soakSetup creates, through an in-process app on the server's data dir
// (as `faxhub admin` does beside a running server): an owner with test
// credits and a test API key, and soakClients OAuth grants of one chat
// app with refresh tokens (the consent decided in core as the console does).
func soakSetup(t *testing.T, dir, base string) (key string, chat *oauth2.Config, clients []*soakClient) {
	ctx := t.Context()
	a, err := app.Open(ctx, app.Options{BaseURL: base, DataDir: dir, InsertOnly: true, MCPOAuth: true,
		AgentMode: core.ModeTest, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	site := &consoletest.Site{App: a, Base: base}
	w := site.Owner(t, "soak@example.com")
	if _, err := a.Svc.Credits.Grant(ctx, w.Account.ID, core.ModeTest, 1_000_000*core.MicrosPerDollar, "soak benchmark"); err != nil {
		t.Fatal(err)
	}
	key, _, err = a.Svc.Accounts.CreateAPIKey(ctx, w.Account.ID, core.ModeTest, "soak")
	if err != nil {
		t.Fatal(err)
	}
	chat = registerChatApp(t, base)
	for range soakClients {
		c := &soakClient{}
		c.tok.Store(oauthGrant(t, w, chat, base+"/mcp", "credits:read", "fax:read", oauth.ScopeOfflineAccess))
		clients = append(clients, c)
	}
	return key, chat, clients
}

// registerChatApp registers a public OAuth client (dynamic registration)
// with the authorization_code and refresh_token grants.
func registerChatApp(t *testing.T, base string) *oauth2.Config {
	meta, _ := json.Marshal(map[string]any{"client_name": "Soak Chat", "redirect_uris": []string{consoletest.RedirectURI},
		"grant_types": []string{"authorization_code", "refresh_token"}, "token_endpoint_auth_method": "none"})
	resp, err := http.Post(base+oauth.PathRegister, "application/json", bytes.NewReader(meta))
	if err != nil {
		t.Fatalf("register client: %v", err)
	}
	defer resp.Body.Close()
	var reg map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&reg)
	id, _ := reg["client_id"].(string)
	if id == "" {
		t.Fatalf("register: %d %v", resp.StatusCode, reg)
	}
	return &oauth2.Config{ClientID: id, RedirectURL: consoletest.RedirectURI,
		Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInParams}}
}

// oauthGrant runs authorize with PKCE in w's session, decides the consent
// in core as the console does, resumes, and exchanges the code: the
// access and refresh tokens of a new grant.
func oauthGrant(t *testing.T, w *consoletest.Owner, app *oauth2.Config, resource string, scopes ...string) *oauth2.Token {
	t.Helper()
	cfg := *app
	cfg.Scopes = scopes
	tok := w.Grant(t, &cfg, resource)
	if tok.RefreshToken == "" {
		t.Fatal("exchange: no refresh token for offline_access")
	}
	return tok
}

// tokenRT sends the client's current access token.
type tokenRT struct {
	c    *soakClient
	next http.RoundTripper
}

func (rt tokenRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+rt.c.tok.Load().AccessToken)
	return rt.next.RoundTrip(r)
}

// soakOps are the operations of the soak's cycle.
type soakOps struct {
	ctx  context.Context
	http *http.Client
	base string
	key  string
	pdf  []byte
	chat *oauth2.Config // the chat app whose grants are refreshed
}

// step runs operation i of the cycle for c, counting its requests.
func (o soakOps) step(c *soakClient, i int, requests *atomic.Int64) error {
	switch {
	case i == 0 || len(c.faxes) == 0:
		return o.send(c, requests)
	case i <= 9:
		requests.Add(1)
		_, err := o.status(c.recent(i))
		return err
	case i <= 17:
		requests.Add(1)
		params := &mcp.CallToolParams{Name: "get_credits", Arguments: map[string]any{}}
		if i%2 == 1 {
			params = &mcp.CallToolParams{Name: "get_fax_status", Arguments: map[string]any{"faxId": c.recent(i)}}
		}
		res, err := c.session.CallTool(o.ctx, params)
		if err != nil {
			return fmt.Errorf("MCP tools/call %s: %w", params.Name, err)
		}
		if res.IsError {
			return fmt.Errorf("MCP tools/call %s: tool error %v", params.Name, res.Content)
		}
		return nil
	default:
		requests.Add(1)
		return o.refresh(c)
	}
}

// send uploads a one-page PDF and sends it; every fourth send is posted
// twice with its Idempotency-Key and must answer the same fax.
func (o soakOps) send(c *soakClient, requests *atomic.Int64) error {
	requests.Add(1)
	token, err := newUploadAt(o.ctx, o.http, o.base, o.key)
	if err != nil {
		return err
	}
	requests.Add(1)
	req, err := http.NewRequestWithContext(o.ctx, "PUT", o.base+"/api/v1/uploads/"+token, bytes.NewReader(o.pdf))
	if err != nil {
		return err
	}
	if err := call(o.http, req, nil); err != nil {
		return err
	}
	body := []byte(fmt.Sprintf(`{"to":"+12125550100","uploadToken":%q}`, token))
	idem := "soak-" + core.RandomString(16)
	post := func() (string, error) {
		requests.Add(1)
		req, err := http.NewRequestWithContext(o.ctx, "POST", o.base+"/api/v1/faxes", bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Authorization", "Bearer "+o.key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", idem)
		var out struct {
			ID string `json:"id"`
		}
		if err := call(o.http, req, &out); err != nil {
			return "", err
		}
		if out.ID == "" {
			return "", fmt.Errorf("POST /api/v1/faxes answered 200 without an id")
		}
		return out.ID, nil
	}
	id, err := post()
	if err != nil {
		return err
	}
	c.sends++
	c.faxes = append(c.faxes, id)
	if c.sends%4 == 0 {
		again, err := post()
		if err != nil {
			return fmt.Errorf("replay of Idempotency-Key %s: %w", idem, err)
		}
		if again != id {
			return fmt.Errorf("replay of Idempotency-Key %s answered fax %s, first %s", idem, again, id)
		}
	}
	return nil
}

// status is GET /api/v1/faxes/{id}'s status.
func (o soakOps) status(id string) (string, error) {
	req, err := http.NewRequestWithContext(o.ctx, "GET", o.base+"/api/v1/faxes/"+id, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+o.key)
	var out struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := call(o.http, req, &out); err != nil {
		return "", err
	}
	if out.ID != id {
		return "", fmt.Errorf("GET /api/v1/faxes/%s answered id %q", id, out.ID)
	}
	return out.Status, nil
}

// refresh trades the client's refresh token for a new grant (rotation:
// the old refresh token is spent).
func (o soakOps) refresh(c *soakClient) error {
	old := c.tok.Load()
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {old.RefreshToken}, "client_id": {o.chat.ClientID}}
	req, err := http.NewRequestWithContext(o.ctx, http.MethodPost, o.base+oauth.PathToken, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var out struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	if err := call(o.http, req, &out); err != nil {
		return fmt.Errorf("refresh_token grant: %w", err)
	}
	if out.AccessToken == "" || out.RefreshToken == "" || out.RefreshToken == old.RefreshToken {
		return fmt.Errorf("refresh_token grant: no new access and refresh token")
	}
	c.tok.Store(&oauth2.Token{AccessToken: out.AccessToken, RefreshToken: out.RefreshToken})
	return nil
}

// awaitDelivered polls each fax until it is delivered, for at most wait,
// and returns how many are not.
func (o soakOps) awaitDelivered(ctx context.Context, ids []string, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	o.ctx = ctx
	pending := ids
	for {
		var still []string
		for _, id := range pending {
			st, err := o.status(id)
			if err != nil {
				return len(pending), err
			}
			if st != "delivered" {
				still = append(still, id)
			}
		}
		pending = still
		if len(pending) == 0 {
			return 0, nil
		}
		if time.Now().After(deadline) {
			st, _ := o.status(pending[0])
			return len(pending), fmt.Errorf("%d of %d faxes not delivered %s after the soak (%s is %s)", len(pending), len(ids), wait, pending[0], st)
		}
		select {
		case <-ctx.Done():
			return len(pending), ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newUploadAt creates an upload capability at base and returns its token.
func newUploadAt(ctx context.Context, c *http.Client, base, key string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/api/v1/uploads", bytes.NewReader([]byte("{}")))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	var up struct {
		UploadToken string `json:"uploadToken"`
	}
	if err := call(c, req, &up); err != nil {
		return "", err
	}
	if up.UploadToken == "" {
		return "", fmt.Errorf("createUpload answered without an uploadToken")
	}
	return up.UploadToken, nil
}

// rssSlope is the least-squares slope of RSS over samples, in MB per
// minute of soak.
func rssSlope(samples []soakSample) float64 {
	n := float64(len(samples))
	var sx, sy, sxx, sxy float64
	for _, s := range samples {
		x := s.at.Minutes()
		y := float64(s.proc.rssKB) / 1024
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / den
}

// soakTable is the per-sample table: requests and errors in the interval
// ending at the sample, and the process's state then.
func soakTable(samples []soakSample) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%8s  %9s  %6s  %8s  %8s  %5s  %7s  %10s\n", "at", "requests", "errors", "RSS MB", "anon MB", "fds", "threads", "goroutines")
	for i, s := range samples {
		var req, errs int64
		if i > 0 {
			req, errs = s.requests-samples[i-1].requests, s.errors-samples[i-1].errors
		}
		fmt.Fprintf(&b, "%8s  %9d  %6d  %8.1f  %8.1f  %5d  %7d  %10d\n", s.at.Round(time.Second), req, errs,
			float64(s.proc.rssKB)/1024, float64(s.proc.anonKB)/1024, s.proc.fds, s.proc.threads, s.proc.goroutines)
	}
	return b.String()
}

// scrapeGauge reads one unlabelled gauge from a Prometheus text endpoint.
func scrapeGauge(ctx context.Context, url, name string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	f := fams[name]
	if f == nil || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge() == nil {
		return 0, fmt.Errorf("scrape %s: no gauge %s", url, name)
	}
	return int(f.GetMetric()[0].GetGauge().GetValue()), nil
}
