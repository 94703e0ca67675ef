package uring

// The kernel's io_uring ABI (include/uapi/linux/io_uring.h), as much of it
// as Fsync, Fadvise and Madvise need.

const (
	opFsync        = 3      // IORING_OP_FSYNC
	opFadvise      = 24     // IORING_OP_FADVISE (5.6)
	opMadvise      = 25     // IORING_OP_MADVISE (5.6)
	fsyncDatasync  = 1 << 0 // IORING_FSYNC_DATASYNC
	featSingleMmap = 1 << 0 // IORING_FEAT_SINGLE_MMAP
	setupCoopTask  = 1 << 8 // IORING_SETUP_COOP_TASKRUN (5.19)

	offSQRing = 0          // IORING_OFF_SQ_RING
	offSQEs   = 0x10000000 // IORING_OFF_SQES

	registerEventfd = 4 // IORING_REGISTER_EVENTFD

	sqeSize = 64
	cqeSize = 16
)

// sqringOffsets is struct io_sqring_offsets.
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// cqringOffsets is struct io_cqring_offsets.
type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// params is struct io_uring_params (120 bytes).
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// Offsets within struct io_uring_sqe of the fields the operations set.
const (
	sqeOpcode   = 0  // u8
	sqeFd       = 4  // s32
	sqeOff      = 8  // u64: file offset (fsync, fadvise)
	sqeAddr     = 16 // u64: memory address (madvise)
	sqeLen      = 24 // u32: length of the range (fsync: 0 is to the end of the file)
	sqeOpFlags  = 28 // u32: fsync_flags, fadvise_advice (madvise's advice too)
	sqeUserData = 32 // u64
)

// Offsets within struct io_uring_cqe.
const (
	cqeUserData = 0 // u64
	cqeRes      = 8 // s32: the result, -errno on failure
)
