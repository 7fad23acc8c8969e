package live

import (
	"bytes"
	"strconv"
	"sync"
)

// Bounds of the hub: what one client may have queued before it is dropped
// (the browser reconnects and gets the whole history again), how many
// clients are served at once, and how much history is kept for late
// joiners.
const (
	// ClientBuffer is the most messages queued for one client; a client
	// that falls this far behind is dropped (drop-and-resync).
	ClientBuffer = 512
	// MaxClients is the most pages served at once; more get 503.
	MaxClients = 256
	// MaxHistory is the most bytes of history kept; past it, messages
	// still go to the pages open, and a late joiner is told what it missed.
	MaxHistory = 64 << 20
)

// skipped are the recording's line types the page does not need: the
// "call" lines repeat in their step's line.
var skipped = [][]byte{[]byte(`{"type":"call-sent"`), []byte(`{"type":"call"`)}

// Hub fans the recording's lines out to every open page as server-sent
// events. Write (the hub is the io.Writer of a record.Recorder) never
// blocks on a client: each has a bounded queue, and one that is full is
// dropped. A client that joins gets the whole history first, then what
// comes; both under one lock, so nothing is missed or repeated.
type Hub struct {
	mu       sync.Mutex
	partial  []byte
	history  [][]byte
	size     int
	lost     int // messages not kept in the history (MaxHistory)
	seq      int
	clients  map[*client]struct{}
	closed   bool
	maxBuf   int
	maxHist  int
	maxConns int
	// Dropped counts the clients dropped for being too slow.
	dropped int
}

// endEvent tells a page the command ended: it stops reconnecting.
var endEvent = []byte("event: end\ndata: {}\n\n")

// helloEvent tells a page to start over (it clears itself): the first
// event of every stream, and what Reset sends the pages open.
var helloEvent = []byte("event: hello\ndata: {}\n\n")

type client struct {
	ch chan []byte
}

// NewHub returns a hub with the package's bounds.
func NewHub() *Hub {
	return &Hub{clients: map[*client]struct{}{}, maxBuf: ClientBuffer, maxHist: MaxHistory, maxConns: MaxClients}
}

// Write takes a recording's bytes: each complete line becomes one event.
// It always succeeds.
func (h *Hub) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return len(p), nil
	}
	data := p
	if len(h.partial) > 0 {
		h.partial = append(h.partial, p...)
		data = h.partial
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		h.publish(data[:i])
		data = data[i+1:]
	}
	h.partial = append(h.partial[:0:0], data...)
	return len(p), nil
}

// publish frames one line and sends it to every client; h.mu is held.
func (h *Hub) publish(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	for _, s := range skipped {
		if bytes.HasPrefix(line, s) && len(line) > len(s) && (line[len(s)] == ',' || line[len(s)] == '}') {
			return
		}
	}
	h.seq++
	// A JSON line has no newline (encoding/json escapes them), so one
	// data field carries it.
	msg := make([]byte, 0, len(line)+24)
	msg = append(msg, "id: "...)
	msg = strconv.AppendInt(msg, int64(h.seq), 10)
	msg = append(msg, "\ndata: "...)
	msg = append(msg, line...)
	msg = append(msg, "\n\n"...)
	if h.size+len(msg) <= h.maxHist {
		h.history = append(h.history, msg)
		h.size += len(msg)
	} else {
		h.lost++
	}
	h.broadcast(msg)
}

// broadcast queues msg for every client; a client whose queue is full is
// too slow: dropped (its page reconnects and starts over). h.mu is held.
func (h *Hub) broadcast(msg []byte) {
	for c := range h.clients {
		select {
		case c.ch <- msg:
		default:
			close(c.ch)
			delete(h.clients, c)
			h.dropped++
		}
	}
}

// join registers a client and returns the history so far (and how many
// messages were not kept). ok is false when the hub is closed or full.
func (h *Hub) join() (c *client, history [][]byte, lost int, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(h.clients) >= h.maxConns {
		return nil, nil, 0, false
	}
	c = &client{ch: make(chan []byte, h.maxBuf)}
	h.clients[c] = struct{}{}
	return c, h.history[:len(h.history):len(h.history)], h.lost, true
}

// leave unregisters a client that went away.
func (h *Hub) leave(c *client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		close(c.ch)
	}
}

// Reset starts the pages over with another run: the history is dropped
// (a page that opens later gets only what follows), and every open page
// gets "hello" (it clears itself) before the lines that follow. A page
// whose queue is full is dropped (it reconnects and gets the new history).
func (h *Hub) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.partial, h.history, h.size, h.lost = nil, nil, 0, 0
	h.broadcast(helloEvent)
}

// Close ends every client's stream; later writes are dropped.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for c := range h.clients {
		select { // the page stops reconnecting
		case c.ch <- endEvent:
		default:
		}
		close(c.ch)
		delete(h.clients, c)
	}
}

// Stats are the hub's counters, for tests and the end line.
type Stats struct {
	Clients, Dropped, Messages, Lost int
}

// Stats returns the hub's counters now.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{Clients: len(h.clients), Dropped: h.dropped, Messages: h.seq, Lost: h.lost}
}
