//go:build bench

// Package bench is faxhub's benchmark suite (`make bench`). Every figure is
// compared with a baseline measured in the same run on the same machine,
// so the ratios mean something on any hardware. Nothing here fails for
// being slow: a benchmark fails only on a real error (a non-200 response,
// a fax that was not delivered, a server that did not start). The
// results are printed as a table and written to conformance/out/bench.json.
package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// result is one row of the final table.
type result struct {
	Name     string   `json:"name"`
	Unit     string   `json:"unit"`
	Faxhub   *float64 `json:"faxhub"`
	Baseline *float64 `json:"baseline,omitempty"`
	Ratio    *float64 `json:"ratio,omitempty"`
	// Target is the goal in words ("ratio ≥ 0.5", "≤ 32 MB"); Status is
	// "meets", "below", "info" (no target) or "error".
	Target string `json:"target"`
	Status string `json:"status"`
	Note   string `json:"note,omitempty"`

	// digits is how many decimals the figures are printed with.
	digits int
}

// target kinds.
type goal struct {
	text  string
	check func(r *result) bool
}

func ratioAtLeast(x float64) goal {
	return goal{fmt.Sprintf("ratio ≥ %g", x), func(r *result) bool { return r.Ratio != nil && *r.Ratio >= x }}
}

// ratioAtMost is for figures where less is better (latencies).
func ratioAtMost(x float64) goal {
	return goal{fmt.Sprintf("ratio ≤ %g", x), func(r *result) bool { return r.Ratio != nil && *r.Ratio <= x }}
}

func atLeast(x float64, unit string) goal {
	return goal{fmt.Sprintf("≥ %s %s", group(x, 0), unit), func(r *result) bool { return r.Faxhub != nil && *r.Faxhub >= x }}
}

func atMost(x float64, unit string) goal {
	return goal{fmt.Sprintf("≤ %s %s", group(x, 0), unit), func(r *result) bool { return r.Faxhub != nil && *r.Faxhub <= x }}
}

func noTarget() goal { return goal{text: "none", check: nil} }

// report collects rows from the subtests.
type report struct {
	mu   sync.Mutex
	rows []result
}

// add records a figure with an optional baseline (NaN for none).
func (rep *report) add(name, unit string, faxhub, baseline float64, g goal, digits int, note string) {
	r := result{Name: name, Unit: unit, Faxhub: ptr(faxhub), Target: g.text, Note: note, digits: digits}
	if !math.IsNaN(baseline) {
		r.Baseline = ptr(baseline)
		if baseline > 0 {
			r.Ratio = ptr(faxhub / baseline)
		}
	}
	switch {
	case g.check == nil:
		r.Status = "info"
	case g.check(&r):
		r.Status = "meets"
	default:
		r.Status = "below"
	}
	rep.mu.Lock()
	rep.rows = append(rep.rows, r)
	rep.mu.Unlock()
}

// figure is the faxhub figure of the row named name, if it was measured.
func (rep *report) figure(name string) (float64, bool) {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	for _, r := range rep.rows {
		if r.Name == name && r.Faxhub != nil {
			return *r.Faxhub, true
		}
	}
	return 0, false
}

func (rep *report) failed(name string) {
	rep.mu.Lock()
	rep.rows = append(rep.rows, result{Name: name, Status: "error", Target: "-", Note: "the benchmark failed; see the test log above"})
	rep.mu.Unlock()
}

// skipped records a benchmark that could not run here.
func (rep *report) skipped(name, why string) {
	rep.mu.Lock()
	rep.rows = append(rep.rows, result{Name: name, Status: "skipped", Target: "-", Note: why})
	rep.mu.Unlock()
}

func ptr(f float64) *float64 { return &f }

// nan is the baseline of a figure that has none.
var nan = math.NaN()

