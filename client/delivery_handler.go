package client

// DeliveryHandler receives one produced record's outcome (ProduceTo). The
// producer calls Delivered exactly once per queued record, on its own
// goroutines; it must not block for long, as the partition's later
// deliveries wait for it.
type DeliveryHandler interface {
	Delivered(d Delivery)
}

// deliveryFunc makes a Produce callback a DeliveryHandler. A func value is
// pointer-shaped, so the conversion allocates nothing.
type deliveryFunc func(Delivery)

func (f deliveryFunc) Delivered(d Delivery) { f(d) }
