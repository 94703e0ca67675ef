package broker

import "paymentlog/segment"

// BatchTimestampAt returns the timestamp (Unix milliseconds) of the batch
// holding offset in the local replica of the partition, for a consumer
// group's lag in time: its first record's (the producer's clock), or the
// leader's append time for a LogAppendTime batch. An offset below the log
// start is read at the log start (retention deleted what lay below it).
// False when the partition is not here (or its replica here is of a
// deleted or re-created topic: clientPartition), the offset is at or past
// the HW, or the read fails. One offset-index lookup and one header parse; the
// bytes are the segment mapping's, not copied.
func (b *Broker) BatchTimestampAt(topic string, partition int32, offset int64) (int64, bool) {
	p := b.clientPartition(topic, partition)
	if p == nil {
		return 0, false
	}
	p.mu.Lock()
	stopped, hw, start := p.mu.stopped, p.mu.r.HW(), p.mu.r.LogStart()
	p.mu.Unlock()
	offset = max(offset, start)
	if stopped || offset >= hw {
		return 0, false
	}
	v, err := p.log.Read(offset, 1, hw) // at least the batch holding offset
	if err != nil {
		return 0, false
	}
	defer v.Release()
	h, err := segment.ParseHeader(v.Data)
	if err != nil {
		return 0, false
	}
	if h.LogAppendTime() {
		return h.MaxTimestamp, true
	}
	return h.FirstTimestamp, true
}
