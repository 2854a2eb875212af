//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildFaxhub builds ./cmd/faxhub into a temp dir (not timed) and returns
// the binary's path.
func buildFaxhub(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "faxhub")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/faxhub")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/faxhub: %v\n%s", err, out)
	}
	return bin
}

// serveProc is a `faxhub serve` child process.
type serveProc struct {
	cmd    *exec.Cmd
	base   string // http://ADDR, also its --base-url
	log    string // its stdout and stderr
	exited chan struct{}
	err    error // Wait's answer, once exited is closed
}

// startServe execs `faxhub serve --addr ADDR --base-url http://ADDR` with
// args, waits until GET /readyz answers 200 (a minute at most) and stops
// the process with SIGTERM when t ends. FAXHUB_* variables of the test's
// environment are dropped: the flags alone configure it.
func startServe(t *testing.T, bin string, args ...string) *serveProc {
	t.Helper()
	addr := freeAddr(t)
	p := &serveProc{base: "http://" + addr, log: filepath.Join(t.TempDir(), "serve.log"), exited: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, append([]string{"serve", "--addr", addr, "--base-url", p.base}, args...)...)
	p.cmd.Env = withoutFaxhubEnv(os.Environ())
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("start faxhub serve: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("faxhub serve (pid %d) on SIGTERM: %v\n%s", p.pid(), err, p.tail())
		}
	})

	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := client.Get(p.base + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("faxhub serve exited before it was ready: %v\n%s", p.err, p.tail())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("faxhub serve not ready after a minute\n%s", p.tail())
		}
	}
}

func (p *serveProc) pid() int { return p.cmd.Process.Pid }

// alive is an error once the process has exited.
func (p *serveProc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("faxhub serve (pid %d) exited: %v", p.pid(), p.err)
	default:
		return nil
	}
}

// stop sends SIGTERM and waits for the exit (30 s, then SIGKILL).
func (p *serveProc) stop() error {
	select {
	case <-p.exited:
		return nil // stopped already (its exit was reported then)
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("did not exit within 30 s of SIGTERM")
	}
}

// tail is the end of the process's log, for failure messages.
func (p *serveProc) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(bytes.TrimSpace(b))
}

// procSample is what /proc says about a process at one moment.
type procSample struct {
	rssKB   int64 // VmRSS
	anonKB  int64 // RssAnon: VmRSS less the file pages (the binary's code as it is run, mapped files)
	threads int   // Threads
	fds     int   // entries of /proc/PID/fd
	// goroutines is go_goroutines from the process's metrics listener,
	// when the caller reads it.
	goroutines int
}

// readProc samples /proc/PID/status and /proc/PID/fd.
func readProc(ctx context.Context, pid int) (procSample, error) {
	var s procSample
	if err := ctx.Err(); err != nil {
		return s, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, fmt.Errorf("read process status: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found := 0
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		field := strings.Fields(val)
		if len(field) == 0 {
			continue
		}
		switch key {
		case "VmRSS":
			s.rssKB, err = strconv.ParseInt(field[0], 10, 64)
			found++
		case "RssAnon":
			s.anonKB, err = strconv.ParseInt(field[0], 10, 64)
			found++
		case "Threads":
			s.threads, err = strconv.Atoi(field[0])
			found++
		}
		if err != nil {
			return s, fmt.Errorf("process status %s: %w", key, err)
		}
	}
	if err := sc.Err(); err != nil {
		return s, fmt.Errorf("read process status: %w", err)
	}
	if found != 3 {
		return s, fmt.Errorf("process status of %d lacks VmRSS, RssAnon or Threads", pid)
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, fmt.Errorf("list open files: %w", err)
	}
	s.fds = len(fds)
	return s, nil
}
