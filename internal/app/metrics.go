package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// MetricsServer is the metrics listener StartMetrics started.
type MetricsServer struct {
	// Addr is the address it listens on (the port chosen when
	// MetricsAddr asked for port 0).
	Addr string
	srv  *http.Server
	done chan error
}

// Stop closes the listener, waiting for scrapes in flight until ctx ends.
func (s *MetricsServer) Stop(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// StartMetrics listens on Options.MetricsAddr and serves GET /metrics
// there and nothing else (404), through a router of its own (the same kind
// as the public one; `faxhub routes` lists its route on the metrics
// origin): the metrics are for the operator's scraper, not the public
// origins, which never serve them.
func (a *App) StartMetrics() (*MetricsServer, error) {
	if a.metrics == nil {
		return nil, errors.New("app: metrics are off (no MetricsAddr)")
	}
	ln, err := net.Listen("tcp", a.MetricsAddr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", a.MetricsAddr, err)
	}
	s := &MetricsServer{Addr: ln.Addr().String(), done: make(chan error, 1), srv: &http.Server{
		Handler:           a.metricsRouter,
		ReadHeaderTimeout: 10 * time.Second,
		// A scrape reads the database for at most
		// prometheus.DefaultSnapshotTimeout; the rest is formatting.
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 16 << 10,
	}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}
