package raftnode

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// memLog is an in-memory logStore that remembers what was synced: crash
// returns the log as a crash would leave it (appends since the last Sync lost;
// truncations and deletions take effect at once, as on a real file system).
type memLog struct {
	mu      sync.Mutex
	start   uint64
	ents    []*pb.Entry
	durable int // ents[:durable] survive a crash
	failAt  error
}

func newMemLog() *memLog { return &memLog{start: 1} }

func (l *memLog) Start() uint64 { l.mu.Lock(); defer l.mu.Unlock(); return l.start }
func (l *memLog) End() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start + uint64(len(l.ents))
}

func (l *memLog) Append(_ context.Context, e *pb.Entry) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failAt != nil {
		return l.failAt
	}
	if e.GetIndex() != l.start+uint64(len(l.ents)) {
		return fmt.Errorf("memlog: append %d at end %d", e.GetIndex(), l.start+uint64(len(l.ents)))
	}
	l.ents = append(l.ents, proto.Clone(e).(*pb.Entry))
	return nil
}

func (l *memLog) Sync(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.durable = len(l.ents)
	return nil
}

func (l *memLog) Read(_ context.Context, lo, hi, maxBytes uint64) ([]*pb.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.start + uint64(len(l.ents))
	if lo < l.start || hi > end || lo > hi {
		return nil, fmt.Errorf("memlog: read [%d, %d) outside [%d, %d)", lo, hi, l.start, end)
	}
	var out []*pb.Entry
	var size uint64
	for i := lo; i < hi; i++ {
		e := l.ents[i-l.start]
		size += uint64(proto.Size(e))
		if len(out) > 0 && size > maxBytes {
			break
		}
		out = append(out, proto.Clone(e).(*pb.Entry))
	}
	return out, nil
}

func (l *memLog) TruncateTo(_ context.Context, index uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if index < l.start {
		return fmt.Errorf("memlog: truncate to %d below start %d", index, l.start)
	}
	if n := int(index - l.start); n < len(l.ents) {
		l.ents = l.ents[:n]
		l.durable = min(l.durable, n)
	}
	return nil
}

func (l *memLog) DeleteBefore(_ context.Context, index uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if index <= l.start {
		return nil
	}
	n := min(int(index-l.start), len(l.ents))
	l.ents = slices.Clone(l.ents[n:])
	l.durable = max(0, l.durable-n)
	l.start = index
	return nil
}

func (l *memLog) Reset(_ context.Context, start uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start, l.ents, l.durable = start, nil, 0
	return nil
}

func (l *memLog) Close() error { return nil }

// crash returns the log as it would be found after a crash.
func (l *memLog) crash() *memLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	return &memLog{start: l.start, ents: slices.Clone(l.ents[:l.durable]), durable: l.durable}
}

// memFiles is an in-memory fileStore (writes are atomic and durable).
type memFiles struct {
	mu    sync.Mutex
	files map[string][]byte
	fail  error
}

func newMemFiles() *memFiles { return &memFiles{files: map[string][]byte{}} }

func (f *memFiles) WriteFile(name string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.files[name] = slices.Clone(data)
	return nil
}

func (f *memFiles) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.files[name]
	if !ok {
		return nil, fmt.Errorf("memfiles: %s: %w", name, os.ErrNotExist)
	}
	return slices.Clone(b), nil
}

func (f *memFiles) List() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for n := range f.files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (f *memFiles) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.files, name)
	return nil
}

func (f *memFiles) clone() *memFiles {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := newMemFiles()
	for n, b := range f.files {
		c.files[n] = slices.Clone(b)
	}
	return c
}

// memNetwork connects nodes in one process. It counts the messages in flight
// (queued, on the wire, or stepped but their Ready not yet handled) so tests
// can wait until the cluster is quiet instead of sleeping.
type memNetwork struct {
	mu       sync.Mutex
	handlers map[string]inboundHandler
	cut      map[string]bool                           // addresses isolated from everyone
	drop     func(from, to uint64, m *pb.Message) bool // silently lose matching messages
	fail     func(from, to uint64, m *pb.Message) bool // fail the send of frames holding one
	work     atomic.Int64
}

func newMemNetwork() *memNetwork {
	return &memNetwork{handlers: map[string]inboundHandler{}, cut: map[string]bool{}}
}

func (nw *memNetwork) hooks() *testHooks {
	return &testHooks{work: func(d int) { nw.work.Add(int64(d)) }}
}

// endpoint is the network as seen by the node at addr.
func (nw *memNetwork) endpoint(addr string) network { return &memEndpoint{nw: nw, addr: addr} }

