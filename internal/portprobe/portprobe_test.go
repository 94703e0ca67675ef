package portprobe

import (
	"context"
	"net"
	"testing"
	"time"
)

// A port whose socket was closed is refused at once.
func TestClosedPortIsClosed(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	start := time.Now()
	r, err := Probe(context.Background(), addr, 10*time.Second)
	if err != nil || r != Closed {
		t.Fatalf("probe of %s after its socket closed = %v, %v; want closed", addr, r, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the refusal took %v: the probe waited for its deadline", took)
	}
}

// A bound socket gets the probe's one byte and no refusal comes: the probe
// ends at its deadline with Open.
func TestBoundPortIsOpen(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	r, err := Probe(context.Background(), pc.LocalAddr().String(), 50*time.Millisecond)
	if err != nil || r != Open {
		t.Fatalf("probe of a bound port = %v, %v; want open", r, err)
	}
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 16)
	n, _, err := pc.ReadFrom(buf)
	if err != nil || n != 1 || buf[0] != 0 {
		t.Fatalf("the listener read %d bytes %x, %v; want the one zero byte", n, buf[:n], err)
	}
}

// A cancelled context ends the wait.
func TestCancelEndsTheProbe(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		r, _ := Probe(ctx, pc.LocalAddr().String(), time.Hour)
		done <- r
	}()
	// The listener reading the byte shows the probe is waiting.
	pc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, _, err := pc.ReadFrom(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case r := <-done:
		if r != Open {
			t.Fatalf("cancelled probe = %v; want open", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the probe did not end when its context was cancelled")
	}
}

// An address that cannot be dialled is an error, not a finding.
func TestBadAddressIsAnError(t *testing.T) {
	r, err := Probe(context.Background(), "no-port", time.Millisecond)
	if err == nil || r != Open {
		t.Fatalf("probe of a bad address = %v, %v; want open and an error", r, err)
	}
}
