//go:build bench

package bench

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is Linux's USER_HZ, the unit of /proc/PID/stat's utime and
// stime (100 on every Linux this runs on; sysconf is not in the standard
// library).
const clockTicks = 100

// procCPU is the CPU time (user + system) process pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after its closing one start at field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] { // utime and stime, fields 14 and 15
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// postgresCPU is the CPU time of every process named postgres, by pid: the
// server's backends of this run among them, whose pids are known only
// later (pg_stat_activity at the end of a phase).
func postgresCPU() map[int]time.Duration {
	out := map[int]time.Duration{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		if c, err := procCPU(pid); err == nil {
			out[pid] = c
		}
	}
	return out
}

// backendPIDs lists the server processes of the connections named app
// (the application_name of a replica's DSN).
func backendPIDs(ctx context.Context, db *sql.DB, app string) ([]int, error) {
	rows, err := db.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		return nil, fmt.Errorf("list backends of %s: %w", app, err)
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		pids = append(pids, pid)
	}
	return pids, rows.Err()
}

// cpuShares samples the CPU time of the serves and of PostgreSQL's
// processes before a phase; done, after it, says what share of the
// machine's CPUs each serve and its backends used over the phase.
type cpuShares struct {
	start  time.Time
	serves []int
	before []time.Duration
	pg     map[int]time.Duration
	// self is this process's CPU time: the load's clients.
	self time.Duration
}

func startCPUShares(serves []int) (*cpuShares, error) {
	self, err := procCPU(os.Getpid())
	if err != nil {
		return nil, err
	}
	c := &cpuShares{start: time.Now(), serves: serves, pg: postgresCPU(), self: self}
	for _, pid := range serves {
		t, err := procCPU(pid)
		if err != nil {
			return nil, err
		}
		c.before = append(c.before, t)
	}
	return c, nil
}

// done returns each serve's share and the share of its backends (named
// apps[i]) of the machine's CPU time over the phase, and the clients'
// (this process), in percent: 100 is
// both CPUs busy the whole time. A backend that closed during the phase
// is missed (the pools keep theirs open).
func (c *cpuShares) done(ctx context.Context, db *sql.DB, apps []string, cpus int) (serve, backends []float64, clients float64, err error) {
	wall := time.Since(c.start)
	total := float64(wall) * float64(cpus)
	self, err := procCPU(os.Getpid())
	if err != nil {
		return nil, nil, 0, err
	}
	clients = 100 * float64(self-c.self) / total
	for i, pid := range c.serves {
		t, err := procCPU(pid)
		if err != nil {
			return nil, nil, 0, err
		}
		serve = append(serve, 100*float64(t-c.before[i])/total)
		pids, err := backendPIDs(ctx, db, apps[i])
		if err != nil {
			return nil, nil, 0, err
		}
		var sum time.Duration
		for _, p := range pids {
			t, err := procCPU(p)
			if err != nil {
				continue // gone since
			}
			sum += t - c.pg[p] // zero before: started during the phase
		}
		backends = append(backends, 100*float64(sum)/total)
	}
	return serve, backends, clients, nil
}
