//go:build bench

package bench

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faxhub/faxhub/conformance/storetest"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/internal/testenv"
)

// pgCounter is a TCP proxy in front of PostgreSQL that counts what its
// clients send, so the bench can say how many statements and round trips a
// send and a delivery cost without pg_stat_statements (not installed here)
// and without a hook in the store. It reads the frontend protocol's message
// headers: a simple Query ('Q') is one statement and one round trip; in the
// extended protocol an Execute ('E') is one statement and a Sync ('S') ends
// one round trip (pgx sends Parse/Bind/Execute/Sync together, and a batch
// several Executes before one Sync). BEGIN, COMMIT and SAVEPOINTs count as
// statements too. The proxy adds a hop to every round trip, so it is used
// only for counting, never in a timed phase.
type pgCounter struct {
	ln     net.Listener
	target string
	// statements and roundTrips since the last take.
	statements, roundTrips atomic.Int64
	wg                     sync.WaitGroup
	// trace, if not nil, is given each statement's text
	// (FAXHUB_BENCH_PGTRACE=1: to see where the round trips go).
	trace func(string)
}

// newPGCounter starts a counting proxy to pgURL's host and returns it and
// pgURL pointing at the proxy. pgURL must disable TLS (the proxy reads the
// plain protocol).
func newPGCounter(t *testing.T, pgURL string, trace func(string)) (*pgCounter, string) {
	t.Helper()
	u, err := url.Parse(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	if u.Query().Get("sslmode") != "disable" {
		t.Fatalf("counting proxy: %s must set sslmode=disable", pgURL)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &pgCounter{ln: ln, target: target, trace: trace}
	c.wg.Go(c.accept)
	t.Cleanup(func() {
		ln.Close()
		c.wg.Wait()
	})
	u.Host = ln.Addr().String()
	return c, u.String()
}

// take returns the counts since the last take and starts again from zero.
func (c *pgCounter) take() (statements, roundTrips int64) {
	return c.statements.Swap(0), c.roundTrips.Swap(0)
}

func (c *pgCounter) accept() {
	for {
		client, err := c.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", c.target)
		if err != nil {
			client.Close()
			continue
		}
		c.wg.Go(func() {
			_, _ = io.Copy(client, server)
			client.Close()
		})
		c.wg.Go(func() {
			_ = c.forward(server, client)
			server.Close()
		})
	}
}

// forward copies the client's messages to the server, counting them.
func (c *pgCounter) forward(server io.Writer, client io.Reader) error {
	r := bufio.NewReaderSize(client, 64<<10)
	w := bufio.NewWriterSize(server, 64<<10)
	var hdr [5]byte
	names := map[string]string{} // prepared statements, for trace
	// The startup message has no type byte.
	if _, err := io.ReadFull(r, hdr[1:]); err != nil {
		return err
	}
	n := int64(binary.BigEndian.Uint32(hdr[1:]))
	if _, err := w.Write(hdr[1:]); err != nil {
		return err
	}
	if _, err := io.CopyN(w, r, n-4); err != nil {
		return err
	}
	for {
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return w.Flush()
			}
			return err
		}
		switch hdr[0] {
		case 'Q':
			c.statements.Add(1)
			c.roundTrips.Add(1)
		case 'E':
			c.statements.Add(1)
		case 'S':
			c.roundTrips.Add(1)
		}
		n := int64(binary.BigEndian.Uint32(hdr[1:]))
		if n < 4 {
			return fmt.Errorf("counting proxy: message %q of length %d", hdr[0], n)
		}
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		if c.trace != nil && (hdr[0] == 'P' || hdr[0] == 'B' || hdr[0] == 'Q') {
			body := make([]byte, n-4)
			if _, err := io.ReadFull(r, body); err != nil {
				return err
			}
			if _, err := w.Write(body); err != nil {
				return err
			}
			parts := bytes.SplitN(body, []byte{0}, 3)
			switch hdr[0] {
			case 'P':
				names[string(parts[0])] = string(parts[1])
			case 'B':
				c.trace("E " + names[string(parts[1])])
			case 'Q':
				c.trace("Q " + string(parts[0]))
			}
			continue
		}
		if _, err := io.CopyN(w, r, n-4); err != nil {
			return err
		}
	}
}

