package mail

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"io"
	"math/big"
	"mime/quotedprintable"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
)

func TestMailboxKeepsRecentNewestFirst(t *testing.T) {
	b := NewMailbox(nil, 2)
	for _, s := range []string{"one", "two", "three"} {
		if err := b.Send(t.Context(), core.Mail{To: "a@example.com", Subject: s, Text: "body " + s}); err != nil {
			t.Fatal(err)
		}
	}
	got := b.Messages()
	if len(got) != 2 || got[0].Subject != "three" || got[1].Subject != "two" {
		t.Fatalf("messages = %+v", got)
	}
	if err := b.Send(t.Context(), core.Mail{To: "a@example.com", Subject: "x\r\nBcc: evil@example.com"}); err == nil {
		t.Fatal("a subject with a line break was accepted")
	}
}

func TestParseSMTPURL(t *testing.T) {
	c, err := ParseSMTPURL("smtp://user%40x:p%3Ass@mail.example.com?from=faxhub%20%3Cno-reply@example.com%3E")
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "mail.example.com:587" || c.Username != "user@x" || c.Password != "p:ss" || c.From != "faxhub <no-reply@example.com>" {
		t.Fatalf("config = %+v", c)
	}
	for _, bad := range []string{"smtps://h?from=a@b.c", "smtp://h", "smtp://?from=a@b.c", "smtp://h?from=not-an-address", "::"} {
		if _, err := ParseSMTPURL(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
	if _, err := ParseSMTPURL("smtp://u:secret-pw@h:bad-port%zz"); err == nil || strings.Contains(err.Error(), "secret-pw") {
		t.Errorf("bad URL error %v (must not quote the password)", err)
	}
}

// smtpServer is a minimal submission server: EHLO, STARTTLS, AUTH PLAIN,
// one message per session.
type smtpServer struct {
	ln  net.Listener
	tls *tls.Config

	mu       sync.Mutex
	auth     string
	from, to string
	data     string
	tlsUsed  bool
}

func (s *smtpServer) serve(t *testing.T, offerTLS bool) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.session(t, c, offerTLS)
	}
}

func (s *smtpServer) session(t *testing.T, c net.Conn, offerTLS bool) {
	defer c.Close()
	tp := textproto.NewConn(c)
	tp.PrintfLine("220 test ESMTP")
	secure := false
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		cmd, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(cmd) {
		case "EHLO":
			tp.PrintfLine("250-test")
			if offerTLS && !secure {
				tp.PrintfLine("250-STARTTLS")
			}
			tp.PrintfLine("250 AUTH PLAIN")
		case "STARTTLS":
			tp.PrintfLine("220 go ahead")
			tc := tls.Server(c, s.tls)
			if err := tc.Handshake(); err != nil {
				t.Errorf("server handshake: %v", err)
				return
			}
			c, secure = tc, true
			tp = textproto.NewConn(tc)
			s.mu.Lock()
			s.tlsUsed = true
			s.mu.Unlock()
		case "AUTH":
			_, enc, _ := strings.Cut(arg, " ")
			dec, _ := base64.StdEncoding.DecodeString(enc)
			s.mu.Lock()
			s.auth = string(dec)
			s.mu.Unlock()
			tp.PrintfLine("235 ok")
		case "MAIL":
			s.mu.Lock()
			s.from = arg
			s.mu.Unlock()
			tp.PrintfLine("250 ok")
		case "RCPT":
			s.mu.Lock()
			s.to = arg
			s.mu.Unlock()
			tp.PrintfLine("250 ok")
		case "DATA":
			tp.PrintfLine("354 go")
			b, err := tp.ReadDotBytes()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.data = string(b)
			s.mu.Unlock()
			tp.PrintfLine("250 queued")
		case "QUIT":
			tp.PrintfLine("221 bye")
			return
		default:
			tp.PrintfLine("502 unknown")
		}
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func startServer(t *testing.T, offerTLS bool) (*smtpServer, *x509.CertPool) {
	cert, pool := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &smtpServer{ln: ln, tls: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go s.serve(t, offerTLS)
	return s, pool
}

func TestSMTPSendsWithSTARTTLS(t *testing.T) {
	srv, pool := startServer(t, true)
	cfg, err := ParseSMTPURL("smtp://ada:s3cret@" + srv.ln.Addr().String() + "?from=faxhub%20%3Cno-reply@faxhub.test%3E")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	m := NewSMTP(cfg, nil)
	link := "https://faxhub.test/verify?token=abc"
	err = m.Send(t.Context(), core.Mail{To: "owner@example.com", Subject: "Verify your email — faxhub", Text: "Hello,\nopen " + link + "\n"})
	if err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if !srv.tlsUsed {
		t.Error("STARTTLS was not used")
	}
	if srv.auth != "\x00ada\x00s3cret" {
		t.Errorf("AUTH PLAIN = %q", srv.auth)
	}
	if srv.from != "FROM:<no-reply@faxhub.test>" || srv.to != "TO:<owner@example.com>" {
		t.Errorf("envelope %q → %q", srv.from, srv.to)
	}
	head, body, _ := strings.Cut(srv.data, "\n\n")
	for _, want := range []string{"From: \"faxhub\" <no-reply@faxhub.test>", "To: owner@example.com", "Subject: =?utf-8?q?Verify_your_email_=E2=80=94_faxhub?=", "Content-Type: text/plain; charset=utf-8"} {
		if !strings.Contains(head, want) {
			t.Errorf("headers lack %q:\n%s", want, head)
		}
	}
	dec, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(body)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dec), link) {
		t.Errorf("body lacks the link:\n%s", dec)
	}
}

func TestSMTPRefusesWithoutSTARTTLS(t *testing.T) {
	srv, _ := startServer(t, false)
	cfg, err := ParseSMTPURL("smtp://ada:s3cret@" + srv.ln.Addr().String() + "?from=no-reply@faxhub.test")
	if err != nil {
		t.Fatal(err)
	}
	err = NewSMTP(cfg, nil).Send(t.Context(), core.Mail{To: "owner@example.com", Subject: "x", Text: "y"})
	if err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err = %v, want a refusal naming STARTTLS", err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.auth != "" || srv.data != "" {
		t.Fatal("credentials or the message crossed a clear-text connection")
	}
}
