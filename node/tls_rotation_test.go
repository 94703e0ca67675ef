package node_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/quic"
)

// copyCertFiles copies names from one TLS directory into another.
func copyCertFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(from, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func certNotAfter(t *testing.T, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.NotAfter
}

// TestCARotationUnderLoad rotates the cluster's CA, and with it every node's
// and the producer's certificate, on three running nodes while an acks=all
// producer writes: trust both CAs, reissue, retire the old CA; no restart.
// Every acknowledged record stays at its offset, the ISR ends whole, each
// node reports its new certificate (status and metrics), and a client still
// holding a certificate of the retired CA is refused.
func TestCARotationUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	oldCA := mustACLCerts(t, 3, "client")
	newCA := mustACLCerts(t, 3, "client") // another CA, the same names
	root := t.TempDir()
	nodeDir := func(id int32) string { return filepath.Join(root, fmt.Sprintf("node%d", id)) }
	cliDir := filepath.Join(root, "client")
	for id := int32(1); id <= 3; id++ {
		n := fmt.Sprintf("node%d", id)
		copyCertFiles(t, oldCA, nodeDir(id), quic.CAFile, n+".crt", n+".key")
	}
	copyCertFiles(t, oldCA, cliDir, quic.CAFile, "client.crt", "client.key")
	tc := mustStartClusterWith(t, 3, func(c *node.Config) {
		c.TLSDir, c.CertName = nodeDir(c.ID), fmt.Sprintf("node%d", c.ID)
		c.TLSReloadInterval = -1 // the test reloads, step by step
		withMetrics(c)
	})
	tc.waitAlive(3)
	cl := aclClient(ctx, t, tc, cliDir, "client")
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})

	// The producer writes acks=all throughout and remembers what was acknowledged.
	prod, err := cl.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close(context.Background())
	var (
		mu    sync.Mutex
		acked = map[int64]string{}
		fails []error
	)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("payment-%d", i)
			pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
			d, err := prod.ProduceSync(pctx, &client.Record{Topic: "payments", Value: []byte(v), Partition: 0, PartitionSet: true})
			pcancel()
			mu.Lock()
			if err != nil {
				fails = append(fails, err)
			} else {
				acked[d.Offset] = v
			}
			mu.Unlock()
		}
	}()
	progress := func(what string) {
		t.Helper()
		from := count()
		waitFor(t, "50 records acknowledged "+what, 20*time.Second, func() bool { return count() >= from+50 })
	}
	// reloadAll reloads every node and checks that each trusts cas CAs
	// and presents the certificate of the file in from. A node may have
	// reloaded already: one whose connection a node closed for its retired
	// CA reloads at once, by itself.
	reloadAll := func(what string, cas int, from string) {
		t.Helper()
		for id := int32(1); id <= 3; id++ {
			if _, err := tc.node(id).ReloadTLS(); err != nil {
				t.Fatalf("%s: node %d reload: %v", what, id, err)
			}
			st := tc.node(id).TLSStatus()
			notAfter := certNotAfter(t, filepath.Join(from, fmt.Sprintf("node%d.crt", id)))
			if st.CAs != cas || !st.NotAfter.Equal(notAfter) {
				t.Fatalf("%s: node %d trusts %d CAs and presents a certificate expiring %v; want %d and %v", what, id, st.CAs, st.NotAfter, cas, notAfter)
			}
		}
	}
	progress("before the rotation")

	// 1. Every node and the client trust both CAs.
	bundle := append(readAll(t, filepath.Join(newCA, quic.CAFile)), readAll(t, filepath.Join(oldCA, quic.CAFile))...)
	for _, d := range []string{nodeDir(1), nodeDir(2), nodeDir(3), cliDir} {
		if err := os.WriteFile(filepath.Join(d, quic.CAFile), bundle, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reloadAll("the bundle", 2, oldCA)
	if _, err := cl.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	progress("after the bundle")
	// 2. Every node, then the client, presents a certificate of the new CA.
	for id := int32(1); id <= 3; id++ {
		n := fmt.Sprintf("node%d", id)
		copyCertFiles(t, newCA, nodeDir(id), n+".crt", n+".key")
	}
	reloadAll("the new node certificates", 2, newCA)
	copyCertFiles(t, newCA, cliDir, "client.crt", "client.key")
	if changed, err := cl.ReloadTLS(); !changed || err != nil {
		t.Fatalf("client reload: changed %v, err %v", changed, err)
	}
	progress("after reissuing")
	// 3. The old CA is retired everywhere: connections made with its
	// certificates are closed, and their holders reconnect with the new ones.
	for _, d := range []string{nodeDir(1), nodeDir(2), nodeDir(3), cliDir} {
		copyCertFiles(t, newCA, d, quic.CAFile)
	}
	reloadAll("the retirement", 1, newCA)
	if _, err := cl.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	progress("after the old CA's retirement")
	close(stop)
	<-done

	mu.Lock()
	t.Logf("%d records acknowledged during the rotation; %d produce calls failed (first: %v)", len(acked), len(fails), first(fails))
	want := acked
	mu.Unlock()
	var last int64 = -1
	for off := range want {
		last = max(last, off)
	}
	got, err := consumeFrom(ctx, cl, "payments", int(last+1))
	if err != nil {
		t.Fatalf("consume after the rotation: %v", err)
	}
	for off, v := range want {
		if got[off] != v {
			t.Fatalf("offset %d holds %q, acknowledged as %q", off, got[off], v)
		}
	}
	waitFor(t, "the ISR whole again", 20*time.Second, func() bool {
		p, ok := tc.image().Partition("payments", 0)
		return ok && len(p.ISR) == 3
	})

	for id := int32(1); id <= 3; id++ {
		n := fmt.Sprintf("node%d", id)
		notAfter := certNotAfter(t, filepath.Join(newCA, n+".crt")).Unix()
		e := scrape(t, tc.node(id).MetricsAddr())
		if v := value(t, e, "paymentlog_tls_certificate_expiry_timestamp_seconds", "certificate", "node"); int64(v) != notAfter {
			t.Errorf("node %d reports its certificate expiring at %d, the new one does at %d", id, int64(v), notAfter)
		}
		caNotAfter := certNotAfter(t, filepath.Join(newCA, quic.CAFile)).Unix()
		if v := value(t, e, "paymentlog_tls_certificate_expiry_timestamp_seconds", "certificate", "ca"); int64(v) != caNotAfter {
			t.Errorf("node %d reports its CA expiring at %d, the new one does at %d", id, int64(v), caNotAfter)
		}
		if v := value(t, e, "paymentlog_tls_trusted_cas"); v != 1 {
			t.Errorf("node %d trusts %v CAs after the retirement, want 1", id, v)
		}
		if v := value(t, e, "paymentlog_tls_reloads_total", "result", "ok"); v != 3 {
			t.Errorf("node %d: %v reloads, want 3", id, v)
		}
	}

	// A client that kept a certificate of the retired CA is refused.
	stale := aclClient(ctx, t, tc, oldCA, "client")
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	defer scancel()
	if _, err := stale.Admin().ListTopics(sctx); err == nil {
		t.Fatal("a client with a certificate of the retired CA was answered")
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}
