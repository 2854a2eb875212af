package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faxhub/faxhub/internal/testenv"
)

// crashRig is the built binary the crash tests kill: `faxhub serve` on a
// loopback port over data of its own (and a PostgreSQL schema of its own
// when FAXHUB_TESTENV_POSTGRES is set), owners made by the admin
// commands, the server started, killed with SIGKILL and started again.
type crashRig struct {
	t   *testing.T
	bin string
	// args (--data, and --database on PostgreSQL) go to every command.
	args []string
	// base is where requests go; serve names http://localhost:PORT as
	// its base URL.
	addr, base string
	// flags are serve's own (the simulator's timescale and the test's).
	flags  []string
	client *http.Client
}

// newCrashRig builds the binary; serve runs with a 1-page fax's simulated
// call taking about a second (--sim-timescale 0.02) and flags.
func newCrashRig(t *testing.T, flags ...string) *crashRig {
	t.Helper()
	r := &crashRig{t: t, bin: buildBinary(t, ".", "faxhub"), addr: freeAddr(t), client: &http.Client{Timeout: 10 * time.Second}}
	r.base = "http://" + r.addr
	r.args = []string{"--data", filepath.Join(t.TempDir(), "data")}
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		r.args = append(r.args, "--database", testenvSchema(t, pg))
	}
	r.flags = append([]string{"--sim-timescale", "0.02"}, flags...)
	return r
}

// admin runs an admin command and returns what it printed.
func (r *crashRig) admin(a ...string) string {
	r.t.Helper()
	out, err := exec.Command(r.bin, append(a, r.args...)...).Output()
	if err != nil {
		r.t.Fatalf("faxhub %s: %v", strings.Join(a, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// owner creates a verified owner with $500 of test credits and returns a
// test-mode API key.
func (r *crashRig) owner(email, reason string) string {
	r.t.Helper()
	r.admin("admin", "owner", "create", "--email", email)
	key := r.admin("admin", "apikey", "create", "--owner", email, "--mode", "test")
	r.admin("admin", "credits", "grant", "--owner", email, "--mode", "test", "--usd", "500", "--reason", reason)
	return key
}

// start runs `faxhub serve` and waits until it is ready.
func (r *crashRig) start() *exec.Cmd {
	r.t.Helper()
	serve := append([]string{"serve", "--addr", r.addr, "--base-url", "http://localhost:" + strings.Split(r.addr, ":")[1]}, r.flags...)
	cmd := exec.Command(r.bin, append(serve, r.args...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	waitReady(r.t, r.base)
	return cmd
}

// kill stops cmd with SIGKILL and returns when it is gone.
func (r *crashRig) kill(cmd *exec.Cmd) {
	r.t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()
}

// call makes one request with key and decodes the JSON answer; an error
// means the server did not answer (it may be down).
func (r *crashRig) call(method, path, key string, body []byte, hdr map[string]string) (int, map[string]any, error) {
	req, err := http.NewRequest(method, r.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, nil
}
