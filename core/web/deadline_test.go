package web_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core/web"
)

// trickle sends a request whose body stops after sent of declared bytes
// and reports what came back; the server closing the connection (with or
// without an answer) before the client's own 10 s safety net is what the
// deadline promises. Without it the read below would time out.
func trickle(t *testing.T, addr, path string, declared int, sent string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, declared, sent)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the server kept the connection open with a stalled body (read so far: %q)", path, got)
	}
	return string(got)
}

func deadlineServer(t *testing.T, d web.BodyDeadlines, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(web.ReadDeadlines(h, d))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func TestReadDeadlinesCloseStalledBodies(t *testing.T) {
	readAll := func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
	addr := deadlineServer(t, web.BodyDeadlines{
		Body: 150 * time.Millisecond, StreamGrace: 150 * time.Millisecond, StreamMinRate: 1 << 20,
		Stream: func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/upload") },
	}, readAll)
	for _, path := range []string{"/small", "/upload"} {
		got := trickle(t, addr, path, 100, "{")
		if got != "" && !strings.Contains(got, "400 Bad Request") {
			t.Fatalf("%s: %q", path, got)
		}
	}
	// A body that arrives in time is read whole.
	res, err := http.Post("http://"+addr+"/small", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("a prompt body: %d", res.StatusCode)
	}
}

// A streamed body keeps its connection while it arrives at the minimum
// rate, past the grace period.
func TestReadDeadlinesStreamMovesOn(t *testing.T) {
	addr := deadlineServer(t, web.BodyDeadlines{
		StreamGrace: 100 * time.Millisecond, StreamMinRate: 1,
		Stream: func(*http.Request) bool { return true },
	}, func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, n)
	})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// 1 byte/s after a 100 ms grace: each byte sent earns a second, so
	// sending 50 bytes at once and the rest after the grace has passed is
	// within the rate. The pause is the client's pacing, not a wait for
	// the server.
	fmt.Fprintf(conn, "PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n%s", strings.Repeat("a", 50))
	time.Sleep(300 * time.Millisecond)
	fmt.Fprint(conn, strings.Repeat("b", 50))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "100" {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}
