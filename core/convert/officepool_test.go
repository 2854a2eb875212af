package convert

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/documents"
)

// warmConverter is a Converter with warm LibreOffice workers, stopped when
// the test ends.
func warmConverter(t *testing.T, opts Options) *Converter {
	t.Helper()
	needSoffice(t)
	opts.TempDir = t.TempDir()
	c := New(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

// warmedUp is a warm converter that has converted once, and its running
// LibreOffice server.
func warmedUp(t *testing.T, opts Options) (*Converter, int) {
	t.Helper()
	c := warmConverter(t, opts)
	if err := convertDOCX(t, context.Background(), c, 1); err != nil {
		t.Fatal(err)
	}
	return c, runningServer(t, c)
}

// convertDOCX converts a DOCX of pages pages and checks the result.
func convertDOCX(t *testing.T, ctx context.Context, c *Converter, pages int) error {
	t.Helper()
	src := writeTemp(t, "source", docxBytes(t, pages))
	dst := filepath.Join(t.TempDir(), "out.pdf")
	got, err := c.ToPDF(ctx, documents.ConvertRequest{OwnerID: "o", Src: src, Kind: documents.FileDOCX, Dst: dst})
	if err == nil && got != pages {
		t.Errorf("converted %d pages, want %d", got, pages)
	}
	return err
}

// serverPIDs lists the process ids of the pool's running LibreOffice
// servers (0 for a stopped worker), in the pool's order.
func serverPIDs(t *testing.T, c *Converter) []int {
	t.Helper()
	var pids []int
	for range cap(c.pool.idle) {
		w := <-c.pool.idle
		pid := 0
		if w.running() {
			pid = w.cmd.Process.Pid
		}
		pids = append(pids, pid)
		c.pool.put(w)
	}
	return pids
}

func onlyServer(t *testing.T, c *Converter) int {
	t.Helper()
	pids := serverPIDs(t, c)
	if len(pids) != 1 {
		t.Fatalf("%d workers, want 1", len(pids))
	}
	return pids[0]
}

// runningServer is the pool's one server, which must be up: its process
// group is about to be signalled, and kill(-0) would signal the test's own.
func runningServer(t *testing.T, c *Converter) int {
	t.Helper()
	pid := onlyServer(t, c)
	if pid <= 0 {
		t.Fatal("no warm LibreOffice is running")
	}
	return pid
}

// wantNewServer checks that the pool's one server runs and is not old.
func wantNewServer(t *testing.T, c *Converter, old int) {
	t.Helper()
	if got := onlyServer(t, c); got == 0 || got == old {
		t.Fatalf("server %d, want a new one (the old one was %d)", got, old)
	}
}

// waitGone waits (a few seconds at most) for process group pgid to die:
// SIGKILLed processes are reaped by init, not by us.
func waitGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !groupGone(pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("LibreOffice process group %d still runs", pgid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// groupGone reports whether process group pgid has no live member left
// (zombies awaiting their reaper count as gone).
func groupGone(pgid int) bool {
	for _, pid := range groupPIDs(pgid) {
		if !isZombie(pid) {
			return false
		}
	}
	return true
}

// Consecutive conversions go to one LibreOffice, which stays up between
// them; Close stops it.
func TestOfficeWarmReusesOneLibreOffice(t *testing.T) {
	t.Parallel()
	c, pid := warmedUp(t, Options{MaxConcurrent: 1})
	ctx := context.Background()
	if rss := c.OfficeRSS(); rss <= 0 {
		t.Errorf("pool RSS %d", rss)
	}
	for _, pages := range []int{3, 2} {
		if err := convertDOCX(t, ctx, c, pages); err != nil {
			t.Fatal(err)
		}
		if got := onlyServer(t, c); got != pid {
			t.Fatalf("server %d after a conversion, want the same %d", got, pid)
		}
	}
	c.Close()
	waitGone(t, pid)
	// After Close a conversion still works, cold.
	if err := convertDOCX(t, ctx, c, 1); err != nil {
		t.Fatal(err)
	}
}

// A worker is restarted after OfficeRecycleAfter conversions.
func TestOfficeWarmRestartsAfterN(t *testing.T) {
	t.Parallel()
	c, first := warmedUp(t, Options{MaxConcurrent: 1, OfficeRecycleAfter: 2})
	ctx := context.Background()
	if err := convertDOCX(t, ctx, c, 1); err != nil {
		t.Fatal(err)
	}
	if got := onlyServer(t, c); got != 0 {
		t.Fatalf("server %d still up after its 2nd conversion", got)
	}
	waitGone(t, first)
	if err := convertDOCX(t, ctx, c, 2); err != nil {
		t.Fatal(err)
	}
	wantNewServer(t, c, first)
}

// A worker that crashed between conversions is replaced: the conversions
// after it succeed, and a new LibreOffice serves them.
func TestOfficeWarmConvertsAfterACrash(t *testing.T) {
	t.Parallel()
	c, pid := warmedUp(t, Options{MaxConcurrent: 1})
	ctx := context.Background()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The conversion right after the crash may find the dead server's
	// pipe and convert on its own, cold; it must succeed either way.
	if err := convertDOCX(t, ctx, c, 2); err != nil {
		t.Fatalf("conversion after a crash: %v", err)
	}
	if err := convertDOCX(t, ctx, c, 3); err != nil {
		t.Fatalf("second conversion after a crash: %v", err)
	}
	wantNewServer(t, c, pid)
}

// A hung LibreOffice is killed, process group and all, when the conversion's
// time runs out, and the next conversion gets a new one.
func TestOfficeWarmHangIsKilled(t *testing.T) {
	t.Parallel()
	c := warmConverter(t, Options{MaxConcurrent: 1, Timeout: 2 * time.Second})
	ctx := context.Background()
	// Start it outside the short timeout: a cold start on a busy machine
	// can take longer than the hung conversion is given.
	w := <-c.pool.idle
	bin, err := c.soffice()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.start(ctx, bin, c.opts.TempDir); err != nil {
		t.Fatal(err)
	}
	c.pool.put(w)
	pid := runningServer(t, c)
	// Stopped, LibreOffice takes the client's request and never answers.
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	err = convertDOCX(t, ctx, c, 1)
	wantCode(t, err, core.KindUnprocessable, documents.CodeConversionFailed)
	if !isOfficeTimeout(err) {
		t.Errorf("got %v, want a timeout", err)
	}
	waitGone(t, pid)
	c.opts.Timeout = time.Minute
	if err := convertDOCX(t, ctx, c, 2); err != nil {
		t.Fatalf("conversion after a hang: %v", err)
	}
	wantNewServer(t, c, pid)
}

// Two conversions at once run on two LibreOffices and each gets its own
// document back; no worker's profile or temp directory keeps a trace of
// either document.
func TestOfficeWarmConcurrentConversionsAreIsolated(t *testing.T) {
	t.Parallel()
	c := warmConverter(t, Options{MaxConcurrent: 2})
	ctx := context.Background()
	for round := range 3 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, owner := range []string{"alice", "bob"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pages := 1 + 3*i + round
				src := writeTemp(t, "source", docxBytes(t, pages))
				dst := filepath.Join(t.TempDir(), "out.pdf")
				got, err := c.ToPDF(ctx, documents.ConvertRequest{OwnerID: owner, Src: src, Kind: documents.FileDOCX, Dst: dst})
				if err == nil && got != pages {
					err = errors.New("got another document back")
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, conversion %d: %v", round, i, err)
			}
		}
	}
	pids := serverPIDs(t, c)
	if len(pids) != 2 || pids[0] == 0 || pids[1] == 0 || pids[0] == pids[1] {
		t.Fatalf("servers %v, want two running", pids)
	}
	err := filepath.WalkDir(c.opts.TempDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), "faxhub-soffice-") {
			t.Errorf("a conversion directory outlived its conversion: %s", path)
		}
		if d.Type().IsRegular() && d.Name() != "keepalive.txt" {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), "faxhub-soffice-") || strings.Contains(string(b), "document.docx") {
				t.Errorf("%s names a converted document", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A warm LibreOffice left behind by a faxhub that died without Close is
// killed, and its directory removed, by the next converter on the same
// directory.
func TestOfficeWarmReapsAnotherProcessesLeftovers(t *testing.T) {
	t.Parallel()
	c, pid := warmedUp(t, Options{MaxConcurrent: 1})
	w := <-c.pool.idle
	dir := w.dir
	c.pool.put(w)
	// Its faxhub, as far as the directory says, is a process that has
	// exited.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %d\n", dead.Process.Pid, pid), 0o600); err != nil {
		t.Fatal(err)
	}
	New(Options{MaxConcurrent: 1, TempDir: c.opts.TempDir})
	waitGone(t, pid)
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead worker's directory is still there: %v", err)
	}
}

// newConverter is New with the converter closed when the test ends, so that
// no warm LibreOffice outlives it.
func newConverter(t testing.TB, opts Options) *Converter {
	t.Helper()
	c := New(opts)
	t.Cleanup(func() { c.Close() })
	return c
}
