package convert

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile, in a worker's directory, names the faxhub process that started
// the worker and the worker's process group: "<faxhub pid> <pgid>".
const ownerFile = "owner"

func writeOwner(dir string, pgid int) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), fmt.Appendf(nil, "%d %d\n", os.Getpid(), pgid), 0o600)
}

// reapStaleOffices kills the warm LibreOffices a faxhub that died without
// Close (SIGKILL, a crash) left in tempDir, and removes their directories:
// they run in process groups of their own, so nothing else ends them. A
// group is killed only while a process of it still names the worker's
// profile on its command line, so a reused process id is never hit.
func reapStaleOffices(tempDir string) {
	if tempDir == "" {
		tempDir = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(tempDir, "faxhub-office-*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // being started, or not ours
		}
		var owner, pgid int
		if _, err := fmt.Sscan(string(b), &owner, &pgid); err != nil || owner == os.Getpid() {
			continue
		}
		if err := syscall.Kill(owner, 0); err == nil || !errors.Is(err, syscall.ESRCH) {
			continue // its faxhub still runs
		}
		if pgid > 0 && groupRuns(pgid, filepath.Join(dir, "profile")) {
			syscall.Kill(-pgid, syscall.SIGKILL)
		}
		os.RemoveAll(dir)
	}
}

// groupRuns reports whether a process of group pgid has mark on its
// command line.
func groupRuns(pgid int, mark string) bool {
	for _, pid := range groupPIDs(pgid) {
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if strings.Contains(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})), mark) {
			return true
		}
	}
	return false
}
