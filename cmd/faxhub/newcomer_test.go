package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// The hints serve prints must work when pasted: never a temporary go-build
// path, always pointing at the same data.
func TestCommandName(t *testing.T) {
	tmp := filepath.FromSlash("/tmp")
	for _, tc := range []struct{ arg0, want string }{
		{"/tmp/go-build3349/b001/exe/faxhub", "go run ./cmd/faxhub"},
		{"/home/me/gotmp/go-build77/b001/exe/faxhub", "go run ./cmd/faxhub"}, // GOTMPDIR elsewhere
		{"./bin/faxhub", mustAbs(t, "bin/faxhub")},                           // make run
		{"faxhub", "faxhub"},
		{"/usr/local/bin/faxhub", "/usr/local/bin/faxhub"},
		{"", "faxhub"},
	} {
		if got := commandName(tc.arg0, tmp); got != tc.want {
			t.Errorf("commandName(%q) = %q, want %q", tc.arg0, got, tc.want)
		}
	}
	c := config{DataDir: "/srv/fax data/it's"}
	if got, want := c.dataFlag(), `--data '/srv/fax data/it'\''s'`; got != want {
		t.Errorf("dataFlag = %s, want %s", got, want)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// --dev keeps recovery links in a mailbox page and offers a demo owner: it
// must not listen where other machines reach it unless the operator insists.
func TestDevRefusesPublicAddress(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		anyOK  bool
		wantOK bool
	}{
		{"127.0.0.1:8080", false, true},
		{"[::1]:8080", false, true},
		{"localhost:8080", false, true},
		{":8080", false, false},
		{"0.0.0.0:8080", false, false},
		{"192.0.2.10:8080", false, false},
		{"0.0.0.0:8080", true, true},
	} {
		c := config{Dev: true, Addr: tc.addr, DevAnyAddr: tc.anyOK}
		if err := c.checkDevAddr(); (err == nil) != tc.wantOK {
			t.Errorf("--dev --addr %s (any %v): %v", tc.addr, tc.anyOK, err)
		}
	}
	var stderr bytes.Buffer
	err := run(context.Background(), append([]string{"serve", "--dev", "--addr", "0.0.0.0:0"}, dataArgs(t)...), &bytes.Buffer{}, &stderr)
	var usage usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "--dev-any-addr") {
		t.Fatalf("serve --dev on 0.0.0.0: %v", err)
	}
}

func TestServeHelp(t *testing.T) {
	var stderr bytes.Buffer
	fs := serveFlags(&config{}, &stderr)
	fs.PrintDefaults()
	help := stderr.String()
	if strings.Contains(help, "(default on) (default on)") {
		t.Errorf("serve -h repeats defaults:\n%s", help)
	}
	for _, want := range []string{"-dev-any-addr", "loopback"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve -h lacks %q", want)
		}
	}
}