// pgCountFaxes is how many sends and deliveries the counts are averaged
// over.
const pgCountFaxes = 200

// benchPGCount counts the statements and round trips a send and a
// delivery cost on PostgreSQL, through the counting proxy: pgCountFaxes
// sends one after another (faxes.Service.Send, the credit path), then
// their deliveries by a queue with default options until every fax is
// delivered (River's fetches, completions and polls during that time
// included, and the provider_outcome job the simulated provider schedules
// for each).
func benchPGCount(t *testing.T, rep *report) {
	pgURL := os.Getenv(storetest.EnvPostgresURL)
	if pgURL == "" {
		rep.skipped("pg round trips", storetest.EnvPostgresURL+" is not set (make bench sets it)")
		t.Skip(storetest.EnvPostgresURL + " is not set")
	}
	ctx := t.Context()
	var trace func(string)
	if os.Getenv("FAXHUB_BENCH_PGTRACE") == "1" {
		var mu sync.Mutex
		trace = func(s string) { mu.Lock(); t.Log(strings.Join(strings.Fields(s), " ")); mu.Unlock() }
	}
	counter, proxied := newPGCounter(t, pgURL, trace)
	env := benchEnv(t, proxied, nil)
	p := env.Principal(t, env.KeyATest)
	doc := benchDocument(t, env, p)

	counter.take()
	var first string
	for i := range pgCountFaxes {
		fax, _, err := env.Svc.Faxes.Send(ctx, p, fmt.Sprintf("count-%d", i), faxes.SendRequest{To: "+12125550100", DocumentID: doc})
		if err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = fax.ID
		}
	}
	sendStmts, sendRTs := counter.take()
	if trace != nil {
		// One delivery alone, outside River, to read its statements in order.
		trace("--- faxes.Service.Deliver of one fax, alone")
		if err := env.Svc.Faxes.Deliver(ctx, first); err != nil {
			t.Fatal(err)
		}
		trace("--- end of Deliver")
		counter.take()
	}

	db := env.DB.SQL()
	stop := startQueue(t, ctx, env, env.Svc.Faxes.Deliver)
	deadline := time.Now().Add(time.Minute)
	for {
		var delivered int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM faxes WHERE status = 'delivered'").Scan(&delivered); err != nil {
			t.Fatal(err)
		}
		n, err := testenv.PendingJobs(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if delivered == pgCountFaxes && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d faxes delivered after a minute", delivered, pgCountFaxes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	// The waiting loop's own two statements a turn are in the count; at
	// 50 ms a turn they are a few per delivery at most, and said so.
	delStmts, delRTs := counter.take()
	per := func(n int64) float64 { return float64(n) / pgCountFaxes }
	t.Logf("PostgreSQL per send: %.1f statements, %.1f round trips; per delivery: %.1f statements, %.1f round trips",
		per(sendStmts), per(sendRTs), per(delStmts), per(delRTs))
	rep.add("pg       statements per send (faxes.Service.Send, credits)", "statements", per(sendStmts), nan, noTarget(), 1,
		fmt.Sprintf("pg round trips: counted by a proxy in front of PostgreSQL that reads the frontend protocol (a Query is a statement and a round trip; "+
			"an Execute a statement, a Sync the end of a round trip); %d sends one after another, then their deliveries by a queue with default options "+
			"(River's fetches, completions and idle polls, the provider_outcome jobs, and the bench's own wait loop included).", pgCountFaxes))
	rep.add("pg       round trips per send", "round trips", per(sendRTs), nan, noTarget(), 1, "")
	rep.add("pg       statements per delivery (queued → delivered)", "statements", per(delStmts), nan, noTarget(), 1, "")
	rep.add("pg       round trips per delivery", "round trips", per(delRTs), nan, noTarget(), 1, "")
}
