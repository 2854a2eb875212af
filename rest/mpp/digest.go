package mpp

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// ContentDigest is the RFC 9530 Content-Digest value of body with sha-256:
// "sha-256=:<standard base64>:".
func ContentDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// CheckDigest reports whether header, an RFC 9530 digest dictionary (it
// may list other algorithms), has a sha-256 member matching body. Members
// with other algorithms are ignored; without sha-256 the answer is false.
func CheckDigest(header string, body []byte) bool {
	if len(header) > 1024 {
		return false
	}
	sum := sha256.Sum256(body)
	for member := range strings.SplitSeq(header, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(member), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "sha-256") {
			continue
		}
		val = strings.TrimSpace(val)
		if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
			return false
		}
		got, err := base64.StdEncoding.DecodeString(val[1 : len(val)-1])
		if err != nil {
			return false
		}
		return subtle.ConstantTimeCompare(got, sum[:]) == 1
	}
	return false
}
