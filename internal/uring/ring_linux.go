package uring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

var (
	// ErrNotSubmitted wraps every error of an Fsync that never reached the
	// kernel (the ring or the file closed, io_uring_enter refused): the
	// caller may sync another way.
	ErrNotSubmitted = errors.New("uring: not submitted")
	// ErrClosed is returned (wrapped in ErrNotSubmitted) on a closed ring.
	ErrClosed = errors.New("uring: ring closed")
)

// Ring is one io_uring instance used for range fdatasyncs. It is safe for
// concurrent use.
type Ring struct {
	fd    int
	rings []byte // the submission and completion rings, one mapping
	sqes  []byte // the submission entries

	sqTail  *uint32
	sqMask  uint32
	sqArray []uint32
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    []byte

	efd    *os.File      // the eventfd the kernel signals on each completion
	reaped chan struct{} // closed when the reaper has stopped

	free chan uint32  // slots not in use; a slot is its operation's user data
	done []chan int32 // per slot: the completion's result

	mu       sync.Mutex // submissions and closed
	closed   bool
	inflight sync.WaitGroup

	submitted atomic.Int64 // operations handed to the kernel (tests look at it)
}

// New sets up a ring with room for entries operations in flight (the
// kernel rounds up to a power of two).
func New(entries uint32) (*Ring, error) {
	// Every completed request is freed through task work queued on the
	// thread that submitted it. By default that wakes the thread, or
	// interrupts it with an IPI while it runs; with COOP_TASKRUN the work
	// waits for the thread's next system call, which a Go thread makes
	// soon enough (or never needs, when parked: the work is only a free).
	p := params{flags: setupCoopTask}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno == unix.EINVAL { // older than 5.19
		p = params{}
		fd, _, errno = unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	}
	if errno != 0 {
		return nil, fmt.Errorf("uring: io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd), reaped: make(chan struct{})}
	if err := r.setup(&p); err != nil {
		r.unmap()
		return nil, err
	}
	go r.reap()
	return r, nil
}

// setup maps the rings and registers the eventfd.
func (r *Ring) setup(p *params) error {
	if p.features&featSingleMmap == 0 {
		return errors.New("uring: the kernel lacks IORING_FEAT_SINGLE_MMAP (older than 5.4)")
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*cqeSize)
	rings, err := unix.Mmap(r.fd, offSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("uring: mmap rings: %w", err)
	}
	r.rings = rings
	sqes, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries*sqeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("uring: mmap submission entries: %w", err)
	}
	r.sqes = sqes
	r.sqTail = r.word(p.sqOff.tail)
	r.sqMask = *r.word(p.sqOff.ringMask)
	r.sqArray = unsafe.Slice(r.word(p.sqOff.array), p.sqEntries)
	r.cqHead = r.word(p.cqOff.head)
	r.cqTail = r.word(p.cqOff.tail)
	r.cqMask = *r.word(p.cqOff.ringMask)
	r.cqes = rings[p.cqOff.cqes : p.cqOff.cqes+p.cqEntries*cqeSize]

	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("uring: eventfd: %w", err)
	}
	arg := int32(efd)
	if _, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerEventfd, uintptr(unsafe.Pointer(&arg)), 1, 0, 0); errno != 0 {
		unix.Close(efd)
		return fmt.Errorf("uring: register eventfd: %w", errno)
	}
	// Non-blocking, so os.NewFile puts it in the netpoller: the reaper's
	// reads park a goroutine, not a thread.
	r.efd = os.NewFile(uintptr(efd), "io_uring eventfd")

	// One slot per submission entry: the bound on operations in flight.
	r.free = make(chan uint32, p.sqEntries)
	r.done = make([]chan int32, p.sqEntries)
	for i := range r.done {
		r.done[i] = make(chan int32, 1)
		r.free <- uint32(i)
	}
	return nil
}

// word is the ring's 32-bit field at off.
func (r *Ring) word(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&r.rings[off])) }