func (nw *memNetwork) setCut(addr string, cut bool) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.cut[addr] = cut
}

func (nw *memNetwork) unlisten(addr string) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	delete(nw.handlers, addr)
}

// waitIdle waits until no message is in flight.
func (nw *memNetwork) waitIdle(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for nw.work.Load() != 0 {
		if time.Now().After(deadline) {
			tb.Fatalf("network not idle after 10s: %d messages in flight", nw.work.Load())
		}
		time.Sleep(20 * time.Microsecond)
	}
}

type memEndpoint struct {
	nw   *memNetwork
	addr string
}

func (e *memEndpoint) Dial(_ context.Context, addr string) (outStream, error) {
	return &memStream{nw: e.nw, from: e.addr, to: addr}, nil
}

func (e *memEndpoint) Listen(h inboundHandler) {
	e.nw.mu.Lock()
	defer e.nw.mu.Unlock()
	e.nw.handlers[e.addr] = h
}

type memStream struct {
	nw       *memNetwork
	from, to string
	closed   bool
}

var errUnreachable = errors.New("memnet: unreachable")

func (s *memStream) Send(ctx context.Context, f *raftFrame) error {
	s.nw.mu.Lock()
	h := s.nw.handlers[s.to]
	cut := s.nw.cut[s.to] || s.nw.cut[s.from]
	drop, fail := s.nw.drop, s.nw.fail
	s.nw.mu.Unlock()
	if s.closed || h == nil || cut {
		return errUnreachable
	}
	if fail != nil {
		for _, b := range f.Msgs {
			var m pb.Message
			if err := proto.Unmarshal(b, &m); err == nil && fail(f.From, f.To, &m) {
				return errUnreachable
			}
		}
	}
	if drop != nil {
		kept := f.Msgs[:0:0]
		for _, b := range f.Msgs {
			var m pb.Message
			if err := proto.Unmarshal(b, &m); err != nil || !drop(f.From, f.To, &m) {
				kept = append(kept, b)
			}
		}
		f = &raftFrame{From: f.From, To: f.To, Msgs: kept}
		if len(kept) == 0 {
			return nil
		}
	}
	n := int64(len(f.Msgs))
	s.nw.work.Add(n)
	if err := h(ctx, f, func() { s.nw.work.Add(-n) }); err != nil {
		s.nw.work.Add(-n)
		return err
	}
	return nil
}

func (s *memStream) Close() error { s.closed = true; return nil }

// testSM is a state machine recording every applied payload in order.
type testSM struct {
	mu      sync.Mutex
	applied []uint64 // raft indexes
	data    [][]byte
	base    uint64 // index the last Restore was at
	snaps   int
	// refuse, when set, is what CheckSnapshot and Restore answer (a state
	// machine that cannot read the leader's snapshots); checks counts the
	// CheckSnapshot calls.
	refuse error
	checks int
}

// CheckSnapshot implements SnapshotChecker.
func (sm *testSM) CheckSnapshot(uint64, []byte) error {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.checks++
	return sm.refuse
}

func (sm *testSM) setRefuse(err error) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.refuse = err
}

func (sm *testSM) restoredAt() uint64 {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	return sm.base
}

func (sm *testSM) Apply(index uint64, data []byte) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.applied = append(sm.applied, index)
	sm.data = append(sm.data, slices.Clone(data))
}

// Snapshot encodes the payloads as uvarint-length-prefixed records.
func (sm *testSM) Snapshot() ([]byte, error) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.snaps++
	var b []byte
	for i, d := range sm.data {
		b = binary.AppendUvarint(b, sm.applied[i])
		b = binary.AppendUvarint(b, uint64(len(d)))
		b = append(b, d...)
	}
	return b, nil
}

func (sm *testSM) Restore(index uint64, b []byte) error {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.refuse != nil {
		return sm.refuse
	}
	sm.applied, sm.data, sm.base = nil, nil, index
	for len(b) > 0 {
		idx, n := binary.Uvarint(b)
		if n <= 0 {
			return errors.New("testsm: bad snapshot")
		}
		b = b[n:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return errors.New("testsm: bad snapshot")
		}
		b = b[n:]
		sm.applied = append(sm.applied, idx)
		sm.data = append(sm.data, slices.Clone(b[:l]))
		b = b[l:]
	}
	return nil
}

// values returns the applied payloads as strings.
func (sm *testSM) values() []string {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	out := make([]string, len(sm.data))
	for i, d := range sm.data {
		out[i] = string(d)
	}
	return out
}