// TestBench runs every benchmark, then prints the table and writes the JSON.
func TestBench(t *testing.T) {
	rep := &report{}
	started := time.Now()
	run := func(name string, f func(t *testing.T, rep *report)) {
		if !t.Run(name, func(t *testing.T) { f(t, rep) }) {
			rep.failed(name)
		}
	}
	run("disk", benchDisk)
	run("send", benchSendAndGet)
	run("upload", benchUpload)
	run("delivery-sqlite", benchDeliverySQLite)
	run("delivery-postgres", benchDeliveryPostgres)
	run("queue-latency", benchQueueLatency)
	run("sendpg", benchSendPostgres)
	run("sendpg-floor", benchSendFloorPostgres)
	run("pg-count", benchPGCount)
	run("start", benchStart)
	run("mcp", benchMCP)
	run("agents", benchAgentExchange)
	run("a2a", benchA2A)
	run("hostagent", benchHostAgentExecute)
	run("machine", benchMachine)
	run("inbound", benchInbound)
	run("office", benchOffice)
	run("telnyx", benchTelnyxWebhooks)
	run("webhooks", benchWebhooks)
	run("soak", benchSoak)

	table := rep.render(time.Since(started))
	fmt.Print(table)
	if err := rep.writeJSON(time.Since(started)); err != nil {
		t.Errorf("write bench.json: %v", err)
	}
}

// render formats the table and its notes.
func (rep *report) render(total time.Duration) string {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	head := []string{"benchmark", "faxhub", "baseline", "ratio", "target", "result"}
	rows := [][]string{head}
	var notes []string
	for _, r := range rep.rows {
		fig := func(p *float64) string {
			if p == nil {
				return "-"
			}
			return group(*p, r.digits) + " " + r.Unit
		}
		ratio := "-"
		if r.Ratio != nil {
			ratio = fmt.Sprintf("%.2f", *r.Ratio)
		}
		name := r.Name
		if r.Note != "" {
			notes = append(notes, r.Note)
			name += fmt.Sprintf(" [%d]", len(notes))
		}
		rows = append(rows, []string{name, fig(r.Faxhub), fig(r.Baseline), ratio, r.Target, r.Status})
	}
	width := make([]int, len(head))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(row []string) {
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 || i == len(row)-1 || i == 4 {
				b.WriteString(c + pad) // text columns: left-aligned
			} else {
				b.WriteString(pad + c) // figures: right-aligned
			}
			if i < len(row)-1 {
				b.WriteString("  ")
			}
		}
		trimmed := strings.TrimRight(b.String(), " ")
		b.Reset()
		b.WriteString(trimmed + "\n")
	}
	rule := func() {
		n := 0
		for _, w := range width {
			n += w + 2
		}
		b.WriteString(strings.Repeat("─", n-2) + "\n")
	}
	meets, below, errs := 0, 0, 0
	for _, r := range rep.rows {
		switch r.Status {
		case "meets":
			meets++
		case "below":
			below++
		case "error":
			errs++
		}
	}
	fmt.Fprintf(&b, "\nfaxhub benchmarks — %s/%s, %d CPUs, %s, %s in all\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), total.Round(time.Second))
	rule()
	line(rows[0])
	rule()
	for _, row := range rows[1:] {
		line(row)
	}
	rule()
	fmt.Fprintf(&b, "%d meet their target, %d below, %d errors (slowness never fails the suite)\n", meets, below, errs)
	for i, n := range notes {
		fmt.Fprintf(&b, "[%d] %s\n", i+1, n)
	}
	b.WriteString("\n")
	return b.String()
}

func (rep *report) writeJSON(total time.Duration) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, "conformance", "out")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rep.mu.Lock()
	doc := struct {
		GeneratedAt time.Time `json:"generatedAt"`
		GoVersion   string    `json:"goVersion"`
		OS          string    `json:"os"`
		Arch        string    `json:"arch"`
		CPUs        int       `json:"cpus"`
		Seconds     float64   `json:"seconds"`
		Results     []result  `json:"results"`
	}{time.Now().UTC(), runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), math.Round(total.Seconds()*10) / 10, rep.rows}
	b, err := json.MarshalIndent(doc, "", "  ")
	rep.mu.Unlock()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "bench.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", path)
	return nil
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// group formats f with digits decimals and thousands separators.
func group(f float64, digits int) string {
	s := fmt.Sprintf("%.*f", digits, f)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out
}