// Fsync makes f's bytes [off, off+n) durable as fdatasync does (n <= 0:
// to the end of the file). It blocks the calling goroutine until the
// kernel is done. f must stay open until Fsync returns.
func (r *Ring) Fsync(f *os.File, off, n int64) error {
	o := op{opcode: opFsync, off: uint64(max(off, 0)), flags: fsyncDatasync}
	if n > 0 && n <= math.MaxUint32 {
		o.len = uint32(n)
	} // else 0: to the end of the file
	return r.fileOp(f, o, "fdatasync")
}

// FsyncAll makes f durable as fsync does, metadata included: for a
// directory, its entries (a rename or a removal in it). It blocks the
// calling goroutine until the kernel is done.
func (r *Ring) FsyncAll(f *os.File) error {
	return r.fileOp(f, op{opcode: opFsync}, "fsync")
}

// Fadvise gives the kernel advice about f's bytes [off, off+n) as
// posix_fadvise does (unix.FADV_*). The kernel's io-wq worker runs it:
// POSIX_FADV_DONTNEED writes nothing back here (the bytes are durable) but
// walks and frees every cached page of the range, ~40 µs a MiB, and can
// wait for other CPUs to drain their page lists. n must be 1 to 4 GiB-1.
func (r *Ring) Fadvise(f *os.File, off, n int64, advice uint32) error {
	if off < 0 || n <= 0 || n > math.MaxUint32 {
		return fmt.Errorf("%w: fadvise range [%d, +%d)", ErrNotSubmitted, off, n)
	}
	return r.fileOp(f, op{opcode: opFadvise, off: uint64(off), len: uint32(n), flags: advice}, "fadvise")
}

// Madvise gives the kernel advice about the pages of b (page aligned) as
// madvise does (unix.MADV_*), from the kernel's io-wq worker, a thread of
// this process. b must stay mapped until Madvise returns: the advice
// applies to whatever is mapped at those addresses when the worker runs.
// len(b) must be below 4 GiB.
func (r *Ring) Madvise(b []byte, advice uint32) error {
	if len(b) == 0 || len(b) > math.MaxUint32 {
		return fmt.Errorf("%w: madvise of %d bytes", ErrNotSubmitted, len(b))
	}
	o := op{opcode: opMadvise, fd: -1, addr: uint64(uintptr(unsafe.Pointer(&b[0]))), len: uint32(len(b)), flags: advice}
	res, err := r.do(o)
	runtime.KeepAlive(b)
	if err != nil {
		return err
	}
	if res < 0 {
		return os.NewSyscallError("madvise", syscall.Errno(-res))
	}
	return nil
}

// op is one submission entry's fields.
type op struct {
	opcode uint8
	fd     int32
	off    uint64 // the file offset
	addr   uint64 // a memory address
	len    uint32
	flags  uint32 // the operation's own flags: fsync flags, advice
}

// fileOp runs o on f's descriptor; a failure the kernel reports is a
// *os.PathError naming name.
func (r *Ring) fileOp(f *os.File, o op, name string) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotSubmitted, err)
	}
	slot := <-r.free
	var serr error
	if err := rc.Control(func(fd uintptr) { o.fd = int32(fd); serr = r.submit(slot, o) }); err != nil {
		serr = err // the file is closed
	}
	res, err := r.complete(slot, serr)
	runtime.KeepAlive(f)
	if err != nil {
		return err
	}
	if res < 0 {
		return &os.PathError{Op: name, Path: f.Name(), Err: syscall.Errno(-res)}
	}
	return nil
}

// do submits o (which names no file) and waits for its result.
func (r *Ring) do(o op) (int32, error) {
	slot := <-r.free
	return r.complete(slot, r.submit(slot, o))
}

// complete waits for slot's result, or frees it when its submission
// failed (serr).
func (r *Ring) complete(slot uint32, serr error) (int32, error) {
	if serr != nil {
		r.free <- slot
		return 0, fmt.Errorf("%w: %w", ErrNotSubmitted, serr)
	}
	res := <-r.done[slot]
	r.free <- slot
	r.inflight.Done()
	return res, nil
}

