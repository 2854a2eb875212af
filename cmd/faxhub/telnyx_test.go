package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

// The Telnyx contract suite runs a real `faxhub serve` in live mode
// against the Telnyx stand-in (conformance/telnyx-standin), both as
// processes, and proves the live provider end to end: sends go out
// through the stand-in (which fetches the media through faxhub's signed
// URL) and end as the destination says, webhooks are verified, and
// duplicates and out-of-order events change nothing twice.
//
// It builds two binaries and takes about a minute, so it runs under plain
// `go test ./cmd/faxhub/` only with FAXHUB_TELNYX_SUITE=1 or
// FAXHUB_REQUIRE_ALL=1 (make check sets the latter).
// TestTelnyxCrashRecovery is gated like TestCrashRecovery, on
// FAXHUB_CRASH_TEST, so make check runs it on SQLite and PostgreSQL.
const EnvTelnyxSuite = "FAXHUB_TELNYX_SUITE"

// standinSeed is the stand-in's Ed25519 seed: fixed, so faxhub can be
// given its public key before it starts.
var standinSeed = strings.Repeat("07", 32)

const standinAPIKey = "KEYstandin0123456789"

// telnyxRig is a stand-in and a faxhub wired to it.
type telnyxRig struct {
	t        *testing.T
	bin      string
	args     []string // data and database flags
	addr     string
	base     string
	standin  string
	pub      string
	key      string // a live API key
	client   *http.Client
	mu       sync.Mutex
	faxhub   *exec.Cmd
	serveLog *syncBuffer
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func buildBinary(t *testing.T, pkg, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// newTelnyxRig starts the stand-in (step: the pause between a fax's
// events) and faxhub. Telnyx takes seconds; the contract suite uses a few
// milliseconds so that an outcome often races core's record of Send's own
// answer (core must keep the outcome: a compare-and-set on the fax).
func newTelnyxRig(t *testing.T, step string) *telnyxRig {
	t.Helper()
	r := &telnyxRig{t: t, client: &http.Client{Timeout: 15 * time.Second}, serveLog: &syncBuffer{}}
	r.bin = buildBinary(t, ".", "faxhub")
	standinBin := buildBinary(t, "../../conformance/telnyx-standin", "telnyx-standin")
	r.addr = freeAddr(t)
	r.base = "http://localhost:" + strings.Split(r.addr, ":")[1]
	saddr := freeAddr(t)
	r.standin = "http://" + saddr

	cmd := exec.Command(standinBin, "--addr", saddr, "--webhook-url", "http://"+r.addr+"/webhooks/telnyx", "--seed-hex", standinSeed,
		"--api-key", standinAPIKey, "--step", step, "--slow-call", "2m", "--order-delay", "300ms", "--retry-base", "300ms")
	cmd.Stderr = io.Discard
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _, _ = cmd.Process.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if k, ok := strings.CutPrefix(line, "public key "); ok {
			r.pub = k
		}
		if strings.HasPrefix(line, "listening on ") {
			break
		}
	}
	if r.pub == "" {
		t.Fatal("the stand-in did not print its public key")
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()

	data := filepath.Join(t.TempDir(), "data")
	r.args = []string{"--data", data}
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		r.args = append(r.args, "--database", testenvSchema(t, pg))
	}
	r.admin("admin", "owner", "create", "--email", "telnyx@example.com")
	r.key = r.admin("admin", "apikey", "create", "--owner", "telnyx@example.com", "--mode", "live")
	r.admin("admin", "credits", "grant", "--owner", "telnyx@example.com", "--mode", "live", "--usd", "100", "--reason", "telnyx suite")
	r.start()
	return r
}

func (r *telnyxRig) env() []string {
	return append(os.Environ(),
		"FAXHUB_TELNYX_API_KEY="+standinAPIKey, "FAXHUB_TELNYX_CONNECTION_ID=conn_standin",
		"FAXHUB_TELNYX_PUBLIC_KEY="+r.pub, "FAXHUB_TELNYX_API_URL="+r.standin, "FAXHUB_TELNYX_FROM=+12125550199")
}

func (r *telnyxRig) admin(a ...string) string {
	r.t.Helper()
	cmd := exec.Command(r.bin, append(a, r.args...)...)
	cmd.Env = r.env()
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("faxhub %s: %v", strings.Join(a, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// start runs `faxhub serve` and waits until it is ready.
func (r *telnyxRig) start() {
	r.t.Helper()
	cmd := exec.Command(r.bin, append([]string{"serve", "--addr", r.addr, "--base-url", r.base}, r.args...)...)
	cmd.Env = r.env()
	cmd.Stdout, cmd.Stderr = r.serveLog, r.serveLog
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.faxhub = cmd
	r.mu.Unlock()
	r.t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	waitReady(r.t, r.base)
}

// kill stops faxhub with SIGKILL.
func (r *telnyxRig) kill() {
	r.t.Helper()
	r.mu.Lock()
	cmd := r.faxhub
	r.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
}

// call sends a JSON request to faxhub (path) or to the stand-in (a full
// URL) and decodes the answer.
func (r *telnyxRig) call(method, path string, body any, hdr ...string) (int, map[string]any) {
	r.t.Helper()
	u := path
	if strings.HasPrefix(path, "/") {
		u = r.base + path
	}
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		r.t.Fatal(err)
	}
	if strings.HasPrefix(path, "/") {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// upload stores a PDF of pages pages and returns its document id.
func (r *telnyxRig) upload(pages int) string {
	r.t.Helper()
	code, up := r.call(http.MethodPost, "/api/v1/uploads", nil)
	if code != 200 {
		r.t.Fatalf("upload capability: %d %v", code, up)
	}
	req, _ := http.NewRequest(http.MethodPut, up["uploadUrl"].(string), bytes.NewReader(testenv.MinimalPDF(pages)))
	resp, err := r.client.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var put map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&put)
	if resp.StatusCode != 200 {
		r.t.Fatalf("PUT: %d %v", resp.StatusCode, put)
	}
	return put["document"].(map[string]any)["id"].(string)
}

func (r *telnyxRig) send(to, doc string) string {
	r.t.Helper()
	code, f := r.call(http.MethodPost, "/api/v1/faxes", map[string]any{"to": to, "documentId": doc}, "Idempotency-Key", fmt.Sprintf("telnyx-%s-%d", to, time.Now().UnixNano()))
	if code != 200 {
		r.t.Fatalf("send to %s: %d %v", to, code, f)
	}
	return f["id"].(string)
}

// waitFax polls the fax until done says so (or two minutes pass).
func (r *telnyxRig) waitFax(id string, what string, done func(f map[string]any) bool) map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, f := r.call(http.MethodGet, "/api/v1/faxes/"+id, nil)
		if code == 200 && done(f) {
			return f
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("fax %s: not %s after two minutes: %d %v\nfaxhub log:\n%s", id, what, code, f, tail(r.serveLog.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func status(want ...string) func(map[string]any) bool {
	return func(f map[string]any) bool {
		for _, w := range want {
			if f["status"] == w {
				return true
			}
		}
		return false
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (r *telnyxRig) attempts(id string) []map[string]any {
	r.t.Helper()
	code, atts := r.call(http.MethodGet, "/api/v1/faxes/"+id+"/attempts", nil)
	if code != 200 {
		r.t.Fatalf("attempts: %d %v", code, atts)
	}
	var out []map[string]any
	for _, a := range atts["data"].([]any) {
		out = append(out, a.(map[string]any))
	}
	return out
}

// standinState reads what the stand-in saw.
func (r *telnyxRig) standinState() map[string]any {
	r.t.Helper()
	code, st := r.call(http.MethodGet, r.standin+"/standin/state", nil)
	if code != 200 {
		r.t.Fatalf("stand-in state: %d", code)
	}
	return st
}

// standinFax finds the stand-in's record of the call with reference ref.
func (r *telnyxRig) standinFax(ref string) map[string]any {
	r.t.Helper()
	faxes, _ := r.standinState()["faxes"].([]any)
	for _, f := range faxes {
		if m := f.(map[string]any); m["id"] == ref {
			return m
		}
	}
	r.t.Fatalf("the stand-in has no fax %s", ref)
	return nil
}

// balance is the owner's live balance as the API prints it.
func (r *telnyxRig) balance() string {
	r.t.Helper()
	code, c := r.call(http.MethodGet, "/api/v1/credits", nil)
	if code != 200 {
		r.t.Fatalf("credits: %d %v", code, c)
	}
	return fmt.Sprint(c["balance"], " held ", c["held"])
}

// buyNumber finds a number in areaCode, buys it with credits and waits
// until Telnyx's number_order.complete made it active.
func (r *telnyxRig) buyNumber(areaCode string) map[string]any {
	r.t.Helper()
	code, found := r.call(http.MethodGet, "/api/v1/numbers/available?areaCode="+areaCode+"&limit=1", nil)
	data, _ := found["data"].([]any)
	if code != 200 || len(data) != 1 {
		r.t.Fatalf("search: %d %v", code, found)
	}
	e164 := data[0].(map[string]any)["number"].(string)
	code, n := r.call(http.MethodPost, "/api/v1/numbers", map[string]any{"number": e164, "payWithCredits": true})
	if code != 200 || n["status"] != "pending" {
		r.t.Fatalf("buy %s: %d %v", e164, code, n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, n = r.call(http.MethodGet, "/api/v1/numbers/"+n["id"].(string), nil)
		if code == 200 && n["status"] != "pending" {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("number %s still pending after 30 s: %v", e164, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n["status"] != "active" || n["provider"] != "telnyx" {
		r.t.Fatalf("number %v", n)
	}
	return n
}

// inbox lists the owner's received faxes.
func (r *telnyxRig) inbox() []map[string]any {
	r.t.Helper()
	code, page := r.call(http.MethodGet, "/api/v1/inbox", nil)
	if code != 200 {
		r.t.Fatalf("inbox: %d %v", code, page)
	}
	var out []map[string]any
	for _, f := range page["data"].([]any) {
		out = append(out, f.(map[string]any))
	}
	return out
}

// waitInbox polls the inbox until one entry is no longer receiving.
func (r *telnyxRig) waitInbox(within time.Duration) []map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		in := r.inbox()
		if len(in) > 0 && in[0]["status"] != "receiving" {
			return in
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no received fax after %s: %v\nfaxhub log:\n%s", within, in, tail(r.serveLog.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestTelnyxContract(t *testing.T) {
	if os.Getenv(EnvTelnyxSuite) != "1" && os.Getenv(require.EnvRequireAll) != "1" {
		t.Skipf("set %s=1 to run the Telnyx contract suite (make check does, through %s)", EnvTelnyxSuite, require.EnvRequireAll)
	}
	r := newTelnyxRig(t, "5ms")
	doc := r.upload(2)

	var delivered, deliveredRef string
	t.Run("delivered through the stand-in", func(t *testing.T) {
		r.t = t
		delivered = r.send("+12125550100", doc)
		f := r.waitFax(delivered, "delivered", status("delivered", "failed", "partial"))
		if f["status"] != "delivered" {
			t.Fatalf("fax %v", f)
		}
		atts := r.attempts(delivered)
		if len(atts) != 1 || atts[0]["provider"] != "telnyx" || !strings.HasPrefix(fmt.Sprint(atts[0]["providerRef"]), "tx_fax_") {
			t.Fatalf("attempts %v", atts)
		}
		deliveredRef = atts[0]["providerRef"].(string)
		// The stand-in fetched the PDF through faxhub's signed URL and
		// counted its pages.
		if sf := r.standinFax(deliveredRef); sf["page_count"] != float64(2) || sf["to"] != "+12125550100" || sf["from"] != "+12125550199" {
			t.Errorf("stand-in fax %v", sf)
		}
	})

	t.Run("busy is retried", func(t *testing.T) {
		r.t = t
		id := r.send("+12125550101", doc)
		f := r.waitFax(id, "back in the queue", func(f map[string]any) bool { return f["failureCode"] == "busy" || f["status"] == "failed" })
		if f["status"] != "queued" || f["nextAttemptAt"] == nil {
			t.Errorf("a busy fax is not queued for another attempt: %v", f)
		}
		if atts := r.attempts(id); len(atts) != 1 || atts[0]["failureCode"] != "busy" || atts[0]["status"] != "failed" {
			t.Errorf("attempts %v", atts)
		}
	})

	for _, tc := range []struct{ to, code string }{
		{"+12125550103", "not_a_fax_machine"},
		{"+12125550108", "invalid_number"},
		{"+12125550107", "invalid_number"}, // refused by the API at once
	} {
		t.Run("fails with "+tc.code+" for "+tc.to, func(t *testing.T) {
			r.t = t
			id := r.send(tc.to, doc)
			f := r.waitFax(id, "failed", status("failed", "delivered", "partial"))
			if f["status"] != "failed" || f["failureCode"] != tc.code {
				t.Errorf("fax %v", f)
			}
		})
	}

	t.Run("partial", func(t *testing.T) {
		r.t = t
		id := r.send("+12125550104", r.upload(4))
		f := r.waitFax(id, "partial", status("failed", "delivered", "partial"))
		if f["status"] != "partial" || f["failureCode"] != "call_dropped" || f["pagesSent"] != float64(2) {
			t.Errorf("fax %v", f)
		}
	})

	t.Run("cancel while sending", func(t *testing.T) {
		r.t = t
		id := r.send("+12125550109", doc)
		r.waitFax(id, "sending", func(f map[string]any) bool {
			atts := r.attempts(id)
			return f["status"] == "sending" && len(atts) == 1 && atts[0]["providerRef"] != nil
		})
		if code, f := r.call(http.MethodPost, "/api/v1/faxes/"+id+"/cancel", nil); code != 200 {
			t.Fatalf("cancel: %d %v", code, f)
		}
		f := r.waitFax(id, "canceled", func(f map[string]any) bool { return f["status"] != "sending" && f["status"] != "queued" })
		if f["failureCode"] != "canceled" {
			t.Errorf("fax %v", f)
		}
	})

	t.Run("duplicate and out-of-order events change nothing", func(t *testing.T) {
		r.t = t
		if deliveredRef == "" {
			t.Skip("no delivered fax")
		}
		_, before := r.call(http.MethodGet, "/api/v1/faxes/"+delivered, nil)
		balance := r.balance()
		for _, ev := range []map[string]any{
			{"event_type": "fax.delivered", "page_count": 2},                                         // duplicate
			{"event_type": "fax.sending.started"},                                                    // late progress
			{"event_type": "fax.failed", "failure_reason": "user_busy"},                              // a contradiction after the end
			{"event_type": "fax.failed", "failure_reason": "receiver_call_dropped", "page_count": 1}, // partial after delivered
		} {
			code, m := r.call(http.MethodPost, r.standin+"/standin/faxes/"+deliveredRef+"/events", ev)
			if code != 200 || m["status"] != float64(200) {
				t.Errorf("%v: faxhub answered %v", ev, m)
			}
		}
		_, after := r.call(http.MethodGet, "/api/v1/faxes/"+delivered, nil)
		for _, k := range []string{"status", "pagesSent", "updatedAt", "completedAt", "attemptCount", "failureCode"} {
			if fmt.Sprint(before[k]) != fmt.Sprint(after[k]) {
				t.Errorf("%s changed: %v → %v", k, before[k], after[k])
			}
		}
		if atts := r.attempts(delivered); len(atts) != 1 || atts[0]["status"] != "delivered" {
			t.Errorf("attempts %v", atts)
		}
		if b := r.balance(); b != balance {
			t.Errorf("balance changed: %s → %s", balance, b)
		}
	})

	t.Run("forged events are refused", func(t *testing.T) {
		r.t = t
		id := r.send("+12125550109", doc) // stays sending
		r.waitFax(id, "sending", func(f map[string]any) bool {
			atts := r.attempts(id)
			return f["status"] == "sending" && len(atts) == 1 && atts[0]["providerRef"] != nil
		})
		ref := r.attempts(id)[0]["providerRef"].(string)
		for _, forge := range []string{"bad_signature", "old_timestamp"} {
			code, m := r.call(http.MethodPost, r.standin+"/standin/faxes/"+ref+"/events", map[string]any{"event_type": "fax.delivered", "page_count": 2, "forge": forge})
			if code != 200 || m["status"] != float64(401) {
				t.Errorf("%s: faxhub answered %v", forge, m)
			}
		}
		if _, f := r.call(http.MethodGet, "/api/v1/faxes/"+id, nil); f["status"] != "sending" {
			t.Errorf("a forged event changed the fax: %v", f)
		}
		// Leave nothing sending.
		r.call(http.MethodPost, "/api/v1/faxes/"+id+"/cancel", nil)
	})

	t.Run("a number ordered and a fax received on it", func(t *testing.T) {
		r.t = t
		n := r.buyNumber("415")
		if st := r.standinState(); st["numbers"].(map[string]any)[n["number"].(string)] == nil {
			t.Errorf("the stand-in did not provision %v: %v", n["number"], st["numbers"])
		}
		code, in := r.call(http.MethodPost, r.standin+"/standin/inbound", map[string]any{"to": n["number"], "from": "+12125550100", "pdf": testenv.MinimalPDF(2)})
		if code != 200 {
			t.Fatalf("inbound: %d %v", code, in)
		}
		got := r.waitInbox(time.Minute)
		if len(got) != 1 || got[0]["status"] != "received" || got[0]["pages"] != float64(2) || got[0]["to"] != n["number"] || got[0]["provider"] != "telnyx" {
			t.Fatalf("inbox %v", got)
		}
		// Telnyx may deliver the notice again: still one fax.
		if code, m := r.call(http.MethodPost, r.standin+"/standin/events/"+in["event_id"].(string)+"/redeliver", nil); code != 200 || m["status"] != float64(200) {
			t.Errorf("duplicate: faxhub answered %v", m)
		}
		if got := r.inbox(); len(got) != 1 {
			t.Errorf("a duplicate notice made %d entries", len(got))
		}
		// Given back: deleted at Telnyx.
		if code, m := r.call(http.MethodPost, "/api/v1/numbers/"+n["id"].(string)+"/release", nil); code != 200 || m["status"] != "released" {
			t.Fatalf("release: %d %v", code, m)
		}
		if st := r.standinState(); st["numbers"].(map[string]any)[n["number"].(string)] != nil {
			t.Errorf("the released number is still on the account")
		}
	})

	t.Run("an unsigned post is refused with a problem", func(t *testing.T) {
		r.t = t
		resp, err := http.Post(r.base+"/webhooks/telnyx", "application/json", strings.NewReader(`{"data":{"event_type":"fax.delivered"}}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&p)
		if resp.StatusCode != 401 || p["code"] != "invalid_signature" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("%d %v", resp.StatusCode, p)
		}
	})

	if strings.Contains(r.serveLog.String(), standinAPIKey) {
		t.Error("faxhub logged the Telnyx API key")
	}
}

// TestTelnyxCrashRecovery: faxhub is killed -9 while a live fax is on
// the line; its fax.delivered webhook finds no one, the stand-in retries
// it with backoff as Telnyx does, faxhub restarts, and the fax is
// delivered exactly once: one attempt, one call at the stand-in, no
// credits left held. Then faxhub is killed again between a received
// fax's notice and its processing (the stand-in holds the document's
// download); the notice is retried, and the fax shows up exactly once.
func TestTelnyxCrashRecovery(t *testing.T) {
	if os.Getenv(EnvCrashTest) == "" {
		t.Skipf("set %s=1 to run the crash test (make check does)", EnvCrashTest)
	}
	r := newTelnyxRig(t, "100ms")
	doc := r.upload(1)
	if code, m := r.call(http.MethodPost, r.standin+"/standin/calls/hold", map[string]bool{"hold": true}); code != 200 {
		t.Fatalf("hold: %d %v", code, m)
	}
	id := r.send("+12125550100", doc)
	// On the line means at the stand-in too: its call fetches the media
	// from faxhub after faxhub has its reference, and a kill before that
	// fetch fails the fax (file_download_failed), as Telnyx would.
	r.waitFax(id, "on the line", func(f map[string]any) bool {
		atts := r.attempts(id)
		if f["status"] != "sending" || len(atts) != 1 || atts[0]["providerRef"] == nil {
			return false
		}
		return r.standinFax(atts[0]["providerRef"].(string))["status"] == "sending"
	})
	ref := r.attempts(id)[0]["providerRef"].(string)
	r.kill()
	// The call ends while faxhub is down: the webhook is refused at the
	// door and retried.
	r.call(http.MethodPost, r.standin+"/standin/calls/hold", map[string]bool{"hold": false})
	deadline := time.Now().Add(30 * time.Second)
	for !failedDelivery(r.standinState(), "fax.delivered") {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in never tried to deliver fax.delivered while faxhub was down; its call: %v; its webhooks: %v",
				r.standinFax(ref), r.standinState()["deliveries"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.start()
	f := r.waitFax(id, "delivered", status("delivered", "failed", "partial"))
	if f["status"] != "delivered" {
		t.Fatalf("fax %v", f)
	}
	if atts := r.attempts(id); len(atts) != 1 || atts[0]["status"] != "delivered" || atts[0]["providerRef"] != ref {
		t.Fatalf("not delivered exactly once: %v", atts)
	}
	calls := 0
	for _, sf := range r.standinState()["faxes"].([]any) {
		if sf.(map[string]any)["direction"] == "outbound" {
			calls++
		}
	}
	if calls != 1 {
		t.Errorf("the stand-in placed %d calls, want 1", calls)
	}
	_, c := r.call(http.MethodGet, "/api/v1/credits", nil)
	if rat(t, c["held"]).Sign() != 0 {
		t.Errorf("credits still held: %v", c["held"])
	}

	// Inbound: faxhub acknowledged fax.received and is fetching the
	// document (the stand-in holds the download) when it is killed. The
	// stand-in sends the notice again, retrying until faxhub is back;
	// the rescued job fetches the document; the fax is in the inbox once.
	n := r.buyNumber("212")
	r.call(http.MethodPost, r.standin+"/standin/media/hold", map[string]bool{"hold": true})
	_, in := r.call(http.MethodPost, r.standin+"/standin/inbound", map[string]any{"to": n["number"], "from": "+12125550100", "pdf": testenv.MinimalPDF(1)})
	deadline = time.Now().Add(30 * time.Second)
	for r.standinState()["media_waiting"] != float64(1) {
		if time.Now().After(deadline) {
			t.Fatal("faxhub never fetched the received fax's document")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.kill()
	r.call(http.MethodPost, r.standin+"/standin/events/"+in["event_id"].(string)+"/redeliver?retry=1", nil)
	r.call(http.MethodPost, r.standin+"/standin/media/hold", map[string]bool{"hold": false})
	r.start()
	// River rescues the interrupted process_inbound job once its own
	// timeout has passed (3 min: a run converts and reads the fax; River
	// leaves a job alone for its kind's timeout), at its rescuer's next
	// pass (every 30 s): docs/limits.md, "rescue of a job left running".
	got := r.waitInbox(5 * time.Minute)
	if len(got) != 1 || got[0]["status"] != "received" || got[0]["to"] != n["number"] {
		t.Fatalf("inbox after the crash: %v", got)
	}
	if !acked(r.standinState(), in["event_id"].(string), 2) {
		t.Error("the retried notice was never acknowledged")
	}
}

// acked reports whether the event got a 2xx on at least n deliveries.
func acked(st map[string]any, id string, n int) bool {
	ds, _ := st["deliveries"].([]any)
	for _, d := range ds {
		m := d.(map[string]any)
		if m["event_id"] == id && m["status"].(float64) >= 200 && m["status"].(float64) < 300 {
			n--
		}
	}
	return n <= 0
}

// failedDelivery reports whether the stand-in posted an event of typ that
// got no 2xx.
func failedDelivery(st map[string]any, typ string) bool {
	ds, _ := st["deliveries"].([]any)
	for _, d := range ds {
		m := d.(map[string]any)
		if m["event_type"] == typ && (m["status"] == float64(0) || m["status"].(float64) >= 300) {
			return true
		}
	}
	return false
}
