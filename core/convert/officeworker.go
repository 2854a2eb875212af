package convert

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"
)

// officeWorker is one long-running LibreOffice (soffice.bin) that converts
// documents handed to it by short-lived `soffice --convert-to` clients.
//
// LibreOffice runs one process per profile: a second soffice started on the
// same -env:UserInstallation finds the first one's IPC pipe, passes its
// command line over it and waits until the first one has processed it. A
// --convert-to client therefore costs the launcher and a pipe round trip
// (about 0.15 s here) instead of a cold office start (about 1.5 s): the
// measurements are in docs/benchmarks.md (issue 32). The server is started
// with a hidden, empty keep-alive document, because LibreOffice terminates
// itself once a request leaves it with no open document.
//
// A worker converts one document at a time; the pool hands it to one slot.
// Documents live in per-conversion directories the client names and the
// converter deletes: the worker's profile and temp directory never receive a
// document (conversions are not added to the recent-documents list).
type officeWorker struct {
	bin string
	// dir holds the profile, the keep-alive document and the server's TMPDIR;
	// a fresh one per start, removed when the server stops.
	dir        string
	profileURL string
	pipe       string
	cmd        *exec.Cmd
	// exited is closed when the server process has exited.
	exited chan struct{}
	uses   int
}

// errNoWarmOffice says a warm LibreOffice could not be started (no IPC pipe
// appeared, or the process exited): the caller converts cold instead.
var errNoWarmOffice = errors.New("warm LibreOffice did not start")

// running reports whether the server is up.
func (w *officeWorker) running() bool {
	if w.cmd == nil {
		return false
	}
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// start launches the server with bin and waits until its IPC pipe accepts
// connections, ctx's deadline at the latest.
func (w *officeWorker) start(ctx context.Context, bin, tempDir string) error {
	dir, err := os.MkdirTemp(tempDir, "faxhub-office-")
	if err != nil {
		return fmt.Errorf("create office worker directory: %w", err)
	}
	profile, tmp, keep := filepath.Join(dir, "profile"), filepath.Join(dir, "tmp"), filepath.Join(dir, "keepalive.txt")
	for _, d := range []string{profile, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return fmt.Errorf("create office worker directory: %w", err)
		}
	}
	// Not empty: LibreOffice does not keep an empty file open.
	if err := os.WriteFile(keep, []byte("\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("create office worker directory: %w", err)
	}
	w.bin, w.dir, w.uses = bin, dir, 0
	w.profileURL = (&url.URL{Scheme: "file", Path: profile}).String()
	w.pipe = officePipePath(w.profileURL)
	cmd := exec.Command(bin,
		"--headless", "--invisible", "--norestore", "--nologo", "--nolockcheck",
		"-env:UserInstallation="+w.profileURL, keep)
	cmd.Dir = dir
	// Its own process group, so that stop kills soffice.bin with the
	// launcher, even when a document has it hung.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("start LibreOffice: %w", err)
	}
	w.cmd, w.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		close(exited)
	}(w.exited)
	// A faxhub that dies without Close leaves the server running; the next
	// one on this directory reaps it (officestale.go).
	if err := writeOwner(dir, cmd.Process.Pid); err != nil {
		w.stop()
		return err
	}
	if err := w.waitReady(ctx); err != nil {
		w.stop()
		return err
	}
	return nil
}

// waitReady polls until the server has opened its keep-alive document
// (LibreOffice's lock file for it exists) and its IPC pipe accepts
// connections. Before the pipe, a client would start an office of its own
// on the profile instead of handing the work over; before the document,
// the server would handle the client's request and, left with no open
// document, terminate.
func (w *officeWorker) waitReady(ctx context.Context) error {
	lock := filepath.Join(w.dir, ".~lock.keepalive.txt#")
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(lock); err == nil {
			if c, err := net.Dial("unix", w.pipe); err == nil {
				c.Close()
				return nil
			}
		}
		select {
		case <-w.exited:
			return fmt.Errorf("%w: it exited", errNoWarmOffice)
		case <-ctx.Done():
			return fmt.Errorf("%w: no keep-alive document or no IPC pipe at %s: %w", errNoWarmOffice, w.pipe, ctx.Err())
		case <-tick.C:
		}
	}
}

// stop kills the server's whole process group and removes its directory
// and pipe. It is safe on a stopped worker.
func (w *officeWorker) stop() {
	if w.cmd == nil {
		return
	}
	// The group outlives the launcher only while something in it runs;
	// waiting for exited first would let a hung soffice.bin live on.
	syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.exited
	os.Remove(w.pipe)
	os.RemoveAll(w.dir)
	w.cmd = nil
}

// rss is the resident memory of the server's process group, in bytes.
func (w *officeWorker) rss() int64 {
	if !w.running() {
		return 0
	}
	return groupRSS(w.cmd.Process.Pid)
}

// officePipePath is where LibreOffice listens for a second instance on the
// profile at profileURL: osl's pipe directory (/tmp, else /var/tmp), then
// "OSL_PIPE_<uid>_SingleOfficeIPC_" and the MD5 of the profile URL in
// UTF-16LE, each byte in hex without padding (desktop/source/app/
// officeipcthread.cxx). Should a LibreOffice
// name it otherwise, waitReady times out and conversions run cold.
func officePipePath(profileURL string) string {
	u := utf16.Encode([]rune(profileURL))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	sum := md5.Sum(b)
	// Each byte in hex without a leading zero, as LibreOffice writes it.
	var name strings.Builder
	for _, x := range sum {
		name.WriteString(strconv.FormatUint(uint64(x), 16))
	}
	dir := "/tmp"
	if syscall.Access(dir, 2) != nil {
		dir = "/var/tmp"
	}
	return filepath.Join(dir, "OSL_PIPE_"+strconv.Itoa(os.Getuid())+"_SingleOfficeIPC_"+name.String())
}

// groupRSS sums VmRSS over the processes of process group pgid (Linux /proc;
// 0 elsewhere).
func groupRSS(pgid int) int64 {
	var total int64
	for _, pid := range groupPIDs(pgid) {
		total += procRSS(pid)
	}
	return total
}

// groupPIDs lists the processes of group pgid (Linux /proc; none
// elsewhere).
func groupPIDs(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

func procRSS(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