// submit queues one operation and hands it to the kernel.
func (r *Ring) submit(slot uint32, o op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	tail := atomic.LoadUint32(r.sqTail)
	idx := tail & r.sqMask
	e := r.sqes[idx*sqeSize : (idx+1)*sqeSize]
	clear(e)
	e[sqeOpcode] = o.opcode
	ne := binary.NativeEndian
	ne.PutUint32(e[sqeFd:], uint32(o.fd))
	ne.PutUint64(e[sqeOff:], o.off)
	ne.PutUint64(e[sqeAddr:], o.addr)
	ne.PutUint32(e[sqeLen:], o.len)
	ne.PutUint32(e[sqeOpFlags:], o.flags)
	ne.PutUint64(e[sqeUserData:], uint64(slot))
	r.sqArray[idx] = idx
	atomic.StoreUint32(r.sqTail, tail+1)
	r.inflight.Add(1)
	for {
		// The kernel consumes the entry within this call and punts the
		// operation to an io-wq worker (fsync, fadvise and madvise all
		// need a blocking context), so the call is short: no scheduler
		// hand-off.
		got, _, errno := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 1, 0, 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 || got != 1 {
			// Nothing was consumed (the kernel reports an error only
			// when it submitted nothing): take the entry back.
			atomic.StoreUint32(r.sqTail, tail)
			r.inflight.Done()
			if errno == 0 {
				errno = unix.EAGAIN
			}
			return fmt.Errorf("uring: io_uring_enter: %w", errno)
		}
		r.submitted.Add(1)
		return nil
	}
}

// reap delivers completions until the eventfd is closed.
func (r *Ring) reap() {
	defer close(r.reaped)
	rc, err := r.efd.SyscallConn()
	if err != nil {
		return // closed already: Close waits for nothing in flight
	}
	for {
		err := rc.Read(readEventfd)
		r.drain()
		if err != nil {
			return
		}
	}
}

// readEventfd consumes the eventfd's counter for (*os.File).SyscallConn's
// Read, reporting false (wait for the netpoller) when it is zero.
//
// The read is raw: os.File.Read goes through entersyscall, and a
// goroutine entering a system call wakes sysmon from its deep sleep and
// resets its poll interval to 20 µs. With one read per completion (two:
// the second finds EAGAIN) a flushing node kept sysmon waking ~1 000
// times a second, each a context switch; this read never blocks, so the
// hand-off entersyscall prepares for cannot happen.
func readEventfd(fd uintptr) bool {
	var buf [8]byte
	for {
		_, _, errno := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		switch errno {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			// 0: the counter was read. No other error can happen to an
			// eventfd read with an 8-byte buffer while RawConn.Read holds
			// the descriptor; if one did, reap would keep draining
			// completions between failed reads (busy, but no flush hangs).
			return true
		}
	}
}

// drain hands every posted completion to its slot's waiter.
func (r *Ring) drain() {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	ne := binary.NativeEndian
	for ; head != tail; head++ {
		c := r.cqes[(head&r.cqMask)*cqeSize:]
		slot := ne.Uint64(c[cqeUserData:])
		res := int32(ne.Uint32(c[cqeRes:]))
		if slot < uint64(len(r.done)) {
			r.done[slot] <- res
		}
	}
	atomic.StoreUint32(r.cqHead, head)
}

// Submitted is the number of operations handed to the kernel so far.
func (r *Ring) Submitted() int64 { return r.submitted.Load() }

// Close waits for the operations in flight, then releases the ring. Later
// Fsyncs return ErrClosed.
func (r *Ring) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	r.inflight.Wait()
	err := r.efd.Close()
	<-r.reaped
	r.unmap()
	return err
}

// unmap releases the mappings and the ring's descriptor.
func (r *Ring) unmap() {
	if r.sqes != nil {
		_ = unix.Munmap(r.sqes)
	}
	if r.rings != nil {
		_ = unix.Munmap(r.rings)
	}
	_ = unix.Close(r.fd)
}
