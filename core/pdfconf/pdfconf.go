// Package pdfconf is pdfcpu's configuration as faxhub's PDF adapters
// (core/convert, core/faxdoc) use it. It is built by hand because
// model.NewDefaultConfiguration creates and reads a config directory under
// the user's home (package-level state, racy across goroutines); nothing
// faxhub does needs pdfcpu's user fonts or certificates.
package pdfconf

import (
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// New returns a fresh configuration for cmd.
func New(cmd model.CommandMode) *model.Configuration {
	return &model.Configuration{
		Version:  model.VersionStr,
		Reader15: true,
		// Relaxed is pdfcpu's own default: it accepts the small spec
		// violations most real-world writers commit.
		ValidationMode:            model.ValidationRelaxed,
		UnsupportedResourcePolicy: model.UnsupportedResourceSkip,
		Eol:                       types.EolLF,
		WriteObjectStream:         true,
		WriteXRefStream:           true,
		EncryptUsingAES:           true,
		EncryptKeyLength:          256,
		TimestampFormat:           "2006-01-02 15:04",
		DateFormat:                "2006-01-02",
		Offline:                   true,
		Cmd:                       cmd,
		Limits:                    model.DefaultResourceLimits(),
	}
}
