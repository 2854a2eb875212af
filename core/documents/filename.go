package documents

import (
	"github.com/faxhub/faxhub/core"
)

// MaxFileNameBytes bounds the file name an agent may give an upload
// (MCP and A2A create_upload). The name is only shown to the user: it is
// never used as a path nor stored, so "../" in it is harmless, but an
// unbounded one would be carried in every answer that echoes it. Longer is
// refused, not cut, so the agent learns its input was wrong.
const MaxFileNameBytes = 255

// CheckFileName refuses a file name over MaxFileNameBytes.
func CheckFileName(name string) error {
	if len(name) > MaxFileNameBytes {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "fileName may be at most %d bytes (it has %d)", MaxFileNameBytes, len(name)).
			With("field", "fileName").With("limit", MaxFileNameBytes)
	}
	return nil
}
