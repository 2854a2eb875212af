//go:build bench

package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	startRuns     = 5
	startTargetMS = 1000 // "well under a second"
	readyPoll     = 2 * time.Millisecond
)

// benchStart builds the faxhub binary (not timed) and times `faxhub serve`
// from process start until GET /readyz answers 200: startRuns times on a
// fresh empty data dir (cold: creates and migrates the SQLite database),
// then startRuns times on the last of those dirs (warm).
func benchStart(t *testing.T, rep *report) {
	bin := buildFaxhub(t)

	var cold, warm []time.Duration
	var dir string
	for i := range startRuns {
		dir = filepath.Join(t.TempDir(), "data")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		d := startOnce(t, bin, dir)
		t.Logf("cold start %d: ready after %s", i+1, d.Round(100*time.Microsecond))
		cold = append(cold, d)
	}
	for i := range startRuns {
		d := startOnce(t, bin, dir)
		t.Logf("warm start %d: ready after %s", i+1, d.Round(100*time.Microsecond))
		warm = append(warm, d)
	}
	ms := func(ds []time.Duration) (med, worst float64) {
		xs := make([]float64, len(ds))
		for i, d := range ds {
			xs[i] = float64(d) / float64(time.Millisecond)
		}
		return median(xs), slices.Max(xs)
	}
	goal := atMost(startTargetMS, "ms")
	med, worst := ms(cold)
	rep.add(fmt.Sprintf("start    cold, empty data dir: median of %d", startRuns), "ms", med, nan, goal, 1,
		"start: `faxhub serve --data DIR --addr 127.0.0.1:PORT --base-url …` (SQLite), from fork/exec until GET /readyz answers 200, "+
			"polled every 2 ms; cold = a new empty data dir (creates and migrates the database), warm = the data dir of an earlier run.")
	rep.add("start    cold, empty data dir: max", "ms", worst, nan, goal, 1, "")
	med, worst = ms(warm)
	rep.add(fmt.Sprintf("start    warm, existing data dir: median of %d", startRuns), "ms", med, nan, goal, 1, "")
	rep.add("start    warm, existing data dir: max", "ms", worst, nan, goal, 1, "")
}

// startOnce starts the server on dir, waits for /readyz, stops it with
// SIGTERM and returns the time to ready.
func startOnce(t *testing.T, bin, dir string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	addr := freeAddr(t)
	cmd := exec.CommandContext(ctx, bin, "serve", "--data", dir, "--addr", addr, "--base-url", "http://"+addr)
	cmd.Env = withoutFaxhubEnv(os.Environ())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()

	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start faxhub: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			return err
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("did not exit within 30 s of SIGTERM")
		}
	}

	var ready time.Duration
	for {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/readyz", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready = time.Since(start)
				break
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("faxhub serve exited before it was ready: %v\n%s", err, out.String())
		case <-ctx.Done():
			serr := stop()
			t.Fatalf("faxhub serve not ready after a minute (stop: %v)\n%s", serr, out.String())
		case <-time.After(readyPoll):
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("faxhub serve on SIGTERM: %v\n%s", err, out.String())
	}
	return ready
}

// freeAddr is a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// withoutFaxhubEnv drops FAXHUB_* settings so that the flags alone decide
// what the server does.
func withoutFaxhubEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "FAXHUB_") })
}
