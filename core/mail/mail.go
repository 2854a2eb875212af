// Package mail implements core.Mailer: a dev mailbox that keeps recent
// messages in memory for the console's mailbox page, and SMTP.
package mail

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Message is a mail the dev mailbox received.
type Message struct {
	core.Mail
	SentAt time.Time
}

// Mailbox is the development Mailer: nothing leaves the process. Messages
// carry one-time links, so the log records only that a mail was sent.
type Mailbox struct {
	log  *slog.Logger
	keep int

	mu   sync.Mutex
	msgs []Message // newest first
}

// NewMailbox keeps the last keep messages (50 if keep <= 0).
func NewMailbox(log *slog.Logger, keep int) *Mailbox {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if keep <= 0 {
		keep = 50
	}
	return &Mailbox{log: log, keep: keep}
}

// Send stores m.
func (b *Mailbox) Send(ctx context.Context, m core.Mail) error {
	if err := check(m); err != nil {
		return err
	}
	b.mu.Lock()
	b.msgs = append([]Message{{Mail: m, SentAt: time.Now().UTC()}}, b.msgs...)
	if len(b.msgs) > b.keep {
		b.msgs = b.msgs[:b.keep]
	}
	b.mu.Unlock()
	b.log.InfoContext(ctx, "mail delivered to the dev mailbox", "to", m.To, "subject", m.Subject)
	return nil
}

// Messages returns the kept messages, newest first.
func (b *Mailbox) Messages() []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Message(nil), b.msgs...)
}

// check refuses what would let a caller inject headers.
func check(m core.Mail) error {
	if strings.ContainsAny(m.To, "\r\n") || strings.ContainsAny(m.Subject, "\r\n") {
		return errors.New("mail: line break in a header")
	}
	if _, err := mail.ParseAddress(m.To); err != nil {
		return fmt.Errorf("mail: recipient: %w", err)
	}
	return nil
}

// SMTPConfig is where SMTP mail goes.
type SMTPConfig struct {
	// Addr is host:port of the submission server.
	Addr     string
	Username string
	Password string
	From     string // an address, optionally with a display name
	// TLS is used for STARTTLS; nil means verify the server's certificate
	// for its host name against the system roots.
	TLS *tls.Config
	// Timeout bounds one whole delivery (default 30 s).
	Timeout time.Duration
}

// ParseSMTPURL reads FAXHUB_SMTP_URL:
// smtp://user:pass@host:587?from=faxhub%20%3Cno-reply@example.com%3E.
// STARTTLS is always required: credentials and one-time links never cross
// the network in clear text.
func ParseSMTPURL(raw string) (SMTPConfig, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url's error would quote the password.
		return SMTPConfig{}, errors.New("smtp url: not a URL")
	}
	if u.Scheme != "smtp" {
		return SMTPConfig{}, fmt.Errorf("smtp url: scheme must be smtp, got %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return SMTPConfig{}, errors.New("smtp url: no host")
	}
	c := SMTPConfig{Addr: u.Host, From: u.Query().Get("from")}
	if u.Port() == "" {
		c.Addr = net.JoinHostPort(u.Hostname(), "587")
	}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if c.From == "" {
		return SMTPConfig{}, errors.New("smtp url: the from parameter is required")
	}
	if _, err := mail.ParseAddress(c.From); err != nil {
		return SMTPConfig{}, fmt.Errorf("smtp url: from: %w", err)
	}
	return c, nil
}

// SMTP sends mail through a submission server with STARTTLS.
type SMTP struct {
	cfg SMTPConfig
	log *slog.Logger
}

// NewSMTP returns an SMTP Mailer.
func NewSMTP(cfg SMTPConfig, log *slog.Logger) *SMTP {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &SMTP{cfg: cfg, log: log}
}

// Send delivers m in one SMTP session.
func (s *SMTP) Send(ctx context.Context, m core.Mail) error {
	if err := check(m); err != nil {
		return err
	}
	from, err := mail.ParseAddress(s.cfg.From)
	if err != nil {
		return fmt.Errorf("smtp: from: %w", err)
	}
	body, err := compose(from, m, time.Now())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	if err := s.deliver(ctx, from.Address, m.To, body); err != nil {
		return fmt.Errorf("smtp: send to %s: %w", s.cfg.Addr, err)
	}
	s.log.InfoContext(ctx, "mail sent", "to", m.To, "subject", m.Subject)
	return nil
}

func (s *SMTP) deliver(ctx context.Context, from, to string, body []byte) error {
	host, _, err := net.SplitHostPort(s.cfg.Addr)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	// net/smtp has no context: the deadline bounds every read and write.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	if err := c.Hello("localhost"); err != nil {
		return err
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return errors.New("the server does not offer STARTTLS")
	}
	tc := s.cfg.TLS
	if tc == nil {
		tc = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	if err := c.StartTLS(tc); err != nil {
		return err
	}
	if s.cfg.Username != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("the server does not offer AUTH")
		}
		if err := c.Auth(smtp.PlainAuth("", s.cfg.Username, s.cfg.Password, host)); err != nil {
			return err
		}
	}
	if err := c.Mail(from); err != nil {
		return err
	}
	if err := c.Rcpt(to); err != nil {
		return err
	}
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return c.Quit()
}

// compose renders a plain-text UTF-8 message.
func compose(from *mail.Address, m core.Mail, now time.Time) ([]byte, error) {
	var b bytes.Buffer
	domain := from.Address[strings.LastIndexByte(from.Address, '@')+1:]
	hdr := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	hdr("From", from.String())
	hdr("To", m.To)
	hdr("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	hdr("Date", now.Format(time.RFC1123Z))
	hdr("Message-ID", "<"+core.RandomString(16)+"@"+domain+">")
	hdr("MIME-Version", "1.0")
	hdr("Content-Type", "text/plain; charset=utf-8")
	hdr("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	text := strings.ReplaceAll(strings.ReplaceAll(m.Text, "\r\n", "\n"), "\n", "\r\n")
	if _, err := qp.Write([]byte(text)); err != nil {
		return nil, fmt.Errorf("encode mail: %w", err)
	}
	if err := qp.Close(); err != nil {
		return nil, fmt.Errorf("encode mail: %w", err)
	}
	return b.Bytes(), nil
}
