package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/internal/testenv"
)

// TestReadmeRecipe runs the README's "send a test fax" block, as written,
// with sh against a real `faxhub serve` started as `make run` starts it: a
// newcomer pastes exactly this, so it must work on a machine with nothing
// but Go, sh, curl and sed.
func TestReadmeRecipe(t *testing.T) {
	root, block := readmeBlock(t, "## Send a test fax in four requests", "sh", "curl", "sed", "go")
	base, env, _ := readmeServer(t)
	block = strings.ReplaceAll(block, "http://localhost:8080", base)

	sh := exec.Command("sh", "-e", "-c", block)
	sh.Dir, sh.Env = root, env
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the README recipe failed: %v\n%s", err, out)
	}
	for _, want := range []string{`"stored":true`, "sent fax_", `"to":"+12125550100"`, `"balance"`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("recipe output lacks %s:\n%s", want, out)
		}
	}
}

// TestReadmeCLIRecipe runs the README's command-line block, as written,
// with the binary `make run` builds, against a real `faxhub serve`.
func TestReadmeCLIRecipe(t *testing.T) {
	root, block := readmeBlock(t, "## Send a test fax from the command line", "sh", "sed", "go")
	base, env, bin := readmeServer(t)
	block = strings.ReplaceAll(block, "bin/faxhub", bin)
	// The client finds the server through FAXHUB_API_URL (the default is
	// :8080) and keeps its profile in a private config directory.
	env = append(env, "FAXHUB_API_URL="+base, "XDG_CONFIG_HOME="+t.TempDir())
	sh := exec.Command("sh", "-e", "-c", block)
	sh.Dir, sh.Env = root, env
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the README CLI recipe failed: %v\n%s", err, out)
	}
	for _, want := range []string{"Logged in to " + base, "delivered", "USD available"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("recipe output lacks %q:\n%s", want, out)
		}
	}
}

// readmeBlock is the repository root and the README's sh block after
// heading; the test skips (fails under FAXHUB_REQUIRE_ALL) without tools.
func readmeBlock(t *testing.T, heading string, tools ...string) (root, block string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs faxhub")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("FAXHUB_REQUIRE_ALL") != "" {
				t.Fatalf("the README recipe needs %s: %v", tool, err)
			}
			t.Skipf("the README recipe needs %s", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return root, shellBlockAfter(t, string(readme), heading)
}

// readmeServer builds faxhub and starts `faxhub serve` as `make run` does,
// on a free port; it returns the base URL, the environment a second
// terminal shares with it (its data), and the binary.
func readmeServer(t *testing.T) (base string, env []string, bin string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base = "http://localhost:" + addr[strings.LastIndexByte(addr, ':')+1:]

	// The recipe's admin command and the server share their data through
	// the environment, as `make run` and a second terminal in the same
	// checkout do through ./faxhub-data.
	env = append(os.Environ(), "FAXHUB_DATA="+filepath.Join(t.TempDir(), "data"))
	if pg := os.Getenv(testenv.EnvPostgres); pg != "" {
		env = append(env, "FAXHUB_DATABASE_URL="+testenvSchema(t, pg))
	}
	bin = filepath.Join(t.TempDir(), "faxhub")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv := exec.CommandContext(ctx, bin, "serve", "--dev", "--sim-timescale", "0", "--addr", addr, "--base-url", base)
	srv.Env = env
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
		if t.Failed() {
			t.Logf("server:\n%s", srvOut.String())
		}
	})
	waitReady(t, base)
	return base, env, bin
}

// shellBlockAfter is the first ```sh block after a heading.
func shellBlockAfter(t *testing.T, doc, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, heading)
	if !ok {
		t.Fatalf("README has no %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("no sh block after %q", heading)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("unterminated sh block after %q", heading)
	}
	return block
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("faxhub serve did not become ready")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
