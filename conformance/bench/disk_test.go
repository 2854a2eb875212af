//go:build bench

package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const (
	diskSyncs = 200
	diskFiles = 500
)

// benchDisk measures the two file-system costs that move other rows from
// one machine to the next, in the file system the benchmarks' data
// directories live in (t.TempDir): a small write made durable, which
// every PostgreSQL commit waits for (SQLite's commits do not wait for
// one: synchronous=NORMAL in WAL mode), and a file created, written and
// renamed into a new directory, which every delivery does when it stores
// the document as faxed (the blob store's write, on either database).
// They are reported, with no target: they are the machine's, and a row
// that moved between two runs can be read against them.
func benchDisk(t *testing.T, rep *report) {
	dir := t.TempDir()
	syncs, err := timeSyncs(filepath.Join(dir, "sync"), diskSyncs)
	if err != nil {
		t.Fatalf("write + fsync: %v", err)
	}
	files, err := timeFiles(filepath.Join(dir, "files"), diskFiles)
	if err != nil {
		t.Fatalf("file create + rename: %v", err)
	}
	t.Logf("disk: write+fsync p50 %s p99 %s; create+write+rename p50 %s p99 %s",
		durationPercentile(syncs, 0.5), durationPercentile(syncs, 0.99), durationPercentile(files, 0.5), durationPercentile(files, 0.99))
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	const syncNote = "disk: 8 KiB written at the end of one file and made durable (fsync), one after another, in the file system of the benchmarks' data " +
		"directories: the wait every PostgreSQL commit pays (its WAL flush); SQLite's commits do not wait for one. No target: it is the machine's; " +
		"rows with commits on PostgreSQL move with it between machines."
	rep.add(fmt.Sprintf("disk     8 KiB write + fsync, p50 of %d", diskSyncs), "µs", us(durationPercentile(syncs, 0.5)), nan, noTarget(), 0, syncNote)
	rep.add(fmt.Sprintf("disk     8 KiB write + fsync, p99 of %d", diskSyncs), "µs", us(durationPercentile(syncs, 0.99)), nan, noTarget(), 0, "")
	const fileNote = "disk: a temporary file created in a new directory, 16 KiB written, closed and renamed, as the blob store writes a document; " +
		"every delivery stores the document as faxed this way, on either database, so the delivery rows move with it between machines " +
		"(and between runs, as the file system's state changes)."
	rep.add(fmt.Sprintf("disk     file created, written, renamed, p50 of %d", diskFiles), "µs", us(durationPercentile(files, 0.5)), nan, noTarget(), 0, fileNote)
	rep.add(fmt.Sprintf("disk     file created, written, renamed, p99 of %d", diskFiles), "µs", us(durationPercentile(files, 0.99)), nan, noTarget(), 0, "")
}

// timeSyncs appends 8 KiB to one file n times, each made durable.
func timeSyncs(path string, n int) ([]time.Duration, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	block := bytes.Repeat([]byte{'w'}, 8<<10)
	out := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			return nil, err
		}
		if err := f.Sync(); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}

// timeFiles writes n files the way the blob store does: a directory for
// the key, a temporary file in it, the bytes, close, rename.
func timeFiles(dir string, n int) ([]time.Duration, error) {
	body := bytes.Repeat([]byte{'f'}, 16<<10)
	out := make([]time.Duration, 0, n)
	for i := range n {
		start := time.Now()
		d := filepath.Join(dir, fmt.Sprintf("doc-%d", i))
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		f, err := os.CreateTemp(d, "faxed-*.tmp")
		if err != nil {
			return nil, err
		}
		if _, err := f.Write(body); err != nil {
			f.Close()
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		if err := os.Rename(f.Name(), filepath.Join(d, "faxed")); err != nil {
			return nil, err
		}
		out = append(out, time.Since(start))
	}
	return out, nil
}
