// Package httpsender is webhooks' Sender: one POST per attempt through
// core/safehttp's client, so an endpoint's host is checked against the
// address policy at dial time (a name that resolves to a private address
// is refused, whenever it resolves so), redirects are never followed, and
// at most a few KiB of the answer are read.
package httpsender

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/faxhub/faxhub/core/egress"
	"github.com/faxhub/faxhub/core/safehttp"
	"github.com/faxhub/faxhub/core/webhooks"
)

// MaxRead is how much of an answer is read: enough for the log's excerpt;
// the rest is never downloaded (a huge answer costs its first bytes).
const MaxRead = 4 << 10

// Options configure the sender.
type Options struct {
	Policy egress.Policy
	// Timeout bounds one attempt (webhooks.Config.AttemptTimeout).
	Timeout time.Duration
	// Resolver resolves endpoint hosts (tests: internal/dnstest).
	Resolver *net.Resolver
	// TLS replaces the system roots (tests: an httptest TLS server's).
	TLS *tls.Config
	// MaxIdleConnsPerHost keeps connections to an endpoint open between
	// attempts (webhooks.Config.MaxInFlightPerEndpoint: as many as may be
	// in flight to it).
	MaxIdleConnsPerHost int
}

// Sender posts attempts.
type Sender struct {
	client *http.Client
}

var _ webhooks.Sender = (*Sender)(nil)

// New returns a sender.
func New(o Options) *Sender {
	c := safehttp.NewClient(safehttp.Options{Policy: o.Policy, Timeout: o.Timeout, Resolver: o.Resolver, MaxIdleConnsPerHost: o.MaxIdleConnsPerHost})
	if o.TLS != nil {
		c.Transport.(*http.Transport).TLSClientConfig = o.TLS
	}
	return &Sender{client: c}
}

// Send posts r and reads at most MaxRead bytes of the answer.
func (s *Sender) Send(ctx context.Context, r *webhooks.Request) (*webhooks.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return nil, errors.New("the endpoint URL cannot be requested")
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, describe(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxRead))
	out := &webhooks.Response{StatusCode: resp.StatusCode, Body: b, Location: resp.Header.Get("Location"), Duration: time.Since(start)}
	if err != nil && len(b) == 0 && !errors.Is(err, io.EOF) {
		// The status came; a body cut short changes nothing about it.
		out.Body = []byte("(the answer's body could not be read: " + describe(err).Error() + ")")
	}
	return out, nil
}

// describe turns a transport error into a sentence for the owner's log:
// what went wrong, without repeating the URL (the log shows it) and
// without the addresses a name resolved to inside the operator's network.
func describe(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.Is(err, egress.ErrForbiddenAddress):
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return fmt.Errorf("refused: the endpoint's host resolves to %s, which this server does not deliver to", trimForbidden(err))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return errors.New("timed out: no complete answer within the attempt's time limit")
	case errors.Is(err, context.Canceled):
		return errors.New("canceled")
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return fmt.Errorf("the host %s does not resolve", dnsErr.Name)
		}
		return fmt.Errorf("the host %s could not be resolved", dnsErr.Name)
	case errors.Is(err, syscall.ECONNREFUSED):
		return errors.New("connection refused")
	case errors.Is(err, syscall.ECONNRESET):
		return errors.New("connection reset by the endpoint")
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalid):
		return fmt.Errorf("TLS: the endpoint's certificate is not valid: %v", err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("the endpoint closed the connection without an answer")
	}
	return fmt.Errorf("no answer: %v", err)
}

func trimForbidden(err error) string {
	msg := err.Error()
	prefix := egress.ErrForbiddenAddress.Error() + ": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return "an address that is not allowed"
}
