package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	qgo "github.com/quic-go/quic-go"

	"paymentlog/quic"
)

// TestErrorHintForMissingClientCertificate: a cluster refusing the handshake
// for want of a client certificate (TLS alert 116, however deeply wrapped)
// gets a hint naming --tls-dir; other errors, including other TLS alerts,
// get none.
func TestErrorHintForMissingClientCertificate(t *testing.T) {
	certRequired := &qgo.TransportError{Remote: true, ErrorCode: qgo.TransportErrorCode(0x100 + 116)}
	wrapped := fmt.Errorf("describe topic payments: %w", fmt.Errorf("client: no node answered (tried 3): %w",
		&quic.OpError{Op: "call", Addr: "127.0.0.1:7101", Err: certRequired}))
	if h := errorHint(wrapped); !strings.Contains(h, "--tls-dir") || !strings.Contains(h, "cluster.sh env") {
		t.Fatalf("hint %q", h)
	}
	unknownCA := &qgo.TransportError{Remote: true, ErrorCode: qgo.TransportErrorCode(0x100 + 48)}
	for _, err := range []error{errors.New("topic does not exist"), &quic.OpError{Op: "call", Err: unknownCA}} {
		if h := errorHint(err); h != "" {
			t.Fatalf("hint %q for %v", h, err)
		}
	}
}
