package cli

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

// logFollower is `alloc logs -f` made to survive a restart of the agent
// that runs the task (its tasks keep running and their output keeps being
// written): when the stream breaks, is refused with a 5xx (a server that
// cannot reach the node meanwhile), or ends while the task still runs, it
// reconnects with a bounded backoff from the exact byte it had reached, so
// no byte is lost or printed twice. An agent's 4xx answer (unknown
// allocation or task, bad request) ends it, as does a failure of the very
// first request.
type logFollower struct {
	client        *api.Client
	alloc         *api.Allocation
	task, logType string

	retryMin, retryMax time.Duration // reconnect backoff: doubles up to retryMax
	giveUpAfter        time.Duration // an outage longer than this ends the follow
	settle             time.Duration // how long a cleanly ended stream waits for the task to be reported dead
	warn               func(error)   // told once per outage
}

// The follower's timings (tests shorten them).
var (
	followRetryMin    = 250 * time.Millisecond
	followRetryMax    = 2 * time.Second
	followGiveUpAfter = 10 * time.Minute
	followSettle      = 2 * time.Second
)

func newLogFollower(client *api.Client, alloc *api.Allocation, task, logType string, warn func(error)) *logFollower {
	return &logFollower{client: client, alloc: alloc, task: task, logType: logType,
		retryMin: followRetryMin, retryMax: followRetryMax, giveUpAfter: followGiveUpAfter,
		settle: followSettle, warn: warn}
}

// errEndedEarly is a followed stream that ended cleanly while the task is
// not reported finished.
var errEndedEarly = errors.New("the stream ended while the task is still running")

// follow is AllocFS().Logs with follow, resumed as the type says. The frame
// channel is closed when the log is complete (the task finished); an error
// that ends it arrives on the error channel.
func (lf *logFollower) follow(origin string, offset int64, cancel <-chan struct{}) (<-chan *api.StreamFrame, <-chan error) {
	out := make(chan *api.StreamFrame, 10)
	errOut := make(chan error, 1)
	go func() {
		st := &followState{out: out, cancel: cancel}
		var lostAt time.Time
		delay := lf.retryMin
		for {
			var res streamResult
			var err error
			var frames <-chan *api.StreamFrame
			var openedAt time.Time
			if st.replay {
				origin, offset = "start", 0
			} else if st.pos.known {
				origin = "start"
				offset, err = lf.resumeOffset(st.pos)
			}
			if err == nil {
				inner := make(chan struct{})
				var errCh <-chan error
				frames, errCh = lf.client.AllocFS().Logs(lf.alloc, true, lf.task, lf.logType, origin, offset, inner, nil)
				openedAt = time.Now() // the answer's headers are in: the stream is open
				res, err = st.copy(frames, errCh)
				close(inner)
			}
			// The outage is over once data flows again, or the stream (of a
			// quiet task) stayed open for a while: frames is nil when the
			// request itself failed. Open is counted from the answer, not
			// from the resume listing before it: a slow listing followed by
			// an empty answer is the same outage, not a new one.
			if st.progressed || (frames != nil && time.Since(openedAt) > lf.retryMax) {
				st.progressed = false
				lostAt, delay = time.Time{}, lf.retryMin
			}
			switch res {
			case streamCancelled:
				return
			case streamGap:
				st.replay = true // start over, skipping what was printed
				continue
			case streamEnded:
				if lf.finished() {
					close(out)
					return
				}
				err = errEndedEarly
			}
			// The api client reports a stream that broke after its
			// status as a decode failure.
			st.connected = st.connected || strings.HasPrefix(err.Error(), "failed to decode")
			if !st.connected || !retryable(err) {
				errOut <- err // the agent's answer, or no agent at all to begin with
				return
			}
			if lostAt.IsZero() {
				lostAt = time.Now()
				lf.warn(err)
			} else if time.Since(lostAt) > lf.giveUpAfter {
				errOut <- err
				return
			}
			select {
			case <-time.After(delay):
			case <-cancel:
				return
			}
			delay = min(2*delay, lf.retryMax)
		}
	}()
	return out, errOut
}

// followState is what a follow carries from one connection to the next.
type followState struct {
	out    chan<- *api.StreamFrame
	cancel <-chan struct{}

	pos        logPosition
	connected  bool // a stream was opened once
	replay     bool // the stream starts over (a resume offset landed past pos)
	progressed bool // data was passed on in the last stream
}

type streamResult int

const (
	streamFailed    streamResult = iota // the error says why
	streamEnded                         // cleanly
	streamGap                           // it started past the position
	streamCancelled                     // the follow's caller is gone
)

