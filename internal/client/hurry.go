package client

// Hurry is the agent told a second time to stop (a second SIGINT or
// SIGTERM while it drains itself or stops its tasks): the drain on
// shutdown is abandoned and no shutdown_delay, group's or task's, is
// waited any more, so the agent stops within the tasks' kill_timeout
// instead of a drain deadline or a delay of hours. Tasks are still
// stopped with their kill signal; nothing is left running that the
// shutdown would have stopped. Idempotent.
func (c *Client) Hurry() {
	c.hurryOnce.Do(func() { close(c.hurryCh) })
	for _, ar := range c.runners() {
		ar.SkipShutdownDelay()
	}
}

// hurried reports whether Hurry was called.
func (c *Client) hurried() bool {
	select {
	case <-c.hurryCh:
		return true
	default:
		return false
	}
}
