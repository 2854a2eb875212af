package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFrontRotates: request k goes to replica k mod N, with the client's
// Host kept and its address in X-Forwarded-For, and each is logged with
// the replica that served it.
func TestFrontRotates(t *testing.T) {
	var replicas []*replica
	for i := range 3 {
		name := string(rune('A' + i))
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Request-Id", "req_"+name)
			fmt.Fprintf(w, "%s %s %s", name, r.Host, r.Header.Get("X-Forwarded-For"))
		}))
		t.Cleanup(srv.Close)
		replicas = append(replicas, &replica{name: name, addr: strings.TrimPrefix(srv.URL, "http://")})
	}
	var logBuf lockedBuffer
	front := httptest.NewServer(newFront(replicas, log.New(&logBuf, "", 0)))
	t.Cleanup(front.Close)

	var got []string
	for range 6 {
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/api/v1/faxes", nil)
		req.Host = "localhost:9999"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f := strings.Fields(string(body))
		if len(f) != 3 || f[1] != "localhost:9999" || f[2] != "127.0.0.1" {
			t.Fatalf("replica saw %q: want its name, the client's Host and X-Forwarded-For 127.0.0.1", body)
		}
		got = append(got, f[0])
	}
	if strings.Join(got, "") != "ABCABC" {
		t.Fatalf("requests went to %v, want strict rotation A B C A B C", got)
	}
	// The front logs a request after its answer has gone out, so the
	// last lines may still be on their way.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(logBuf.String(), "\n") < 6 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // polling a condition, not timing
	}
	if !strings.Contains(logBuf.String(), "replica=B GET /api/v1/faxes status=200 request_id=req_B") {
		t.Fatalf("request log:\n%s", logBuf.String())
	}
}

// lockedBuffer is a bytes.Buffer the front's handlers write while the test
// reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFrontStreams: what a replica flushes reaches the client while its
// answer is still open (the request log's wrapper passes flushes through),
// as server-sent events and streamed MCP answers need.
func TestFrontStreams(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	front := httptest.NewServer(newFront([]*replica{{name: "A", addr: strings.TrimPrefix(srv.URL, "http://")}}, log.New(io.Discard, "", 0)))
	t.Cleanup(front.Close)

	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(front.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first event: %q %v", line, err)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/api/v1/faxes/fax_123", "/api/v1/faxes/fax_123"},
		{"/api/v1/uploads/u1.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbb", "/api/v1/uploads/…"},
		{"/", "/"},
		{"/checkout/test/chk_1yk8fh50n45cghpt7tke5642f0", "/checkout/test/…"},
		{"/agent/claim/fxt_abc", "/agent/claim/…"},
	} {
		if got := redact(tc.in); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