// copy passes one stream's new data on until the stream ends.
func (st *followState) copy(frames <-chan *api.StreamFrame, errCh <-chan error) (streamResult, error) {
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				st.connected = true
				return streamEnded, nil
			}
			if res, done := st.pass(f); done {
				return res, nil
			}
		case err := <-errCh:
			// The api client queued every frame decoded before the
			// failure: they come first.
			for {
				select {
				case f, ok := <-frames:
					if ok {
						if res, done := st.pass(f); done {
							return res, nil
						}
						continue
					}
				default:
				}
				break
			}
			return streamFailed, err
		case <-st.cancel:
			return streamCancelled, nil
		}
	}
}

// pass passes f's new data on; done with a result when the stream must end.
func (st *followState) pass(f *api.StreamFrame) (streamResult, bool) {
	st.connected = true
	f, gap := st.pos.skip(f, !st.replay)
	if gap {
		return streamGap, true
	}
	if f == nil {
		return 0, false
	}
	if len(f.Data) > 0 {
		st.replay, st.progressed = false, true
	}
	select {
	case st.out <- f:
		return 0, false
	case <-st.cancel:
		return streamCancelled, true
	}
}

// streamErrText says what broke a log stream: the api client words every
// failure after the status as a JSON decoding one, quoting what it could
// not decode (nothing when the connection was cut; an agent's error text).
func streamErrText(err error) string {
	const decode = "failed to decode log endpoint response as JSON: "
	msg := err.Error()
	if !strings.HasPrefix(msg, decode) {
		return msg
	}
	text, uerr := strconv.Unquote(strings.TrimPrefix(msg, decode))
	switch {
	case uerr != nil:
		return msg
	case strings.TrimSpace(text) == "":
		return "the connection to the agent was cut"
	}
	return "the agent said: " + strings.TrimSpace(text)
}

// retryable: anything but an agent's 4xx answer (a 5xx is a server that
// cannot reach the node, or an agent stopping).
func retryable(err error) bool {
	var ue api.UnexpectedResponseError
	if errors.As(err, &ue) {
		return ue.StatusCode() >= 500
	}
	return true
}

// finished says whether a cleanly ended stream is the whole log: the task
// is reported dead (or its allocation is gone). The servers may hear of the
// task's end a little after its agent ended the stream: it waits up to
// settle for that.
func (lf *logFollower) finished() bool {
	deadline := time.Now().Add(lf.settle)
	for {
		a, _, err := lf.client.Allocations().Info(lf.alloc.ID, nil)
		var ue api.UnexpectedResponseError
		switch {
		case errors.As(err, &ue) && ue.StatusCode() == http.StatusNotFound:
			return true
		case err == nil:
			if st := a.TaskStates[lf.task]; (st != nil && st.State == "dead") ||
				a.ClientStatus == "complete" || a.ClientStatus == "failed" || a.ClientStatus == "lost" {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(min(lf.settle/10, 200*time.Millisecond))
	}
}

// resumeOffset is pos as an offset into the task's concatenated log files
// (what the logs endpoint takes): the sizes of the files before pos's one,
// plus pos's offset in it. An error is the agent still away; when it
// refuses the listing (a token that may read logs but not the alloc
// directory) the offset is 0: the stream starts over and what was printed
// is skipped.
func (lf *logFollower) resumeOffset(pos logPosition) (int64, error) {
	files, _, err := lf.client.AllocFS().List(lf.alloc, "/alloc/logs", nil)
	if err != nil {
		if retryable(err) {
			return 0, err
		}
		return 0, nil
	}
	prefix := lf.task + "." + lf.logType + "."
	var sum int64
	for _, f := range files {
		if f.IsDir || !strings.HasPrefix(f.Name, prefix) {
			continue
		}
		if idx, err := strconv.Atoi(strings.TrimPrefix(f.Name, prefix)); err == nil && idx < pos.index {
			sum += f.Size
		}
	}
	return sum + pos.offset, nil
}

// logPosition is how far a follow has got: the rotated file (its index)
// and the offset in it after the last byte passed on.
type logPosition struct {
	known  bool
	index  int
	offset int64
}

// skip returns the part of f past the position (nil when none) and moves
// the position to f's end. With checkGap, a frame that starts past the
// position (bytes in between would be lost) is reported as a gap and the
// position is left alone.
func (p *logPosition) skip(f *api.StreamFrame, checkGap bool) (*api.StreamFrame, bool) {
	if f.File == "" || len(f.Data) == 0 {
		return f, false
	}
	idx, err := strconv.Atoi(f.File[strings.LastIndexByte(f.File, '.')+1:])
	if err != nil {
		return f, false
	}
	start := f.Offset - int64(len(f.Data))
	if p.known {
		switch {
		case idx < p.index:
			return nil, false
		case idx == p.index && f.Offset <= p.offset:
			return nil, false
		case idx == p.index && start < p.offset:
			c := *f
			c.Data = f.Data[p.offset-start:]
			f = &c
		case checkGap && ((idx == p.index && start > p.offset) || (idx > p.index && start > 0)):
			return nil, true
		}
	}
	p.known, p.index, p.offset = true, idx, f.Offset
	return f, false
}
